/**
 * The timeout budget on outbound calls. Inside a request that has a budget (`request-context.ts`),
 * every instrumented call is stamped with the remaining milliseconds (`outbound-header`, default the
 * inbound header) and the absolute deadline (`Obs-Timeout-Deadline-Ms`); a header the caller set is
 * never overwritten. With `minimum-budget` or less left, the call counts in
 * `obs_timeout_budget_exhausted_total{transport}` and still runs, unless `abort-on-exhaustion`
 * refuses it with {@link TimeoutBudgetExhaustedError} before a byte is sent. With
 * `apply-client-timeout`, the call is aborted when the budget runs out; with 0 ms left it is not
 * bounded at all, on every transport ({@link boundMs}): an expired budget is stamped and counted,
 * and the call still runs, as the deadline rules say. Outside a request context nothing is
 * stamped, counted or aborted.
 *
 * Transports: `fetch` (the global `fetch`, wrapped once per process), `http` (`node:http` and
 * `node:https` through the `http.client.request.created` diagnostics channel, so also got and most
 * clients built on them), `undici` ({@link createBudgetInterceptor}, composed onto a dispatcher) and
 * `axios` ({@link instrumentAxios}, on an instance).
 * The instrumentation never fails a call: a failure of its own is logged and the call goes on.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { subscribe } from 'node:diagnostics_channel';
import type { ClientRequest } from 'node:http';
import { ObsError } from '../../core/errors.ts';
import { currentRequestContext, type OutboundBudgetPolicy } from '../request-context/request-context.ts';
import { DEADLINE_HEADER, isExhausted, remainingMs } from './timeout-budget.ts';

/** The values of the `transport` label of `obs_timeout_budget_exhausted_total`. */
export const TRANSPORTS = ['fetch', 'undici', 'http', 'axios', 'kafka'] as const;
export type Transport = (typeof TRANSPORTS)[number];

/**
 * An outbound HTTP call refused because the request's timeout budget is exhausted
 * (`abort-on-exhaustion`); code `OBS_ERR_TIMEOUT_BUDGET_EXHAUSTED`, status 504. Nothing was sent.
 */
export class TimeoutBudgetExhaustedError extends ObsError {
  /** The transport of the refused call: `fetch`, `undici`, `http` or `axios`. */
  readonly transport: string;
  /** Milliseconds the budget had left (at or below `minimum-budget`). */
  readonly remainingMs: number;
  constructor(transport: string, remaining: number, minimumBudgetMs: number) {
    super('OBS_ERR_TIMEOUT_BUDGET_EXHAUSTED', [transport, remaining, minimumBudgetMs]);
    this.name = 'TimeoutBudgetExhaustedError';
    this.transport = transport;
    this.remainingMs = remaining;
  }
}

/** The budget part of an outbound decision. */
export interface OutboundBudget {
  readonly remainingMs: number;
  readonly deadlineEpochMs: number;
  readonly exhausted: boolean;
  readonly policy: OutboundBudgetPolicy;
}

/** What an outbound call made inside a request does: stamp, maybe refuse, maybe bound. */
export interface OutboundDecision {
  /** Absent when the request has no budget. */
  readonly budget?: OutboundBudget;
  /** Set when the call must not run. */
  readonly refusal?: TimeoutBudgetExhaustedError;
  /** The headers to stamp (deadline, retry depth, priority, tenant); a transport skips one the caller set. */
  readonly headers: ReadonlyArray<readonly [name: string, value: string]>;
  /** Logs a failure of the instrumentation (the call goes on). Never throws. */
  failed(transport: string, error: unknown): void;
}

/** What {@link decideOutbound} is told about the call. */
export interface OutboundCall {
  /** The target's `host[:port]`, for fan-out's distinct hosts. */
  readonly host?: string;
  /**
   * Whether this call is counted for fan-out here: false where a transport below counts it (axios
   * over `node:http`), true otherwise.
   */
  readonly tally?: boolean;
  /** Only count it for fan-out: a transport above stamped it and judged its budget already. */
  readonly tallyOnly?: boolean;
  readonly nowMs?: number;
}

const NOT_LOGGED = (): void => {};

