/**
 * The fleet's history (issue #33): with `ECHO_STATE_URL`, every replica writes the entries it
 * records to one capped Redis stream, so `GET /history`, `GET /history/count`, `DELETE /history` and
 * `POST /replay` on any replica see the requests every replica answered.
 *
 * - **Written off the request's path, batched.** An entry is queued when its request ends
 *   (`History.onComplete`); the entries that end within one turn of the event loop go in one
 *   script call (one write per turn at most, and one in flight at a time, the entries ending
 *   meanwhile waiting for the next: a group commit, whose batches grow with the load):
 *   numbered by one counter (`INCRBY`), added to the stream (`XADD ... MAXLEN ~ ECHO_HISTORY_SIZE`)
 *   under their numbers, their ids indexed in a sorted set (for replay), their body bytes in a hash
 *   beside (a filter reads the stream without the bodies), and what left the window deleted.
 * - **Read by number.** The numbers are the entries' stream ids (`<n>-0`) and the cursors of
 *   `GET /history`, as a single process's are: the window is the newest `ECHO_HISTORY_SIZE`
 *   numbers. A read copies what it shows into a {@link HistoryCopy} and the rest of the read is the
 *   single-process code (filters, masking, the streamed JSON, replay).
 * - **Bounded.** A read holds at most `ECHO_HISTORY_MAX_BYTES` of bodies, shared by the reads in
 *   progress (a page then ends early, with a next cursor; every page shows at least one entry);
 *   queued entries wait for at most {@link MAX_PENDING}, the rest are dropped and counted; every
 *   command has the store's timeout.
 * - **Away.** While the store is down, entries are not queued (each process keeps its own in
 *   memory, as without the store) and reads answer from this process (`X-Echo-History-Scope`).
 */
import type { Redis } from 'ioredis';
import {
  type History,
  HistoryCopy,
  type HistoryEntry,
  type HistoryPage,
  restoredEntry,
  type StoredEntry,
  storedForm,
} from './history.ts';
import {
  countMatching as countIn,
  type FilterSource,
  filteredPage,
  type HistoryFilter,
  isFiltered,
} from './history-filter.ts';
import { defineScript } from './redis-script.ts';

/** The stream of entries (metadata), the counter numbering them, the ids, the bodies. */
export const HISTORY_KEYS = {
  stream: 'echo-chaos:history',
  seq: 'echo-chaos:history:seq',
  ids: 'echo-chaos:history:ids',
  bodies: 'echo-chaos:history:bodies',
  /** The channel a `DELETE /history` is announced on: every replica lets its own copy go too. */
  cleared: 'echo-chaos:history:cleared',
} as const;
const KEYS = [HISTORY_KEYS.stream, HISTORY_KEYS.seq, HISTORY_KEYS.ids, HISTORY_KEYS.bodies] as const;

/** Entries queued for the stream at most; past it new entries are dropped (and counted). */
export const MAX_PENDING = 10_000;
/** Entries one scan reads from the stream at a time (a filter, a count). */
const SCAN_CHUNK = 256;

/**
 * Appends a batch: ARGV[1] the window (ECHO_HISTORY_SIZE), then per entry its id, its metadata
 * (JSON) and its body bytes. Numbers the batch after the newest entry (the counter, or the stream's
 * newest id if the counter was lost: an eviction, a flush), adds each entry, indexes its id (a
 * repeated id points at the newest), stores its body, and lets go of the ids and bodies that left
 * the window. Returns the newest number.
 */
const APPEND = `
local cap = tonumber(ARGV[1])
local n = (#ARGV - 1) / 3
local last = redis.call('INCRBY', KEYS[2], n)
local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #newest > 0 then
  local top = tonumber(string.match(newest[1][1], '^(%d+)'))
  if top > last - n then
    last = top + n
    redis.call('SET', KEYS[2], last)
  end
end
local first = last - n + 1
for i = 0, n - 1 do
  local seq = first + i
  local body = ARGV[3 * i + 4]
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', cap, seq .. '-0', 'm', ARGV[3 * i + 3])
  redis.call('ZADD', KEYS[3], seq, ARGV[3 * i + 2])
  if #body > 0 then redis.call('HSET', KEYS[4], seq, body) end
  if seq - cap > 0 then redis.call('HDEL', KEYS[4], seq - cap) end
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', last - cap)
return last
`;

