/**
 * The query of `GET /history`: which page to read. A read is bounded by `limit` (entries a page,
 * at most {@link MAX_HISTORY_LIMIT}); `cursor` continues after the last entry a client has seen.
 * Issue #31's filters (`path`, `method`, `status`, `session`, `since`) belong here too: the next
 * page's link repeats every parameter but the cursor.
 */
import { EchoError, type ErrorDetail } from './errors.ts';

/** Entries a page holds when no `limit` is given: today's whole history at the default ECHO_HISTORY_SIZE. */
export const DEFAULT_HISTORY_LIMIT = 100;
/** Most entries one read may ask for. */
export const MAX_HISTORY_LIMIT = 1000;

export interface HistoryQuery {
  readonly limit: number;
  /** The `seq` of the last entry already read; the page starts after it. */
  readonly cursor: number | undefined;
}

const KNOWN = ['limit', 'cursor'] as const;
/** Longest value quoted back in an error. */
const MAX_QUOTED = 64;

/**
 * The page asked for by `query` (fastify's parsed query string). `nextSeq` is the sequence number
 * the next recorded entry will get: a cursor at or above it was never handed out by this process.
 * @throws EchoError `ECHO_ERR_INVALID_HISTORY_QUERY`, one detail per bad parameter.
 */
export function parseHistoryQuery(query: unknown, nextSeq: number): HistoryQuery {
  const params = (query ?? {}) as Record<string, unknown>;
  const problems: ErrorDetail[] = [];
  const one = (name: string): string | undefined => {
    const value = params[name];
    if (value === undefined) return undefined;
    if (typeof value === 'string') return value;
    problems.push({ field: name, message: `${name} is given more than once: expected it once` });
    return undefined;
  };
  for (const name of Object.keys(params)) {
    if (!(KNOWN as readonly string[]).includes(name))
      problems.push({
        field: name.slice(0, MAX_QUOTED),
        message: `unknown parameter ${JSON.stringify(name.slice(0, MAX_QUOTED))}: expected ${KNOWN.join(' or ')}`,
      });
  }

  let limit = DEFAULT_HISTORY_LIMIT;
  const rawLimit = one('limit');
  if (rawLimit !== undefined) {
    const n = /^\d{1,7}$/.test(rawLimit) ? Number(rawLimit) : Number.NaN;
    if (n >= 1 && n <= MAX_HISTORY_LIMIT) limit = n;
    else
      problems.push({
        field: 'limit',
        message: `limit must be an integer from 1 to ${MAX_HISTORY_LIMIT}`,
        value: rawLimit.slice(0, MAX_QUOTED),
      });
  }

  let cursor: number | undefined;
  const rawCursor = one('cursor');
  if (rawCursor !== undefined) {
    const n = /^\d{1,15}$/.test(rawCursor) ? Number(rawCursor) : Number.NaN;
    if (Number.isNaN(n))
      problems.push({
        field: 'cursor',
        message: 'cursor must be a value of X-Echo-History-Next-Cursor (a whole number)',
        value: rawCursor.slice(0, MAX_QUOTED),
      });
    else if (n >= nextSeq)
      problems.push({
        field: 'cursor',
        message: `cursor ${n} was never handed out: this process has recorded ${nextSeq} entries (restarted since?)`,
        value: rawCursor,
      });
    else cursor = n;
  }

  if (problems.length > 0) {
    throw new EchoError('ECHO_ERR_INVALID_HISTORY_QUERY', [problems.map((p) => p.message).join('; ')], {
      details: problems,
    });
  }
  return { limit, cursor };
}

/** The address of the page after `query`'s, starting after `nextCursor`. */
export function nextPageUrl(query: HistoryQuery, nextCursor: number): string {
  return `/history?limit=${query.limit}&cursor=${nextCursor}`;
}