/**
 * The bound `apply-client-timeout` puts on a call, in milliseconds, or undefined for none: none
 * without the setting, and none with 0 ms left. An expired budget is stamped `0` and the call still
 * executes (deadline rule 2), so a timeout of 0 would only turn that call into a failure the
 * downstream never sees; the original starter's clients read a 0 timeout as "no timeout" too.
 * One rule for fetch, `node:http`, axios and undici.
 */
export function boundMs(budget: OutboundBudget | undefined): number | undefined {
  if (budget === undefined || !budget.policy.applyClientTimeout || budget.remainingMs <= 0) return undefined;
  return budget.remainingMs;
}

/**
 * The decision for an outbound call of `transport` made now, in the current context, with the
 * exhaustion and the call (fan-out) counted; undefined outside a request context. Never throws.
 */
export function decideOutbound(transport: Transport, call: OutboundCall = {}): OutboundDecision | undefined {
  const store = currentRequestContext();
  if (store === undefined) return undefined;
  const carried = store.propagation;
  const failed = store.budget?.policy.failed ?? carried?.failed ?? NOT_LOGGED;
  try {
    if (call.tally !== false) carried?.outbound?.(store, transport, call.host);
  } catch (error) {
    failed(transport, error);
  }
  if (call.tallyOnly === true) return { headers: [], failed };
  const headers: Array<readonly [string, string]> = [];
  let budget: OutboundBudget | undefined;
  let refusal: TimeoutBudgetExhaustedError | undefined;
  if (store.budget !== undefined) {
    const { policy, deadlineEpochMs } = store.budget;
    const remaining = remainingMs(deadlineEpochMs, call.nowMs ?? Date.now());
    const exhausted = isExhausted(remaining, policy.minimumBudgetMs);
    if (exhausted) policy.exhausted(transport);
    budget = { remainingMs: remaining, deadlineEpochMs, exhausted, policy };
    if (exhausted && policy.abortOnExhaustion) {
      refusal = new TimeoutBudgetExhaustedError(transport, remaining, policy.minimumBudgetMs);
    }
    headers.push([policy.outboundHeader, String(remaining)], [DEADLINE_HEADER, String(deadlineEpochMs)]);
  }
  if (carried !== undefined) {
    if (carried.retryDepthHeader !== undefined && store.retryDepth !== undefined) {
      headers.push([carried.retryDepthHeader, String(store.retryDepth)]);
    }
    if (carried.priorityHeader !== undefined && store.priority !== undefined) {
      headers.push([carried.priorityHeader, store.priority]);
    }
    if (carried.tenantHeader !== undefined && store.tenant !== undefined) {
      headers.push([carried.tenantHeader, store.tenant]);
    }
    if (carried.requestIdHeader !== undefined) headers.push([carried.requestIdHeader, store.requestId]);
  }
  return { budget, refusal, headers, failed };
}

// ---------------------------------------------------------------------------------------------
// call observers (the dependency health map): every outbound call, inside a request or not

/** What a call observer is told when an outbound call starts. */
export interface OutboundCallStart {
  readonly transport: Transport;
  /** The target's `host[:port]`, when the transport knows it. */
  readonly host?: string;
  /** The request method as the caller gave it (upper-cased). */
  readonly method: string;
}
/** How an observed outbound call ended: a status (response headers), or an error. */
export interface OutboundCallEnd {
  readonly status?: number;
  readonly error?: unknown;
  /** The call was aborted or timed out (an `AbortError` or `TimeoutError`). */
  readonly timedOut?: boolean;
}
/** Told of each outbound call as it starts; the callback it returns (if any) is told how it ended. */
export type OutboundCallObserver = (call: OutboundCallStart) => ((end: OutboundCallEnd) => void) | undefined;

const observers = new Set<OutboundCallObserver>();

/**
 * Adds a process-wide observer of every outbound call of the instrumented transports (fetch,
 * `node:http`/`node:https` and so axios, undici with {@link createBudgetInterceptor}), inside a
 * request or not; each call is observed once, on the transport that counts it (fetch over undici at
 * fetch, axios at `node:http`). Returns the function that removes it. An observer that throws is
 * ignored for that call.
 */
export function onOutboundCall(observer: OutboundCallObserver): () => void {
  installOutboundBudget();
  observers.add(observer);
  return () => {
    observers.delete(observer);
  };
}

