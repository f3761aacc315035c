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
import { context, isSpanContextValid, trace } from '@opentelemetry/api';
import { remainingMs, type TimeoutBudgetSource } from '../timeout-budget/timeout-budget.ts';

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

/** The request priorities of `Obs-Priority`, most urgent first. */
export const PRIORITIES = ['critical', 'high', 'normal', 'low', 'background'] as const;
/** One of {@link PRIORITIES}. */
export type ObsPriority = (typeof PRIORITIES)[number];

/**
 * How the context of the requests of one obs instance travels on outbound calls, besides the
 * deadline: the header of each carried value (set when its feature is on) and the per-call hook of
 * fan-out. Shared by every request of that instance.
 */
export interface ContextPropagation {
  /** `obs.retry.header-name` when retry amplification is on. */
  retryDepthHeader?: string;
  /** `obs.priority.header-name` when request priority is on. */
  priorityHeader?: string;
  /** `obs.tenant.header.name` when the tenant context is on. */
  tenantHeader?: string;
  /**
   * The header stamped with the context's request id on each outbound call: set in the context of
   * a background job (`obs.context.request-id-header`), not in a request's.
   */
  requestIdHeader?: string;
  /**
   * Called once for each outbound call made inside a request of this context (fan-out); `host` is
   * the target's `host[:port]` when the transport knows it. Never throws.
   */
  outbound?(context: RequestContext, transport: string, host: string | undefined): void;
  /** Logs a failure of the instrumentation itself (the call goes on). Never throws. */
  failed(transport: string, error: unknown): void;
}

/** What the context of one request holds. */
export interface RequestContext {
  readonly requestId: string;
  /** Absent when the budget feature is off or `enabled-when` skipped the request. */
  readonly budget?: ContextBudget;
  /** The retry depth: the inbound `Obs-Retry-Depth` (0 without it), plus one in each retry attempt. */
  readonly retryDepth?: number;
  /** The request's priority, when the priority feature is on. */
  readonly priority?: ObsPriority;
  /** The tenant id, when the tenant feature is on and the request named one. */
  readonly tenant?: string;
  /** Per-request state of features (fan-out's tally), by feature key. */
  readonly state?: Readonly<Record<string, unknown>>;
  /** How this context travels on outbound calls; absent in a context rebuilt without an app. */
  readonly propagation?: ContextPropagation;
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

/** The longest request id taken from a header or a record; a longer one is replaced by a new id. */
export const MAX_REQUEST_ID_LENGTH = 128;
const REQUEST_ID = /^[\x21-\x7e]+$/;

/** Whether a request id sent by a client may be kept: 1 to 128 visible ASCII characters. */
export function isAcceptableRequestId(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_REQUEST_ID_LENGTH && REQUEST_ID.test(value);
}

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

/** The context of the current request as an application reads it: {@link currentObsContext}. */
export interface ObsContext {
  /** The request id (fastify's, from `obs.context.request-id-header` when the request carried one). */
  readonly requestId: string;
  /** The active span's trace id, when an OpenTelemetry SDK traces the request. */
  readonly traceId?: string;
  readonly spanId?: string;
  /** The timeout budget, as {@link currentTimeoutBudget} reads it. */
  readonly timeoutBudget?: TimeoutBudget;
  /** The retry depth (`Obs-Retry-Depth`), when retry amplification is on. */
  readonly retryDepth?: number;
  /** The request priority (`Obs-Priority`), when the priority feature is on. */
  readonly priority?: ObsPriority;
  /** The tenant id, when the tenant feature is on and the request named one. */
  readonly tenant?: string;
}

/**
 * The context of the request being served (request id, trace ids, timeout budget, retry depth,
 * priority, tenant), or undefined outside one: in a handler, in what it awaits, in timers it set and
 * in work bound with `obs.bind`. Never throws.
 */
export function currentObsContext(nowMs: number = Date.now()): ObsContext | undefined {
  const store = storage.getStore();
  if (store === undefined) return undefined;
  let ids: { traceId?: string; spanId?: string } = {};
  try {
    const span = trace.getSpanContext(context.active());
    if (span !== undefined && isSpanContextValid(span)) ids = { traceId: span.traceId, spanId: span.spanId };
  } catch {
    // no trace ids then
  }
  const budget = currentTimeoutBudget(nowMs);
  return {
    requestId: store.requestId,
    ...ids,
    ...(budget === undefined ? {} : { timeoutBudget: budget }),
    ...(store.retryDepth === undefined ? {} : { retryDepth: store.retryDepth }),
    ...(store.priority === undefined ? {} : { priority: store.priority }),
    ...(store.tenant === undefined ? {} : { tenant: store.tenant }),
  };
}

/**
 * Runs `fn` in the current request context with `changes` applied (a retry attempt's depth, say);
 * outside a request context `fn` just runs.
 */
export function runWithContextChanges<T>(
  changes: Partial<Pick<RequestContext, 'retryDepth' | 'priority' | 'tenant'>>,
  fn: () => T,
): T {
  const store = storage.getStore();
  if (store === undefined) return fn();
  return storage.run({ ...store, ...changes }, fn);
}
