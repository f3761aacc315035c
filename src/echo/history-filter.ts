/**
 * Which entries a read of history covers (issue #31): `GET /history?path=&method=&status=&fault=
 * &session=&since=` and `GET /history/count` with the same filters, combined with AND. So a test can
 * check what its service did ("called /pay exactly twice", "retried after the 503") without
 * fetching every entry and filtering it itself.
 *
 * `path` is compared with the path `GET /history` shows (masked unless `ECHO_HISTORY_SECRETS=show`,
 * percent-encoding as sent): compared with the stored one, a prefix filter would spell out a masked
 * email or token a character at a time. `session` is compared as sent: it is the client's own
 * identifier, matched whole. The rest read fields nothing masks. A filter makes no JSON; it looks at
 * the stored entries once, at most `ECHO_HISTORY_SIZE` of them: a page stops at the match after its
 * `limit`-th (which says a next page exists), a count goes once through all.
 */
import { METHODS } from 'node:http';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { FAULT_KINDS, type FaultKind } from './applied.ts';
import { isSessionId, SESSION_FORM } from './controls.ts';
import type { ErrorDetail } from './errors.ts';
import { History, type HistoryEntry, type HistoryPage, type HistoryReader } from './history.ts';
import { parseRfc3339 } from './iso-time.ts';

/** The filter parameters, in the order the next page's link repeats them. */
export const FILTER_PARAMS = ['path', 'method', 'status', 'fault', 'session', 'since'] as const;
export type FilterParam = (typeof FILTER_PARAMS)[number];

/** Longest `path` filter: the longest path a browser or proxy is commonly expected to carry. */
export const MAX_PATH_FILTER_LENGTH = 2048;
/** Longest `since`: an RFC 3339 time with nanoseconds and an offset is 35 characters. */
const MAX_SINCE_LENGTH = 40;
/** Longest `method`: longer than any of node's `http.METHODS`. */
const MAX_METHOD_LENGTH = 32;
/** Longest value quoted back in an error. */
const MAX_QUOTED = 64;

/** The value of `fault` that picks entries no fault was applied to. */
export const NO_FAULT = 'none';

/** The filters of one read; a field not set filters nothing. */
export interface HistoryFilter {
  /** `path`: the path without its query, whole (`prefix: false`) or its start (given with a trailing `*`). */
  readonly path?: { readonly text: string; readonly prefix: boolean };
  /** `method`, in upper case (the router serves upper-case methods only). */
  readonly method?: string;
  /** `status`: the answered status within `from`-`to` (both included): one status or a class. */
  readonly status?: { readonly from: number; readonly to: number };
  readonly fault?: FaultKind | typeof NO_FAULT;
  /** `session`: the request's `X-Echo-Session` header, as sent. */
  readonly session?: string;
  /** `since`: entries recorded at this time (epoch milliseconds) or later. */
  readonly sinceMs?: number;
  /** The parameters as given, in {@link FILTER_PARAMS} order: the next page's link repeats them. */
  readonly given: ReadonlyArray<readonly [FilterParam, string]>;
}

type MutableFilter = { -readonly [K in keyof HistoryFilter]: HistoryFilter[K] };

/**
 * The filter `value(name)` (one value of each query parameter, or undefined) asks for. A bad value
 * adds one item to `problems`, naming the parameter, quoting the value and saying what is expected.
 */
export function parseHistoryFilter(
  value: (name: FilterParam) => string | undefined,
  problems: ErrorDetail[],
): HistoryFilter {
  const filter: MutableFilter = { given: [] };
  const given: Array<readonly [FilterParam, string]> = [];
  for (const name of FILTER_PARAMS) {
    const raw = value(name);
    if (raw === undefined) continue;
    const expected = PARSERS[name](raw, filter);
    if (expected === undefined) given.push([name, raw]);
    else
      problems.push({
        field: name,
        message: `${name}=${JSON.stringify(raw.slice(0, MAX_QUOTED))}${raw.length > MAX_QUOTED ? '...' : ''}: expected ${expected}`,
        value: raw.slice(0, MAX_QUOTED),
      });
  }
  filter.given = given;
  return filter;
}

