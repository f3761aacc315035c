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

/**
 * Whether an `If-Match` header names `etag` (RFC 9110 §13.1.1: `*`, or a comma-separated list of
 * entity tags compared strongly, so a weak `W/"x"` never matches). The console sends the tag it
 * read with the set it changed, so two tabs cannot overwrite each other unseen.
 */
export function ifMatchHits(header: string, etag: string): boolean {
  const text = header.trim();
  if (text === '*') return true;
  return text.split(',').some((part) => part.trim() === etag);
}
