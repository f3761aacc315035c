/**
 * The console's live log at its source: the rows of requests as they finish, handed to each open
 * console. It costs nothing while no console is open: it watches history's completions
 * ({@link History.completionWatchers}) only from the first subscriber to the last, and makes each
 * row once for every subscriber. Each subscriber holds at most `maxQueuedRows` rows not yet sent;
 * past that a row is dropped and counted for it alone, so a slow console costs bounded memory and
 * slows no other.
 */
import { History, type HistoryEntry } from '../history.ts';
import type { LiveRow } from './live-row.ts';

/** Rows one console may have waiting to be sent; past this they are dropped and counted. */
export const MAX_QUEUED_ROWS = 1000;
/** Rows a console gets on connecting: the latest finished requests history still holds. */
export const BACKFILL_ROWS = 100;

/** One console's place in the feed. */
export class LiveSubscription {
  #queue: LiveRow[] = [];
  #dropped = 0;
  #open = true;
  readonly #maxQueued: number;
  readonly #onRows: () => void;
  readonly #leave: (subscription: LiveSubscription) => void;

  constructor(maxQueued: number, onRows: () => void, leave: (subscription: LiveSubscription) => void) {
    this.#maxQueued = maxQueued;
    this.#onRows = onRows;
    this.#leave = leave;
  }

  /** Rows dropped so far because this console did not keep up. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Rows waiting. */
  get queued(): number {
    return this.#queue.length;
  }

  /** Queues a row (or drops and counts it when the queue is full); tells the console when it was empty. */
  offer(row: LiveRow): void {
    if (!this.#open) return;
    if (this.#queue.length >= this.#maxQueued) {
      this.#dropped++;
      return;
    }
    this.#queue.push(row);
    if (this.#queue.length === 1) this.#onRows();
  }

  /** Counts rows lost before they could be queued. */
  lost(rows: number): void {
    this.#dropped += rows;
  }

  /** Takes at most `max` waiting rows, oldest first. */
  take(max: number): LiveRow[] {
    if (max >= this.#queue.length) {
      const rows = this.#queue;
      this.#queue = [];
      return rows;
    }
    return this.#queue.splice(0, max);
  }

  /** Leaves the feed; the last to leave stops the feed watching history. Idempotent. */
  close(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#queue = [];
    this.#leave(this);
  }
}

export class LiveFeed {
  readonly #history: History;
  readonly #maxQueued: number;
  readonly #subscribers = new Set<LiveSubscription>();
  readonly #watch = (entry: HistoryEntry): void => {
    let row: LiveRow;
    try {
      row = this.#rowOf(entry);
    } catch {
      // A watcher never throws into the request's completion: the row is counted as lost.
      for (const subscriber of this.#subscribers) subscriber.lost(1);
      return;
    }
    for (const subscriber of this.#subscribers) subscriber.offer(row);
  };

  constructor(history: History, maxQueuedRows: number = MAX_QUEUED_ROWS) {
    this.#history = history;
    this.#maxQueued = maxQueuedRows;
  }

  /** Consoles connected now. */
  get subscribers(): number {
    return this.#subscribers.size;
  }

  /** Joins the feed; `onRows` is called when a row arrives and none was waiting. */
  subscribe(onRows: () => void): LiveSubscription {
    const subscription = new LiveSubscription(this.#maxQueued, onRows, (s) => this.#leave(s));
    if (this.#subscribers.size === 0) this.#history.completionWatchers.add(this.#watch);
    this.#subscribers.add(subscription);
    return subscription;
  }

  #leave(subscription: LiveSubscription): void {
    this.#subscribers.delete(subscription);
    if (this.#subscribers.size === 0) this.#history.completionWatchers.delete(this.#watch);
  }

  /** The rows of the latest `limit` finished requests history holds, oldest first. */
  recent(limit: number = BACKFILL_ROWS): LiveRow[] {
    const history = this.#history;
    const rows: LiveRow[] = [];
    let seq = Math.max(0, history.nextSeq - limit);
    while (seq < history.nextSeq) {
      const entry = history.atOrAfter(seq);
      if (entry === undefined) break;
      seq = History.seqOf(entry) + 1;
      if (entry.status !== null) rows.push(this.#rowOf(entry));
    }
    return rows;
  }

  #rowOf(entry: HistoryEntry): LiveRow {
    return liveRowOf(entry, History.seqOf(entry), History.timeMsOf(entry), this.#history.shownPath(entry));
  }
}

/** The row of a finished entry; `shownPath` is its path as history shows it, when that differs. */
export function liveRowOf(entry: HistoryEntry, seq: number, timeMs: number, shownPath?: string): LiveRow {
  const session = entry.headers['x-echo-session'];
  return {
    id: entry.id,
    seq,
    timeMs,
    method: entry.method,
    path: shownPath ?? entry.path,
    status: entry.status ?? 0,
    durationMs: entry.duration_ms ?? 0,
    faults: entry.faults,
    ...(typeof session === 'string' ? { session } : {}),
    protocol: entry.protocol,
    ...(entry.upstream === undefined
      ? {}
      : { upstream: { url: entry.upstream.url, status: entry.upstream.status } }),
    ...(entry.grpc === undefined ? {} : { grpcStatus: entry.grpc.status }),
  };
}