/** Whether an error is an abort or a timeout (fetch's `AbortSignal.timeout`, a caller's abort). */
export function isAbortOrTimeout(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { name, code } = error as { name?: unknown; code?: unknown };
  return (
    name === 'TimeoutError' ||
    name === 'AbortError' ||
    code === 'ABORT_ERR' ||
    code === 'ECONNABORTED' ||
    code === 'ETIMEDOUT' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    code === 'UND_ERR_ABORTED'
  );
}

/**
 * Starts observing one call: the callback to call once when it ends (later calls do nothing), or
 * undefined when nothing observes. Never throws.
 */
function observeCall(
  transport: Transport,
  host: string | undefined,
  method: unknown,
): ((end: OutboundCallEnd) => void) | undefined {
  if (observers.size === 0) return undefined;
  const call: OutboundCallStart = {
    transport,
    ...(host === undefined ? {} : { host }),
    method: typeof method === 'string' && method !== '' ? method.toUpperCase() : 'GET',
  };
  const ends: Array<(end: OutboundCallEnd) => void> = [];
  for (const observer of observers) {
    try {
      const end = observer(call);
      if (typeof end === 'function') ends.push(end);
    } catch {
      // an observer's failure is its own
    }
  }
  if (ends.length === 0) return undefined;
  let ended = false;
  return (end) => {
    if (ended) return;
    ended = true;
    for (const e of ends) {
      try {
        e(end);
      } catch {
        // an observer's failure is its own
      }
    }
  };
}

/** The end of a call that failed with `error`. */
function failedEnd(error: unknown): OutboundCallEnd {
  return { error, timedOut: isAbortOrTimeout(error) };
}

/**
 * Set while a `fetch` call runs, so that the undici dispatcher under it (an interceptor on the
 * global dispatcher or on the one handed to `fetch`) neither stamps nor counts it again. axios is
 * told apart differently: it runs its interceptors and its adapter in separate promise callbacks, so
 * a context entered in the one never reaches the other; `node:http` skips a request already stamped
 * with this request's deadline instead.
 */
const handledAbove = new AsyncLocalStorage<Transport>();

// ---------------------------------------------------------------------------------------------
// fetch

function isRequestInput(input: unknown): input is Request {
  return typeof Request !== 'undefined' && input instanceof Request;
}

/** The `host[:port]` of a URL given as a string or a URL; undefined when it is neither. */
function hostOf(url: unknown): string | undefined {
  try {
    if (url instanceof URL) return url.host;
    if (typeof url === 'string') return new URL(url).host;
  } catch {
    // a relative or malformed URL has no host
  }
  return undefined;
}

/** The `host[:port]` a `node:http` request goes to. */
function hostHeaderOf(request: ClientRequest): string | undefined {
  const header = request.getHeader('host');
  if (typeof header === 'string' && header !== '') return header;
  return typeof request.host === 'string' ? request.host : undefined;
}

let fetchWrapped = false;

function budgetFetch(original: typeof fetch): typeof fetch {
  return function fetchWithBudget(input, init) {
    let decision: OutboundDecision | undefined;
    let next: RequestInit | undefined;
    let end: ((end: OutboundCallEnd) => void) | undefined;
    try {
      const host = hostOf(isRequestInput(input) ? input.url : input);
      end = observeCall('fetch', host, init?.method ?? (isRequestInput(input) ? input.method : 'GET'));
      decision = decideOutbound('fetch', { host });
      if (decision !== undefined) {
        if (decision.refusal !== undefined) {
          // Refused before a byte was sent: the dependency was not called.
          end = undefined;
          return Promise.reject(decision.refusal);
        }
        const isRequest = isRequestInput(input);
        // init.headers replaces the Request's headers entirely, so start from whichever applies.
        const headers = new Headers(init?.headers ?? (isRequest ? input.headers : undefined));
        for (const [name, value] of decision.headers) if (!headers.has(name)) headers.set(name, value);
        next = { ...init, headers };
        const bound = boundMs(decision.budget);
        if (bound !== undefined) {
          const timeout = AbortSignal.timeout(bound);
          const caller = init?.signal ?? (isRequest ? input.signal : undefined);
          next.signal = caller == null ? timeout : AbortSignal.any([caller, timeout]);
        }
      }
    } catch (error) {
      decision?.failed('fetch', error);
      next = undefined;
    }
    const call = next;
    const sent =
      call !== undefined
        ? handledAbove.run('fetch', () => original(input, call))
        : end !== undefined && decision === undefined
          ? // observed here, so the undici dispatcher under it must not observe it again
            handledAbove.run('fetch', () => original(input, init))
          : original(input, init);
    if (end === undefined) return sent;
    const ended = end;
    return sent.then(
      (response) => {
        ended({ status: response.status });
        return response;
      },
      (error: unknown) => {
        ended(failedEnd(error));
        throw error;
      },
    );
  };
}

