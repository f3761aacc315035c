/**
 * Graceful drain and telemetry flush (`obs.shutdown`). The drain state moves
 * `idle → draining → drained`: {@link DrainState.begin} (the plugin's `preClose`, or
 * {@link DrainState.drain}) starts draining, and the drain ends when the last in-flight request
 * finishes (and, when {@link DrainState.drain} closed the listener, the last connection has closed)
 * or the drain timeout hits, whichever comes first; the requests still in flight then are counted
 * as dropped. The plugin hands the state the connections of the server the app listens on
 * (connections.ts): the one place that closes the listener and ends keep-alive connections. Readiness fails from the moment draining begins, so a load balancer stops
 * sending traffic while the requests it already sent finish. Flush hooks push buffered telemetry
 * out (an OpenTelemetry SDK's `forceFlush`, a log transport), all at once and bounded by the flush
 * timeout.
 *
 * A host's shutdown, for instance on SIGTERM:
 *
 * ```ts
 * await app.obs.drain();  // readiness fails; waits for in-flight requests, at most drain-timeout
 * await app.close();      // the plugin runs the flush hooks, at most flush-timeout
 * ```
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { JsonValue } from './config/config-hash.ts';
import type { ConnectionDrain } from './connections.ts';
import { ObsError } from './errors.ts';

/** Where the process is in its shutdown: serving normally, draining, or drained. */
export type DrainPhase = 'idle' | 'draining' | 'drained';

/** Called when the phase changes. Must not throw; a throw is ignored. */
export type DrainListener = (phase: DrainPhase) => void;

/** Longest wait for in-flight requests, in milliseconds (`obs.shutdown.drain-timeout`). */
export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;
/** Longest wait for the flush hooks, in milliseconds (`obs.shutdown.flush-timeout`). */
export const DEFAULT_FLUSH_TIMEOUT_MS = 10_000;

/** Names of the drain meters. */
export const DRAIN_METRICS = {
  durationSeconds: 'obs_drain_duration_seconds',
  droppedTotal: 'obs_drain_dropped_total',
} as const;

/** What {@link DrainState.drain} takes. */
export interface DrainOptions {
  /**
   * Longest wait for in-flight requests (and open connections), in milliseconds, counted from the
   * end of the delay. Default: the state's drain timeout.
   */
  readonly timeoutMs?: number;
  /**
   * How long to go on serving as usual, readiness already failing, before connections are told to
   * end (and with `closeListener` the listener closes), in milliseconds: the time a load balancer
   * takes to see the failed probe and stop sending (a Kubernetes endpoint update). Default 0.
   */
  readonly delayMs?: number;
  /**
   * Once the delay is over, also close the listener of the server the app listens on and wait for
   * its connections to close: no new connection is accepted (those already in the kernel's accept
   * queue are), idle HTTP/1.1 connections are closed once quiet for a second, HTTP/2 sessions get a
   * GOAWAY. Default false: the listener stays open (probes get the 503) until `app.close()`. Either
   * way, HTTP/1.1 responses from then on end their connections.
   */
  readonly closeListener?: boolean;
}

/** How a drain ended. */
export interface DrainResult {
  /** True when every in-flight request finished before the timeout. */
  readonly completed: boolean;
  /** From the start of draining to its end, in milliseconds. */
  readonly durationMs: number;
  /** Requests still in flight when the timeout hit (0 when completed). */
  readonly dropped: number;
}

/**
 * A flush hook: pushes buffered telemetry out. The signal aborts when the flush timeout hits; a
 * hook may stop early then. It may be async; a throw or a rejection is reported, never rethrown.
 */
export type FlushHook = (signal: AbortSignal) => unknown;

/** What {@link DrainState.flush} takes. */
export interface FlushOptions {
  /** Longest wait for all hooks together, in milliseconds. Default: the state's flush timeout. */
  readonly timeoutMs?: number;
}

/** How one flush hook ended. */
export interface FlushHookResult {
  readonly ok: boolean;
  readonly durationMs: number;
  /** Why it failed: its error's message, or that it did not answer within the timeout. */
  readonly error?: string;
}

/** How a flush ended: ok when every hook finished without error within the timeout. */
export interface FlushReport {
  readonly ok: boolean;
  readonly durationMs: number;
  readonly hooks: Readonly<Record<string, FlushHookResult>>;
}

/** What {@link DrainState} takes. */
export interface DrainStateOptions {
  /** Default wait of {@link DrainState.drain}, in milliseconds. Default {@link DEFAULT_DRAIN_TIMEOUT_MS}. */
  readonly drainTimeoutMs?: number;
  /** Default wait of {@link DrainState.flush}, in milliseconds. Default {@link DEFAULT_FLUSH_TIMEOUT_MS}. */
  readonly flushTimeoutMs?: number;
}

const round = (n: number): number => Math.round(n * 1000) / 1000;

function timeoutOf(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isFinite(value) && value >= 0 ? value : fallback;
}

/**
 * The drain state of the process and its in-flight requests. Reachable as `app.obs.drainState`;
 * `app.obs.drain()` and `app.obs.flush()` call {@link drain} and {@link flush}.
 */
