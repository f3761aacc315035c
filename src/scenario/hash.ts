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
  let text = '';
  writeCanonical(value, (piece) => {
    text += piece;
  });
  return text;
}

/** Writes the canonical JSON text of `value` as it is made, piece by piece, to `write`. */
function writeCanonical(value: unknown, write: (piece: string) => void): void {
  if (value === null || typeof value !== 'object') {
    write(JSON.stringify(value) ?? 'null');
    return;
  }
  if (Array.isArray(value)) {
    write('[');
    for (let i = 0; i < value.length; i++) {
      if (i > 0) write(',');
      const item = value[i];
      if (item === undefined) write('null');
      else writeCanonical(item, write);
    }
    write(']');
    return;
  }
  write('{');
  let first = true;
  for (const key of Object.keys(value).sort()) {
    const member = (value as Record<string, unknown>)[key];
    if (member === undefined) continue;
    write(first ? `${JSON.stringify(key)}:` : `,${JSON.stringify(key)}:`);
    first = false;
    writeCanonical(member, write);
  }
  write('}');
}

/** Pieces are gathered up to this many characters before the hash takes them (one call each). */
const HASH_BATCH_CHARS = 64 * 1024;

/**
 * The content hash of a scenario set (the array as stored, after validation): `sha256-` and the
 * lowercase hex SHA-256 of its {@link canonicalJson}. Order matters: it decides which scenario
 * matches first. The text is hashed as it is made, never built whole: a set of a dozen 1 MiB bodies
 * made three 12 MB copies of itself (the pieces, the joined text, its UTF-8) on every load.
 */
export function scenarioSetHash(scenarios: readonly unknown[]): string {
  const hash = createHash('sha256');
  let batch = '';
  writeCanonical(scenarios, (piece) => {
    if (piece.length >= HASH_BATCH_CHARS) {
      if (batch !== '') hash.update(batch);
      batch = '';
      hash.update(piece);
      return;
    }
    batch += piece;
    if (batch.length >= HASH_BATCH_CHARS) {
      hash.update(batch);
      batch = '';
    }
  });
  if (batch !== '') hash.update(batch);
  return `sha256-${hash.digest('hex')}`;
}
