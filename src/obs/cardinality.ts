/** The value a label takes once its meter and tag have seen the cap of distinct values. */
export const OVERFLOW_VALUE = 'OVERFLOW';
/** Distinct values kept per meter and tag before overflow. */
export const DEFAULT_MAX_VALUES_PER_TAG = 1000;

export type EnforcementMode = 'ENFORCING' | 'DRY_RUN';

export interface CardinalityFirewallOptions {
  /** Distinct values per meter and tag. Default 1000. */
  readonly maxValuesPerTag?: number;
  /** Read on every overflow, so a mode change takes effect on the very next value. Default ENFORCING. */
  readonly mode?: () => EnforcementMode;
  /** Called once per overflowing value (in both modes); must not throw. */
  readonly onOverflow?: (meter: string, tagKey: string) => void;
}

/**
 * Caps the distinct values of each label of each meter. Past the cap, ENFORCING rewrites the value
 * to `OVERFLOW`; DRY_RUN lets it through and only counts it. Memory is bounded by the cap.
 */
export class CardinalityFirewall {
  readonly maxValuesPerTag: number;
  readonly #mode: () => EnforcementMode;
  readonly #onOverflow: ((meter: string, tagKey: string) => void) | undefined;
  readonly #seen = new Map<string, Set<string>>();

  constructor(options: CardinalityFirewallOptions = {}) {
    this.maxValuesPerTag = options.maxValuesPerTag ?? DEFAULT_MAX_VALUES_PER_TAG;
    this.#mode = options.mode ?? (() => 'ENFORCING');
    this.#onOverflow = options.onOverflow;
  }

  /** The value to record for `meter{tagKey=value}`: the value itself, or `OVERFLOW`. */
  admit(meter: string, tagKey: string, value: string): string {
    const key = `${meter}\u0000${tagKey}`;
    let seen = this.#seen.get(key);
    if (seen === undefined) {
      seen = new Set();
      this.#seen.set(key, seen);
    }
    if (seen.has(value)) return value;
    if (seen.size < this.maxValuesPerTag) {
      seen.add(value);
      return value;
    }
    try {
      this.#onOverflow?.(meter, tagKey);
    } catch {
      // telemetry never fails a request
    }
    return this.#mode() === 'ENFORCING' ? OVERFLOW_VALUE : value;
  }

  /** Distinct values seen per meter and tag, largest first (for diagnostics). */
  offenders(limit = 10): Array<{ meter: string; tagKey: string; values: number }> {
    return [...this.#seen.entries()]
      .map(([key, set]) => {
        const [meter = '', tagKey = ''] = key.split('\u0000');
        return { meter, tagKey, values: set.size };
      })
      .sort((a, b) => b.values - a.values)
      .slice(0, limit);
  }
}
