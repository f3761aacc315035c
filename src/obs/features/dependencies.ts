/**
 * The dependency health map (`obs.dependencies`): rate, errors and duration per downstream
 * dependency, from every outbound call of the instrumented transports (fetch, `node:http` and so
 * axios, undici with the budget interceptor), inside a request or not (`onOutboundCall` in
 * `timeout-budget-clients.ts`; each call is seen once).
 *
 * - `dep` is the logical name of the target: `map` looked up by `host:port`, then by `host`, else
 *   `default-name`, so its values are the map's names plus the default;
 * - `obs_dependency_requests_total{dep,method,status,outcome}`: `method` is a standard method or
 *   `OTHER`; `status` the response status or `none`; `outcome` is `success` (status below 500),
 *   `error` (5xx), `transport_error` (no response: refused, reset, DNS) or `timeout` (an abort or a
 *   timeout);
 * - `obs_dependency_latency_seconds{dep}`: from the call to its response headers (or its failure);
 * - the health component `dependencies` (with `health.enabled`): `DEGRADED` while one dependency's
 *   error ratio (every outcome but `success`) over the sliding `window` is at or above
 *   `error-rate-threshold`, once it has `minimum-calls` calls in the window; `UP` otherwise;
 * - the snapshot section `dependencies`: the live figures per dependency.
 *
 * A call made in a request that `enabled-when` skips is not counted.
 */
import { Counter, Histogram } from 'prom-client';
import type { JsonValue } from '../core/config/config-hash.ts';
import type { HealthResult } from '../core/health.ts';
import type { ObsCore } from '../core/obs.ts';
import { contextKit } from './request-context/context-hook.ts';
import { currentRequestContext } from './request-context/request-context.ts';
import {
  type OutboundCallEnd,
  type OutboundCallStart,
  onOutboundCall,
} from './timeout-budget/timeout-budget-clients.ts';

const FEATURE = 'dependencies';

/** Names of the meters of the dependency health map. */
export const DEPENDENCY_METRICS = {
  requests: 'obs_dependency_requests_total',
  latency: 'obs_dependency_latency_seconds',
} as const;

/** The values of the `outcome` label. */
export const DEPENDENCY_OUTCOMES = ['success', 'error', 'transport_error', 'timeout'] as const;
export type DependencyOutcome = (typeof DEPENDENCY_OUTCOMES)[number];

/** The methods kept as they are in the `method` label; any other is `OTHER`. */
export const STANDARD_METHODS: ReadonlySet<string> = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'CONNECT',
  'OPTIONS',
  'TRACE',
  'PATCH',
]);

/** Buckets of the sliding window: the window moves by a twelfth of its length. */
export const WINDOW_BUCKETS = 12;

/** The `method` label of a method. */
export function methodLabel(method: string): string {
  const upper = method.toUpperCase();
  return STANDARD_METHODS.has(upper) ? upper : 'OTHER';
}

/** The `status` label of a status: the code (100 to 599), else `none`. */
export function statusLabel(status: number | undefined): string {
  return status !== undefined && Number.isInteger(status) && status >= 100 && status <= 599
    ? String(status)
    : 'none';
}

/** The outcome of a call that ended so. */
export function outcomeOf(end: OutboundCallEnd): DependencyOutcome {
  if (end.status !== undefined && end.error === undefined) return end.status >= 500 ? 'error' : 'success';
  if (end.timedOut === true) return 'timeout';
  return 'transport_error';
}

/**
 * The logical name of a target: `map` (keys lower-cased) by `host:port`, then by host, else
 * `defaultName`.
 */
export function dependencyName(
  host: string | undefined,
  map: ReadonlyMap<string, string>,
  defaultName: string,
): string {
  if (host === undefined || host === '') return defaultName;
  const key = host.toLowerCase();
  const exact = map.get(key);
  if (exact !== undefined) return exact;
  // `[::1]:8080` → `[::1]`, `api:443` → `api`
  const bare = key.startsWith('[') ? key.slice(0, key.indexOf(']') + 1) : key.replace(/:\d*$/, '');
  return map.get(bare) ?? defaultName;
}

/**
 * Calls and errors of one dependency over a sliding window, in {@link WINDOW_BUCKETS} buckets of
 * time. Time is given, never read.
 */
