/**
 * The content hash of a scenario set: what `GET /scenario` sends as its `ETag` and what the operator
 * expects to read back after a push. Two sets that hold the same scenarios in the same order have the
 * same hash, however their objects' keys happen to be ordered.
 */
import { createHash } from 'node:crypto';

/**
 * The canonical JSON text of a value: object keys sorted (by UTF-16 code units), `undefined`
 * members left out, arrays in their order, no whitespace.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  }
  const members: string[] = [];
  for (const key of Object.keys(value).sort()) {
    const member = (value as Record<string, unknown>)[key];
    if (member !== undefined) members.push(`${JSON.stringify(key)}:${canonicalJson(member)}`);
  }
  return `{${members.join(',')}}`;
}

/**
 * The content hash of a scenario set (the array as stored, after validation): `sha256-` and the
 * lowercase hex SHA-256 of its {@link canonicalJson}. Order matters: it decides which scenario matches first.
 */
export function scenarioSetHash(scenarios: readonly unknown[]): string {
  return `sha256-${createHash('sha256').update(canonicalJson(scenarios)).digest('hex')}`;
}
