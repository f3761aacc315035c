/**
 * The cardinality firewall over every meter and label, on both metric paths:
 *
 * - prom-client: {@link guardRegistry} wraps every metric of a registry, those already there and
 *   those registered later, so that every label value given to `inc`, `dec`, `set`, `observe`,
 *   `zero`, `labels(...)` and `startTimer` passes {@link CardinalityFirewall.admitRecording} under
 *   the metric's name and the label's name;
 * - the OpenTelemetry metrics API: {@link guardMeterProvider} wraps a `MeterProvider` so that the
 *   attribute values of every instrument of every meter (synchronous, observable and batch
 *   callbacks) pass the firewall under the instrument's name and the attribute's key.
 *
 * The firewall reads the enforcement mode on each value: ENFORCING records the overflow value,
 * DRY_RUN records the value itself; both count `obs_cardinality_overflow_total{meter,tag_key}`.
 * A call site that still admits its labels itself is counted once (see
 * {@link CardinalityFirewall.admitRecording}). Only `@opentelemetry/api` types are used here: the
 * application brings the SDK.
 */
import type {
  Attributes,
  BatchObservableCallback,
  BatchObservableResult,
  Meter,
  MeterOptions,
  MeterProvider,
  MetricOptions,
  Observable,
  ObservableCallback,
  ObservableResult,
  Counter as OtelCounter,
  Gauge as OtelGauge,
  Histogram as OtelHistogram,
  UpDownCounter,
} from '@opentelemetry/api';
import { Counter, type Registry } from 'prom-client';
import { CARDINALITY_OVERFLOW_METRIC, type CardinalityFirewall } from './cardinality.ts';

type Fn = (this: unknown, ...args: unknown[]) => unknown;
type LabelObject = Record<string, unknown>;

/** A prom-client metric as seen from here: a name, label names, and methods looked up by name. */
interface PromMetric {
  readonly name: string;
  readonly labelNames?: readonly string[];
  readonly enableExemplars?: boolean;
  [method: string]: unknown;
}

const GUARDED = Symbol.for('echo-chaos.obs.cardinality-guarded');
const guardedRegistries = new WeakMap<Registry, CardinalityFirewall>();

function isLabelObject(value: unknown): value is LabelObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The label object with each value passed through the firewall. Returns the same object when no
 * value changed, a copy otherwise; values that are not text stay as they are when admitted.
 */
function admitLabelObject<T>(firewall: CardinalityFirewall, meter: string, labels: T): T {
  if (!isLabelObject(labels)) return labels;
  let out: LabelObject | undefined;
  // for-in with an own-property check rather than Object.keys: no array per recording.
  for (const key in labels) {
    if (!Object.hasOwn(labels, key)) continue;
    const value = labels[key];
    if (value === undefined || value === null) continue;
    const text = Array.isArray(value) ? JSON.stringify(value) : String(value);
    const admitted = firewall.admitRecording(meter, key, text);
    if (admitted !== text) {
      out ??= { ...labels };
      out[key] = admitted;
    }
  }
  return (out ?? labels) as T;
}

/**
 * Replaces `metric[key]` with an accessor that hands out a guarded version of whatever function
 * the property holds. prom-client assigns `inc` (counters) and `observe` (histograms) in the
 * constructor, after the registry saw the metric: the setter takes that assignment in.
 */
function wrapMethod(metric: PromMetric, key: string, guard: (raw: Fn) => Fn): void {
  const own = Object.getOwnPropertyDescriptor(metric, key);
  let current = own !== undefined && 'value' in own ? (own.value as Fn | undefined) : undefined;
  let cache: { raw: Fn; guarded: Fn } | undefined;
  Object.defineProperty(metric, key, {
    configurable: true,
    enumerable: own?.enumerable ?? false,
    get() {
      const raw =
        current ?? (Reflect.get(Object.getPrototypeOf(metric) as object, key, metric) as Fn | undefined);
      if (typeof raw !== 'function') return raw;
      if (cache?.raw !== raw) cache = { raw, guarded: guard(raw) };
      return cache.guarded;
    },
    set(value: Fn) {
      current = value;
    },
  });
}