export class SlidingWindow {
  readonly #bucketMs: number;
  readonly #epochs = new Array<number>(WINDOW_BUCKETS).fill(-1);
  readonly #calls = new Array<number>(WINDOW_BUCKETS).fill(0);
  readonly #errors = new Array<number>(WINDOW_BUCKETS).fill(0);

  constructor(windowMs: number) {
    this.#bucketMs = Math.max(1, windowMs / WINDOW_BUCKETS);
  }

  /** Counts one call at `nowMs`, an error or not. */
  record(nowMs: number, error: boolean): void {
    const epoch = Math.floor(nowMs / this.#bucketMs);
    const i = epoch % WINDOW_BUCKETS;
    if (this.#epochs[i] !== epoch) {
      this.#epochs[i] = epoch;
      this.#calls[i] = 0;
      this.#errors[i] = 0;
    }
    this.#calls[i] = (this.#calls[i] ?? 0) + 1;
    if (error) this.#errors[i] = (this.#errors[i] ?? 0) + 1;
  }

  /** Calls and errors within the window ending at `nowMs`. */
  totals(nowMs: number): { calls: number; errors: number } {
    const epoch = Math.floor(nowMs / this.#bucketMs);
    let calls = 0;
    let errors = 0;
    for (let i = 0; i < WINDOW_BUCKETS; i++) {
      const e = this.#epochs[i] ?? -1;
      if (e > epoch - WINDOW_BUCKETS && e <= epoch) {
        calls += this.#calls[i] ?? 0;
        errors += this.#errors[i] ?? 0;
      }
    }
    return { calls, errors };
  }
}

/** The judgement settings of {@link DependencyHealth}. */
export interface DependencyHealthSettings {
  readonly windowMs: number;
  readonly threshold: number;
  readonly minimumCalls: number;
}

interface DependencyFigures {
  readonly window: SlidingWindow;
  calls: number;
  outcomes: Record<DependencyOutcome, number>;
  totalSeconds: number;
  lastStatus: string;
  lastOutcome: DependencyOutcome | undefined;
}

/** The live figures of every dependency seen, and their health. Time is given, never read. */
export class DependencyHealth {
  readonly #settings: DependencyHealthSettings;
  readonly #figures = new Map<string, DependencyFigures>();

  constructor(settings: DependencyHealthSettings) {
    this.#settings = settings;
  }

  /** Counts one ended call of `dep`. The names are bounded by the caller (the map plus the default). */
  record(dep: string, outcome: DependencyOutcome, status: string, seconds: number, nowMs: number): void {
    let f = this.#figures.get(dep);
    if (f === undefined) {
      f = {
        window: new SlidingWindow(this.#settings.windowMs),
        calls: 0,
        outcomes: { success: 0, error: 0, transport_error: 0, timeout: 0 },
        totalSeconds: 0,
        lastStatus: 'none',
        lastOutcome: undefined,
      };
      this.#figures.set(dep, f);
    }
    f.window.record(nowMs, outcome !== 'success');
    f.calls += 1;
    f.outcomes[outcome] += 1;
    f.totalSeconds += seconds;
    f.lastStatus = status;
    f.lastOutcome = outcome;
  }

  /** Each dependency's window at `nowMs`: calls, errors, ratio, and whether it is degraded. */
  judge(
    nowMs: number,
  ): Array<{ dep: string; calls: number; errors: number; ratio: number; degraded: boolean }> {
    const { threshold, minimumCalls } = this.#settings;
    return [...this.#figures].map(([dep, f]) => {
      const { calls, errors } = f.window.totals(nowMs);
      const ratio = calls === 0 ? 0 : errors / calls;
      return { dep, calls, errors, ratio, degraded: calls >= minimumCalls && ratio >= threshold };
    });
  }

  /** The health component's answer at `nowMs`. */
  health(nowMs: number): HealthResult {
    const judged = this.judge(nowMs);
    const degraded = judged.filter((j) => j.degraded);
    const details: Record<string, JsonValue> = {
      threshold: this.#settings.threshold,
      window_ms: this.#settings.windowMs,
      minimum_calls: this.#settings.minimumCalls,
    };
    if (degraded.length > 0) {
      details.degraded = Object.fromEntries(
        degraded.map((j) => [j.dep, { error_ratio: round(j.ratio), calls: j.calls, errors: j.errors }]),
      );
      return { status: 'DEGRADED', details };
    }
    return { status: 'UP', details };
  }

