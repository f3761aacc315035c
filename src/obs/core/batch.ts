/**
 * Recordings of a prom-client counter or histogram made on every request, at the cost of one `Map`
 * lookup each: they are kept per series (a labelset, named by a key the caller builds from its
 * label values) and handed to prom-client when the metric is read (its `collect`, which every
 * scrape, `get()` and the SLO engine run first) or, for a histogram, when a series' buffer of
 * observations fills. What a scrape shows is what recording each value at once would show; the
 * metric's `reset()` drops what waits too.
 *
 * Why: prom-client does per recording what a series only needs once (checks the label names,
 * builds the series' hash string, makes a closure and an object per `observe`, turns each bucket
 * bound into a string), and obs's cardinality guard admits every label of every recording. On a
 * request that does little else, those recordings were a tenth of the server's work (issue #13).
 *
 * A histogram's observations are added to prom-client's own store of the series when they are
 * handed over (what its `observe` does with each value, without the closure, the label check, the
 * key string and the guard's wrapper each time): prom-client 15's `hashMap`, found by its own
 * `hashObject`. A metric of another shape is observed value by value.
 *
 * A series that gives every label of the metric is batched; one that leaves a label out (obs's
 * context meter labels, `tag-meters`, add one filled from the request being recorded) is recorded
 * directly, so that the label is filled in the request's own context.
 *
 * A series is admitted through the registry's cardinality firewall once, when its key is first
 * seen ({@link CardinalityFirewall.keeps}); only a series all of whose values are kept as they are
 * is cached. A value past the cap is recorded directly, every time, so the guard rewrites and counts
 * it exactly as without a batch. At most `maxSeries` series are cached (default 2048); past that,
 * new series are recorded directly too. Memory stays bounded by the cap, never by traffic.
 */
import { createRequire } from 'node:module';
import type { Counter, Histogram } from 'prom-client';
import type { CardinalityFirewall } from './cardinality.ts';

/** What the batches take. */
export interface MeterBatchOptions {
  /** The firewall that guards the metric's registry (`registryGuard(registry)`); none: no guard. */
  readonly firewall?: CardinalityFirewall | undefined;
  /** Series cached at most; later ones are recorded directly. Default 2048. */
  readonly maxSeries?: number;
}

type Labels<L extends string> = Partial<Record<L, string | number>>;

const DEFAULT_MAX_SERIES = 2048;
/** Observations a histogram series holds before it hands them to prom-client. */
const OBSERVATIONS_PER_SERIES = 64;

/**
 * What obs reads and wraps of a prom-client metric: the configuration prom-client keeps on the
 * metric object itself (`lib/metric.js` assigns `name`, `labelNames`, `collect`, ...), which its
 * type declarations leave out; hence the casts from a metric `object` to it.
 */
interface Readable {
  collect?: (() => unknown) | undefined;
  reset?: () => unknown;
  readonly name: string;
  readonly labelNames?: readonly string[];
  readonly enableExemplars?: boolean;
}

/**
 * Runs `flush` before the metric's own `collect` whenever the metric is read, and `discard` before
 * its `reset()` (recordings made before a reset are not shown after it).
 */
function attach(prom: object, flush: () => void, discard: () => void): void {
  const metric = prom as Readable;
  const own = metric.collect;
  metric.collect = function (this: unknown) {
    flush();
    return own?.call(this);
  };
  const reset = metric.reset;
  if (typeof reset === 'function') {
    metric.reset = function (this: unknown) {
      discard();
      return reset.call(this);
    };
  }
}

/** The labels of a new series as prom-client keeps them, or undefined when one is not kept as is. */
function admitSeries<L extends string>(
  metric: Readable,
  labels: Labels<L>,
  firewall: CardinalityFirewall | undefined,
): Labels<L> | undefined {
  // A label the metric does not have goes the direct way, where prom-client throws at the call
  // (not at the next scrape).
  const names = metric.labelNames ?? [];
  // So does a series that leaves a label of the metric out: obs's context meter labels
  // (`tag-meters`) fill theirs from the request context of the recording, which a hand-over, made
  // at a scrape or in another request, does not have.
  for (const name of names) if (labels[name as L] === undefined) return undefined;
  const out: Labels<L> = {};
  for (const key in labels) {
    if (!Object.hasOwn(labels, key)) continue;
    if (!names.includes(key)) return undefined;
    const value = labels[key];
    if (value === undefined) continue;
    const meter = metric.name;
    if (firewall !== undefined && !firewall.keeps(meter, key, String(value))) return undefined;
    out[key] = value;
  }
  return out;
}