/** The kinds of prom-client metric obs wraps. */
export type PromMetricKind = 'counter' | 'histogram' | 'gauge' | 'summary';

/**
 * The kind of a prom-client 15 metric, told by its methods; undefined for anything else (a metric
 * of another major version of prom-client, whose methods obs does not know how to wrap).
 */
export function promMetricKind(metric: object): PromMetricKind | undefined {
  if ('incWithoutExemplar' in metric) return 'counter';
  if ('observeWithoutExemplar' in metric) return 'histogram';
  if ('setToCurrentTime' in metric) return 'gauge';
  // Told by its prototype's methods: a metric is guarded while its base constructor registers it,
  // before the subclass set its own fields. A summary observes and has no `zero`.
  if (typeof (metric as { readonly observe?: unknown }).observe === 'function' && !('zero' in metric)) {
    return 'summary';
  }
  return undefined;
}

/**
 * Guards one prom-client metric: every label value of every recording passes `firewall`. A no-op
 * for a metric already guarded and for the overflow counter itself (which would recurse). Returns
 * false when the metric is not one obs knows how to guard ({@link promMetricKind}): it is left as
 * it was.
 */
export function guardMetric(metric: object, firewall: CardinalityFirewall): boolean {
  const m = metric as PromMetric;
  if (typeof m.name !== 'string' || m.name === CARDINALITY_OVERFLOW_METRIC || m[GUARDED as never])
    return true;
  const kind = promMetricKind(m);
  if (kind === undefined) return false;
  Object.defineProperty(m, GUARDED, { value: true });
  const name = m.name;
  const admit = <T>(labels: T): T => admitLabelObject(firewall, name, labels);
  // Set while a recording whose labels were admitted already runs on, so they are not admitted twice.
  let admitted = 0;

  // A recording method whose first argument is a label object (or a number, for no labels).
  const plain = (raw: Fn): Fn =>
    function (this: unknown, ...args: unknown[]) {
      if (admitted === 0 && isLabelObject(args[0])) args[0] = admit(args[0]);
      return raw.apply(this, args);
    };
  // `inc`/`observe` of a metric with exemplars take `{ labels, value, exemplarLabels }`.
  const recording = (raw: Fn): Fn =>
    function (this: unknown, ...args: unknown[]) {
      const first = args[0];
      if (
        admitted === 0 &&
        m.enableExemplars === true &&
        isLabelObject(first) &&
        isLabelObject(first.labels)
      ) {
        args[0] = { ...first, labels: admit(first.labels) };
      } else if (admitted === 0 && m.enableExemplars !== true && isLabelObject(first)) {
        args[0] = admit(first);
      }
      return raw.apply(this, args);
    };
  // Histogram and summary `labels(...)` bind the labels into module functions that skip `observe`.
  const labels = (raw: Fn): Fn =>
    function (this: unknown, ...args: unknown[]) {
      const names = m.labelNames ?? [];
      let given: LabelObject;
      if (isLabelObject(args[0])) given = args[0];
      else if (args.length === names.length) given = Object.fromEntries(names.map((n, i) => [n, args[i]]));
      else return raw.apply(this, args); // prom-client reports the wrong count of arguments
      const child = raw.call(this, admit(given)) as { startTimer?: () => (end?: LabelObject) => number };
      const start = child.startTimer;
      if (typeof start !== 'function') return child;
      return {
        ...child,
        startTimer: () => {
          const end = start();
          return (endLabels?: LabelObject) => {
            const more = endLabels === undefined ? undefined : admit(endLabels);
            admitted++;
            try {
              return end(more);
            } finally {
              admitted--;
            }
          };
        },
      };
    };

  if (kind === 'counter') {
    // Counter: `labels(...)` binds `this.inc`, which is guarded.
    wrapMethod(m, 'inc', recording);
  } else if (kind === 'histogram') {
    // Histogram: `startTimer` ends in `this.observe`, which is guarded.
    wrapMethod(m, 'observe', recording);
    wrapMethod(m, 'zero', plain);
    wrapMethod(m, 'labels', labels);
  } else if (kind === 'gauge') {
    // Gauge: `setToCurrentTime`, `startTimer` and `labels(...)` all end in `set`, `inc` or `dec`.
    for (const key of ['set', 'inc', 'dec']) wrapMethod(m, key, plain);
  } else {
    // Summary.
    wrapMethod(m, 'observe', plain);
    wrapMethod(m, 'labels', labels);
  }
  return true;
}