  /** The snapshot's figures per dependency at `nowMs`. */
  snapshot(nowMs: number): Record<string, JsonValue> {
    const judged = new Map(this.judge(nowMs).map((j) => [j.dep, j]));
    return Object.fromEntries(
      [...this.#figures].map(([dep, f]) => {
        const j = judged.get(dep);
        return [
          dep,
          {
            calls: f.calls,
            outcomes: { ...f.outcomes },
            mean_seconds: f.calls === 0 ? 0 : round(f.totalSeconds / f.calls),
            last_status: f.lastStatus,
            last_outcome: f.lastOutcome ?? null,
            window: {
              calls: j?.calls ?? 0,
              errors: j?.errors ?? 0,
              error_ratio: round(j?.ratio ?? 0),
              degraded: j?.degraded ?? false,
            },
          },
        ];
      }),
    );
  }
}

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}

/** Options of {@link registerDependencies}. */
export interface DependenciesOptions {
  /** The clock of the sliding window, epoch milliseconds. Default `Date.now`. */
  readonly nowMs?: () => number;
}

/** What {@link registerDependencies} returns: the function that stops observing (the plugin calls it on close). */
export type StopDependencies = () => void;

const SKIPPED = Symbol('dependencies skipped');

/**
 * Adds the dependency health map to an obs core: the call observer, the meters, the health
 * component `dependencies` (with `health.enabled`) and the `dependencies` snapshot section (always).
 * Returns the function that stops observing calls.
 */
export function registerDependencies(obs: ObsCore, options: DependenciesOptions = {}): StopDependencies {
  const config = obs.config[FEATURE];
  const nowMs = options.nowMs ?? Date.now;
  const map = new Map(Object.entries(config.map).map(([host, name]) => [host.toLowerCase(), name]));
  const defaultName = config['default-name'];
  const state = new DependencyHealth({
    windowMs: config.health.window,
    threshold: config.health['error-rate-threshold'],
    minimumCalls: config.health['minimum-calls'],
  });
  let observed = 0;
  let skipped = 0;
  let failures = 0;

  obs.addSnapshotSection(FEATURE, () => ({
    enabled: config.enabled,
    config: obs.resolved.effective[FEATURE] ?? null,
    metrics: [DEPENDENCY_METRICS.requests, DEPENDENCY_METRICS.latency],
    health_component: config.enabled && config.health.enabled,
    observed,
    skipped,
    instrumentation_failures: failures,
    dependencies: state.snapshot(nowMs()),
  }));
  if (!config.enabled) return () => {};

  const requests = new Counter({
    name: DEPENDENCY_METRICS.requests,
    help: 'Outbound calls per downstream dependency, by method, response status and outcome',
    labelNames: ['dep', 'method', 'status', 'outcome'],
    registers: [obs.registry],
  });
  const latency = new Histogram({
    name: DEPENDENCY_METRICS.latency,
    help: 'Time from an outbound call to its response headers (or its failure), per downstream dependency',
    labelNames: ['dep'],
    registers: [obs.registry],
  });

  contextKit(obs).addContributor(FEATURE, ({ request, store }) => {
    if (!obs.isEnabledFor(FEATURE, request)) store.state[FEATURE] = SKIPPED;
  });

  const observer = (call: OutboundCallStart) => {
    if (currentRequestContext()?.state?.[FEATURE] === SKIPPED) {
      skipped += 1;
      return undefined;
    }
    const started = performance.now();
    const dep = dependencyName(call.host, map, defaultName);
    const method = methodLabel(call.method);
    return (end: OutboundCallEnd) => {
      try {
        const seconds = (performance.now() - started) / 1000;
        const outcome = outcomeOf(end);
        const status = statusLabel(end.status);
        observed += 1;
        requests.inc({ dep, method, status, outcome });
        latency.observe({ dep }, seconds);
        state.record(dep, outcome, status, seconds, nowMs());
      } catch (error) {
        failures += 1;
        // Once: the count of failures is in the snapshot.
        if (failures === 1) {
          obs.logger.warn({ obs: FEATURE, err: error }, 'obs dependency health map could not count a call');
        }
      }
    };
  };
  const stop = onOutboundCall(observer);
  if (config.health.enabled) obs.addHealthComponent(FEATURE, () => state.health(nowMs()));
  return stop;
}