/** Each parameter's reader: sets its field of the filter, or answers what was expected instead. */
const PARSERS: Record<FilterParam, (raw: string, filter: MutableFilter) => string | undefined> = {
  path(raw, filter) {
    if (raw.length > MAX_PATH_FILTER_LENGTH || !raw.startsWith('/') || /[?\s]/.test(raw))
      return `a path beginning with / as GET /history shows it (percent-encoded as sent, secrets masked; no query, no spaces), at most ${MAX_PATH_FILTER_LENGTH} characters; a trailing * matches every path that starts with the rest`;
    const prefix = raw.endsWith('*');
    filter.path = { text: prefix ? raw.slice(0, -1) : raw, prefix };
    return undefined;
  },
  method(raw, filter) {
    const method = raw.length > MAX_METHOD_LENGTH ? '' : raw.toUpperCase();
    if (!METHODS.includes(method)) return 'an HTTP method such as GET or POST (any case)';
    filter.method = method;
    return undefined;
  },
  status(raw, filter) {
    if (/^[1-5]\d\d$/.test(raw)) {
      const status = Number(raw);
      filter.status = { from: status, to: status };
    } else if (/^[1-5]xx$/i.test(raw)) {
      const from = Number(raw[0]) * 100;
      filter.status = { from, to: from + 99 };
    } else return 'a status from 100 to 599, or a class from 1xx to 5xx';
    return undefined;
  },
  fault(raw, filter) {
    if (raw === NO_FAULT || (FAULT_KINDS as readonly string[]).includes(raw)) {
      filter.fault = raw as FaultKind | typeof NO_FAULT;
      return undefined;
    }
    return `a fault kind (${FAULT_KINDS.join(', ')}) or ${NO_FAULT}`;
  },
  // The grammar and ceiling of X-Echo-Session itself, so any session a request can name can be found.
  session(raw, filter) {
    if (!isSessionId(raw)) return `${SESSION_FORM}, as sent in X-Echo-Session`;
    filter.session = raw;
    return undefined;
  },
  since(raw, filter) {
    const ms =
      raw.length > MAX_SINCE_LENGTH ? undefined : /^\d{1,15}$/.test(raw) ? Number(raw) : parseRfc3339(raw);
    if (ms === undefined)
      return 'an RFC 3339 time with an offset (2026-11-27T10:00:00Z, 2026-11-27T11:00:00.5+01:00) or epoch milliseconds';
    filter.sinceMs = ms;
    return undefined;
  },
};

/** Whether `filter` filters anything: without, a page is a plain run of entries. */
export function isFiltered(filter: HistoryFilter): boolean {
  return filter.given.length > 0;
}

/** Whether `entry`, as it is now, passes every filter of `filter`. */
export function matchesFilter(
  history: Pick<HistoryReader, 'shownPath'>,
  entry: HistoryEntry,
  filter: HistoryFilter,
): boolean {
  const { path, method, status, fault, session, sinceMs } = filter;
  if (method !== undefined && entry.method !== method) return false;
  if (
    status !== undefined &&
    (entry.status === null || entry.status < status.from || entry.status > status.to)
  )
    return false;
  if (sinceMs !== undefined && History.timeMsOf(entry) < sinceMs) return false;
  if (path !== undefined && !pathPasses(history, entry, path)) return false;
  if (fault !== undefined) {
    if (fault === NO_FAULT ? entry.faults.length > 0 : !entry.faults.some((f) => f.kind === fault))
      return false;
  }
  if (session !== undefined && entry.headers['x-echo-session'] !== session) return false;
  return true;
}

/**
 * Whether `entry`'s path, as `GET /history` shows it (masked unless `ECHO_HISTORY_SECRETS=show`), is
 * `path.text`, or starts with it for a prefix. Shown as stored, it is read from the URL in place:
 * an entry's `path` is made on demand, and a pass makes none.
 */
function pathPasses(
  history: Pick<HistoryReader, 'shownPath'>,
  entry: HistoryEntry,
  path: NonNullable<HistoryFilter['path']>,
): boolean {
  const shown = history.shownPath(entry);
  if (shown !== undefined) return path.prefix ? shown.startsWith(path.text) : shown === path.text;
  const url = entry.url;
  if (!url.startsWith(path.text)) return false;
  // `text` holds no `?`, so it lies within the path; a prefix may end anywhere in it.
  if (path.prefix) return true;
  return url.length === path.text.length || url.charCodeAt(path.text.length) === 0x3f; // '?'
}