/** What {@link guardRegistry} takes. */
export interface GuardRegistryOptions {
  /**
   * Create `obs_cardinality_overflow_total{meter,tag_key}` on the registry and count every overflow
   * of `firewall` in it. Default: true when the registry has no metric of that name (an obs core's
   * registry has it, counted already).
   */
  readonly countOverflow?: boolean;
  /**
   * Metrics left unguarded: those whose label values are a fixed set in code (an obs core's
   * `obs_enforcement_mode{mode}`, `obs_config_info{hash}`), which a small cap must not rewrite.
   */
  readonly exempt?: readonly string[];
  /**
   * Called once for each metric obs cannot guard (not a prom-client 15 metric: another major
   * version's, or one that throws when wrapped); it records unguarded.
   */
  readonly onUnguarded?: (meter: string) => void;
}

/**
 * Guards every metric of `registry`, those it holds and those registered later (its
 * `registerMetric` is wrapped): each label value passes `firewall` under the metric's name. A
 * registry is guarded once; a second call is a no-op. Returns the registry.
 */
export function guardRegistry(
  registry: Registry,
  firewall: CardinalityFirewall,
  options: GuardRegistryOptions = {},
): Registry {
  if (guardedRegistries.has(registry)) return registry;
  guardedRegistries.set(registry, firewall);
  const exempt = new Set(options.exempt ?? []);
  const guard = (metric: object) => {
    if (exempt.has((metric as { readonly name?: unknown }).name as string)) return;
    let guarded = false;
    try {
      guarded = guardMetric(metric, firewall);
    } catch {
      // a metric obs cannot wrap is recorded unguarded rather than failing its constructor
    }
    if (!guarded) {
      try {
        options.onUnguarded?.(String((metric as { readonly name?: unknown }).name));
      } catch {
        // never fails the metric's constructor
      }
    }
  };
  const register = registry.registerMetric;
  registry.registerMetric = function (this: Registry, metric) {
    register.call(this, metric);
    guard(metric);
  };
  for (const metric of registry.getMetricsAsArray()) guard(metric);
  const countOverflow =
    options.countOverflow ?? registry.getSingleMetric(CARDINALITY_OVERFLOW_METRIC) === undefined;
  if (countOverflow) {
    const overflow = new Counter({
      name: CARDINALITY_OVERFLOW_METRIC,
      help: 'Label values past the cardinality cap, by meter and label (rewritten in ENFORCING, let through in DRY_RUN)',
      labelNames: ['meter', 'tag_key'],
      registers: [registry],
    });
    firewall.addOverflowListener((meter, tagKey) => overflow.inc({ meter, tag_key: tagKey }));
  }
  return registry;
}

/** The firewall guarding `registry`, when {@link guardRegistry} guarded it. */
export function registryGuard(registry: Registry): CardinalityFirewall | undefined {
  return guardedRegistries.get(registry);
}

/**
 * A `MeterProvider` whose meters guard every attribute of every instrument with `firewall`. Hand
 * it to the API (`metrics.setGlobalMeterProvider(guardMeterProvider(sdkProvider, firewall))`) and
 * keep the SDK's provider for `forceFlush` and `shutdown`.
 */
