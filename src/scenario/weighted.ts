/**
 * Weighted lists, the one distribution grammar of echo-chaos (fortio's `503:10,500:5`): entries
 * `value:percent` separated by commas; the weights are percentages summing to at most 100, and what
 * is left over draws nothing (the control is not applied). A bare value without a weight is a list
 * of that one value at 100%, so `503` keeps meaning "always 503".
 */

/** Most entries in one weighted list. */
export const MAX_WEIGHTED_ENTRIES = 32;
/** Longest weighted list text, in characters. */
export const MAX_WEIGHTED_LIST_LENGTH = 1024;
/** A weight: a percentage 0-100 with up to 4 decimals, so `0.01` (1 in 10,000) can be asked for. */
export const WEIGHT_PATTERN = String.raw`\d{1,3}(?:\.\d{1,4})?`;

/** Weights are kept in millionths of the whole (0.0001%), so sums and draws are exact integers. */
export const WHOLE_WEIGHT = 1_000_000;
const WEIGHT_UNITS = WHOLE_WEIGHT;
const WEIGHT = new RegExp(`^${WEIGHT_PATTERN}$`);

/** One entry of a weighted list: a value drawn with probability `weight / 1,000,000`. */
export interface WeightedEntry<T> {
  readonly value: T;
  /** The weight in millionths of all draws (`10%` is 100,000). */
  readonly weight: number;
}

/** A parsed weighted list; `total` below 1,000,000 leaves the rest to "nothing drawn". */
export interface WeightedList<T> {
  readonly entries: readonly WeightedEntry<T>[];
  readonly total: number;
}

/** What parsing a weighted list gave: the list, or why not (a message naming the bad part). */
export type WeightedParse<T> =
  | { readonly ok: true; readonly list: WeightedList<T> }
  | { readonly ok: false; readonly message: string };

/** The weighted-list form, worded for error messages. */
export const WEIGHTED_LIST_FORM = `a weighted list value:percent,… (percent 0-100, at most ${MAX_WEIGHTED_ENTRIES} entries, summing to at most 100; the rest applies nothing)`;

/**
 * Parses a bare value (weight 100) or a weighted list `value:percent,…`.
 * @param parseValue reads one entry's value; `undefined` marks it malformed.
 * @param valueForm how a value is written, for the messages.
 */
export function parseWeightedList<T>(
  text: string,
  parseValue: (text: string) => T | undefined,
  valueForm: string,
): WeightedParse<T> {
  const trimmed = text.trim();
  if (trimmed.length > MAX_WEIGHTED_LIST_LENGTH) {
    return { ok: false, message: `at most ${MAX_WEIGHTED_LIST_LENGTH} characters` };
  }
  if (!trimmed.includes(':')) {
    const value = parseValue(trimmed);
    if (value === undefined) {
      // A bare value keeps its own message; one that looks like a list learns the list form too.
      const list = trimmed.includes(',') ? `, or ${WEIGHTED_LIST_FORM}` : '';
      return { ok: false, message: `expected ${valueForm}${list}` };
    }
    return { ok: true, list: { entries: [{ value, weight: WEIGHT_UNITS }], total: WEIGHT_UNITS } };
  }
  const parts = trimmed.split(',');
  if (parts.length > MAX_WEIGHTED_ENTRIES) {
    return {
      ok: false,
      message: `at most ${MAX_WEIGHTED_ENTRIES} entries in a weighted list, got ${parts.length}`,
    };
  }
  const entries: WeightedEntry<T>[] = [];
  let total = 0;
  for (const raw of parts) {
    const part = raw.trim();
    const colon = part.lastIndexOf(':');
    const weightText = colon === -1 ? '' : part.slice(colon + 1);
    const value = colon === -1 ? undefined : parseValue(part.slice(0, colon).trim());
    if (value === undefined || !WEIGHT.test(weightText)) {
      return { ok: false, message: `entry "${part}": expected value:percent with value ${valueForm}` };
    }
    const weight = Math.round(Number(weightText) * (WEIGHT_UNITS / 100));
    if (weight > WEIGHT_UNITS) return { ok: false, message: `entry "${part}": a weight is at most 100` };
    total += weight;
    entries.push({ value, weight });
  }
  if (total > WEIGHT_UNITS) {
    return { ok: false, message: `the weights sum to ${formatPercent(total)}, above 100` };
  }
  return { ok: true, list: { entries, total } };
}

/**
 * Draws one value of a list, or `undefined` when the draw lands in the rest. A list that is one value
 * at 100% (a bare value) draws without consuming randomness; any other list consumes exactly one draw.
 */
export function drawWeighted<T>(list: WeightedList<T>, random: () => number): T | undefined {
  const { entries } = list;
  if (entries.length === 1 && entries[0]!.weight === WEIGHT_UNITS) return entries[0]!.value;
  const point = Math.floor(random() * WEIGHT_UNITS);
  let upTo = 0;
  for (const entry of entries) {
    upTo += entry.weight;
    if (point < upTo) return entry.value;
  }
  return undefined;
}

/** A weight in millionths as the percentage it was written as: `100000` → `10`. */
export function formatPercent(weight: number): string {
  return String(weight / (WEIGHT_UNITS / 100));
}
