/**
 * A scenario's windows: `activeFor` (how long after the set was stored, or the scenario reset, it
 * matches) and `times` (how many requests it answers, per session). Past either it is expired: it
 * stops matching, and `GET /scenario/state` says so. See
 * docs/adr/0034-scenario-order-windows-sessions.md.
 */
import { DURATION_FORM, DURATION_PATTERN, parseDurationMs } from '@echo-chaos/obs/internal';

/**
 * Longest `activeFor`: 366 days, the ceiling of an EchoScenario's `spec.duration` (the operator's
 * window around the same scenario). No timer is set for it (a request compares the clock), so it
 * is not held to the 24.8 days a Node timer can wait.
 */
export const MAX_ACTIVE_FOR_MS = 366 * 86_400_000;
/** Longest `activeFor` text, in characters: any duration up to the ceiling, with decimals, fits. */
export const MAX_ACTIVE_FOR_LENGTH = 32;
/** `activeFor` as a pattern ECMAScript and RE2 read alike: one duration of the one grammar. */
export const ACTIVE_FOR_PATTERN = `^${DURATION_PATTERN}$`;
/** The `activeFor` form, worded for messages. */
export const ACTIVE_FOR_FORM = `${DURATION_FORM}, above 0 and at most 366d`;

/**
 * Largest `times`: a billion answers, more than any test sends, and a count that stays exact in a
 * double and in 32 bits.
 */
export const MAX_TIMES = 1_000_000_000;

/** An `activeFor` text read: whole milliseconds, or what is wrong with it. */
export type ActiveForRead =
  | { readonly ok: true; readonly ms: number }
  | { readonly ok: false; readonly message: string };

/**
 * Reads an `activeFor`: a duration above 0 (a value that rounds to 0 ms would never match) and at
 * most {@link MAX_ACTIVE_FOR_MS}. Never throws.
 */
export function readActiveFor(text: string): ActiveForRead {
  const ms = parseDurationMs(text);
  if (ms === undefined || ms <= 0 || ms > MAX_ACTIVE_FOR_MS) {
    return { ok: false, message: `activeFor must be ${ACTIVE_FOR_FORM}` };
  }
  return { ok: true, ms };
}