function installFetch(): void {
  if (fetchWrapped || typeof globalThis.fetch !== 'function') return;
  fetchWrapped = true;
  globalThis.fetch = budgetFetch(globalThis.fetch);
}

// ---------------------------------------------------------------------------------------------
// node:http and node:https

let httpSubscribed = false;

/** The pending ends of observed `node:http` calls, by request. */
const httpEnds = new WeakMap<ClientRequest, (end: OutboundCallEnd) => void>();

/** Observes a `node:http` call: its response (`http.client.response.finish`), error or close. */
function observeHttp(request: ClientRequest, host: string | undefined): void {
  const end = observeCall('http', host, request.method);
  if (end === undefined) return;
  httpEnds.set(request, end);
  // A request that closes with neither a response nor an error was aborted. The check waits a turn
  // so that an error published as the request closes is seen first.
  request.once('close', () =>
    setImmediate(() => {
      if (!httpEnds.has(request)) return;
      httpEnds.delete(request);
      end({
        error: request.errored ?? new DOMException('the request was aborted', 'AbortError'),
        timedOut: true,
      });
    }),
  );
}

function onHttpResponse(message: unknown): void {
  try {
    const { request, response } = message as { request: ClientRequest; response: { statusCode?: number } };
    const end = httpEnds.get(request);
    if (end === undefined) return;
    httpEnds.delete(request);
    end(response.statusCode === undefined ? {} : { status: response.statusCode });
  } catch {
    // diagnostics-channel subscribers never throw
  }
}

function onHttpError(message: unknown): void {
  try {
    const { request, error } = message as { request: ClientRequest; error: unknown };
    const end = httpEnds.get(request);
    if (end === undefined) return;
    httpEnds.delete(request);
    end(failedEnd(error));
  } catch {
    // diagnostics-channel subscribers never throw
  }
}

function onHttpRequestCreated(message: unknown): void {
  let decision: OutboundDecision | undefined;
  try {
    if (handledAbove.getStore() !== undefined) return;
    const request = (message as { request: ClientRequest }).request;
    try {
      observeHttp(request, hostHeaderOf(request));
    } catch {
      // observing never stops the call
    }
    const deadline = currentRequestContext()?.budget?.deadlineEpochMs;
    const host = hostHeaderOf(request);
    // A client above node:http (axios) stamped this request's deadline already, and judged its
    // budget; the call is counted here, once, for fan-out.
    if (deadline !== undefined && request.getHeader(DEADLINE_HEADER) === String(deadline)) {
      decideOutbound('http', { host, tallyOnly: true });
      return;
    }
    decision = decideOutbound('http', { host });
    if (decision === undefined) return;
    if (decision.refusal !== undefined) {
      // Headers go out with the first write: destroying the request now sends nothing, and the
      // dependency was not called.
      httpEnds.delete(request);
      request.destroy(decision.refusal);
      return;
    }
    for (const [name, value] of decision.headers) {
      if (request.getHeader(name) === undefined) request.setHeader(name, value);
    }
    const bound = boundMs(decision.budget);
    if (bound !== undefined) {
      // The same error as fetch's AbortSignal.timeout gives.
      const timer = setTimeout(() => {
        request.destroy(new DOMException('the timeout budget ran out', 'TimeoutError'));
      }, bound);
      timer.unref();
      request.once('close', () => clearTimeout(timer));
    }
  } catch (error) {
    // diagnostics-channel subscribers never throw: a throw here would surface as uncaught
    decision?.failed('http', error);
  }
}

function installHttp(): void {
  if (httpSubscribed) return;
  httpSubscribed = true;
  subscribe('http.client.request.created', onHttpRequestCreated);
  subscribe('http.client.response.finish', onHttpResponse);
  subscribe('http.client.request.error', onHttpError);
}

// ---------------------------------------------------------------------------------------------
// axios