export class DrainState {
  /** Default wait of {@link drain}, in milliseconds. */
  readonly drainTimeoutMs: number;
  /** Default wait of {@link flush}, in milliseconds. */
  readonly flushTimeoutMs: number;
  #phase: DrainPhase = 'idle';
  #since = new Date();
  #startedAt = 0;
  #inFlight = 0;
  #result: DrainResult | undefined;
  #lastFlush: FlushReport | undefined;
  /** Whether the drain can end: the delay is over (or there was none). */
  #armed = false;
  /** False while closed connections are awaited (from the listener's close to the last connection's). */
  #connectionsClosed = true;
  #connections: ConnectionDrain | undefined;
  #running: Promise<DrainResult> | undefined;
  readonly #waiters = new Set<{ resolve: (result: DrainResult) => void; timer: NodeJS.Timeout }>();
  readonly #listeners = new Set<DrainListener>();
  readonly #hooks = new Map<string, FlushHook>();

  constructor(options: DrainStateOptions = {}) {
    this.drainTimeoutMs = timeoutOf(options.drainTimeoutMs, DEFAULT_DRAIN_TIMEOUT_MS);
    this.flushTimeoutMs = timeoutOf(options.flushTimeoutMs, DEFAULT_FLUSH_TIMEOUT_MS);
  }

  /** The current phase. */
  get phase(): DrainPhase {
    return this.#phase;
  }

  /** When the current phase began. */
  get since(): Date {
    return this.#since;
  }

  /** Requests being served now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** How the drain ended, once drained. */
  get result(): DrainResult | undefined {
    return this.#result;
  }

  /** The report of the last {@link flush}, once one ran. */
  get lastFlush(): FlushReport | undefined {
    return this.#lastFlush;
  }

