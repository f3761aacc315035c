import type { EnforcementMode } from './config/config-schema.ts';

export type { EnforcementMode };

/** The value a label takes once its meter and tag have seen the cap of distinct values. */
export const OVERFLOW_VALUE = 'OVERFLOW';
/** Distinct values kept per meter and tag before overflow. */
export const DEFAULT_MAX_VALUES_PER_TAG = 1000;
/** The counter of values past the cap, by `meter` and `tag_key`; never guarded itself. */
export const CARDINALITY_OVERFLOW_METRIC = 'obs_cardinality_overflow_total';

/** Called once per value past the cap (in both modes). Must not throw; a throw is ignored. */
export type OverflowListener = (meter: string, tagKey: string) => void;

// How many explicit overflows of one synchronous turn are remembered for the meter wrappers.
const MAX_RECENT_OVERFLOWS = 256;

/** Options of a {@link CardinalityFirewall}; obs builds `app.obs.firewall` from `obs.cardinality`. */
export interface CardinalityFirewallOptions {
  /** Distinct values per meter and tag. Default 1000. */
  readonly maxValuesPerTag?: number;
  /** Read on every overflow, so a mode change takes effect on the very next value. Default ENFORCING. */
  readonly mode?: () => EnforcementMode;
  /** Called once per overflowing value (in both modes); must not throw. */
  readonly onOverflow?: (meter: string, tagKey: string) => void;
  /** The value an overflowing label takes in ENFORCING mode. Default `OVERFLOW`. */
  readonly overflowValue?: string;
  /** When false, every value passes untouched and nothing is tracked. Default true. */
  readonly enabled?: boolean;
  /** Only meters whose name starts with one of these are guarded; empty guards every meter. */
  readonly meterPrefixesToProtect?: readonly string[];
  /** Meters whose name starts with one of these are never guarded. */
  readonly exemptMeterPrefixes?: readonly string[];
}

/** A meter and tag with how many distinct values it kept and how many it turned away. */
export interface CardinalityOffender {
  readonly meter: string;
  readonly tagKey: string;
  /** Distinct values kept (at most the cap). */
  readonly values: number;
  /** Values past the cap seen so far (rewritten in ENFORCING, let through in DRY_RUN). */
  readonly overflowed: number;
}

interface TagState {
  readonly meter: string;
  readonly tagKey: string;
  readonly seen: Set<string>;
  overflowed: number;
}

/**
 * Caps the distinct values of each label of each meter. Past the cap, ENFORCING rewrites the value
 * to `OVERFLOW`; DRY_RUN lets it through and only counts it. Memory is bounded by the cap. The
 * overflow value itself always passes and takes no place under the cap, so a meter and label keep
 * at most the cap plus `OVERFLOW`.
 *
 * Values reach it two ways: call sites call {@link admit} (or {@link admitLabels}) themselves, and
 * the meter wrappers of `meters.ts` ({@link guardRegistry}, {@link guardMeterProvider}) call
 * {@link admitRecording} for every label of every recording. Both together count a value once.
 */
export class CardinalityFirewall {
  readonly maxValuesPerTag: number;
  readonly overflowValue: string;
  readonly enabled: boolean;
  readonly #mode: () => EnforcementMode;
  readonly #listeners = new Set<OverflowListener>();
  readonly #protect: readonly string[];
  readonly #exempt: readonly string[];
  /** Per guarded meter, per tag; `null` for a meter that is not guarded (looked up once). */
  readonly #meters = new Map<string, Map<string, TagState> | null>();
  /** Set by {@link #admit}: whether the value it returned came from past the cap. */
  #overflowed = false;
  // DRY_RUN values that admit() let through past the cap in this synchronous turn: a meter wrapper
  // seeing the same value right after (the call site admitted it, then recorded it) counts it once.
  readonly #recent = new Set<string>();

  constructor(options: CardinalityFirewallOptions = {}) {
    this.maxValuesPerTag = options.maxValuesPerTag ?? DEFAULT_MAX_VALUES_PER_TAG;
    this.overflowValue = options.overflowValue ?? OVERFLOW_VALUE;
    this.enabled = options.enabled ?? true;
    this.#mode = options.mode ?? (() => 'ENFORCING');
    if (options.onOverflow !== undefined) this.#listeners.add(options.onOverflow);
    this.#protect = options.meterPrefixesToProtect ?? [];
    this.#exempt = options.exemptMeterPrefixes ?? [];
  }