/**
 * The window (ARGV[1]: its size): `last`, the newest number, and `count`, the entries in it. The
 * numbers kept are consecutive: those below the oldest were trimmed or deleted.
 */
const WINDOW = `
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local len = redis.call('XLEN', KEYS[1])
local oldest = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
local count = 0
if #oldest > 0 then
  local first = tonumber(string.match(oldest[1][1], '^(%d+)'))
  local from = math.max(first, last - tonumber(ARGV[1]) + 1)
  count = math.max(0, math.min(len, last - from + 1))
end
`;

/** {newest number, entries in the window}. */
const SIZE = `${WINDOW}
return {last, count}
`;

/**
 * `DELETE /history` for the fleet: answers the entries the window held; the counter stays. Announced
 * on ARGV[2], so every replica empties its own history too (shown while Redis is away).
 */
const CLEAR = `${WINDOW}
redis.call('DEL', KEYS[1], KEYS[3], KEYS[4])
redis.call('PUBLISH', ARGV[2], count)
return count
`;

/** What a read of the fleet's history hands the route: the copy to show and its page. */
export interface FleetPage {
  readonly copy: HistoryCopy;
  readonly page: HistoryPage | undefined;
  /** Lets go of what the copy holds against the budget (the route calls it when the answer ends). */
  release(): void;
}

/** The fleet's history, as the routes use it. */
export interface FleetHistory {
  /** Whether reads go to the fleet now: the store is up. */
  readonly up: boolean;
  /** One past the newest number handed out (cursors below it are valid). */
  nextSeq(): Promise<number>;
  /** A page of `limit` entries after `cursor`, filtered or not. */
  page(cursor: number | undefined, limit: number, filter: HistoryFilter): Promise<FleetPage>;
  count(filter: HistoryFilter): Promise<number>;
  /** A copy holding the entry with id `id`, if the window has it (`POST /replay`). */
  find(id: string): Promise<HistoryCopy>;
  /** Deletes the fleet's entries; answers how many the window held. */
  clear(): Promise<number>;
  /** Settles when the entries queued here so far are written (or failed): a read waits for them. */
  flushed(): Promise<void>;
  /** Entries that never reached the stream (the queue was full, or a write failed). */
  readonly dropped: number;
  close(): void;
}

/** The options of {@link startFleetHistory}. */
export interface FleetHistoryOptions {
  readonly client: Redis;
  /** This process's history: its settings, its view, and the entries it records. */
  readonly history: History;
  /** Whether the store is up now. */
  readonly up: () => boolean;
  /** Told when a write fails (the store is likely away). */
  readonly onError: (error: unknown) => void;
  /** Schedules a flush after this turn (setImmediate; tests may inject). */
  readonly schedule?: (flush: () => void) => void;
}

/** A number's stream id. */
const streamId = (seq: number) => `${seq}-0`;

/** An entry of XRANGE's answer, read back without its body. */
interface Row {
  readonly seq: number;
  readonly stored: StoredEntry;
  /** Bytes of its body kept: 0, none in the bodies hash. */
  readonly kept: number;
}

function rowOf([id, fields]: [string, string[]]): Row {
  const stored = JSON.parse(fields[1]!) as StoredEntry & { kept: number };
  return { seq: Number.parseInt(id, 10), stored, kept: stored.kept };
}