  /** The names of the flush hooks, in the order they were added. */
  get flushHooks(): readonly string[] {
    return [...this.#hooks.keys()];
  }

  /** Counts a request in; call {@link requestFinished} exactly once for it. */
  requestStarted(): void {
    this.#inFlight++;
  }

  /** Counts a request out; the drain ends when the last one leaves. */
  requestFinished(): void {
    if (this.#inFlight > 0) this.#inFlight--;
    this.#check();
  }

  /**
   * Hands the state the connections of the server the app listens on: {@link drain} ends their
   * keep-alive (or closes the listener and waits for them), and so does {@link begin}. The plugin
   * calls it.
   */
  useConnections(connections: ConnectionDrain): void {
    this.#connections = connections;
  }

  /**
   * Starts draining now, with no delay (a no-op once the drain can end): HTTP/1.1 responses from now
   * on end their connections, and with nothing in flight the drain ends at once. The host closes the
   * listener (fastify's close, which calls it from `preClose`).
   */
  begin(): void {
    this.#start();
    if (this.#armed) return;
    this.#armed = true;
    this.#connections?.endKeepAlive();
    this.#check();
  }

  /**
   * Ends the drain now (a no-op once drained): what is still in flight counts as dropped. The
   * plugin calls it when the server has closed.
   */
  finish(): void {
    this.begin();
    if (this.#phase === 'draining') this.#end(this.#inFlight === 0);
  }

  /**
   * Starts draining and waits until no request is in flight or the timeout hits, whichever comes
   * first. Every call ends: concurrent calls share the first end, later calls get the result at once.
   */
  drain(options: DrainOptions = {}): Promise<DrainResult> {
    if (this.#result !== undefined) return Promise.resolve(this.#result);
    this.#running ??= this.#run(options);
    return this.#running;
  }

  async #run(options: DrainOptions): Promise<DrainResult> {
    this.#start();
    const delayMs = timeoutOf(options.delayMs, 0);
    // Serving as usual while load balancers notice the failed readiness (unless `begin` cut it short).
    if (delayMs > 0 && !this.#armed) await sleep(delayMs);
    if (this.#result !== undefined) return this.#result;
    const timeoutMs = timeoutOf(options.timeoutMs, this.drainTimeoutMs);
    const ended = new Promise<DrainResult>((resolve) => {
      const timer = setTimeout(() => this.#end(false), timeoutMs);
      this.#waiters.add({ resolve, timer });
    });
    const connections = this.#connections;
    if (!this.#armed && connections !== undefined) {
      if (options.closeListener === true) {
        this.#connectionsClosed = false;
        await connections.closeListener();
        void connections.allClosed().then(() => {
          this.#connectionsClosed = true;
          this.#check();
        });
      } else {
        connections.endKeepAlive();
      }
    }
    this.#armed = true;
    this.#check();
    return ended;
  }

  /**
   * Adds a flush hook, run on each {@link flush}.
   * @throws {ObsError} `OBS_ERR_DUPLICATE_NAME` when the name is taken.
   */
  addFlushHook(name: string, hook: FlushHook): void {
    if (this.#hooks.has(name))
      throw new ObsError('OBS_ERR_DUPLICATE_NAME', ['flush hook', JSON.stringify(name)]);
    this.#hooks.set(name, hook);
  }

  /** Runs every flush hook at once and waits for them, at most the timeout. Never rejects. */
  async flush(options: FlushOptions = {}): Promise<FlushReport> {
    const timeoutMs = timeoutOf(options.timeoutMs, this.flushTimeoutMs);
    const started = performance.now();
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => {
        controller.abort(new Error(`flush timeout of ${timeoutMs}ms`));
        resolve('timeout');
      }, timeoutMs);
    });
    const entries = await Promise.all(
      [...this.#hooks].map(async ([name, hook]): Promise<[string, FlushHookResult]> => {
        const hookStarted = performance.now();
        const took = () => round(performance.now() - hookStarted);
        try {
          const outcome = await Promise.race([
            Promise.resolve()
              .then(() => hook(controller.signal))
              .then(() => 'done' as const),
            deadline,
          ]);
          return outcome === 'done'
            ? [name, { ok: true, durationMs: took() }]
            : [name, { ok: false, durationMs: took(), error: `no answer within ${timeoutMs}ms` }];
        } catch (error) {
          return [
            name,
            { ok: false, durationMs: took(), error: error instanceof Error ? error.message : String(error) },
          ];
        }
      }),
    );
    clearTimeout(timer);
    const report: FlushReport = {
      ok: entries.every(([, r]) => r.ok),
      durationMs: round(performance.now() - started),
      hooks: Object.fromEntries(entries),
    };
    this.#lastFlush = report;
    return report;
  }

  /**
   * Calls `listener` on every change of phase.
   * @returns a function that removes the listener.
   */
  onChange(listener: DrainListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  #start(): void {
    if (this.#phase !== 'idle') return;
    this.#startedAt = performance.now();
    this.#move('draining');
  }

  #check(): void {
    if (this.#phase === 'draining' && this.#armed && this.#inFlight === 0 && this.#connectionsClosed)
      this.#end(true);
  }

  #end(completed: boolean): void {
    if (this.#phase !== 'draining') return;
    const result: DrainResult = {
      completed,
      durationMs: round(performance.now() - this.#startedAt),
      dropped: completed ? 0 : this.#inFlight,
    };
    this.#result = result;
    for (const waiter of this.#waiters) {
      clearTimeout(waiter.timer);
      waiter.resolve(result);
    }
    this.#waiters.clear();
    this.#move('drained');
  }

  #move(phase: DrainPhase): void {
    this.#phase = phase;
    this.#since = new Date();
    for (const listener of this.#listeners) {
      try {
        listener(phase);
      } catch {
        // shutdown goes on whatever a listener does
      }
    }
  }
}

/** What {@link installDrain} needs of the obs core. */
export interface DrainHost {
  readonly registry: Registry;
  readonly drainState: DrainState;
  addHealthComponent(
    name: string,
    component: () => { status: 'UP' | 'OUT_OF_SERVICE'; details?: JsonValue },
  ): void;
}

/**
 * The drain feature on an obs core (when `obs.shutdown.enabled`): the meters
 * `obs_drain_duration_seconds` (set when drained) and `obs_drain_dropped_total`, and the health
 * component `drain`: `OUT_OF_SERVICE` (so not ready) from the moment draining begins, `UP` before.
 */
export function installDrain(host: DrainHost): void {
  const state = host.drainState;
  const duration = new Gauge({
    name: DRAIN_METRICS.durationSeconds,
    help: 'How long the drain took, from its start to the last in-flight request or the timeout (0 until drained)',
    registers: [host.registry],
  });
  const dropped = new Counter({
    name: DRAIN_METRICS.droppedTotal,
    help: 'Requests still in flight when the drain timeout hit',
    registers: [host.registry],
  });
  state.onChange((phase) => {
    const result = state.result;
    if (phase !== 'drained' || result === undefined) return;
    duration.set(result.durationMs / 1000);
    if (result.dropped > 0) dropped.inc(result.dropped);
  });
  host.addHealthComponent('drain', () => ({
    status: state.phase === 'idle' ? 'UP' : 'OUT_OF_SERVICE',
    details: state.phase,
  }));
}

/** The live part of the `shutdown` section of the snapshot: the state, the last drain and flush. */
export function drainSection(state: DrainState): { readonly [key: string]: JsonValue } {
  const result = state.result;
  const flush = state.lastFlush;
  return {
    state: state.phase,
    since: state.since.toISOString(),
    in_flight_requests: state.inFlight,
    drain_timeout_ms: state.drainTimeoutMs,
    flush_timeout_ms: state.flushTimeoutMs,
    last_drain:
      result === undefined
        ? null
        : { completed: result.completed, duration_ms: result.durationMs, dropped: result.dropped },
    flush_hooks: [...state.flushHooks],
    last_flush:
      flush === undefined
        ? null
        : {
            ok: flush.ok,
            duration_ms: flush.durationMs,
            hooks: Object.fromEntries(
              Object.entries(flush.hooks).map(([name, r]): [string, JsonValue] => [
                name,
                r.error === undefined
                  ? { ok: r.ok, duration_ms: r.durationMs }
                  : { ok: r.ok, duration_ms: r.durationMs, error: r.error },
              ]),
            ),
          },
  };
}
