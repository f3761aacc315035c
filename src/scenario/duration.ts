/**
 * Delays of scenarios and control headers: a duration of the one grammar (`@echo-chaos/obs`'s
 * `parseDurationMs`: `250ms`, `1.5s`, `2m`, `1h`, a bare number of milliseconds) or a range
 * `min-max` of two of them, so `500ms` means the same thing in a header, a YAML file, an
 * `EchoScenario` and the `obs.*` configuration.
 */
import { DURATION_FORM, DURATION_PATTERN, parseDurationMs } from '@echo-chaos/obs';

/**
 * The delay grammar (a duration or a range, no surrounding whitespace) as a pattern that both
 * ECMAScript and RE2 (Kubernetes' OpenAPI validation) read the same way, for JSON schemas.
 */
export const DELAY_SPEC_PATTERN = `^${DURATION_PATTERN}(?:-${DURATION_PATTERN})?$`;

/** The accepted delay form (a duration or a range), worded for error messages. */
export const DELAY_SPEC_FORM = `${DURATION_FORM}, or a range min-max, e.g. 100-500ms`;

const DELAY_SPEC = new RegExp(DELAY_SPEC_PATTERN);
const BARE_NUMBER = /^\d+(?:\.\d+)?$/;
const UNIT = /[a-z]+$/;

/** A delay drawn uniformly from `[minMs, maxMs]`; a fixed delay has `minMs === maxMs`. */
export interface DelaySpec {
  readonly minMs: number;
  readonly maxMs: number;
}

/**
 * Parses a fixed duration (`500ms`) or a range (`100-500ms`, `1s-2s`; a unit written only once,
 * after the upper bound, applies to both bounds).
 * @returns the range, or `undefined` when the text is malformed or the range is reversed.
 */
export function parseDelaySpec(text: string): DelaySpec | undefined {
  const bounds = parseDelayBounds(text);
  return bounds !== undefined && bounds.minMs <= bounds.maxMs ? bounds : undefined;
}

/**
 * Parses like {@link parseDelaySpec} but returns a reversed range as written (`minMs > maxMs`),
 * so that a validator can say what is wrong with it.
 * @returns the bounds in milliseconds, or `undefined` only when the text is malformed.
 */
export function parseDelayBounds(text: string): DelaySpec | undefined {
  const trimmed = text.trim();
  if (!DELAY_SPEC.test(trimmed)) return undefined;
  const [low = '', high] = trimmed.split('-');
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

/** Draws a delay from a spec with the given source of randomness in `[0, 1)`. */
export function drawDelayMs(spec: DelaySpec, random: () => number): number {
  if (spec.minMs === spec.maxMs) return spec.minMs;
  return spec.minMs + Math.round(random() * (spec.maxMs - spec.minMs));
}
