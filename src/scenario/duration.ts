/**
 * Delays of scenarios and control headers: a duration of the one grammar (`@echo-chaos/obs`'s
 * `parseDurationMs`: `250ms`, `1.5s`, `2m`, `1h`, a bare number of milliseconds), a range
 * `min-max` of two of them, a weighted list of those (`100ms:90,2s:10`, see `weighted.ts`), or a
 * log-normal distribution `lognormal:<median>,<sigma>`, so `500ms` means the same thing in a
 * header, a YAML file, an `EchoScenario` and the `obs.*` configuration.
 */
import { DURATION_FORM, DURATION_PATTERN, parseDurationMs } from '@echo-chaos/obs/internal';
import {
  drawWeighted,
  MAX_WEIGHTED_ENTRIES,
  parseWeightedList,
  WEIGHT_PATTERN,
  type WeightedList,
  WHOLE_WEIGHT,
} from './weighted.ts';

/** Largest `sigma` of a log-normal delay: at 5, one draw in a thousand is 5,000,000 times the median. */
export const MAX_LOGNORMAL_SIGMA = 5;

const RANGE_PATTERN = `${DURATION_PATTERN}(?:-${DURATION_PATTERN})?`;
const SIGMA_PATTERN = String.raw`\d(?:\.\d{1,6})?`;

/**
 * The delay grammar (a duration, a range, a weighted list of them, or `lognormal:<median>,<sigma>`;
 * no surrounding whitespace) as a pattern that both ECMAScript and RE2 (Kubernetes' OpenAPI
 * validation) read the same way, for JSON schemas. What a pattern cannot say (weights summing to
 * at most 100, at most 32 entries, 0 < sigma <= 5) is checked by {@link parseDelayBounds}.
 */
export const DELAY_SPEC_PATTERN =
  `^(?:${RANGE_PATTERN}(?::${WEIGHT_PATTERN}(?:, *${RANGE_PATTERN}:${WEIGHT_PATTERN})*)?` +
  `|lognormal:${DURATION_PATTERN}, *${SIGMA_PATTERN})$`;

/** The accepted delay forms, worded for error messages. */
export const DELAY_SPEC_FORM =
  `${DURATION_FORM}, a range min-max (100-500ms), a weighted list of them ` +
  `(100ms:90,2s:10: percent weights summing to at most 100, the rest no delay; at most ${MAX_WEIGHTED_ENTRIES} entries), ` +
  `or lognormal:<median>,<sigma> (sigma above 0, at most ${MAX_LOGNORMAL_SIGMA})`;

const DELAY_SPEC = new RegExp(DELAY_SPEC_PATTERN);
const BARE_NUMBER = /^\d+(?:\.\d+)?$/;
const UNIT = /[a-z]+$/;
const LOGNORMAL_PREFIX = 'lognormal:';

/** A delay drawn uniformly from `[minMs, maxMs]`; a fixed delay has `minMs === maxMs`. */
export interface DelayRange {
  readonly minMs: number;
  readonly maxMs: number;
}

/** A log-normal delay: `median * e^(sigma * Z)`, Z standard normal. */
export interface LognormalDelay {
  readonly medianMs: number;
  readonly sigma: number;
}

/**
 * A parsed delay. `minMs`/`maxMs` bound every draw (the worst case is `maxMs`), except for a
 * log-normal delay, which has no upper bound: there `maxMs` is its median and every draw is capped
 * by the caller (`ECHO_MAX_DELAY`). A duration or range has neither `choices` nor `lognormal`.
 */
export interface DelaySpec extends DelayRange {
  /** A weighted list: each draw picks an entry (or, in the rest, no delay) and then draws its range. */
  readonly choices?: WeightedList<DelayRange>;
  readonly lognormal?: LognormalDelay;
}

/** A delay text read: the spec (as written, a reversed range included), or why it is malformed. */
export type DelayRead =
  | { readonly ok: true; readonly spec: DelaySpec }
  | { readonly ok: false; readonly message: string };

/**
 * Parses a delay in any of its forms. A reversed range is returned as written (`minMs > maxMs`), a
 * list holding one as that entry's bounds, so callers can say what is wrong.
 */