  /**
   * The value to record for `meter{tagKey=value}`: the value itself, or the overflow value when the
   * label already holds the cap of distinct values and the mode is ENFORCING. Never throws.
   */
  admit(meter: string, tagKey: string, value: string): string {
    const admitted = this.#admit(meter, tagKey, value);
    if (this.#overflowed && admitted === value && this.#recent.size < MAX_RECENT_OVERFLOWS) {
      if (this.#recent.size === 0) queueMicrotask(() => this.#recent.clear());
      this.#recent.add(`${meter}\u0000${tagKey}\u0000${value}`);
    }
    return admitted;
  }

  /**
   * {@link admit} for a meter wrapper, which sees every recording: a value the call site already
   * passed through {@link admit} in this same synchronous turn is not counted a second time.
   */
  admitRecording(meter: string, tagKey: string, value: string): string {
    if (this.#recent.size > 0 && this.#recent.delete(`${meter}\u0000${tagKey}\u0000${value}`)) return value;
    return this.#admit(meter, tagKey, value);
  }

  /**
   * Whether `meter{tagKey=value}` is recorded as it is and counts nothing: a value kept already, the
   * overflow value, a meter not guarded, or a value under the cap (kept from now on, as
   * {@link admit} would). False for a value past the cap, and then nothing is counted: the
   * recording that follows is admitted (and counted) the usual way. A batch of recordings
   * (`batch.ts`) caches a series only when this holds for every label.
   */
  keeps(meter: string, tagKey: string, value: string): boolean {
    if (value === this.overflowValue) return true;
    const state = this.#tagsOf(meter)?.get(tagKey);
    if (state !== undefined && !state.seen.has(value) && state.seen.size >= this.maxValuesPerTag)
      return false;
    this.#admit(meter, tagKey, value);
    return true;
  }
  /**
   * Calls `listener` once per value past the cap, in both modes.
   * @returns a function that removes the listener.
   */
  addOverflowListener(listener: OverflowListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  // On every recording: no allocation and no string building for a value seen before.
  #admit(meter: string, tagKey: string, value: string): string {
    this.#overflowed = false;
    if (value === this.overflowValue) return value;
    const tags = this.#tagsOf(meter);
    if (tags === null) return value;
    let state = tags.get(tagKey);
    if (state === undefined) {
      state = { meter, tagKey, seen: new Set(), overflowed: 0 };
      tags.set(tagKey, state);
    }
    if (state.seen.has(value)) return value;
    if (state.seen.size < this.maxValuesPerTag) {
      state.seen.add(value);
      return value;
    }
    state.overflowed++;
    for (const listener of this.#listeners) {
      try {
        listener(meter, tagKey);
      } catch {
        // telemetry never fails a request
      }
    }
    this.#overflowed = true;
    return this.#mode() === 'ENFORCING' ? this.overflowValue : value;
  }

  /** Every label of one recording passed through {@link admit}; returns a new object. */
  admitLabels<K extends string>(
    meter: string,
    labels: Readonly<Record<K, string | number>>,
  ): Record<K, string> {
    const out = {} as Record<K, string>;
    for (const key of Object.keys(labels) as K[]) out[key] = this.admit(meter, key, String(labels[key]));
    return out;
  }

  /** Distinct values seen per meter and tag, largest first (for diagnostics). */
  offenders(limit = 10): CardinalityOffender[] {
    return [...this.#meters.values()]
      .flatMap((tags) => (tags === null ? [] : [...tags.values()]))
      .map(({ meter, tagKey, seen, overflowed }) => ({ meter, tagKey, values: seen.size, overflowed }))
      .sort((a, b) => b.overflowed - a.overflowed || b.values - a.values)
      .slice(0, limit);
  }

  /** The tags of a guarded meter; null for a meter not guarded (looked up once). */
  #tagsOf(meter: string): Map<string, TagState> | null {
    let tags = this.#meters.get(meter);
    if (tags === undefined) {
      // Meter names come from code, not from requests, so this map stays small.
      tags = this.#isGuarded(meter) ? new Map() : null;
      this.#meters.set(meter, tags);
    }
    return tags;
  }
  #isGuarded(meter: string): boolean {
    return (
      this.enabled &&
      (this.#protect.length === 0 || this.#protect.some((p) => meter.startsWith(p))) &&
      !this.#exempt.some((p) => meter.startsWith(p))
    );
  }
}
