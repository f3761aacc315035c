/**
 * Request fan-out (`obs.fan-out`): how many outbound calls each inbound request makes, and to how
 * many distinct hosts. Its part of the request context (`context-hook.ts`) puts a tally in the
 * context (`state['fan-out']`); every outbound call made inside the request (fetch, undici,
 * `node:http`, axios through `node:http`, kafkajs `send`) adds to it once
 * (`propagation.outbound`, called by `decideOutbound`). A retry attempt runs in a copy of the
 * context that shares the same tally, so its calls count too.
 *
 * When the response has finished, the request is observed in `obs_request_fan_out{endpoint}` (calls)
 * and `obs_request_dependencies{endpoint}` (distinct hosts); `endpoint` is the route pattern
 * (`/orders/:id`), `unmatched` when none. A request with more than `warn-threshold` calls logs a
 * warning, at most one per endpoint per {@link FAN_OUT_WARN_INTERVAL_MS} (the next one says how many
 * were suppressed). Requests that `enabled-when` skips are neither counted nor observed. The
 * request's active span (when an SDK traces it) carries the figures so far as
 * {@link FAN_OUT_SPAN_ATTRIBUTES}, updated on each call.
 *
 * Not observed: a request whose client went away before the response finished (fastify runs no
 * `onResponse` then), and calls made in the request's context after its response finished.
 */
import { type Span, trace } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Histogram } from 'prom-client';
import { HistogramBatch } from '../core/batch.ts';
import { registryGuard } from '../core/meters.ts';
import type { ObsCore } from '../core/obs.ts';
import { routeOf } from '../core/route.ts';
import { WarningLimiter } from '../core/warning-limiter.ts';
import { contextKit } from './request-context/context-hook.ts';

const FEATURE = 'fan-out';

/** Names of the meters of request fan-out. */
export const FAN_OUT_METRICS = {
  fanOut: 'obs_request_fan_out',
  dependencies: 'obs_request_dependencies',
} as const;

/** The attributes fan-out keeps on the request's active span: calls and distinct hosts so far. */
export const FAN_OUT_SPAN_ATTRIBUTES = {
  fanOut: 'obs.request.fan_out',
  dependencies: 'obs.request.dependencies',
} as const;

/** The histogram buckets of both meters (calls or hosts per request). */
export const FAN_OUT_BUCKETS = [0, 1, 2, 3, 5, 10, 20, 50, 100] as const;

/**
 * Distinct hosts remembered per request. Hosts first seen past this many count together as one
 * more dependency (`other`), so a request reports at most this plus one.
 */
export const MAX_TRACKED_HOSTS = 1000;
/** A longer host is cut to this many characters before it is remembered. */
export const MAX_HOST_LENGTH = 256;
/** At most one fan-out warning per endpoint in this many milliseconds (one minute). */
export const FAN_OUT_WARN_INTERVAL_MS = 60_000;
/** Endpoints the warning limiter and the snapshot's statistics remember. */
export const MAX_FAN_OUT_ENDPOINTS = 1000;
/** Endpoints listed in the snapshot's `top_endpoints`. */
const TOP_ENDPOINTS = 10;

/** Where a request's tally is kept, on the request itself. */
const TALLY = Symbol('echo-chaos.obs.fan-out');

/** The outbound calls of one request, shared by every copy of its context. */
export class FanOutTally {
  calls = 0;
  // Made on the first call with a host: most requests call nothing.
  #hosts: Set<string> | undefined;
  #other = false;

