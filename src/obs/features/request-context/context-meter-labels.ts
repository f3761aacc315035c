/**
 * Labels from the request context on listed meters (`obs.priority.tag-meters`,
 * `obs.tenant.tag-meters`): each prom-client metric of obs's registry named in the list, present now
 * or registered later, gains one label (`priority`, `tenant`) in its `labelNames`, and its recording
 * methods (`inc`, `dec`, `set`, `observe`, `zero`, `startTimer`, and the children of `labels(...)`)
 * fill it from the current request context when the call records: the caller's own label set is
 * unchanged. Outside a request, or when the context holds no value, the label is
 * {@link NO_CONTEXT_LABEL_VALUE}, so a meter's series always carry the same label names.
 *
 * The wrappers sit outside the cardinality firewall's (`meters.ts`), so the filled value passes the
 * firewall too; a capped label (the tenant) is also held to its own cap of distinct values per
 * meter, past which it records the firewall's `OVERFLOW` value whatever the enforcement mode: the
 * value comes from the client, and the cap is the feature's bound on it.
 *
 * Not covered: meters outside obs's registry, OpenTelemetry metrics instruments, a meter that
 * declares the label itself (left alone, logged), and series a meter recorded with labels before it
 * was taken in (they keep their label set; a meter without labels is reset when taken in).
 */
import type { Registry, RegistryContentType } from 'prom-client';
import { CARDINALITY_OVERFLOW_METRIC, CardinalityFirewall, OVERFLOW_VALUE } from '../../core/cardinality.ts';
import { promMetricKind } from '../../core/meters.ts';

/** The value of a context label outside a request, or when the request's context holds none. */
export const NO_CONTEXT_LABEL_VALUE = 'none';

// A caller may still name an uncapped label's value itself: the live figure stays bounded.
const MAX_TRACKED_VALUES = 1024;

const BASE_LABEL_NAMES = Symbol.for('echo-chaos.obs.base-label-names');

type Fn = (this: unknown, ...args: unknown[]) => unknown;
type LabelObject = Record<string, unknown>;

interface PromMetric {
  readonly name: string;
  labelNames?: readonly string[];
  sortedLabelNames?: readonly string[];
  readonly enableExemplars?: boolean;
  reset?(): void;
  [method: string]: unknown;
}

/** What {@link addContextLabel} takes. */
export interface ContextLabelOptions {
  /** The label name (`priority`, `tenant`). */
  readonly label: string;
  /** The metric names that get it. */
  readonly meters: readonly string[];
  /** The value now, from the current request context; undefined gives {@link NO_CONTEXT_LABEL_VALUE}. */
  readonly current: () => string | undefined;
  /** Distinct values kept per meter before `OVERFLOW`; absent: no cap of its own (a fixed set). */
  readonly maxValues?: number;
  /** Called once per value past the cap. Must not throw; a throw is ignored. */
  readonly onOverflow?: (meter: string) => void;
  /** Called when a listed meter cannot take the label (it declares it already). */
  readonly onSkipped?: (meter: string, reason: string) => void;
}

/** The live state of one context label. */
export interface ContextLabel {
  /** The listed meters that carry the label now. */
  tagged(): string[];
  /** Distinct values each tagged meter recorded (`none` and `OVERFLOW` included), by meter. */
  distinct(): Record<string, number>;
  /** Values past the cap recorded as `OVERFLOW`. */
  overflowed(): number;
}