/**
 * The page of at most `limit` entries passing `filter` stored after `cursor` (the oldest stored
 * first without one); undefined when none does. One pass from the cursor, stopped at the match after
 * the `limit`-th: when there is one, the page has a next cursor (its last entry's number), so the
 * last page has none, as an unfiltered one. Its entries are checked again as they are written (see
 * history-stream.ts), so an entry in flight that took a fault since is not shown as `fault=none`.
 */
export async function filteredPage(
  source: FilterSource,
  cursor: number | undefined,
  limit: number,
  filter: HistoryFilter,
): Promise<HistoryPage | undefined> {
  const { reader, scan, keep } = source;
  const seqs: number[] = [];
  let nextCursor: number | undefined;
  await scan(cursor === undefined ? 0 : cursor + 1, (entry, seq) => {
    if (!matchesFilter(reader, entry, filter)) return true;
    if (seqs.length === limit) {
      nextCursor = seqs[limit - 1];
      return false;
    }
    seqs.push(seq);
    keep?.(entry);
    return true;
  });
  if (seqs.length === 0) return undefined;
  return {
    firstSeq: seqs[0]!,
    lastSeq: seqs[seqs.length - 1]!,
    nextCursor,
    matched: { seqs, test: (entry) => matchesFilter(reader, entry, filter) },
  };
}

/** How many entries `source` holds pass `filter` (`GET /history/count`): one pass over them all. */
export async function countMatching(source: FilterSource, filter: HistoryFilter): Promise<number> {
  let count = 0;
  await source.scan(0, (entry) => {
    if (matchesFilter(source.reader, entry, filter)) count++;
    return true;
  });
  return count;
}

/**
 * Calls `visit` with each entry numbered `fromSeq` or later, oldest first, until it answers false;
 * done when the entries run out or `visit` stops it.
 */
export type HistoryScan = (
  fromSeq: number,
  visit: (entry: HistoryEntry, seq: number) => boolean,
) => Promise<void>;

/** Where a filter looks: the entries, and how paths are shown. */
export interface FilterSource {
  /** Shows an entry's path as `GET /history` does (the `path` filter compares that). */
  readonly reader: Pick<HistoryReader, 'shownPath'>;
  readonly scan: HistoryScan;
  /** Told of each entry a page takes: a read of the fleet's history keeps those to show them. */
  readonly keep?: (entry: HistoryEntry) => void;
}

/** This process's history as a filter's source. */
export function localSource(history: History): FilterSource {
  return { reader: history, scan: (fromSeq, visit) => forEachFrom(history, fromSeq, visit) };
}

/**
 * Entries a pass looks at between two turns of the event loop. Looking at one is a few comparisons,
 * but 100,000 stored entries (the most `ECHO_HISTORY_SIZE` allows) took 10 to 25 ms in one turn on
 * a laptop, the objects being spread over the heap; 2,048 take 0.1 to 1 ms (the first pass with a
 * `path` filter masks each entry's path once, about 0.5 µs each).
 */
const ENTRIES_PER_TURN = 2048;

/**
 * Calls `visit` with each entry numbered `fromSeq` or later, oldest first, until it answers false:
 * those stored when the pass begins and still stored when their turn comes (a pass takes a turn of
 * the event loop every {@link ENTRIES_PER_TURN} entries, like a page's stream, and picks up after
 * the entries evicted meanwhile). Entries recorded after it began are left to the next read.
 */
async function forEachFrom(
  history: History,
  fromSeq: number,
  visit: (entry: HistoryEntry, seq: number) => boolean,
): Promise<void> {
  const end = history.nextSeq;
  let seq = fromSeq;
  let budget = ENTRIES_PER_TURN;
  for (;;) {
    const entry = history.atOrAfter(seq);
    if (entry === undefined) return;
    const at = History.seqOf(entry);
    if (at >= end || !visit(entry, at)) return;
    seq = at + 1;
    if (--budget === 0) {
      budget = ENTRIES_PER_TURN;
      await nextTurn();
    }
  }
}
