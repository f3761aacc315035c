/**
 * The retry helper of retry amplification: `obs.retry(fn, options)` ({@link retryWithObs}). Each
 * retry runs with the retry depth raised (request context and baggage), so the outbound calls it
 * makes carry it; the options are bounded and checked at the call; it never retries past the
 * request's timeout budget.
 */
import { context, propagation } from '@opentelemetry/api';
import { isObsError, ObsError } from '../../core/errors.ts';
import { nearestName } from '../../core/nearest-name.ts';
import { currentRequestContext, runWithContextChanges } from '../request-context/request-context.ts';
import { isExhausted, remainingMs } from '../timeout-budget/timeout-budget.ts';
import { MAX_RETRY_DEPTH, parseRetryDepth, RETRY_DEPTH_BAGGAGE_KEY } from './retry-depth.ts';

/** The `endpoint` label of retries made outside a request. */
const NO_REQUEST = 'none';

/** The most attempts `obs.retry` makes, the first included. */
export const MAX_RETRY_ATTEMPTS = 10;
/** The longest delay between two attempts, milliseconds. */
export const MAX_RETRY_DELAY_MS = 60_000;

/** Options of `obs.retry(fn, options)`; every one is checked when it is called. */
export interface RetryOptions {
  /** Attempts in all, the first included: an integer from 1 to 10. Default 3. */
  readonly attempts?: number;
  /** Milliseconds before the first retry: 0 to 60000. Default 50. */
  readonly delayMs?: number;
  /** `exponential` (default: the delay doubles at each retry) or `fixed`. */
  readonly backoff?: 'exponential' | 'fixed';
  /** The longest delay, milliseconds: 0 to 60000. Default 1000. */
  readonly maxDelayMs?: number;
  /**
   * Whether an attempt's error is worth another attempt. Default: every error but an outbound call
   * refused for an exhausted timeout budget (`OBS_ERR_TIMEOUT_BUDGET_EXHAUSTED`).
   */
  readonly retryOn?: (error: unknown, attempt: number) => boolean;
  /** No attempt starts once it is aborted; handed to each attempt. */
  readonly signal?: AbortSignal;
  /** How to wait between attempts (for tests). Default a timer, cut short by `signal`. */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** One attempt: `attempt` is 0 for the first call, n for the n-th retry. */
export type RetryAttempt<T> = (attempt: number, signal: AbortSignal | undefined) => Promise<T> | T;

/** Why `obs.retry` stopped with an error. */
type GiveUpReason = 'attempts' | 'not-retryable' | 'budget' | 'aborted';

/** What `obs.retry` did for one obs instance, for its snapshot section. */
export interface RetryHelperFigures {
  calls: number;
  retries: number;
  readonly gaveUp: Record<GiveUpReason, number>;
  /** Counts a retry in `obs_retry_attempts_total`, once the feature made its meters. */
  countRetry?: (endpoint: string) => void;
}

/** What the retry feature keeps on a request's context (`state.retry`). */
export interface RetryState {
  readonly endpoint: string;
}

/** The part of an obs instance the helper reads (structural: obs.ts imports this module). */
export interface RetryOwner {
  readonly config: { readonly retry: { readonly enabled: boolean } };
}

const figures = new WeakMap<RetryOwner, RetryHelperFigures>();

/** The helper's figures of an obs instance, made on first use. */
export function helperFiguresOf(owner: RetryOwner): RetryHelperFigures {
  let f = figures.get(owner);
  if (f === undefined) {
    f = { calls: 0, retries: 0, gaveUp: { attempts: 0, 'not-retryable': 0, budget: 0, aborted: 0 } };
    figures.set(owner, f);
  }
  return f;
}

function invalidOption(name: string, value: unknown, expected: string): ObsError {
  let shown: string;
  try {
    shown = typeof value === 'function' ? 'a function' : String(JSON.stringify(value) ?? value);
  } catch {
    shown = String(value);
  }
  return new ObsError('OBS_ERR_INVALID_RETRY_OPTION', [name, shown, expected]);
}

function integerIn(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalidOption(name, value, `an integer from ${min} to ${max}`);
  }
  return value;
}