/**
 * The series of one batched metric by key: each admitted once ({@link admitSeries}); `null` for a
 * key recorded directly (a value past the cap, a label the metric lacks, a metric with exemplars).
 * At most `maxSeries` keys are kept; past that, new keys are recorded directly too.
 */
class SeriesMap<L extends string, S> {
  readonly #metric: Readable;
  readonly #firewall: CardinalityFirewall | undefined;
  readonly #max: number;
  readonly #make: (labels: Labels<L>) => S;
  readonly #series = new Map<string, S | null>();

  constructor(metric: object, options: MeterBatchOptions, make: (labels: Labels<L>) => S) {
    this.#metric = metric as Readable;
    this.#firewall = options.firewall;
    this.#max = options.maxSeries ?? DEFAULT_MAX_SERIES;
    this.#make = make;
  }

  /** The series `key` names, made on first sight; null when its recordings go the direct way. */
  get(key: string, labels: Labels<L>): S | null {
    let series = this.#series.get(key);
    if (series !== undefined) return series;
    if (this.#series.size >= this.#max) return null;
    const admitted =
      this.#metric.enableExemplars === true ? undefined : admitSeries(this.#metric, labels, this.#firewall);
    series = admitted === undefined ? null : this.#make(admitted);
    // A key past the cap is remembered as such (null), so it is not admitted again on every
    // recording; the guard still sees each of its recordings.
    this.#series.set(key, series);
    return series;
  }

  *[Symbol.iterator](): IterableIterator<S> {
    for (const series of this.#series.values()) if (series !== null) yield series;
  }
}

interface CounterSeries<L extends string> {
  readonly labels: Labels<L>;
  pending: number;
}

/** Increments of a counter by one, batched per series; see the module comment. */
export class CounterBatch<L extends string> {
  readonly #counter: Counter<L>;
  readonly #series: SeriesMap<L, CounterSeries<L>>;

  constructor(counter: Counter<L>, options: MeterBatchOptions = {}) {
    this.#counter = counter;
    this.#series = new SeriesMap(counter, options, (labels) => ({ labels, pending: 0 }));
    attach(
      counter,
      () => this.flush(),
      () => {
        for (const series of this.#series) series.pending = 0;
      },
    );
  }

  /**
   * Adds 1 to the series `labels` name. `key` must be the same string for the same labels and a
   * different one for different labels (the caller joins the values with a separator they cannot
   * hold).
   */
  inc(key: string, labels: Labels<L>): void {
    const series = this.#series.get(key, labels);
    if (series === null) this.#counter.inc(labels as never);
    else series.pending += 1;
  }

  /** Hands every pending increment to the counter. */
  flush(): void {
    for (const series of this.#series) {
      if (series.pending === 0) continue;
      const n = series.pending;
      series.pending = 0;
      this.#counter.inc(series.labels as never, n);
    }
  }
}

interface HistogramSeries<L extends string> {
  readonly labels: Labels<L>;
  readonly values: Float64Array;
  n: number;
  /**
   * prom-client's key of the series in its store, once worked out ({@link PromHistogramStore});
   * null when the series' labels do not name every label of the metric (one that gained a context
   * label after the series was cached): its observations go through `observe`.
   */
  hash?: string | null;
}

/** One series as prom-client 15 keeps it in a histogram's `hashMap` (`lib/histogram.js`). */
interface PromHistogramEntry {
  readonly bucketValues: Record<number, number>;
  sum: number;
  count: number;
}

/**
 * What prom-client 15 keeps on a histogram object: its series by key (`hashMap`, the key built by
 * `lib/util.js`'s `hashObject` from the sorted label names) and its bucket bounds. A flush adds a
 * series' observations there itself, as prom-client's `observe` would one by one, rather than
 * calling `observe` (a closure, an object, the label check and the key string each time, and the
 * cardinality guard's wrapper around it) per observation.
 */
interface PromHistogramStore {
  readonly hashMap: Record<string, PromHistogramEntry | undefined>;
  readonly upperBounds: readonly number[];
  readonly sortedLabelNames: readonly string[];
  zero(labels: object): void;
}

type HashObject = (labels: object, labelNames: readonly string[]) => string;

/** prom-client's own `hashObject`, when the prom-client this module resolves has it where 15.x does. */
const promHashObject: HashObject | undefined = (() => {
  try {
    const util = createRequire(import.meta.url)('prom-client/lib/util.js') as { hashObject?: unknown };
    return typeof util.hashObject === 'function' ? (util.hashObject as HashObject) : undefined;
  } catch {
    return undefined;
  }
})();

/**
 * `histogram` as a {@link PromHistogramStore} when it has that shape (prom-client 15), else
 * undefined: its observations are then handed over by `observe`, one by one.
 */
function promStore(histogram: object): PromHistogramStore | undefined {
  const h = histogram as Partial<Record<keyof PromHistogramStore | 'observeWithoutExemplar', unknown>>;
  if (
    promHashObject === undefined ||
    // prom-client 15's mark (14 has no exemplars, and keys its series otherwise)
    typeof h.observeWithoutExemplar !== 'function' ||
    typeof h.hashMap !== 'object' ||
    h.hashMap === null ||
    !Array.isArray(h.upperBounds) ||
    !h.upperBounds.every((b) => typeof b === 'number') ||
    !Array.isArray(h.sortedLabelNames) ||
    typeof h.zero !== 'function'
  ) {
    return undefined;
  }
  return histogram as PromHistogramStore;
}

/** prom-client's bucket of `value`: the first bound at or above it, -1 past the last (`findBound`). */
function boundOf(upperBounds: readonly number[], value: number): number {
  for (let i = 0; i < upperBounds.length; i++) {
    const bound = upperBounds[i]!;
    if (value <= bound) return bound;
  }
  return -1;
}

/** Observations of a histogram, batched per series; see the module comment. */
export class HistogramBatch<L extends string> {
  readonly #histogram: Histogram<L>;
  readonly #store: PromHistogramStore | undefined;
  readonly #series: SeriesMap<L, HistogramSeries<L>>;

  constructor(histogram: Histogram<L>, options: MeterBatchOptions = {}) {
    this.#histogram = histogram;
    this.#store = promStore(histogram);
    this.#series = new SeriesMap(histogram, options, (labels) => ({
      labels,
      values: new Float64Array(OBSERVATIONS_PER_SERIES),
      n: 0,
    }));
    attach(
      histogram,
      () => this.flush(),
      () => {
        for (const series of this.#series) series.n = 0;
      },
    );
  }

  /** Observes `value` in the series `labels` name; `key` as for {@link CounterBatch.inc}. */
  observe(key: string, labels: Labels<L>, value: number): void {
    const series = this.#series.get(key, labels);
    // prom-client throws on a value that is not a finite number: let it, at the call, not later.
    if (series === null || !Number.isFinite(value)) {
      this.#histogram.observe(labels as never, value);
      return;
    }
    series.values[series.n++] = value;
    if (series.n === OBSERVATIONS_PER_SERIES) this.#flushSeries(series);
  }

  /** Hands every pending observation to the histogram. */
  flush(): void {
    for (const series of this.#series) this.#flushSeries(series);
  }

  #flushSeries(series: HistogramSeries<L>): void {
    const n = series.n;
    if (n === 0) return;
    series.n = 0;
    const entry = this.#entryOf(series);
    if (entry === undefined) {
      for (let i = 0; i < n; i++) this.#histogram.observe(series.labels as never, series.values[i]!);
      return;
    }
    // What prom-client's observe does with each value, in the same order (the sum too, so that it
    // rounds as it would).
    const { upperBounds } = this.#store!;
    const buckets = entry.bucketValues;
    for (let i = 0; i < n; i++) {
      const value = series.values[i]!;
      const bound = boundOf(upperBounds, value);
      entry.sum += value;
      entry.count += 1;
      if (Object.hasOwn(buckets, bound)) buckets[bound]! += 1;
    }
  }

  /** prom-client's entry of the series, made (with `zero`) when it has none yet; undefined: observe. */
  #entryOf(series: HistogramSeries<L>): PromHistogramEntry | undefined {
    const store = this.#store;
    if (store === undefined) return undefined;
    if (series.hash === undefined) {
      const labels = series.labels as Record<string, unknown>;
      series.hash = store.sortedLabelNames.every((name) => labels[name] !== undefined)
        ? promHashObject!(labels, store.sortedLabelNames)
        : null;
    }
    if (series.hash === null) return undefined;
    let entry = store.hashMap[series.hash];
    if (entry === undefined) {
      store.zero(series.labels);
      entry = store.hashMap[series.hash];
    }
    if (
      entry === undefined ||
      typeof entry.sum !== 'number' ||
      typeof entry.count !== 'number' ||
      typeof entry.bucketValues !== 'object' ||
      entry.bucketValues === null
    ) {
      return undefined;
    }
    return entry;
  }
}