/** The part of an axios request config obs reads and writes. */
export interface AxiosRequestConfigLike {
  /** axios's `AxiosHeaders` (with `has` and `set`) or a plain object. */
  headers?: unknown;
  signal?: unknown;
}
/** The part of an axios instance obs uses: its request interceptors. */
export interface AxiosInstanceLike {
  readonly interceptors: {
    readonly request: { use(onFulfilled: <C extends AxiosRequestConfigLike>(config: C) => C): number };
  };
}

function stampAxios(config: AxiosRequestConfigLike, stamps: OutboundDecision['headers']): void {
  const headers = config.headers as { has?: unknown; set?: unknown } | Record<string, unknown> | undefined;
  if (headers !== undefined && typeof headers.has === 'function' && typeof headers.set === 'function') {
    const h = headers as { has(name: string): boolean; set(name: string, value: string): unknown };
    for (const [name, value] of stamps) if (!h.has(name)) h.set(name, value);
    return;
  }
  const object: Record<string, unknown> = { ...(headers as Record<string, unknown> | undefined) };
  const names = new Set(Object.keys(object).map((n) => n.toLowerCase()));
  for (const [name, value] of stamps) if (!names.has(name.toLowerCase())) object[name] = value;
  config.headers = object;
}

/**
 * Applies the timeout budget to every call of an axios instance, as transport `axios`: a request
 * interceptor stamps the headers, counts an exhausted call, refuses it with
 * {@link TimeoutBudgetExhaustedError} under `abort-on-exhaustion` (nothing is sent) and, with
 * `apply-client-timeout`, aborts it through its `signal` when the budget runs out (axios then
 * rejects with its `CanceledError`). Calls of an instance not handed to obs are still covered as
 * `http` (axios uses `node:http`); a call of an instrumented one is counted once, as `axios`.
 * Returns the interceptor's id (`instance.interceptors.request.eject(id)` removes it).
 */
export function instrumentAxios(instance: AxiosInstanceLike): number {
  return instance.interceptors.request.use(<C extends AxiosRequestConfigLike>(config: C): C => {
    let decision: OutboundDecision | undefined;
    try {
      // axios sends through node:http (or fetch), which counts the call for fan-out.
      decision = decideOutbound('axios', { tally: false });
      if (decision !== undefined && decision.refusal === undefined) {
        stampAxios(config, decision.headers);
        const bound = boundMs(decision.budget);
        if (bound !== undefined) {
          const timeout = AbortSignal.timeout(bound);
          const caller = config.signal as AbortSignal | undefined;
          config.signal = caller == null ? timeout : AbortSignal.any([caller, timeout]);
        }
      }
    } catch (error) {
      decision?.failed('axios', error);
      return config;
    }
    if (decision?.refusal !== undefined) throw decision.refusal;
    return config;
  });
}

// ---------------------------------------------------------------------------------------------
// undici

/** The dispatch options an undici interceptor sees (the part obs reads and writes). */
export interface UndiciDispatchOptions {
  /** The target origin (`http://host:port`), a string or a URL. */
  origin?: unknown;
  /** The request headers: an object, a flat `[name, value, ...]` array or an iterable of pairs. */
  headers?: unknown;
  /** Milliseconds to wait for the response headers (undici's default when unset). */
  headersTimeout?: number | null;
  /** Milliseconds the body may pause (undici's default when unset). */
  bodyTimeout?: number | null;
}
/** An undici dispatch function: `dispatcher.dispatch`'s shape. */
export type UndiciDispatch<O extends UndiciDispatchOptions, H> = (options: O, handler: H) => boolean;

/**
 * Undici dispatch headers with the stamps added where the caller set no header of that name. The
 * headers may be an object, a flat `[name, value, ...]` array or an iterable of pairs; an array or
 * iterable comes back as a flat array, an object as an object.
 */
function stampUndici(headers: unknown, stamps: OutboundDecision['headers']): unknown {
  if (headers === undefined || headers === null || typeof headers !== 'object') {
    return Object.fromEntries(stamps);
  }
  const iterable = typeof (headers as Partial<Iterable<unknown>>)[Symbol.iterator] === 'function';
  if (iterable) {
    const flat = (Array.isArray(headers) ? headers : [...(headers as Iterable<unknown>)]).flat();
    const names = new Set(flat.filter((_, i) => i % 2 === 0).map((n) => String(n).toLowerCase()));
    for (const [name, value] of stamps) if (!names.has(name.toLowerCase())) flat.push(name, value);
    return flat;
  }
  const object: Record<string, unknown> = { ...(headers as Record<string, unknown>) };
  const names = new Set(Object.keys(object).map((n) => n.toLowerCase()));
  for (const [name, value] of stamps) if (!names.has(name.toLowerCase())) object[name] = value;
  return object;
}

