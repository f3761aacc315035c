/** The time as `new Date().toISOString()` writes it, formatted once per millisecond; and RFC 3339 times read. */

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

const RFC_3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/**
 * The time of an RFC 3339 date-time (`2026-11-27T10:00:00Z`, `2026-11-27T11:00:00.250+01:00`) in
 * epoch milliseconds, or `undefined` when `text` is not one. The offset is required: without it the
 * text would be read in the server's zone, which the client does not know. Each field is checked
 * against its range because `Date.parse` takes `2026-02-30` as 2 March; a leap second (`:60`) is
 * refused, as a `Date` cannot hold it; digits past the millisecond are cut.
 */
export function parseRfc3339(text: string): number | undefined {
  const m = RFC_3339.exec(text);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (m[8] !== undefined) {
    const offsetHours = Number(m[9]);
    const offsetMins = Number(m[10]);
    if (offsetHours > 23 || offsetMins > 59) return undefined;
    offsetMinutes = (m[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  const ms = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  // Not Date.UTC: it reads the years 0-99 as 1900-1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, ms);
  return date.getTime() - offsetMinutes * 60_000;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}