function functionOr<F>(name: string, value: unknown, fallback: F): F {
  if (value === undefined) return fallback;
  if (typeof value !== 'function') throw invalidOption(name, value, 'a function');
  return value as F;
}

/** The default `retryOn`: every error but a call refused for an exhausted budget. */
function retryableByDefault(error: unknown): boolean {
  return !(isObsError(error) && error.code === 'OBS_ERR_TIMEOUT_BUDGET_EXHAUSTED');
}

function sleepFor(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

const RETRY_OPTION_NAMES: readonly string[] = [
  'attempts',
  'delayMs',
  'backoff',
  'maxDelayMs',
  'retryOn',
  'signal',
  'sleep',
];

interface CheckedOptions {
  readonly attempts: number;
  readonly delayMs: number;
  readonly maxDelayMs: number;
  readonly exponential: boolean;
  readonly retryOn: (error: unknown, attempt: number) => boolean;
  readonly signal: AbortSignal | undefined;
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
}

function checkOptions(options: RetryOptions | undefined): CheckedOptions {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw invalidOption('options', options, 'an object');
  }
  const o = options ?? {};
  for (const key of Object.keys(o)) {
    if (!RETRY_OPTION_NAMES.includes(key)) {
      const near = nearestName(key, RETRY_OPTION_NAMES);
      throw invalidOption(
        key,
        (o as Record<string, unknown>)[key],
        near === undefined
          ? `no such option (options: ${RETRY_OPTION_NAMES.join(', ')})`
          : `no such option; did you mean ${near}?`,
      );
    }
  }
  const backoff = o.backoff ?? 'exponential';
  if (backoff !== 'exponential' && backoff !== 'fixed') {
    throw invalidOption('backoff', backoff, '"exponential" or "fixed"');
  }
  const signal = o.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw invalidOption('signal', signal, 'an AbortSignal');
  }
  return {
    attempts: integerIn('attempts', o.attempts, 3, 1, MAX_RETRY_ATTEMPTS),
    delayMs: integerIn('delayMs', o.delayMs, 50, 0, MAX_RETRY_DELAY_MS),
    maxDelayMs: integerIn('maxDelayMs', o.maxDelayMs, 1000, 0, MAX_RETRY_DELAY_MS),
    exponential: backoff === 'exponential',
    retryOn: functionOr('retryOn', o.retryOn, retryableByDefault),
    signal,
    sleep: functionOr('sleep', o.sleep, sleepFor),
  };
}

/** The delay before retry `n` (n ≥ 1). */
function delayBefore(n: number, o: CheckedOptions): number {
  const grown = o.exponential ? o.delayMs * 2 ** (n - 1) : o.delayMs;
  return Math.min(o.maxDelayMs, grown);
}

/** Whether the request's budget leaves no room for a retry after waiting `delayMs`. */
function budgetStops(delayMs: number): boolean {
  const budget = currentRequestContext()?.budget;
  if (budget === undefined) return false;
  return isExhausted(
    remainingMs(budget.deadlineEpochMs, Date.now()) - delayMs,
    budget.policy.minimumBudgetMs,
  );
}

/** The depth of the current context: the request's, else the baggage's (outside a request), else 0. */
export function currentDepth(): number {
  const store = currentRequestContext();
  if (store?.retryDepth !== undefined) return store.retryDepth;
  const entry = propagation.getBaggage(context.active())?.getEntry(RETRY_DEPTH_BAGGAGE_KEY)?.value;
  const parsed = parseRetryDepth(entry);
  return typeof parsed === 'number' ? parsed : 0;
}

/** Runs `fn` at `depth`: in the request context and the OpenTelemetry baggage. */
export function atDepth<T>(depth: number, fn: () => T): T {
  const active = context.active();
  const baggage = (propagation.getBaggage(active) ?? propagation.createBaggage()).setEntry(
    RETRY_DEPTH_BAGGAGE_KEY,
    { value: String(depth) },
  );
  return context.with(propagation.setBaggage(active, baggage), () =>
    runWithContextChanges({ retryDepth: depth }, fn),
  );
}

