/**
 * Duration and delay-range parsing shared by the scenario schema, the control headers and the
 * environment. One grammar everywhere, so `500ms` means the same thing in a header, a YAML file
 * and an `EchoScenario`.
 */

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000 };
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m)?$/;
const RANGE = /^(\d+(?:\.\d+)?)(ms|s|m)?-(\d+(?:\.\d+)?)(ms|s|m)?$/;

/**
 * The delay grammar (a duration or a range, no surrounding whitespace) as a pattern that both
 * ECMAScript and RE2 (Kubernetes' OpenAPI validation) read the same way, for JSON schemas.
 */
export const DELAY_SPEC_PATTERN = String.raw`^\d+(?:\.\d+)?(?:ms|s|m)?(?:-\d+(?:\.\d+)?(?:ms|s|m)?)?$`;

/** The accepted duration form, worded for error messages. */
export const DURATION_FORM =
  'a duration: a non-negative number with unit ms, s or m (bare number = ms), e.g. 250ms';
/** The accepted delay form (a duration or a range), worded for error messages. */
export const DELAY_SPEC_FORM = `${DURATION_FORM}, or a range min-max with a unit, e.g. 100-500ms`;

/**
 * Parses `250ms`, `1.5s`, `2m` or a bare number of milliseconds.
 * @returns whole milliseconds (rounded), or `undefined` when the text is not a duration.
 */
export function parseDurationMs(text: string): number | undefined {
  const m = DURATION.exec(text.trim());
  if (m === null) return undefined;
  return Math.round(Number(m[1]) * (UNIT_MS[m[2] ?? 'ms'] ?? 1));
}

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
  const fixed = parseDurationMs(trimmed);
  if (fixed !== undefined) return { minMs: fixed, maxMs: fixed };
  const m = RANGE.exec(trimmed);
  if (m === null) return undefined;
  const maxUnit = UNIT_MS[m[4] ?? 'ms'] ?? 1;
  const minUnit = m[2] === undefined ? maxUnit : (UNIT_MS[m[2]] ?? 1);
  return { minMs: Math.round(Number(m[1]) * minUnit), maxMs: Math.round(Number(m[3]) * maxUnit) };
}

/** Draws a delay from a spec with the given source of randomness in `[0, 1)`. */
export function drawDelayMs(spec: DelaySpec, random: () => number): number {
  if (spec.minMs === spec.maxMs) return spec.minMs;
  return spec.minMs + Math.round(random() * (spec.maxMs - spec.minMs));
}
