/**
 * The request context: one `AsyncLocalStorage` for the whole library, entered by the plugin when a
 * request arrives, carrying its id and its timeout budget. Promises and timers keep it; work queued
 * now and run later elsewhere (a pool, a queue, an emitter registered outside the request) loses it
 * unless it is bound with {@link bindContext}.
 *
 * The outbound instrumentation (`timeout-budget-clients.ts`) reads the budget from here: outside a
 * request context nothing is stamped, counted or aborted.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { remainingMs, type TimeoutBudgetSource } from './timeout-budget.ts';

/** What outbound calls made inside a request do with its budget (from `obs.timeout-budget`). */
export interface OutboundBudgetPolicy {
  /** The remaining-ms header stamped on outbound calls. */
  readonly outboundHeader: string;
  /** At or below this many ms left, a call is exhausted. */
  readonly minimumBudgetMs: number;
  /** Whether an exhausted call is refused: `abort-on-exhaustion`, in ENFORCING mode only (read per call). */
  readonly abortOnExhaustion: boolean;
  readonly applyClientTimeout: boolean;
  /** Counts an exhausted call of a transport. Never throws. */
  exhausted(transport: string): void;
  /** Logs a failure of the instrumentation itself (the call goes on). Never throws. */
  failed(transport: string, error: unknown): void;
}

/** The budget held by a request context. */
export interface ContextBudget {
  readonly deadlineEpochMs: number;
  readonly source: TimeoutBudgetSource;
  readonly policy: OutboundBudgetPolicy;
}

/** What the context of one request holds. */
export interface RequestContext {
  readonly requestId: string;
  /** Absent when the budget feature is off or `enabled-when` skipped the request. */
  readonly budget?: ContextBudget;
}

/** The remaining budget of the current request: {@link currentTimeoutBudget}. */
export interface TimeoutBudget {
  /** Milliseconds left now; 0 once the deadline has passed, never negative. */
  readonly remainingMs: number;
  /** The absolute deadline, epoch milliseconds. */
  readonly deadlineEpochMs: number;
  /** Where it came from: the absolute header, the remaining-ms header or the default. */
  readonly source: TimeoutBudgetSource;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** Runs `fn` inside `context`; what `fn` starts (promises, timers) keeps it. */
export function runInRequestContext<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** The context of the request being served, or undefined outside one. */
export function currentRequestContext(): RequestContext | undefined {
  return storage.getStore();
}

/**
 * The timeout budget of the request being served: `{ remainingMs, deadlineEpochMs, source }`, or
 * undefined outside a request, when `obs.timeout-budget.enabled=false` or when its `enabled-when`
 * skipped the request. `nowMs` defaults to `Date.now()`. Never throws.
 */
export function currentTimeoutBudget(nowMs: number = Date.now()): TimeoutBudget | undefined {
  const budget = storage.getStore()?.budget;
  if (budget === undefined) return undefined;
  return {
    remainingMs: remainingMs(budget.deadlineEpochMs, nowMs),
    deadlineEpochMs: budget.deadlineEpochMs,
    source: budget.source,
  };
}

/**
 * Binds `fn` to the current async context (obs's request context, and the OpenTelemetry context
 * when the SDK keeps it in an `AsyncLocalStorage`): wherever and whenever it is called later, it
 * runs in the context it was bound in. For work handed to a pool, a queue or an emitter.
 */
export function bindContext<F extends (...args: never[]) => unknown>(fn: F): F {
  return AsyncLocalStorage.bind(fn);
}
