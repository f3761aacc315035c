/**
 * `GET /scenario`'s entity tag is the scenario set's content hash (`ScenarioStore.contentHash`, worked
 * out once per set), quoted, so a client (the operator, after a push) can check what a pod holds
 * with `If-None-Match` and a 304.
 */

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
