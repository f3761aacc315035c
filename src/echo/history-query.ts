/**
 * The queries of the history routes, read by one parser: which page of `GET /history` to read
 * (`limit` entries a page, at most {@link MAX_HISTORY_LIMIT}; `cursor` continues after the last
 * entry a client has seen) and which entries it and `GET /history/count` cover (the filters of
 * history-filter.ts). `DELETE /history` takes none. Every value is bounded; a bad one, a parameter
 * given twice or an unknown one is a 400 naming it, so a misspelt filter never silently matches
 * everything (or, for `DELETE`, empties everything).
 */
import { EchoError, type ErrorDetail } from './errors.ts';
import { FILTER_PARAMS, type HistoryFilter, parseHistoryFilter } from './history-filter.ts';

/** Entries a page holds when no `limit` is given: today's whole history at the default ECHO_HISTORY_SIZE. */
export const DEFAULT_HISTORY_LIMIT = 100;
/** Most entries one read may ask for. */
export const MAX_HISTORY_LIMIT = 1000;

export interface HistoryQuery {
  readonly limit: number;
  /** The `seq` of the last entry already read; the page starts after it. */
  readonly cursor: number | undefined;
  readonly filter: HistoryFilter;
}

/** The parameters each history route takes. */
const PAGE_PARAMS: readonly string[] = ['limit', 'cursor', ...FILTER_PARAMS];
const COUNT_PARAMS: readonly string[] = FILTER_PARAMS;
/** Longest value quoted back in an error. */
const MAX_QUOTED = 64;

/** A route's parameters as given, and the problems found so far. */
interface Params {
  /** The value of `name`, or undefined when it is not given (or given twice: a problem). */
  one(name: string): string | undefined;
  readonly problems: ErrorDetail[];
}

/**
 * Reads `query` (fastify's parsed query string: a string per parameter, an array for one given
 * more than once) for a route that takes the parameters `known`; each unknown one is a problem.
 */
function readParams(query: unknown, known: readonly string[], route: string): Params {
  const params = (query ?? {}) as Record<string, unknown>;
  const problems: ErrorDetail[] = [];
  for (const name of Object.keys(params)) {
    if (!known.includes(name)) {
      const quoted = JSON.stringify(name.slice(0, MAX_QUOTED));
      problems.push({
        field: name.slice(0, MAX_QUOTED),
        message:
          known.length === 0
            ? `unknown parameter ${quoted}: ${route} takes no parameters`
            : `unknown parameter ${quoted}: ${route} takes ${known.slice(0, -1).join(', ')} or ${known.at(-1)}`,
      });
    }
  }
  const one = (name: string): string | undefined => {
    const value = params[name];
    if (value === undefined || !known.includes(name)) return undefined;
    if (typeof value === 'string') return value;
    problems.push({ field: name, message: `${name} is given more than once: expected it once` });
    return undefined;
  };
  return { one, problems };
}

/** Throws the 400 for `problems`, if there are any. */
function refuse(problems: readonly ErrorDetail[]): void {
  if (problems.length > 0) {
    throw new EchoError('ECHO_ERR_INVALID_HISTORY_QUERY', [problems.map((p) => p.message).join('; ')], {
      details: problems,
    });
  }
}

/**
 * The page asked for by `query` (fastify's parsed query string). `nextSeq` is the sequence number
 * the next recorded entry will get: a cursor at or above it was never handed out by this process.
 * @throws EchoError `ECHO_ERR_INVALID_HISTORY_QUERY`, one detail per bad parameter.
 */
export function parseHistoryQuery(query: unknown, nextSeq: number): HistoryQuery {
  const { one, problems } = readParams(query, PAGE_PARAMS, 'GET /history');

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

  const filter = parseHistoryFilter(one, problems);
  refuse(problems);
  return { limit, cursor, filter };
}

/**
 * The filter of `GET /history/count`: the filters of `GET /history`, without its `limit` and
 * `cursor` (a count covers every stored entry).
 * @throws EchoError `ECHO_ERR_INVALID_HISTORY_QUERY`, one detail per bad parameter.
 */
export function parseHistoryCountQuery(query: unknown): HistoryFilter {
  const { one, problems } = readParams(query, COUNT_PARAMS, 'GET /history/count');
  const filter = parseHistoryFilter(one, problems);
  refuse(problems);
  return filter;
}

/**
 * Checks that `DELETE /history` was given no parameter: it empties the whole history, so one
 * that looks like a filter (`?path=/pay`) is refused rather than ignored.
 * @throws EchoError `ECHO_ERR_INVALID_HISTORY_QUERY`, one detail per parameter.
 */
export function parseHistoryDeleteQuery(query: unknown): void {
  refuse(readParams(query, [], 'DELETE /history').problems);
}

/** The address of the page after `query`'s, starting after `nextCursor`: the same filters, as given. */
export function nextPageUrl(query: HistoryQuery, nextCursor: number): string {
  let url = `/history?limit=${query.limit}`;
  // `/` and `:` are left as they are (a query may hold them), so a path or a time stays readable.
  for (const [name, value] of query.filter.given)
    url += `&${name}=${encodeURIComponent(value).replace(/%2F/g, '/').replace(/%3A/g, ':')}`;
  return `${url}&cursor=${nextCursor}`;
}
