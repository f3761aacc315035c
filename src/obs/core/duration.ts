/**
 * The one duration grammar of echo-chaos: the `obs.*` configuration, the echo service's variables
 * and control headers, scenario delays and the EchoScenario CRD all read `100ms`, `2s`, `5m`, `1h`,
 * `1d`, compound forms of them as Go and Kubernetes write durations (`1h30m`, `1h30m15s`: the
 * terms add up), or a bare number of milliseconds (Spring's default unit for a `Duration` written
 * without one). Decimals are allowed (`1.5s`); the result is whole milliseconds.
 */

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * The grammar as a regular-expression source without anchors, read the same way by ECMAScript and
 * RE2 (Kubernetes' OpenAPI validation), for JSON schemas and patterns built on it.
 */
export const DURATION_PATTERN = String.raw`(?:(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+|\d+(?:\.\d+)?)`;
/** The same grammar, anchored. */
const DURATION = new RegExp(`^${DURATION_PATTERN}$`);
/** The common case, one term, read at once (a delay header is read on every request). */
const SINGLE = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/;
/** One term of a duration: a number and its unit (none: milliseconds, alone). */
const TERM = /(\d+(?:\.\d+)?)(ms|s|m|h|d)?/g;

/** The accepted form, worded for error messages. */
export const DURATION_FORM = 'a duration such as 100ms, 2s, 5m or 1h (a bare number is milliseconds)';

/**
 * Parses a configuration duration.
 * @returns whole milliseconds, or `undefined` when the value is not a duration.
 */
export function parseDurationMs(value: unknown): number | undefined {
  if (typeof value === 'number') {
    // Like a text: a safe integer of milliseconds or nothing (2^53 would not count in whole ms).
    const ms = Math.round(value);
    // `-0` (and -0.4) is 0.
    return Number.isSafeInteger(ms) && ms >= 0 ? Math.abs(ms) : undefined;
  }
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  const single = SINGLE.exec(text);
  let sum = 0;
  if (single !== null) sum = Number(single[1]) * (UNIT_MS[single[2] ?? 'ms'] ?? 1);
  else if (!DURATION.test(text)) return undefined;
  else
    for (const [, number, unit] of text.matchAll(TERM)) sum += Number(number) * (UNIT_MS[unit ?? 'ms'] ?? 1);
  const ms = Math.round(sum);
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** The canonical text of a duration: the largest unit that divides it exactly (`2000` → `2s`). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0ms';
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = UNIT_MS[unit] ?? 1;
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