export function guardMeterProvider(provider: MeterProvider, firewall: CardinalityFirewall): MeterProvider {
  const meters = new WeakMap<Meter, Meter>();
  return {
    getMeter(name: string, version?: string, options?: MeterOptions): Meter {
      const meter = provider.getMeter(name, version, options);
      let guarded = meters.get(meter);
      if (guarded === undefined) {
        guarded = guardMeter(meter, firewall);
        meters.set(meter, guarded);
      }
      return guarded;
    },
  };
}

/** A `Meter` whose instruments pass every attribute value through `firewall` (see {@link guardMeterProvider}). */
export function guardMeter(meter: Meter, firewall: CardinalityFirewall): Meter {
  const admit = (instrument: string, attributes: Attributes | undefined) =>
    admitLabelObject(firewall, instrument, attributes);
  // The name of each observable this meter made, for batch callbacks (which name only the object).
  const observables = new WeakMap<Observable, string>();
  const batchCallbacks = new WeakMap<BatchObservableCallback, BatchObservableCallback>();

  // The SDK's own observable is returned (batch callbacks must be given its instances), with its
  // callback methods replaced on the instance.
  const guardObservable = <O extends Observable>(observable: O, name: string): O => {
    observables.set(observable, name);
    const add = observable.addCallback.bind(observable);
    const remove = observable.removeCallback.bind(observable);
    const wrapped = new WeakMap<ObservableCallback, ObservableCallback>();
    Object.defineProperties(observable, {
      addCallback: {
        configurable: true,
        value(callback: ObservableCallback) {
          let guarded = wrapped.get(callback);
          if (guarded === undefined) {
            guarded = (result: ObservableResult) =>
              callback({ observe: (value, attributes) => result.observe(value, admit(name, attributes)) });
            wrapped.set(callback, guarded);
          }
          add(guarded);
        },
      },
      removeCallback: {
        configurable: true,
        value(callback: ObservableCallback) {
          remove(wrapped.get(callback) ?? callback);
        },
      },
    });
    return observable;
  };

  return {
    createCounter(name: string, options?: MetricOptions): OtelCounter {
      const counter = meter.createCounter(name, options);
      return { add: (value, attributes, context) => counter.add(value, admit(name, attributes), context) };
    },
    createUpDownCounter(name: string, options?: MetricOptions): UpDownCounter {
      const counter = meter.createUpDownCounter(name, options);
      return { add: (value, attributes, context) => counter.add(value, admit(name, attributes), context) };
    },
    createHistogram(name: string, options?: MetricOptions): OtelHistogram {
      const histogram = meter.createHistogram(name, options);
      return {
        record: (value, attributes, context) => histogram.record(value, admit(name, attributes), context),
      };
    },
    createGauge(name: string, options?: MetricOptions): OtelGauge {
      const gauge = meter.createGauge(name, options);
      return {
        record: (value, attributes, context) => gauge.record(value, admit(name, attributes), context),
      };
    },
    createObservableGauge: (name, options) =>
      guardObservable(meter.createObservableGauge(name, options), name),
    createObservableCounter: (name, options) =>
      guardObservable(meter.createObservableCounter(name, options), name),
    createObservableUpDownCounter: (name, options) =>
      guardObservable(meter.createObservableUpDownCounter(name, options), name),
    addBatchObservableCallback(callback: BatchObservableCallback, list: Observable[]) {
      let guarded = batchCallbacks.get(callback);
      if (guarded === undefined) {
        guarded = (result: BatchObservableResult) =>
          callback({
            observe: (observable, value, attributes) => {
              const name = observables.get(observable);
              result.observe(observable, value, name === undefined ? attributes : admit(name, attributes));
            },
          });
        batchCallbacks.set(callback, guarded);
      }
      meter.addBatchObservableCallback(guarded, list);
    },
    removeBatchObservableCallback(callback: BatchObservableCallback, list: Observable[]) {
      meter.removeBatchObservableCallback(batchCallbacks.get(callback) ?? callback, list);
    },
  };
}