  /** Counts one call; `host` (`host[:port]`) when the transport knows it. */
  count(host: string | undefined): void {
    this.calls += 1;
    if (host === undefined || host === '') return;
    const key = host.slice(0, MAX_HOST_LENGTH).toLowerCase();
    this.#hosts ??= new Set();
    if (this.#hosts.has(key)) return;
    if (this.#hosts.size < MAX_TRACKED_HOSTS) this.#hosts.add(key);
    else this.#other = true;
  }

  /** Distinct hosts called: at most {@link MAX_TRACKED_HOSTS} plus one (`other`). */
  get dependencies(): number {
    return (this.#hosts?.size ?? 0) + (this.#other ? 1 : 0);
  }
}

/** Options of {@link registerFanOut}. */
export interface FanOutOptions {
  /** The clock of the warning limiter, epoch milliseconds. Default `Date.now`. */
  readonly nowMs?: () => number;
}

interface EndpointFigures {
  requests: number;
  calls: number;
  max: number;
}

/**
 * Adds request fan-out to a fastify app: its part of the request context, the per-call count, the
 * meters and warning on each finished response, and the `fan-out` snapshot section (hooks and
 * meters only when `obs.fan-out.enabled`). Installs the outbound instrumentation of fetch and
 * `node:http`, so calls are counted even when the timeout budget is off.
 */
export function registerFanOut(app: FastifyInstance, obs: ObsCore, options: FanOutOptions = {}): void {
  const config = obs.config[FEATURE];
  const nowMs = options.nowMs ?? Date.now;
  const threshold = config['warn-threshold'];
  const limiter = new WarningLimiter(FAN_OUT_WARN_INTERVAL_MS, MAX_FAN_OUT_ENDPOINTS);
  const endpoints = new Map<string, EndpointFigures>();
  let observed = 0;
  let skipped = 0;
  let maxFanOut = 0;
  let maxDependencies = 0;
  let warnings = 0;
  let suppressed = 0;
  let endpointsDropped = 0;

  obs.addSnapshotSection(FEATURE, () => ({
    enabled: config.enabled,
    config: obs.resolved.effective[FEATURE] ?? null,
    metrics: [FAN_OUT_METRICS.fanOut, FAN_OUT_METRICS.dependencies],
    span_attributes: [FAN_OUT_SPAN_ATTRIBUTES.fanOut, FAN_OUT_SPAN_ATTRIBUTES.dependencies],
    warn_threshold: threshold,
    warn_interval_ms: FAN_OUT_WARN_INTERVAL_MS,
    observed,
    skipped,
    max_fan_out: maxFanOut,
    max_dependencies: maxDependencies,
    warnings,
    warnings_suppressed: suppressed,
    endpoints_dropped: endpointsDropped,
    top_endpoints: [...endpoints.entries()]
      .map(([endpoint, f]) => ({
        endpoint,
        requests: f.requests,
        mean_fan_out: Math.round((f.calls / f.requests) * 100) / 100,
        max_fan_out: f.max,
      }))
      .sort((a, b) => b.mean_fan_out - a.mean_fan_out || a.endpoint.localeCompare(b.endpoint))
      .slice(0, TOP_ENDPOINTS),
  }));
  if (!config.enabled) return;

  const fanOut = new Histogram({
    name: FAN_OUT_METRICS.fanOut,
    help: 'Outbound calls made while serving one inbound request, by endpoint (route pattern)',
    labelNames: ['endpoint'],
    buckets: [...FAN_OUT_BUCKETS],
    registers: [obs.registry],
  });
  const dependencies = new Histogram({
    name: FAN_OUT_METRICS.dependencies,
    help: 'Distinct hosts called while serving one inbound request, by endpoint (route pattern)',
    labelNames: ['endpoint'],
    buckets: [...FAN_OUT_BUCKETS],
    registers: [obs.registry],
  });
  // Every request observes both (0 without outbound calls): batched per endpoint (batch.ts).
  const firewall = registryGuard(obs.registry);
  const fanOutBatch = new HistogramBatch(fanOut, { firewall });
  const dependenciesBatch = new HistogramBatch(dependencies, { firewall });

  // On the request (a property, not a WeakMap keyed by it: ephemeron tables cost every request and
  // every GC): the onResponse hook finds what its context counted.
  type Counted = FastifyRequest & { [TALLY]?: FanOutTally | undefined };
  // The request's active span, by tally: the per-call hook keeps its attributes current.
  const spans = new WeakMap<FanOutTally, Span>();
  const kit = contextKit(obs);
  kit.addContributor(FEATURE, ({ request, store, attribute }) => {
    if (!obs.isEnabledFor(FEATURE, request)) {
      skipped += 1;
      return;
    }
    const tally = new FanOutTally();
    store.state[FEATURE] = tally;
    (request as Counted)[TALLY] = tally;
    const span = trace.getActiveSpan();
    if (span !== undefined) spans.set(tally, span);
    attribute(FAN_OUT_SPAN_ATTRIBUTES.fanOut, 0);
    attribute(FAN_OUT_SPAN_ATTRIBUTES.dependencies, 0);
  });

  const previous = kit.propagation.outbound;
  kit.propagation.outbound = (context, transport, host) => {
    previous?.(context, transport, host);
    const tally = context.state?.[FEATURE];
    if (!(tally instanceof FanOutTally)) return;
    tally.count(host);
    // The span ends with the response; until then it shows the figures so far.
    const span = spans.get(tally);
    span?.setAttribute(FAN_OUT_SPAN_ATTRIBUTES.fanOut, tally.calls);
    span?.setAttribute(FAN_OUT_SPAN_ATTRIBUTES.dependencies, tally.dependencies);
  };
  const record = (endpoint: string, calls: number, hosts: number): void => {
    observed += 1;
    maxFanOut = Math.max(maxFanOut, calls);
    maxDependencies = Math.max(maxDependencies, hosts);
    let figures = endpoints.get(endpoint);
    if (figures === undefined) {
      if (endpoints.size >= MAX_FAN_OUT_ENDPOINTS) endpointsDropped += 1;
      else {
        figures = { requests: 0, calls: 0, max: 0 };
        endpoints.set(endpoint, figures);
      }
    }
    if (figures !== undefined) {
      figures.requests += 1;
      figures.calls += calls;
      figures.max = Math.max(figures.max, calls);
    }
  };

  const warn = (endpoint: string, calls: number, hosts: number): void => {
    const admission = limiter.admit(endpoint, nowMs());
    if (admission === undefined) {
      suppressed += 1;
      return;
    }
    warnings += 1;
    obs.logger.warn(
      {
        obs: FEATURE,
        endpoint,
        fan_out: calls,
        dependencies: hosts,
        threshold,
        suppressed: admission.suppressed,
      },
      `${endpoint} made ${calls} outbound calls to ${hosts} hosts while serving one request, above the warn-threshold of ${threshold}` +
        (admission.suppressed > 0
          ? ` (${admission.suppressed} such warnings suppressed before this one)`
          : ''),
    );
  };

  app.addHook('onResponse', (request, _reply, done) => {
    try {
      const tally = (request as Counted)[TALLY];
      if (tally !== undefined) {
        (request as Counted)[TALLY] = undefined;
        const endpoint = routeOf(request);
        const calls = tally.calls;
        const hosts = tally.dependencies;
        // One label object for both (read only when the endpoint's series is new).
        const labels = { endpoint };
        fanOutBatch.observe(endpoint, labels, calls);
        dependenciesBatch.observe(endpoint, labels, hosts);
        record(endpoint, calls, hosts);
        if (calls > threshold) warn(endpoint, calls, hosts);
      }
    } catch (error) {
      // telemetry never fails a request
      try {
        obs.logger.warn(
          { obs: FEATURE, err: String(error) },
          'obs could not record the fan-out of a request',
        );
      } catch {
        // nothing more to do
      }
    }
    done();
  });
}
