/**
 * Fleet config drift: a SHA-256 of the resolved `obs.*` tree in a canonical form, so that the same
 * configuration gives the same hash in any process, whatever order its sources wrote the keys in.
 */
import { createHash } from 'node:crypto';

/** A JSON value as the effective configuration holds it. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | readonly JsonValue[]
  | { readonly [k: string]: JsonValue };

/**
 * JSON with the keys of every object sorted (by UTF-16 code units) and no whitespace. Arrays keep
 * their order: the order of a list is part of its meaning.
 */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v: JsonValue) => canonicalJson(v)).join(',')}]`;
  const entries = Object.keys(value)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, JsonValue>)[k] ?? null)}`);
  return `{${entries.join(',')}}`;
}

/** The hex SHA-256 of the canonical JSON of a tree. */
export function configHash(tree: JsonValue): string {
  return createHash('sha256').update(canonicalJson(tree)).digest('hex');
}

/**
 * The leaves of a tree as `prefix.a.b` → value, sorted by key, for drift forensics (two pods'
 * entries compared show the differing keys). Maps and lists stay whole values.
 * @param isLeaf decides whether an object is a value (a map setting) rather than a subtree.
 */
export function flattenTree(
  tree: { readonly [k: string]: JsonValue },
  prefix: string,
  isLeaf: (path: string) => boolean,
): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  const walk = (node: { readonly [k: string]: JsonValue }, path: string): void => {
    for (const key of Object.keys(node).sort()) {
      const value = node[key] ?? null;
      const here = `${path}.${key}`;
      if (value !== null && typeof value === 'object' && !Array.isArray(value) && !isLeaf(here)) {
        walk(value as { readonly [k: string]: JsonValue }, here);
      } else {
        out[here] = value;
      }
    }
  };
  walk(tree, prefix);
  return out;
}