/** Starts writing `history`'s entries to the fleet's stream and answers the fleet's reads. */
export function startFleetHistory(options: FleetHistoryOptions): FleetHistory {
  const { client, history, up } = options;
  const capacity = history.capacity;
  const schedule = options.schedule ?? ((flush: () => void) => setImmediate(flush));
  const append = defineScript(client, KEYS.length, APPEND);
  const sizeOf = defineScript(client, KEYS.length, SIZE);
  const clear = defineScript(client, KEYS.length, CLEAR);
  // Bodies the copies of reads in progress hold, against ECHO_HISTORY_MAX_BYTES.
  let heldBytes = 0;
  let dropped = 0;
  let closed = false;

  // ---- Writing: a queue flushed once a turn, a batch per flush, one batch in flight. ----
  let pending: HistoryEntry[] = [];
  let scheduled = false;
  /** The batch on its way to Redis, settled (written or failed, its bookkeeping done) or not. */
  let current: Promise<void> | undefined;
  /** Entries queued so far, and those settled (written, failed or dropped): what `flushed` waits on. */
  let queued = 0;
  let settled = 0;

  const later = () => {
    if (scheduled || pending.length === 0) return;
    scheduled = true;
    schedule(flush);
  };

  const flush = () => {
    scheduled = false;
    if (closed || pending.length === 0 || current !== undefined) return;
    const batch = pending;
    pending = [];
    const args: Array<string | Buffer | number> = [capacity];
    for (const entry of batch) {
      const { stored, body } = storedForm(entry);
      args.push(stored.id, JSON.stringify({ ...stored, kept: body.byteLength }), body);
    }
    current = append(...KEYS, ...args).then(
      () => {
        settled += batch.length;
        current = undefined;
        later();
      },
      (error: unknown) => {
        dropped += batch.length;
        settled += batch.length;
        current = undefined;
        options.onError(error);
        later();
      },
    );
  };

  history.onComplete = (entry) => {
    if (closed || !up()) return;
    queued++;
    if (pending.length >= MAX_PENDING) {
      dropped++;
      settled++;
      return;
    }
    pending.push(entry);
    later();
  };

  /** Settles once every entry queued before the call is settled (each wait bounded by the command timeout). */
  const flushed = async () => {
    const target = queued;
    while (settled < target && !closed) {
      if (current === undefined) {
        if (pending.length === 0) return;
        flush();
      }
      await current;
    }
  };

  // ---- Reading. ----
  const size = async (): Promise<{ last: number; count: number }> => {
    const [last, count] = (await sizeOf(...KEYS, capacity)) as [number, number];
    return { last: Number(last), count: Number(count) };
  };

  /** The rows numbered `from` to `to` (both included), `count` at most. */
  const rows = async (from: number, to: number | '+', count: number): Promise<Row[]> => {
    const answer = (await client.xrange(
      HISTORY_KEYS.stream,
      streamId(from),
      to === '+' ? '+' : streamId(to),
      'COUNT',
      count,
    )) as Array<[string, string[]]>;
    return answer.map(rowOf);
  };

  /** The first number of the window when `last` is the newest. */
  const windowStart = (last: number) => Math.max(1, last - capacity + 1);

  /**
   * A copy of `chosen` with their bodies: in order, as many as ECHO_HISTORY_MAX_BYTES (less what
   * other reads hold) has room for, at least one. Answers the copy and how many it took.
   */
  const copyOf = async (chosen: readonly Row[], nextSeq: number) => {
    const copy = new HistoryCopy(nextSeq, history.viewOptions);
    let taken = 0;
    let bytes = 0;
    while (taken < chosen.length) {
      const kept = chosen[taken]!.kept;
      if (taken > 0 && heldBytes + bytes + kept > history.maxBytes) break;
      bytes += kept;
      taken++;
    }
    heldBytes += bytes;
    const withBody = chosen.slice(0, taken).filter((row) => row.kept > 0);
    const bodies =
      withBody.length === 0
        ? []
        : await client
            .hmgetBuffer(HISTORY_KEYS.bodies, ...withBody.map((row) => String(row.seq)))
            .catch((error: unknown) => {
              heldBytes -= bytes;
              throw error;
            });
    const bodyOf = new Map(withBody.map((row, i) => [row.seq, bodies[i] ?? EMPTY]));
    for (const row of chosen.slice(0, taken))
      copy.add(restoredEntry(row.stored, bodyOf.get(row.seq) ?? EMPTY, row.seq));
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      heldBytes -= bytes;
    };
    return { copy, taken, release };
  };

  /** The fleet's entries from `fromSeq` to `last`, a chunk at a time, as a filter's source. */
  const scanSource = (last: number, keep: (row: Row) => void): FilterSource => {
    const rowOfEntry = new WeakMap<HistoryEntry, Row>();
    const reader = new HistoryCopy(last + 1, history.viewOptions);
    return {
      reader,
      keep: (entry) => keep(rowOfEntry.get(entry)!),
      async scan(fromSeq, visit) {
        let from = Math.max(fromSeq, windowStart(last));
        while (from <= last) {
          const chunk = await rows(from, last, SCAN_CHUNK);
          if (chunk.length === 0) return;
          for (const row of chunk) {
            // Filters read no body: the entry is made without it.
            const entry = restoredEntry(row.stored, EMPTY, row.seq);
            rowOfEntry.set(entry, row);
            if (!visit(entry, row.seq)) return;
          }
          from = chunk.at(-1)!.seq + 1;
        }
      },
    };
  };

  return {
    get up() {
      return up();
    },
    get dropped() {
      return dropped;
    },
    async nextSeq() {
      const last = await client.get(HISTORY_KEYS.seq);
      return (last === null ? 0 : Number(last)) + 1;
    },
    async page(cursor, limit, filter) {
      const { last } = await size();
      const from = Math.max(cursor === undefined ? 0 : cursor + 1, windowStart(last));
      let chosen: Row[];
      let more: boolean;
      if (isFiltered(filter)) {
        const kept: Row[] = [];
        const found = await filteredPage(
          scanSource(last, (row) => kept.push(row)),
          from - 1,
          limit,
          filter,
        );
        chosen = kept;
        more = found?.nextCursor !== undefined;
        const { copy, taken, release } = await copyOf(chosen, last + 1);
        if (found === undefined) return { copy, page: undefined, release };
        const seqs = chosen.slice(0, taken).map((row) => row.seq);
        const cut = taken < chosen.length;
        return {
          copy,
          release,
          page: {
            firstSeq: seqs[0]!,
            lastSeq: seqs.at(-1)!,
            nextCursor: cut ? seqs.at(-1) : more ? found.nextCursor : undefined,
            matched: { seqs, test: found.matched!.test },
          },
        };
      }
      chosen = from > last ? [] : await rows(from, last, limit + 1);
      more = chosen.length > limit;
      if (more) chosen = chosen.slice(0, limit);
      const { copy, taken, release } = await copyOf(chosen, last + 1);
      const page = copy.page(undefined, taken);
      if (page === undefined) return { copy, page, release };
      const nextCursor = taken < chosen.length || more ? page.lastSeq : undefined;
      return { copy, release, page: { ...page, nextCursor } };
    },
    async count(filter) {
      if (!isFiltered(filter)) return (await size()).count;
      const { last } = await size();
      return countIn(
        scanSource(last, () => {}),
        filter,
      );
    },
    async find(id) {
      const [score, nextSeq] = await Promise.all([client.zscore(HISTORY_KEYS.ids, id), this.nextSeq()]);
      if (score === null) return new HistoryCopy(nextSeq, history.viewOptions);
      const seq = Number(score);
      const { copy, release } = await copyOf(await rows(seq, seq, 1), nextSeq);
      // A replay sends the body at once; the copy is let go with the request.
      release();
      return copy;
    },
    async clear() {
      return Number(await clear(...KEYS, capacity, HISTORY_KEYS.cleared));
    },
    flushed,
    close() {
      closed = true;
      if (history.onComplete !== undefined) history.onComplete = undefined;
    },
  };
}

const EMPTY = Buffer.alloc(0);
