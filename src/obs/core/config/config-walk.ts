/**
 * Reading one source against the schema: every key checked and normalised, unknown keys and bad
 * values collected as problems, and the key each value came from recorded. Then the defaults, the
 * merge of sources (later wins) and the frozen result.
 */

import type { TArray, TObject } from '@sinclair/typebox';
import type { ConfigProblem } from '../errors.ts';
import { plannedFeatureOf } from '../features.ts';
import { nearestName } from '../nearest-name.ts';
import {
  type Field,
  type Fields,
  isGroup,
  isObjectList,
  isOptional,
  isStringMap,
  keywords,
} from './config-fields.ts';
import { plannedKey, problem, settableKeys, suggestKey, unknownKey } from './config-problems.ts';
import { OBS_SCHEMA } from './config-schema.ts';
import { checkLeaf, childTree, expectedForm, isPlainObject, parseJson, type Tree } from './config-values.ts';

/** What reading one source needs: where a key's value came from, and where problems go. */
export interface WalkContext {
  readonly source: (path: string) => string;
  readonly problems: ConfigProblem[];
  readonly origins: Map<string, string>;
  /** Keys starting with `_` under `obs` are YAML scaffolding (anchors), ignored (files only). */
  readonly allowScaffolding: boolean;
}

function walkGroup(fields: Fields, raw: unknown, path: string, ctx: WalkContext, out: Tree): void {
  if (raw === undefined || raw === null) return;
  if (!isPlainObject(raw)) {
    ctx.problems.push(problem(path, raw, ctx.source(path), `a mapping of the keys of ${path}`));
    return;
  }
  for (const [key, value] of Object.entries(raw)) {
    const field = Object.hasOwn(fields, key) ? fields[key] : undefined;
    if (field === undefined) {
      const dot = key.indexOf('.');
      const head = dot > 0 ? key.slice(0, dot) : '';
      const headField = Object.hasOwn(fields, head) ? fields[head] : undefined;
      if (headField !== undefined && isGroup(headField)) {
        // A dotted key (`timeout-budget.default-budget: 5s`) is the nested form written on one line.
        walkGroup(
          headField.properties,
          { [key.slice(dot + 1)]: value },
          `${path}.${head}`,
          ctx,
          childTree(out, head),
        );
      } else if (!(ctx.allowScaffolding && path === 'obs' && key.startsWith('_'))) {
        const where = `${path}.${key}`;
        const planned = plannedFeatureOf(where);
        // Under a planned feature, a key is refused as planned whatever it is, unless it looks like
        // a typo of one of the feature's built keys.
        ctx.problems.push(
          planned !== undefined && nearestName(key, settableKeys(path, fields)) === undefined
            ? plannedKey(where, value, ctx.source(where), planned)
            : unknownKey(where, value, ctx.source(where), suggestKey(path, key, fields)),
        );
      }
      continue;
    }
    walkField(field, key, value, `${path}.${key}`, ctx, out);
  }
}

function walkField(
  field: Field,
  key: string,
  value: unknown,
  path: string,
  ctx: WalkContext,
  out: Tree,
): void {
  // `undefined` (code options only: YAML and the environment have no such value) means "not set".
  if (value === undefined) return;
  // Every source is checked alike, the shipped presets included: a preset a person reads must not
  // promise a feature obs does not have (test/obs/core/features.test.ts applies each one).
  const planned = isGroup(field) ? undefined : plannedFeatureOf(path);
  if (planned !== undefined) {
    ctx.problems.push(plannedKey(path, value, ctx.source(path), planned));
    return;
  }
  if (isGroup(field)) {
    walkGroup(field.properties, value, path, ctx, childTree(out, key));
    return;
  }
  if (isObjectList(field)) {
    const items = walkObjectList(field, value, path, ctx);
    if (items !== undefined) {
      out[key] = items;
      ctx.origins.set(path, ctx.source(path));
    }
    return;
  }
  if (value === null || (value === '' && isOptional(field))) {
    if (isOptional(field)) {
      out[key] = undefined;
      ctx.origins.set(path, ctx.source(path));
    } else {
      ctx.problems.push(problem(path, value, ctx.source(path), expectedForm(field)));
    }
    return;
  }
  const checked = checkLeaf(field, value);
  if (!checked.ok) {
    ctx.problems.push(problem(path, value, ctx.source(path), checked.expected));
    return;
  }
  out[key] =
    isStringMap(field) && isPlainObject(out[key])
      ? { ...(out[key] as Tree), ...(checked.value as Tree) }
      : checked.value;
  ctx.origins.set(path, ctx.source(path));
}

function walkObjectList(
  field: TArray<TObject>,
  raw: unknown,
  path: string,
  ctx: WalkContext,
): Tree[] | undefined {
  const items = typeof raw === 'string' && raw.trim().startsWith('[') ? parseJson(raw.trim()) : raw;
  if (!Array.isArray(items)) {
    ctx.problems.push(problem(path, raw, ctx.source(path), expectedForm(field)));
    return undefined;
  }
  const before = ctx.problems.length;
  const out: Tree[] = [];
  items.forEach((item: unknown, i: number) => {
    const where = `${path}[${i}]`;
    const normalised: Tree = {};
    if (!isPlainObject(item)) {
      ctx.problems.push(
        problem(
          where,
          item,
          ctx.source(path),
          `an object with keys ${Object.keys(field.items.properties).join(', ')}`,
        ),
      );
      return;
    }
    walkGroup(
      field.items.properties,
      item,
      where,
      { ...ctx, source: () => ctx.source(path), origins: new Map() },
      normalised,
    );
    for (const required of keywords(field).requiredKeys ?? []) {
      if (item[required] === undefined || item[required] === null) {
        ctx.problems.push(problem(`${where}.${required}`, undefined, ctx.source(path), 'a value (required)'));
      }
    }
    out.push({ ...defaultsOf(field.items.properties), ...normalised });
  });
  return ctx.problems.length === before ? out : undefined;
}

/** The defaults of a (sub)tree of the schema. */
export function defaultsOf(fields: Fields): Tree {
  const out: Tree = {};
  for (const [key, field] of Object.entries(fields)) {
    out[key] = isGroup(field) ? defaultsOf(field.properties) : field.default;
  }
  return out;
}

/** Merges a normalised source into `target`: maps key by key, everything else replaced. */
export function mergeInto(target: Tree, layer: Tree, fields: Fields): void {
  for (const [key, value] of Object.entries(layer)) {
    const field = fields[key];
    if (field === undefined) continue;
    if (isGroup(field)) {
      mergeInto(target[key] as Tree, value as Tree, field.properties);
    } else if (isStringMap(field)) {
      target[key] = { ...(target[key] as Tree), ...(value as Tree) };
    } else {
      target[key] = value;
    }
  }
}

/** Freezes a value and everything in it. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/**
 * One source's raw `obs` mapping checked against the schema (or another tree of fields) and
 * normalised; problems and origins go to `ctx`.
 */
export function normalise(raw: unknown, ctx: WalkContext, fields: Fields = OBS_SCHEMA.properties): Tree {
  const tree: Tree = {};
  walkGroup(fields, raw, 'obs', ctx, tree);
  return tree;
}