/**
 * `obs.retry(fn, options)`: calls `fn(attempt, signal)` until it fulfils, at most `attempts` times,
 * waiting between attempts (exponential backoff by default). Attempt 0 runs in the current context;
 * attempt n runs with the retry depth raised by n (in the request context and the baggage), so each
 * outbound call it makes carries the raised depth. It stops early on an error `retryOn` refuses, on
 * `signal`'s abort, and when the request's timeout budget, less the next delay, is at or below
 * `minimum-budget`; it then rejects with the last attempt's error, as it is. With
 * `obs.retry.enabled=false` it retries the same and stamps nothing.
 * A bad option (out of bounds, of the wrong type, or unknown) rejects with an {@link ObsError}
 * `OBS_ERR_INVALID_RETRY_OPTION` before any attempt; it never throws.
 */
export function retryWithObs<T>(obs: RetryOwner, fn: RetryAttempt<T>, options?: RetryOptions): Promise<T> {
  let attempt: RetryAttempt<T>;
  let o: CheckedOptions;
  try {
    const given = functionOr<RetryAttempt<T> | undefined>('fn', fn, undefined);
    if (given === undefined) throw invalidOption('fn', fn, 'a function');
    attempt = given;
    o = checkOptions(options);
  } catch (error) {
    return Promise.reject(error);
  }
  const stamp = obs.config.retry.enabled;
  const f = helperFiguresOf(obs);
  f.calls += 1;
  const store = currentRequestContext();
  const endpoint = (store?.state?.retry as RetryState | undefined)?.endpoint ?? NO_REQUEST;
  const base = stamp ? currentDepth() : 0;
  const giveUp = (reason: GiveUpReason, error: unknown): never => {
    f.gaveUp[reason] += 1;
    throw error;
  };
  const run = async (): Promise<T> => {
    for (let n = 0; ; n += 1) {
      try {
        if (n === 0 || !stamp) return await attempt(n, o.signal);
        return await atDepth(Math.min(MAX_RETRY_DEPTH, base + n), () => attempt(n, o.signal));
      } catch (error) {
        if (n + 1 >= o.attempts) giveUp('attempts', error);
        if (o.signal?.aborted) giveUp('aborted', error);
        if (!o.retryOn(error, n)) giveUp('not-retryable', error);
        const delay = delayBefore(n + 1, o);
        if (budgetStops(delay)) giveUp('budget', error);
        await o.sleep(delay, o.signal);
        if (o.signal?.aborted) giveUp('aborted', error);
        if (budgetStops(0)) giveUp('budget', error);
        f.retries += 1;
        try {
          f.countRetry?.(endpoint);
        } catch {
          // a broken meter never stops a retry
        }
      }
    }
  };
  return run();
}

/** The retry feature's part of `app.obs`. */
export interface RetryApi {
  /**
   * Calls `fn(attempt, signal)` until it fulfils, at most `options.attempts` times (default 3, at
   * most 10), with exponential backoff (default 50 ms doubling, at most 1000 ms). Attempt 0 runs in
   * the current context; attempt n runs with the retry depth raised by n (request context and
   * baggage `obs.retry.depth`), so its outbound calls carry `Obs-Retry-Depth` + n. Stops early on an
   * error `retryOn` refuses (default: all but `OBS_ERR_TIMEOUT_BUDGET_EXHAUSTED`), on
   * `options.signal`'s abort, or when the request's timeout budget leaves `minimum-budget` or less
   * after the next delay; it then rejects with the last attempt's error. With
   * `obs.retry.enabled=false` it retries the same and stamps nothing.
   * A bad option (out of bounds, of the wrong type or unknown) rejects with `ObsError`
   * `OBS_ERR_INVALID_RETRY_OPTION` before any attempt.
   */
  retry<T>(fn: RetryAttempt<T>, options?: RetryOptions): Promise<T>;
}

/** The retry helper of an obs instance. */
export function retryApi(owner: RetryOwner): RetryApi {
  return {
    retry: (fn, options) => retryWithObs(owner, fn, options),
  };
}
