/**
 * The console's charts at their source (issue #37, docs/adr/0059): one point a second of the
 * requests that finished in it (their rate, p50 and p99 latency, status classes and how many got
 * faults), kept for the last {@link CHART_WINDOW_SECONDS}. Like the live log it costs nothing while
 * no console is open: it watches history's completions ({@link History.completionWatchers}) and
 * ticks once a second only from the first subscriber to the last. Latencies go in a fixed table of
 * buckets (exact below 64 ms, within about 3% above), so a second of any traffic is bounded memory.
 */
import type { History, HistoryEntry } from '../history.ts';
import type { ChartPoint } from './chart-point.ts';

/** Seconds of points kept: what a console shows when it opens, and the page's window. */
export const CHART_WINDOW_SECONDS = 300;
/** How often a point is made while a console is open. */
export const CHART_TICK_MS = 1000;

/** Latencies below this (in ms) have a bucket each; above, 32 buckets per power of two. */
const EXACT_MS = 64;
const SUB_BUCKETS = 32;
/** Enough buckets for any duration up to 2^31 ms. */
const BUCKETS = EXACT_MS + (31 - 6) * SUB_BUCKETS;

/** The bucket of a duration in whole milliseconds. */
export function latencyBucket(ms: number): number {
  const v = Math.min(Math.max(0, Math.floor(ms)), 2 ** 31 - 1);
  if (v < EXACT_MS) return v;
  const exponent = 31 - Math.clz32(v);
  const sub = (v >>> (exponent - 5)) & (SUB_BUCKETS - 1);
  return EXACT_MS + (exponent - 6) * SUB_BUCKETS + sub;
}

/** What a bucket stands for: its value below 64 ms, its middle above. */
export function bucketValue(bucket: number): number {
  if (bucket < EXACT_MS) return bucket;
  const exponent = Math.floor((bucket - EXACT_MS) / SUB_BUCKETS) + 6;
  const sub = (bucket - EXACT_MS) % SUB_BUCKETS;
  const low = (SUB_BUCKETS + sub) * 2 ** (exponent - 5);
  return low + 2 ** (exponent - 6);
}

export interface ChartSeriesOptions {
  /** The clock, epoch milliseconds; default `Date.now`. */
  readonly now?: () => number;
  /** Starts the ticking while subscribed; default a `setInterval` of {@link CHART_TICK_MS}, unref'd. */
  readonly every?: (tick: () => void) => () => void;
  readonly windowSeconds?: number;
}

function everySecond(tick: () => void): () => void {
  const timer = setInterval(tick, CHART_TICK_MS);
  timer.unref();
  return () => clearInterval(timer);
}

export class ChartSeries {
  readonly #history: History;
  readonly #now: () => number;
  readonly #every: (tick: () => void) => () => void;
  readonly #window: number;
  readonly #listeners = new Set<(point: ChartPoint) => void>();
  /** The points of the last window, oldest first; at most one per second. */
  #points: ChartPoint[] = [];
  #stop: (() => void) | undefined;
  /** When the second being counted began. */
  #since = 0;
  // The second being counted.
  #count = 0;
  readonly #classes = [0, 0, 0, 0, 0];
  #faulted = 0;
  readonly #latency = new Uint32Array(BUCKETS);
  readonly #watch = (entry: HistoryEntry): void => {
    this.#count++;
    const cls = Math.floor((entry.status ?? 0) / 100);
    if (cls >= 1 && cls <= 5) this.#classes[cls - 1]!++;
    if (entry.faults.length > 0) this.#faulted++;
    this.#latency[latencyBucket(entry.duration_ms ?? 0)]!++;
  };

  constructor(history: History, options: ChartSeriesOptions = {}) {
    this.#history = history;
    this.#now = options.now ?? Date.now;
    this.#every = options.every ?? everySecond;
    this.#window = options.windowSeconds ?? CHART_WINDOW_SECONDS;
  }

  /** Whether it watches history and ticks now (a console is open). */
  get active(): boolean {
    return this.#stop !== undefined;
  }

  /** The points of the last window, oldest first. */
  points(): ChartPoint[] {
    const oldest = Math.floor(this.#now() / 1000) - this.#window;
    return this.#points.filter((p) => p.t > oldest);
  }

  /**
   * Joins: `listener` gets each point as it is made. The first subscriber starts the watching and
   * the ticking; the returned function leaves, and the last to leave stops both. The points made
   * so far are kept (a console that opens later sees them, with the time nobody watched as a gap).
   */
  subscribe(listener: (point: ChartPoint) => void): () => void {
    this.#listeners.add(listener);
    if (this.#stop === undefined) {
      this.#clear();
      this.#since = this.#now();
      this.#history.completionWatchers.add(this.#watch);
      this.#stop = this.#every(() => this.tick());
    }
    let joined = true;
    return () => {
      if (!joined) return;
      joined = false;
      this.#listeners.delete(listener);
      if (this.#listeners.size > 0 || this.#stop === undefined) return;
      this.#stop();
      this.#stop = undefined;
      this.#history.completionWatchers.delete(this.#watch);
      this.#clear();
    };
  }

  /** Closes the second being counted into a point and hands it to every subscriber. */
  tick(): void {
    if (this.#stop === undefined) return;
    const now = this.#now();
    const elapsedMs = Math.max(1, now - this.#since);
    const point: ChartPoint = {
      t: Math.floor(now / 1000),
      requests: this.#count,
      rps: Math.round((this.#count * 1000 * 100) / elapsedMs) / 100,
      p50: this.#quantile(0.5),
      p99: this.#quantile(0.99),
      status: [...this.#classes],
      faulted: this.#faulted,
    };
    this.#clear();
    this.#since = now;
    const last = this.#points.at(-1);
    if (last !== undefined && last.t === point.t) this.#points[this.#points.length - 1] = point;
    else this.#points.push(point);
    const oldest = point.t - this.#window;
    while (this.#points.length > 0 && this.#points[0]!.t <= oldest) this.#points.shift();
    for (const listener of this.#listeners) listener(point);
  }

  /** The latency below which `q` of the second's requests finished; null when none did. */
  #quantile(q: number): number | null {
    if (this.#count === 0) return null;
    const rank = Math.max(1, Math.ceil(q * this.#count));
    let seen = 0;
    for (let bucket = 0; bucket < BUCKETS; bucket++) {
      seen += this.#latency[bucket]!;
      if (seen >= rank) return bucketValue(bucket);
    }
    return null;
  }

  #clear(): void {
    this.#count = 0;
    this.#classes.fill(0);
    this.#faulted = 0;
    this.#latency.fill(0);
  }
}
