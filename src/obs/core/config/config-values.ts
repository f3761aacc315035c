/**
 * Reading one value of a key: whether what a source wrote fits the key's kind (a YAML value, or the
 * text of an environment variable), the value it stands for (`"5s"` → 5000, `"a,b"` → a list), and
 * the accepted form of each kind worded for error messages.
 */

import { DURATION_FORM, formatDuration, parseDurationMs } from '../duration.ts';
import type { LeafField, ObjectListField } from './config-fields.ts';

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

/** The accepted form of a field, worded for error messages. */
export function expectedForm(field: LeafField): string {
  switch (field.kind) {
    case 'boolean':
      return 'true or false';
    case 'integer':
      return `a whole number ${rangeText(field.min, field.max)}`;
    case 'number':
      return `a number ${rangeText(field.min, field.max)}`;
    case 'duration':
      return `${DURATION_FORM}, ${rangeText(field.min, field.max, formatDuration)}`;
    case 'string':
      return field.form ?? 'text';
    case 'enum':
      return `one of ${field.values.join(', ')}`;
    case 'string-list':
      return `a list of ${field.form === undefined ? 'text items' : `items, each ${field.form}`} (a YAML list, comma-separated text or a JSON array)`;
    case 'string-map':
      return `a map of ${field.keyForm} to text (a YAML mapping, key=value pairs separated by commas, or a JSON object)`;
    case 'object-list':
      return 'a list of objects (a YAML list or a JSON array)';
  }
}

const INTEGER_TEXT = /^[+-]?\d+$/;
const NUMBER_TEXT = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

function checkNumber(raw: unknown, whole: boolean, min: number, max: number): number | undefined {
  let n: number;
  if (typeof raw === 'number') n = raw;
  else if (typeof raw === 'string' && (whole ? INTEGER_TEXT : NUMBER_TEXT).test(raw.trim()))
    n = Number(raw.trim());
  else return undefined;
  if (!Number.isFinite(n) || (whole && !Number.isSafeInteger(n))) return undefined;
  return n >= min && n <= max ? n : undefined;
}

/** JSON text parsed, or `undefined` when it is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function checkList(field: Extract<LeafField, { kind: 'string-list' }>, raw: unknown): string[] | undefined {
  let items: unknown;
  if (typeof raw === 'string') {
    const t = raw.trim();
    items = t.startsWith('[')
      ? parseJson(t)
      : t === ''
        ? []
        : t
            .split(',')
            .map((s) => s.trim())
            .filter((s) => s !== '');
  } else {
    items = raw;
  }
  if (!Array.isArray(items)) return undefined;
  const out: string[] = [];
  for (const item of items) {
    if (typeof item !== 'string') return undefined;
    if (field.pattern !== undefined && !field.pattern.test(item)) return undefined;
    out.push(item);
  }
  return out;
}

/** A map from a mapping, `key=value` pairs or a JSON object; `undefined` when it is none. */
export function checkMap(
  field: Extract<LeafField, { kind: 'string-map' }>,
  raw: unknown,
): Record<string, string> | undefined {
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
    out[field.lowerCaseKeys === true ? key.trim().toLowerCase() : key.trim()] = String(value);
  }
  return out;
}

/** Validates and normalises one value. */
export function checkLeaf(field: Exclude<LeafField, ObjectListField>, raw: unknown): Checked {
  const bad: Checked = { ok: false, expected: expectedForm(field) };
  const ok = (value: unknown): Checked => ({ ok: true, value });
  switch (field.kind) {
    case 'boolean': {
      if (typeof raw === 'boolean') return ok(raw);
      const t = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
      return t === 'true' ? ok(true) : t === 'false' ? ok(false) : bad;
    }
    case 'integer':
    case 'number': {
      const n = checkNumber(raw, field.kind === 'integer', field.min, field.max);
      return n === undefined ? bad : ok(n);
    }
    case 'duration': {
      const n = parseDurationMs(raw);
      return n === undefined || n < field.min || n > field.max ? bad : ok(n);
    }
    case 'string':
      if (typeof raw !== 'string' || (field.pattern !== undefined && !field.pattern.test(raw))) return bad;
      return ok(raw);
    case 'enum': {
      if (typeof raw !== 'string') return bad;
      // Relaxed like Spring's enum binding: case and `-`/`_` do not matter.
      const wanted = raw.trim().toUpperCase().replaceAll('-', '_');
      const match = field.values.find((v) => v.toUpperCase().replaceAll('-', '_') === wanted);
      return match === undefined ? bad : ok(match);
    }
    case 'string-list': {
      const list = checkList(field, raw);
      return list === undefined ? bad : ok(list);
    }
    case 'string-map': {
      const map = checkMap(field, raw);
      return map === undefined ? bad : ok(map);
    }
  }
}