function isLabelObject(value: unknown): value is LabelObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Replaces `metric[key]` with an accessor handing out `wrap(raw)`, where raw is what the property
 * holds: an accessor already there (the firewall's) is kept underneath, and an assignment made later
 * (prom-client assigns `inc` and `observe` in constructors, after the registry saw the metric) is
 * taken in.
 */
function wrapProperty(metric: PromMetric, key: string, wrap: (raw: Fn) => Fn): void {
  const own = Object.getOwnPropertyDescriptor(metric, key);
  let read: () => unknown;
  let write: (value: unknown) => void;
  if (own?.get !== undefined) {
    const { get, set } = own;
    read = () => get.call(metric);
    write = (value) => set?.call(metric, value);
  } else {
    let current = own?.value as unknown;
    read = () => current ?? Reflect.get(Object.getPrototypeOf(metric) as object, key, metric);
    write = (value) => {
      current = value;
    };
  }
  let cache: { raw: Fn; wrapped: Fn } | undefined;
  Object.defineProperty(metric, key, {
    configurable: true,
    enumerable: own?.enumerable ?? false,
    get() {
      const raw = read();
      if (typeof raw !== 'function') return raw;
      if (cache?.raw !== raw) cache = { raw: raw as Fn, wrapped: wrap(raw as Fn) };
      return cache.wrapped;
    },
    set: write,
  });
}

/**
 * Adds a context label to the metrics of `registry` named in `options.meters`, present and
 * registered later (its `registerMetric` is wrapped). Never throws for a metric it cannot take in.
 */
export function addContextLabel(
  registry: Registry<RegistryContentType>,
  options: ContextLabelOptions,
): ContextLabel {
  const { label, current } = options;
  const listed = new Set(options.meters);
  listed.delete(CARDINALITY_OVERFLOW_METRIC); // recording it must never record it again
  const tagged = new Set<string>();
  let overflowed = 0;
  const cap =
    options.maxValues === undefined
      ? undefined
      : new CardinalityFirewall({
          maxValuesPerTag: options.maxValues,
          mode: () => 'ENFORCING',
          onOverflow: (meter) => {
            overflowed += 1;
            options.onOverflow?.(meter);
          },
        });

  // The values each tagged meter recorded: bounded by the cap (plus `none` and `OVERFLOW`), or
  // by the fixed set of an uncapped label.
  const seen = new Map<string, Set<string>>();

  const valueFor = (meter: string, given: unknown): string => {
    const text = given === undefined || given === null ? current() : String(given);
    const value =
      text === undefined
        ? NO_CONTEXT_LABEL_VALUE
        : text === NO_CONTEXT_LABEL_VALUE || text === OVERFLOW_VALUE || cap === undefined
          ? text
          : cap.admit(meter, label, text);
    const values = seen.get(meter);
    if (values !== undefined && values.size < MAX_TRACKED_VALUES) values.add(value);
    return value;
  };

  const take = (metric: object): void => {
    const m = metric as PromMetric;
    if (typeof m.name !== 'string' || !listed.has(m.name) || tagged.has(m.name)) return;
    const own = m.labelNames ?? [];
    if (!Array.isArray(own)) return;
    const mark = Symbol.for(`echo-chaos.obs.context-label.${label}`);
    // Another obs instance on the same registry filled it already (a restart in one process).
    if (m[mark as never] === true) return;
    if (own.includes(label)) {
      options.onSkipped?.(m.name, `it declares a label named ${label} already`);
      return;
    }
    const kind = promMetricKind(m);
    if (kind === undefined) {
      options.onSkipped?.(m.name, 'it is not a prom-client 15 metric (another major version?)');
      return;
    }
    Object.defineProperty(m, mark, { value: true });
    const name = m.name;
    // The metric's own label names, before any context label: what `labels(...)` is given in order.
    const base = (m[BASE_LABEL_NAMES as never] as readonly string[] | undefined) ?? own;
    if (base === own) Object.defineProperty(m, BASE_LABEL_NAMES, { value: own });
    m.labelNames = [...own, label];
    m.sortedLabelNames = [...m.labelNames].sort();
    // A metric without labels holds one unlabelled series; it would stay beside the labelled ones.
    if (own.length === 0) m.reset?.();
    tagged.add(name);
    seen.set(name, new Set());

    const fill = (labels: unknown): LabelObject => {
      const given = isLabelObject(labels) ? labels : {};
      return { ...given, [label]: valueFor(name, given[label]) };
    };
    // `(labels, value)`, `(undefined, value)` or `(value)`.
    const plain = (raw: Fn): Fn =>
      function (this: unknown, ...args: unknown[]) {
        if (isLabelObject(args[0]) || (args.length > 1 && args[0] == null)) args[0] = fill(args[0]);
        else args.unshift(fill(undefined));
        return raw.apply(this, args);
      };
    // `inc`/`observe` of a metric with exemplars take `{ labels, value, exemplarLabels }`.
    const recording = (raw: Fn): Fn => {
      if (m.enableExemplars !== true) return plain(raw);
      return function (this: unknown, ...args: unknown[]) {
        const first = isLabelObject(args[0]) ? args[0] : {};
        args[0] = { ...first, labels: fill(first.labels) };
        return raw.apply(this, args);
      };
    };
    // `startTimer(labels?)` and `zero(labels)`: the value is the one when the timer starts.
    const first = (raw: Fn): Fn =>
      function (this: unknown, ...args: unknown[]) {
        args[0] = fill(args[0]);
        return raw.apply(this, args);
      };
    // `labels(...)`: the child's methods read the context when they record, not when it was made.
    // Its methods are known by the kind of metric: making a child for the shape would admit a value
    // nothing recorded into the firewall.
    const labels =
      (methods: readonly string[]) =>
      (raw: Fn): Fn =>
        function (this: unknown, ...args: unknown[]) {
          let given: LabelObject;
          if (isLabelObject(args[0])) given = args[0];
          else if (args.length === base.length) given = Object.fromEntries(base.map((n, i) => [n, args[i]]));
          else return raw.apply(this, args); // prom-client reports the wrong count of arguments
          if (label in given) return raw.call(this, given);
          // A label the metric does not have: prom-client reports it.
          const names = m.labelNames ?? [];
          if (Object.keys(given).some((key) => !names.includes(key))) raw.call(this, given);
          const child: Record<string, (...more: unknown[]) => unknown> = {};
          for (const method of methods) {
            child[method] = (...more) =>
              (raw.call(this, fill(given)) as Record<string, (...a: unknown[]) => unknown>)[method]?.(
                ...more,
              );
          }
          return child;
        };

    if (kind === 'counter') {
      wrapProperty(m, 'inc', recording);
      wrapProperty(m, 'labels', labels(['inc']));
    } else if (kind === 'histogram') {
      wrapProperty(m, 'observe', recording);
      wrapProperty(m, 'zero', first);
      wrapProperty(m, 'startTimer', first);
      wrapProperty(m, 'labels', labels(['observe', 'startTimer']));
    } else if (kind === 'gauge') {
      // `setToCurrentTime` ends in `set`.
      for (const key of ['inc', 'dec', 'set']) wrapProperty(m, key, plain);
      wrapProperty(m, 'startTimer', first);
      wrapProperty(m, 'labels', labels(['inc', 'dec', 'set', 'setToCurrentTime', 'startTimer']));
    } else {
      // Summary.
      wrapProperty(m, 'observe', plain);
      wrapProperty(m, 'startTimer', first);
      wrapProperty(m, 'labels', labels(['observe', 'startTimer']));
    }
  };
  const safeTake = (metric: object) => {
    try {
      take(metric);
    } catch {
      // a metric obs cannot take in records without the label rather than failing its constructor
    }
  };

  if (listed.size > 0) {
    const register = registry.registerMetric;
    registry.registerMetric = function (this: Registry<RegistryContentType>, metric) {
      register.call(this, metric);
      safeTake(metric);
    };
    for (const metric of registry.getMetricsAsArray()) safeTake(metric);
  }

  return {
    tagged: () => [...tagged],
    distinct: () => Object.fromEntries([...seen].map(([meter, values]) => [meter, values.size])),
    overflowed: () => overflowed,
  };
}