export function readDelaySpec(text: string): DelayRead {
  const trimmed = text.trim();
  if (trimmed.includes(':') && !trimmed.startsWith(LOGNORMAL_PREFIX)) {
    // A list: its own checks give the better message (which entry, what sum).
    const parsed = parseWeightedList(trimmed, parseRangeBounds, 'a duration or a range min-max');
    if (!parsed.ok) return parsed;
    if (!DELAY_SPEC.test(trimmed)) return { ok: false, message: `expected ${DELAY_SPEC_FORM}` };
    const { entries, total } = parsed.list;
    let minMs = total < WHOLE_WEIGHT ? 0 : Number.POSITIVE_INFINITY;
    let maxMs = 0;
    for (const { value } of entries) {
      if (value.minMs > value.maxMs) return { ok: true, spec: value };
      minMs = Math.min(minMs, value.minMs);
      maxMs = Math.max(maxMs, value.maxMs);
    }
    return { ok: true, spec: { minMs, maxMs, choices: parsed.list } };
  }
  if (!DELAY_SPEC.test(trimmed)) return { ok: false, message: `expected ${DELAY_SPEC_FORM}` };
  if (trimmed.startsWith(LOGNORMAL_PREFIX)) {
    const [medianText = '', sigmaText = ''] = trimmed.slice(LOGNORMAL_PREFIX.length).split(',');
    const medianMs = parseDurationMs(medianText.trim());
    const sigma = Number(sigmaText.trim());
    if (medianMs === undefined) return { ok: false, message: `expected ${DELAY_SPEC_FORM}` };
    if (!(sigma > 0 && sigma <= MAX_LOGNORMAL_SIGMA)) {
      return { ok: false, message: `lognormal sigma must be above 0 and at most ${MAX_LOGNORMAL_SIGMA}` };
    }
    return { ok: true, spec: { minMs: 0, maxMs: medianMs, lognormal: { medianMs, sigma } } };
  }
  const range = parseRangeBounds(trimmed);
  return range === undefined
    ? { ok: false, message: `expected ${DELAY_SPEC_FORM}` }
    : { ok: true, spec: range };
}

/**
 * Parses a delay in any form: a fixed duration (`500ms`), a range (`100-500ms`, `1s-2s`; a unit
 * written only once, after the upper bound, applies to both bounds), a weighted list of them
 * (`100ms:90,1-2s:10`) or `lognormal:<median>,<sigma>`.
 * @returns the spec, or `undefined` when the text is malformed or a range is reversed.
 */
export function parseDelaySpec(text: string): DelaySpec | undefined {
  const read = readDelaySpec(text);
  return read.ok && read.spec.minMs <= read.spec.maxMs ? read.spec : undefined;
}

/**
 * Parses like {@link parseDelaySpec} but returns a reversed range as written (`minMs > maxMs`),
 * so that a validator can say what is wrong with it. For a list, the bounds are the least and the
 * most any entry can draw; for a log-normal delay, `maxMs` is the median (its draws are capped).
 * @returns the bounds in milliseconds, or `undefined` only when the text is malformed.
 */
export function parseDelayBounds(text: string): DelaySpec | undefined {
  const read = readDelaySpec(text);
  return read.ok ? read.spec : undefined;
}

function parseRangeBounds(text: string): DelayRange | undefined {
  const [low = '', high, extra] = text.split('-');
  if (extra !== undefined) return undefined;
  if (high === undefined) {
    const ms = parseDurationMs(low);
    return ms === undefined ? undefined : { minMs: ms, maxMs: ms };
  }
  // `100-500ms`: the lower bound takes the upper bound's unit.
  const lowText = BARE_NUMBER.test(low) ? `${low}${UNIT.exec(high)?.[0] ?? ''}` : low;
  const minMs = parseDurationMs(lowText);
  const maxMs = parseDurationMs(high);
  return minMs === undefined || maxMs === undefined ? undefined : { minMs, maxMs };
}

/**
 * Draws a delay from a spec with the given source of randomness in `[0, 1)`, capped at `capMs`
 * (a log-normal delay has no bound of its own). Consumes a fixed number of draws per form: none
 * for a fixed duration, one for a range, one more for a list (the entry), two for a log-normal
 * delay (Box–Muller), so a seeded run replays.
 */
export function drawDelayMs(spec: DelaySpec, random: () => number, capMs = Number.POSITIVE_INFINITY): number {
  if (spec.lognormal !== undefined) {
    const { medianMs, sigma } = spec.lognormal;
    const u1 = random();
    const u2 = random();
    // 1 - u1 is in (0, 1], so the logarithm is finite.
    const z = Math.sqrt(-2 * Math.log(1 - u1)) * Math.cos(2 * Math.PI * u2);
    return Math.min(Math.round(medianMs * Math.exp(sigma * z)), capMs);
  }
  if (spec.choices !== undefined) {
    const range = drawWeighted(spec.choices, random);
    return range === undefined ? 0 : Math.min(drawRangeMs(range, random), capMs);
  }
  return Math.min(drawRangeMs(spec, random), capMs);
}

function drawRangeMs(range: DelayRange, random: () => number): number {
  if (range.minMs === range.maxMs) return range.minMs;
  return range.minMs + Math.round(random() * (range.maxMs - range.minMs));
}
