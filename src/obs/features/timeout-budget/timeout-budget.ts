/**
 * The timeout budget (`obs.timeout-budget`), inbound: the deadline of a request, established once
 * when it arrives. {@link establishBudget} is the whole rule set, a pure function of the headers,
 * the configuration and the clock:
 *
 * 1. `Obs-Timeout-Deadline-Ms` (absolute, epoch milliseconds) wins; no safety margin is taken off it.
 * 2. Else the remaining-ms header (`inbound-header`, default `Obs-Timeout-Ms`), less `safety-margin`.
 * 3. Else `default-budget`, less `safety-margin`, floored at `minimum-budget` (the floor applies to
 *    the implicit default only, never to a header). A `default-budget` of 0 establishes no budget:
 *    the request has none, as under `enabled-when` (the original starter's contract).
 *
 * Every budget is clamped to `maximum-budget`, so a header of 10^20 ms never overflows anything.
 * An explicit `0` or a deadline in the past is an expired budget (0 ms remaining): it never falls
 * back to the default. A malformed header (not a plain non-negative integer, sent twice, absurdly
 * long) is treated as absent, and reported so the caller can count it.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ObsConfig } from '../../core/config/config-schema.ts';

/** The fixed name of the absolute deadline header (epoch milliseconds). */
export const DEADLINE_HEADER = 'Obs-Timeout-Deadline-Ms';

/** Where a budget came from. */
export type TimeoutBudgetSource = 'deadline-header' | 'remaining-header' | 'default';

/** The settings {@link establishBudget} reads: `obs.timeout-budget`. */
export type TimeoutBudgetConfig = ObsConfig['timeout-budget'];

/** A request's deadline, as established when it arrived. */
export interface EstablishedBudget {
  /** The absolute deadline, epoch milliseconds. */
  readonly deadlineEpochMs: number;
  readonly source: TimeoutBudgetSource;
}

/** What {@link establishBudget} returns: the budget, and the headers that were malformed. */
export interface BudgetResult {
  /** Absent when no header carried a deadline and `default-budget` is 0 (no implicit budget). */
  readonly budget: EstablishedBudget | undefined;
  /** Names (as configured) of the deadline headers present but malformed, ignored. */
  readonly invalidHeaders: readonly string[];
}

/** Longest header value parsed; anything longer is malformed (bounds the work per request). */
const MAX_HEADER_CHARS = 64;
const DIGITS = /^[0-9]+$/;
/** No malformed header: shared, so a request with none allocates no array. */
const NO_INVALID_HEADERS: readonly string[] = Object.freeze([]);
const DEADLINE_HEADER_KEY = DEADLINE_HEADER.toLowerCase();
// The configured inbound header, lower-cased once rather than on every request.
let inboundName = '';
let inboundKey = '';
function inboundHeaderKey(name: string): string {
  if (name !== inboundName) {
    inboundKey = name.toLowerCase();
    inboundName = name;
  }
  return inboundKey;
}

/**
 * A header value as whole milliseconds: `undefined` when absent, `null` when malformed (not a
 * plain non-negative integer, repeated, or longer than 64 characters). Surrounding blanks are
 * allowed. Never throws.
 */
export function parseMillisHeader(value: string | readonly string[] | undefined): number | undefined | null {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length > MAX_HEADER_CHARS) return null;
  const text = value.trim();
  if (!DIGITS.test(text)) return null;
  return Number(text);
}

/**
 * Establishes the budget of a request from its headers (lower-case names, as node gives them) at
 * `nowMs` (epoch milliseconds). See the module comment for the rules. Never throws.
 */
export function establishBudget(
  headers: IncomingHttpHeaders,
  config: TimeoutBudgetConfig,
  nowMs: number,
): BudgetResult {
  let invalidHeaders: readonly string[] = NO_INVALID_HEADERS;
  const maximum = config['maximum-budget'];
  const margin = config['safety-margin'];
  const bounded = (remaining: number) => Math.min(maximum, Math.max(0, remaining));

  const absolute = parseMillisHeader(headers[DEADLINE_HEADER_KEY]);
  if (absolute === null) invalidHeaders = [DEADLINE_HEADER];
  else if (absolute !== undefined) {
    return {
      budget: { deadlineEpochMs: nowMs + bounded(absolute - nowMs), source: 'deadline-header' },
      invalidHeaders,
    };
  }

  const inbound = config['inbound-header'];
  const remaining = parseMillisHeader(headers[inboundHeaderKey(inbound)]);
  if (remaining === null) invalidHeaders = [...invalidHeaders, inbound];
  else if (remaining !== undefined) {
    return {
      budget: { deadlineEpochMs: nowMs + bounded(remaining - margin), source: 'remaining-header' },
      invalidHeaders,
    };
  }

  // A zero default means "no implicit budget", not an expired one: only a header can expire a budget.
  if (config['default-budget'] === 0) return { budget: undefined, invalidHeaders };
  const implicit = Math.max(config['minimum-budget'], config['default-budget'] - margin);
  return { budget: { deadlineEpochMs: nowMs + bounded(implicit), source: 'default' }, invalidHeaders };
}

/** Milliseconds left of a deadline at `nowMs`; never negative. */
export function remainingMs(deadlineEpochMs: number, nowMs: number): number {
  return Math.max(0, deadlineEpochMs - nowMs);
}

/** Whether a call with `remaining` ms left counts as exhausted: at or below `minimum-budget`. */
export function isExhausted(remaining: number, minimumBudgetMs: number): boolean {
  return remaining <= minimumBudgetMs;
}
