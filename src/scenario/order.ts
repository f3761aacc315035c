/**
 * The order in which a scenario serves its responses: `cycle` (in turn, the default) or `random`
 * (each answer drawn by the responses' relative `weight`, from the request's own randomness, so
 * `X-Echo-Seed` and `ECHO_SEED` replay it). See docs/adr/0034-scenario-order-windows-sessions.md.
 */

/** The values of a scenario's `order`; the first is the default. */
export const SCENARIO_ORDERS = ['cycle', 'random'] as const;
/** A scenario's `order`. */
export type ScenarioOrder = (typeof SCENARIO_ORDERS)[number];
/** `order` as a pattern ECMAScript and RE2 read alike (a structural schema has no unions). */
export const ORDER_PATTERN = `^(?:${SCENARIO_ORDERS.join('|')})$`;
/**
 * Longest `order` text, in characters: far more than its values need, so that a misspelt value up to
 * this long is told the values it may take rather than a length.
 */
export const MAX_ORDER_LENGTH = 32;

/** A response's `weight` when it gives none. */
export const DEFAULT_WEIGHT = 1;
/**
 * Largest `weight` of one response. Weights are relative whole numbers (a response of weight 9
 * beside one of weight 1 answers 90%): a million to one is finer than a test can observe, and the
 * sum over the most responses a scenario holds (1,000 x 10^6 = 10^9) stays exact in a double and
 * in 32 bits.
 */
export const MAX_WEIGHT = 1_000_000;

/**
 * The responses of a `random` scenario as cumulative weights, built once per set: a draw costs one
 * number of randomness and a binary search, and allocates nothing.
 */
export class WeightedOrder {
  readonly #upTo: Float64Array;
  readonly #total: number;

  /** @param weights one per response, whole numbers 0-{@link MAX_WEIGHT}, at least one above 0. */
  constructor(weights: readonly number[]) {
    this.#upTo = new Float64Array(weights.length);
    let total = 0;
    for (let i = 0; i < weights.length; i++) {
      total += weights[i]!;
      this.#upTo[i] = total;
    }
    this.#total = total;
  }

  /** The sum of the weights. */
  get total(): number {
    return this.#total;
  }

  /**
   * Draws a response index with probability `weight / total`; a response of weight 0 is never
   * drawn. Consumes exactly one value of `random` (in `[0, 1)`).
   */
  draw(random: () => number): number {
    const upTo = this.#upTo;
    const point = Math.min(Math.floor(random() * this.#total), this.#total - 1);
    // The first index whose cumulative weight is above the point.
    let low = 0;
    let high = upTo.length - 1;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (upTo[middle]! > point) high = middle;
      else low = middle + 1;
    }
    return low;
  }
}
