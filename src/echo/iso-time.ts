/** The time as `new Date().toISOString()` writes it, formatted once per millisecond. */

let nowMs = Number.NaN;
let nowIso = '';

/**
 * `new Date().toISOString()`, formatted once per millisecond rather than on every call: under load
 * many requests (their summary's `Timestamp`, their log lines' `time`) share a millisecond.
 */
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== nowMs) {
    nowMs = ms;
    nowIso = new Date(ms).toISOString();
  }
  return nowIso;
}
