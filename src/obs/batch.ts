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
 * A series is admitted through the registry's cardinality firewall once, when its key is first
 * seen ({@link CardinalityFirewall.keeps}); only a series all of whose values are kept as they are
 * is cached. A value past the cap is recorded directly, every time, so the guard rewrites and counts
 * it exactly as without a batch. At most `maxSeries` series are cached (default 2048); past that,
 * new series are recorded directly too. Memory stays bounded by the cap, never by traffic.
 */
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
function attach(metric: Readable, flush: () => void, discard: () => void): void {
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

interface CounterSeries<L extends string> {
  readonly labels: Labels<L>;
  pending: number;
}

/** Increments of a counter by one, batched per series; see the module comment. */
export class CounterBatch<L extends string> {
  readonly #counter: Counter<L>;
  readonly #firewall: CardinalityFirewall | undefined;
  readonly #max: number;
  readonly #series = new Map<string, CounterSeries<L> | null>();

  constructor(counter: Counter<L>, options: MeterBatchOptions = {}) {
    this.#counter = counter;
    this.#firewall = options.firewall;
    this.#max = options.maxSeries ?? DEFAULT_MAX_SERIES;
    attach(
      counter as unknown as Readable,
      () => this.flush(),
      () => {
        for (const series of this.#series.values()) if (series !== null) series.pending = 0;
      },
    );
  }

  /**
   * Adds 1 to the series `labels` name. `key` must be the same string for the same labels and a
   * different one for different labels (the caller joins the values with a separator they cannot
   * hold).
   */
  inc(key: string, labels: Labels<L>): void {
    let series = this.#series.get(key);
    if (series === undefined) {
      const admitted =
        this.#series.size < this.#max && (this.#counter as unknown as Readable).enableExemplars !== true
          ? admitSeries(this.#counter as unknown as Readable, labels, this.#firewall)
          : undefined;
      series = admitted === undefined ? null : { labels: admitted, pending: 0 };
      // A series past the cap is remembered as such (null) while there is room, so its key is
      // not admitted again on every recording; the guard still sees each of its recordings.
      if (this.#series.size < this.#max) this.#series.set(key, series);
    }
    if (series === null) {
      this.#counter.inc(labels as never);
      return;
    }
    series.pending += 1;
  }

  /** Hands every pending increment to the counter. */
  flush(): void {
    for (const series of this.#series.values()) {
      if (series === null || series.pending === 0) continue;
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
}

/** Observations of a histogram, batched per series; see the module comment. */
export class HistogramBatch<L extends string> {
  readonly #histogram: Histogram<L>;
  readonly #firewall: CardinalityFirewall | undefined;
  readonly #max: number;
  readonly #series = new Map<string, HistogramSeries<L> | null>();

  constructor(histogram: Histogram<L>, options: MeterBatchOptions = {}) {
    this.#histogram = histogram;
    this.#firewall = options.firewall;
    this.#max = options.maxSeries ?? DEFAULT_MAX_SERIES;
    attach(
      histogram as unknown as Readable,
      () => this.flush(),
      () => {
        for (const series of this.#series.values()) if (series !== null) series.n = 0;
      },
    );
  }

  /** Observes `value` in the series `labels` name; `key` as for {@link CounterBatch.inc}. */
  observe(key: string, labels: Labels<L>, value: number): void {
    let series = this.#series.get(key);
    if (series === undefined) {
      const admitted =
        this.#series.size < this.#max && (this.#histogram as unknown as Readable).enableExemplars !== true
          ? admitSeries(this.#histogram as unknown as Readable, labels, this.#firewall)
          : undefined;
      series =
        admitted === undefined
          ? null
          : { labels: admitted, values: new Float64Array(OBSERVATIONS_PER_SERIES), n: 0 };
      if (this.#series.size < this.#max) this.#series.set(key, series);
    }
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
    for (const series of this.#series.values()) if (series !== null) this.#flushSeries(series);
  }

  #flushSeries(series: HistogramSeries<L>): void {
    const n = series.n;
    series.n = 0;
    for (let i = 0; i < n; i++) this.#histogram.observe(series.labels as never, series.values[i]!);
  }
}
