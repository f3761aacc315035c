/**
 * The retry depth of retry amplification (`obs.retry`), as it travels: the baggage entry that
 * carries it and the parsing of an inbound value ({@link inboundRetryDepth}), a pure function of
 * what the request carried.
 */

/** The baggage entry (and span attribute) that carries the retry depth. */
export const RETRY_DEPTH_BAGGAGE_KEY = 'obs.retry.depth';

/** The deepest depth kept: a larger inbound value is clamped to it (it is still flagged). */
export const MAX_RETRY_DEPTH = 1000;
/** Longest inbound value parsed; anything longer is malformed (bounds the work per request). */
const MAX_DEPTH_CHARS = 16;
const DIGITS = /^[0-9]+$/;

/**
 * A retry depth as an integer: `undefined` when absent, `null` when malformed (not a plain
 * non-negative integer, repeated, or longer than 16 characters). Surrounding blanks are allowed; a
 * value above {@link MAX_RETRY_DEPTH} is clamped to it. Never throws.
 */
export function parseRetryDepth(value: unknown): number | null | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length > MAX_DEPTH_CHARS) return null;
  const text = value.trim();
  if (!DIGITS.test(text)) return null;
  return Math.min(MAX_RETRY_DEPTH, Number(text));
}

/** Where an inbound depth came from. */
export type RetryDepthSource = 'header' | 'baggage' | 'none';

/** What {@link inboundRetryDepth} returns. */
export interface InboundRetryDepth {
  readonly depth: number;
  readonly source: RetryDepthSource;
  /** The sources present but malformed, ignored as if absent. */
  readonly invalid: ReadonlyArray<'header' | 'baggage'>;
}

/**
 * The retry depth of an inbound request: the header when it holds a valid depth, else the baggage
 * entry when it does, else 0. A malformed value of either is ignored as if absent (and reported).
 */
export function inboundRetryDepth(header: unknown, baggage: unknown): InboundRetryDepth {
  const invalid: Array<'header' | 'baggage'> = [];
  const fromHeader = parseRetryDepth(header);
  if (typeof fromHeader === 'number') return { depth: fromHeader, source: 'header', invalid };
  if (fromHeader === null) invalid.push('header');
  const fromBaggage = parseRetryDepth(baggage);
  if (typeof fromBaggage === 'number') return { depth: fromBaggage, source: 'baggage', invalid };
  if (fromBaggage === null) invalid.push('baggage');
  return { depth: 0, source: 'none', invalid };
}