/**
 * The handler of an observed undici call: the same handler (its prototype), with the response start
 * (`onResponseStart`, or the legacy `onHeaders`) and the error (`onResponseError`, or `onError`)
 * reported to `end` first. Only the methods the handler has are wrapped, so undici sees the same
 * handler API.
 */
function observeUndiciHandler<H>(handler: H, end: (end: OutboundCallEnd) => void): H {
  if (typeof handler !== 'object' || handler === null) return handler;
  const original = handler as Record<string | symbol, unknown>;
  const wrapped = new Map<string | symbol, (...args: unknown[]) => unknown>();
  const wrap = (name: string, report: (args: unknown[]) => OutboundCallEnd) => {
    const method = original[name];
    if (typeof method !== 'function') return;
    wrapped.set(name, (...args: unknown[]) => {
      try {
        end(report(args));
      } catch {
        // observing never stops the call
      }
      return (method as (...a: unknown[]) => unknown).apply(original, args);
    });
  };
  wrap('onResponseStart', (args) => ({ status: args[1] as number }));
  wrap('onHeaders', (args) => ({ status: args[0] as number }));
  wrap('onResponseError', (args) => failedEnd(args[1]));
  wrap('onError', (args) => failedEnd(args[0]));
  // Every other method runs on the handler itself, so its own state (and private fields) hold.
  return new Proxy(original, {
    get(target, property) {
      const own = wrapped.get(property);
      if (own !== undefined) return own;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as H;
}

/**
 * An undici interceptor (`(dispatch) => (options, handler)`) that applies the timeout budget to every
 * call of the dispatcher it is composed onto, as transport `undici`:
 * `new Agent().compose(createBudgetInterceptor())`, or the global dispatcher
 * (`setGlobalDispatcher(getGlobalDispatcher().compose(createBudgetInterceptor()))`; calls of the
 * global `fetch` are then still counted once, as `fetch`). A refused call throws
 * {@link TimeoutBudgetExhaustedError} from `dispatch`, before anything is sent. With
 * `apply-client-timeout`, the remaining budget bounds the wait for the response headers and each
 * pause of the body (undici's `headersTimeout` and `bodyTimeout`), not the whole call.
 */
export function createBudgetInterceptor() {
  return <O extends UndiciDispatchOptions, H>(dispatch: UndiciDispatch<O, H>): UndiciDispatch<O, H> =>
    (options, handler) => {
      let decision: OutboundDecision | undefined;
      let next: O = options;
      let observed: H = handler;
      let end: ((end: OutboundCallEnd) => void) | undefined;
      try {
        if (handledAbove.getStore() === undefined) {
          const host = hostOf(options.origin);
          end = observeCall('undici', host, (options as { method?: unknown }).method);
          if (end !== undefined) observed = observeUndiciHandler(handler, end);
          decision = decideOutbound('undici', { host });
        }
        if (decision !== undefined && decision.refusal === undefined) {
          next = { ...options, headers: stampUndici(options.headers, decision.headers) };
          const remaining = boundMs(decision.budget);
          if (remaining !== undefined) {
            // undici reads 0 (or unset) as its own default: the caller's shorter bound is kept.
            const bound = (set: number | null | undefined) =>
              set === undefined || set === null || set === 0 ? remaining : Math.min(set, remaining);
            next.headersTimeout = bound(options.headersTimeout);
            next.bodyTimeout = bound(options.bodyTimeout);
          }
        }
      } catch (error) {
        decision?.failed('undici', error);
        next = options;
        decision = undefined;
      }
      if (decision?.refusal !== undefined) throw decision.refusal;
      try {
        return dispatch(next, observed);
      } catch (error) {
        end?.(failedEnd(error));
        throw error;
      }
    };
}

/**
 * Instruments the global `fetch` and `node:http`/`node:https` for the request context (budget,
 * carried headers, fan-out), once per process (later calls do nothing). The instrumentation acts
 * only inside a request context, so it stays harmless after the app that installed it closes.
 */
export function installOutboundBudget(): void {
  installFetch();
  installHttp();
}
