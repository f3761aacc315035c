/**
 * `GET /scenario`'s entity tag: the scenario set's content hash ({@link scenarioSetHash}), quoted, so
 * a client (the operator, after a push) can check what a pod holds with `If-None-Match` and a 304.
 */
import { scenarioSetHash } from '../scenario/index.ts';

/** The strong entity tag of a scenario set: its content hash in double quotes. */
export function scenarioETag(scenarios: readonly unknown[]): string {
  return `"${scenarioSetHash(scenarios)}"`;
}

/**
 * Whether an `If-None-Match` header names `etag` (RFC 9110 §13.1.2: `*`, or a comma-separated list
 * of entity tags compared weakly, so `W/"x"` matches `"x"`).
 */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const text = header.trim();
  if (text === '*') return true;
  for (const part of text.split(',')) {
    const tag = part.trim().replace(/^W\//, '');
    if (tag === etag) return true;
  }
  return false;
}
