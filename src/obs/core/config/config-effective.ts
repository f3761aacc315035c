/**
 * The effective form of the resolved tree: JSON for people and for hashing, durations as text
 * (`2s`), unset values `null`, map keys sorted.
 */

import { formatDuration } from '../duration.ts';
import { plannedFeatureOf } from '../features.ts';
import {
  type Field,
  type Fields,
  isDuration,
  isGroup,
  isObjectList,
  isStringList,
  isStringMap,
} from './config-fields.ts';
import { flattenTree, type JsonValue } from './config-hash.ts';
import { isMapKey } from './config-keys.ts';
import type { Tree } from './config-values.ts';

/**
 * The effective form of the resolved (sub)tree of `fields` at `path`. Keys of planned features are
 * left out: nothing reads them, so they are not part of what the process does (nor of its hash).
 */
export function effectiveOf(fields: Fields, node: Tree, path = 'obs'): { [key: string]: JsonValue } {
  const out: { [key: string]: JsonValue } = {};
  for (const [key, field] of Object.entries(fields)) {
    const here = `${path}.${key}`;
    if (plannedFeatureOf(here) === undefined) out[key] = effectiveValue(field, node[key], here);
  }
  return out;
}

function effectiveValue(field: Field, value: unknown, path: string): JsonValue {
  if (isGroup(field)) return effectiveOf(field.properties, value as Tree, path);
  if (isObjectList(field))
    return (value as Tree[]).map((item, i) => effectiveOf(field.items.properties, item, `${path}[${i}]`));
  if (isDuration(field)) return value === undefined ? null : formatDuration(value as number);
  if (isStringMap(field)) {
    const map = value as Record<string, string>;
    return Object.fromEntries(
      Object.keys(map)
        .sort()
        .map((k) => [k, map[k] ?? '']),
    );
  }
  if (isStringList(field)) return [...(value as string[])];
  return (value ?? null) as JsonValue;
}

/** The leaves of an effective tree as `obs.a.b` → value, sorted, for the config-hash route. */
export function flattenEffective(effective: {
  readonly [key: string]: JsonValue;
}): Record<string, JsonValue> {
  return flattenTree(effective, 'obs', isMapKey);
}
