/**
 * Reading one value of a key: the value what a source wrote stands for (a YAML value, or the text of
 * an environment variable: `"5s"` → 5000, `"a,b"` → a list), checked against the key's TypeBox
 * schema (`Value.Check`), and the accepted form of each kind worded for error messages.
 */

import { Kind, KindGuard, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { DURATION_FORM, formatDuration, parseDurationMs } from '../duration.ts';
import {
  bounds,
  enumValues,
  isDuration,
  isEnum,
  isObjectList,
  isStringList,
  isStringMap,
  keywords,
  matchWord,
} from './config-fields.ts';

/** A raw subtree as a source wrote it, before it is checked. */
export type Tree = Record<string, unknown>;

/** The outcome of checking one value: the normalised value, or the form that was expected. */
export type Checked =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly expected: string };

/** Whether a value is a mapping (not null, not a list). */
export const isPlainObject = (v: unknown): v is Tree =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The subtree `node[key]`, created empty when missing. */
export function childTree(node: Tree, key: string): Tree {
  const existing = node[key];
  if (isPlainObject(existing)) return existing;
  const created: Tree = {};
  node[key] = created;
  return created;
}

function rangeText(min: number, max: number, unit: (n: number) => string = String): string {
  return `from ${unit(min)} to ${unit(max)}`;
}

/** The accepted form of a key, worded for error messages. */
export function expectedForm(schema: TSchema): string {
  if (KindGuard.IsBoolean(schema)) return 'true or false';
  if (isDuration(schema)) {
    const { min, max } = bounds(schema);
    return `${DURATION_FORM}, ${rangeText(min, max, formatDuration)}`;
  }
  if (KindGuard.IsInteger(schema) || KindGuard.IsNumber(schema)) {
    const { min, max } = bounds(schema);
    return `${KindGuard.IsInteger(schema) ? 'a whole number' : 'a number'} ${rangeText(min, max)}`;
  }
  if (KindGuard.IsString(schema)) return keywords(schema).form ?? 'text';
  if (isEnum(schema)) return `one of ${enumValues(schema).join(', ')}`;
  if (isStringList(schema)) {
    const form = keywords(schema.items).form;
    return `a list of ${form === undefined ? 'text items' : `items, each ${form}`} (a YAML list, comma-separated text or a JSON array)`;
  }
  if (isStringMap(schema))
    return `a map of ${keywords(schema).keyForm} to text (a YAML mapping, key=value pairs separated by commas, or a JSON object)`;
  if (isObjectList(schema)) return 'a list of objects (a YAML list or a JSON array)';
  throw new TypeError(`obs schema: no form for a schema of kind ${String(schema[Kind])}`);
}

const INTEGER_TEXT = /^[+-]?\d+$/;
const NUMBER_TEXT = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** A number as a source wrote it (a YAML number, or its text), or `undefined` when it is none. */
function numberOf(raw: unknown, whole: boolean): number | undefined {
  if (typeof raw === 'number') return raw;
  if (typeof raw === 'string' && (whole ? INTEGER_TEXT : NUMBER_TEXT).test(raw.trim()))
    return Number(raw.trim());
  return undefined;
}

/** JSON text parsed, or `undefined` when it is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The items of a list as a source wrote it (a list, comma-separated text or a JSON array). */
function listOf(raw: unknown): unknown {
  if (typeof raw !== 'string') return Array.isArray(raw) ? [...raw] : NOT_A_VALUE;
  const t = raw.trim();
  if (t.startsWith('[')) return parseJson(t);
  return t === ''
    ? []
    : t
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
}

/** A map from a mapping, `key=value` pairs or a JSON object; `undefined` when it is none. */
export function checkMap(schema: TSchema, raw: unknown): Record<string, string> | undefined {
  let entries: Array<[string, unknown]>;
  if (typeof raw === 'string') {
    const t = raw.trim();
    if (t.startsWith('{')) {
      const parsed = parseJson(t);
      if (!isPlainObject(parsed)) return undefined;
      entries = Object.entries(parsed);
    } else {
      entries = [];
      for (const pair of t.split(',')) {
        if (pair.trim() === '') continue;
        const eq = pair.indexOf('=');
        if (eq <= 0) return undefined;
        entries.push([pair.slice(0, eq).trim(), pair.slice(eq + 1).trim()]);
      }
    }
  } else if (isPlainObject(raw)) {
    entries = Object.entries(raw);
  } else {
    return undefined;
  }
  const out: Record<string, string> = {};
  for (const [key, value] of entries) {
    // YAML reads `x-synthetic: true` as a boolean; a header value is text either way.
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
      return undefined;
    if (key.trim() === '') return undefined;
    out[keywords(schema).lowerCaseKeys === true ? key.trim().toLowerCase() : key.trim()] = String(value);
  }
  return Value.Check(schema, out) ? out : undefined;
}

/** What {@link convert} answers for a value that stands for none of the key's kind. */
const NOT_A_VALUE = Symbol('not a value');

/**
 * The value `raw` stands for as the key's schema takes it (`"5s"` → 5000, `"true"` → true), or
 * {@link NOT_A_VALUE}. The schema's check follows (ranges, patterns, items).
 */
function convert(schema: TSchema, raw: unknown): unknown {
  if (KindGuard.IsBoolean(schema)) {
    if (typeof raw === 'boolean') return raw;
    const t = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
    return t === 'true' ? true : t === 'false' ? false : NOT_A_VALUE;
  }
  if (isDuration(schema)) return parseDurationMs(raw) ?? NOT_A_VALUE;
  if (KindGuard.IsInteger(schema) || KindGuard.IsNumber(schema))
    return numberOf(raw, KindGuard.IsInteger(schema)) ?? NOT_A_VALUE;
  if (isEnum(schema)) return matchWord(enumValues(schema), raw) ?? NOT_A_VALUE;
  if (isStringList(schema)) return listOf(raw);
  if (isStringMap(schema)) return checkMap(schema, raw) ?? NOT_A_VALUE;
  return raw;
}

/** Reads and checks one value of a key (not a subtree, not a list of objects): its value, or the form expected. */
export function checkLeaf(schema: TSchema, raw: unknown): Checked {
  const value = convert(schema, raw);
  return value !== NOT_A_VALUE && Value.Check(schema, value)
    ? { ok: true, value }
    : { ok: false, expected: expectedForm(schema) };
}
