import { CounterBatch, HistogramBatch, type ObsConfigInput, registryGuard } from '@echo-chaos/obs';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { ScenarioStoreCounts } from '../scenario/index.ts';
import { FAULT_KINDS, type FaultKind, type FaultMeters } from './applied.ts';

/** The buckets of `echo_request_duration_seconds`; a latency objective's threshold is one of them. */
export const ECHO_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

const UNLABELLED_TOTAL_GAUGES = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/**
 * What a request's answer owes to fault injection, the `fault` label of the request meters: `none`
 * for the service's own answers (the only ones its SLOs count), else the first control that shaped
 * it: `chaos` (`X-Echo-Chaos` or the configured percentage), `error` (`X-Echo-Error`), `scenario` (a
 * scenario step), `status` (`X-Echo-Status`), `delay` (`X-Echo-Delay` or the configured default, or a
 * slowed body: `X-Echo-Throttle`, `X-Echo-Chunk-Delay`, `X-Echo-Body-Delay`). A broken body
 * (`X-Echo-Error: truncate`...) is `error`.
 */
export const ECHO_FAULTS = ['none', 'chaos', 'error', 'scenario', 'status', 'delay'] as const;
export type EchoFault = (typeof ECHO_FAULTS)[number];

const NO_SCENARIO_COUNTS: ScenarioStoreCounts = Object.freeze({
  expiredActiveFor: 0,
  expiredTimes: 0,
  sessions: 0,
  sessionsEvicted: 0,
});

/** The gRPC calls' meters. */
interface GrpcMeters {
  readonly requests: Counter<'method' | 'code'>;
  readonly duration: Histogram<'method'>;
}

/** The echo service's own meters, on a registry of their own (one per app, so tests stay apart). */
export class EchoMetrics implements FaultMeters {
  readonly registry: Registry;
  readonly #requests: Counter<'method' | 'path' | 'status' | 'fault'>;
  readonly #duration: Histogram<'fault'>;
  /** The two meters every request records, batched per series (`@echo-chaos/obs`'s batch.ts). */
  readonly #requestsBatch: CounterBatch<'method' | 'path' | 'status' | 'fault'>;
  readonly #durationBatch: HistogramBatch<'fault'>;
  /** The upstream's own answers (reverse proxy), apart from what the echo injected. */
  readonly #upstreamRequests: Counter<'status'>;
  readonly #upstreamDuration: Histogram;
  readonly #upstreamRequestsBatch: CounterBatch<'status'>;
  readonly #upstreamDurationBatch: HistogramBatch<never>;
  readonly #chaos: Counter<'type'>;
  readonly #faults: Counter<'kind'>;
  /** The gRPC calls (`ECHO_GRPC_PORT`), registered on the first call so a service without gRPC has none. */
  #grpc: GrpcMeters | undefined;
  readonly #overflow: Counter;
  #activeFaults: () => number = () => 0;
  readonly #connectionsRefused: Counter;
  #openConnections: () => number = () => 0;
  #logLinesDropped: () => number = () => 0;
  #scenarioCounts: () => ScenarioStoreCounts = () => NO_SCENARIO_COUNTS;

  constructor(registry: Registry = new Registry()) {
    this.registry = registry;
    collectDefaultMetrics({ register: registry });
    // prom-client names three gauges `..._total`, which Prometheus reserves for counters (promtool
    // rejects the scrape). Each is the sum of its labelled sibling (`nodejs_active_handles{type}`...).
    for (const name of UNLABELLED_TOTAL_GAUGES) registry.removeSingleMetric(name);
    this.#requests = new Counter({
      name: 'echo_requests_total',
      help: "HTTP requests served, by method, path, status and injected fault (none: the service's own answer)",
      labelNames: ['method', 'path', 'status', 'fault'],
      registers: [registry],
    });
    this.#duration = new Histogram({
      name: 'echo_request_duration_seconds',
      help: "HTTP request latency in seconds, by injected fault (none: the service's own answer)",
      labelNames: ['fault'],
      buckets: ECHO_DURATION_BUCKETS,
      registers: [registry],
    });
    const firewall = registryGuard(registry);
    this.#upstreamRequests = new Counter({
      name: 'echo_upstream_requests_total',
      help: "Requests forwarded to an upstream (ECHO_UPSTREAM or a scenario's upstream; WebSocket handshakes too), by the status the upstream answered (error: no answer: unreachable, too slow, or a loop)",
      labelNames: ['status'],
      registers: [registry],
    });
    this.#upstreamDuration = new Histogram({
      name: 'echo_upstream_request_duration_seconds',
      help: "Time from forwarding a request to an upstream (ECHO_UPSTREAM or a scenario's) to its answer's head: the upstream's own latency, without any injected delay",
      buckets: ECHO_DURATION_BUCKETS,
      registers: [registry],
    });
    this.#requestsBatch = new CounterBatch(this.#requests, { firewall });
    this.#durationBatch = new HistogramBatch(this.#duration, { firewall });
    // Every forwarded request records both: batched as the two above.
    this.#upstreamRequestsBatch = new CounterBatch(this.#upstreamRequests, { firewall });
    this.#upstreamDurationBatch = new HistogramBatch(this.#upstreamDuration, { firewall });
    this.#chaos = new Counter({
      name: 'echo_chaos_errors_total',
      help: 'Injected failures, by type (chaos, or the X-Echo-Error value)',
      labelNames: ['type'],
      registers: [registry],
    });
    this.#faults = new Counter({
      name: 'echo_faults_injected_total',
      help: 'Faults injected into echo responses, by kind',
      labelNames: ['kind'],
      registers: [registry],
    });
    // Every kind from the start, so a rate() over a kind not yet seen is 0, not absent.
    for (const kind of FAULT_KINDS) this.#faults.inc({ kind }, 0);
    this.#overflow = new Counter({
      name: 'echo_faults_overflow_total',
      help: 'Requests served plainly because ECHO_MAX_ACTIVE_FAULTS faults were already in progress',
      registers: [registry],
    });
    const metrics = this;
    new Gauge({
      name: 'echo_active_faults',
      help: 'Faults in progress: requests with a fault whose response has not ended (delayed, held, throttled)',
      registers: [registry],
      collect() {
        this.set(metrics.#activeFaults());
      },
    });
    this.#connectionsRefused = new Counter({
      name: 'echo_connections_refused_total',
      help: 'Connections refused (503 or GOAWAY, then closed) because ECHO_MAX_CONNECTIONS were open',
      registers: [registry],
    });
    new Gauge({
      name: 'echo_open_connections',
      help: 'Open client connections, every protocol (refused ones not counted)',
      registers: [registry],
      collect() {
        this.set(metrics.#openConnections());
      },
    });
    let dropped = 0;
    new Counter({
      name: 'echo_log_lines_dropped_total',
      help: 'Log lines dropped because stdout did not keep up (a stopped or slow log reader): beyond 8 MiB waiting for the next event-loop turn or 16 MiB waiting for stdout',
      registers: [registry],
      collect() {
        const now = metrics.#logLinesDropped();
        if (now > dropped) this.inc(now - dropped);
        dropped = Math.max(dropped, now);
      },
    });
    this.#registerScenarioMeters(registry);
  }

  /** The scenario store's counts as meters, read at each scrape (a window may end without traffic). */
  #registerScenarioMeters(registry: Registry): void {
    const metrics = this;
    const seen = { activeFor: 0, times: 0, evicted: 0 };
    const expired = new Counter({
      name: 'echo_scenario_expired_total',
      help: 'Scenarios that expired and stopped matching, by reason: activeFor (its window ended; once per set or reset) or times (it answered its times; once per session, and once for requests without a session)',
      labelNames: ['reason'],
      registers: [registry],
      collect() {
        const counts = metrics.#scenarioCounts();
        if (counts.expiredActiveFor > seen.activeFor)
          this.inc({ reason: 'activeFor' }, counts.expiredActiveFor - seen.activeFor);
        if (counts.expiredTimes > seen.times) this.inc({ reason: 'times' }, counts.expiredTimes - seen.times);
        seen.activeFor = Math.max(seen.activeFor, counts.expiredActiveFor);
        seen.times = Math.max(seen.times, counts.expiredTimes);
      },
    });
    // Both reasons from the start, so a rate() over one not yet seen is 0, not absent.
    for (const reason of ['activeFor', 'times']) expired.inc({ reason }, 0);
    new Counter({
      name: 'echo_scenario_sessions_evicted_total',
      help: 'Scenario sessions (X-Echo-Session) dropped, least recently used first, to stay within 10,000 sessions and 100,000 session states',
      registers: [registry],
      collect() {
        const evicted = metrics.#scenarioCounts().sessionsEvicted;
        if (evicted > seen.evicted) this.inc(evicted - seen.evicted);
        seen.evicted = Math.max(seen.evicted, evicted);
      },
    });
    new Gauge({
      name: 'echo_scenario_sessions',
      help: 'Scenario sessions (X-Echo-Session) whose positions and times counts are kept',
      registers: [registry],
      collect() {
        this.set(metrics.#scenarioCounts().sessions);
      },
    });
  }

  /**
   * `echo_state_store_up` (1 when the shared store of `ECHO_STATE_URL` is reachable, else 0),
   * registered only when there is such a store.
   */
  watchStateStore(read: () => boolean, historyDropped?: () => number): void {
    if (historyDropped !== undefined) {
      let counted = 0;
      new Counter({
        name: 'echo_state_history_dropped_total',
        help: 'History entries that never reached the shared store (ECHO_STATE_URL): more than 10,000 waiting to be written, or a write that failed; they stay in this process’s own history',
        registers: [this.registry],
        collect() {
          const now = historyDropped();
          if (now > counted) this.inc(now - counted);
          counted = Math.max(counted, now);
        },
      });
    }
    new Gauge({
      name: 'echo_state_store_up',
      help: 'Whether the shared state store (ECHO_STATE_URL, Redis) is reachable: 1, or 0 while this process serves from its own memory',
      registers: [this.registry],
      collect() {
        this.set(read() ? 1 : 0);
      },
    });
  }

  /**
   * Where `echo_scenario_expired_total`, `echo_scenario_sessions_evicted_total` and
   * `echo_scenario_sessions` read their counts (the scenario store).
   */
  watchScenarios(read: () => ScenarioStoreCounts): void {
    this.#scenarioCounts = read;
  }

  /** Where `echo_log_lines_dropped_total` reads its count (the log destination). */
  watchLogLinesDropped(read: () => number): void {
    this.#logLinesDropped = read;
  }

  /** Where `echo_open_connections` reads its value (the connection limiter). */
  watchOpenConnections(read: () => number): void {
    this.#openConnections = read;
  }

  connectionRefused(): void {
    this.#connectionsRefused.inc();
  }

  /** Where `echo_active_faults` reads its value (the fault gate). */
  watchActiveFaults(read: () => number): void {
    this.#activeFaults = read;
  }

  faultInjected(kind: FaultKind): void {
    this.#faults.inc({ kind });
  }

  faultOverflow(): void {
    this.#overflow.inc();
  }

  /**
   * One gRPC call ended (src/echo/grpc/observe.ts): `method` is its full path from a bounded set
   * (or `other`), `code` its status name (`OK`, `DEADLINE_EXCEEDED`, `CANCELLED`...).
   */
  grpcCallEnded(method: string, code: string, seconds: number): void {
    const grpc = this.#registerGrpcMeters();
    grpc.requests.inc({ method, code });
    grpc.duration.observe({ method }, seconds);
  }

  /** Registers the gRPC meters, once: the gRPC server does when it starts, so they show before any call. */
  registerGrpcMeters(): void {
    this.#registerGrpcMeters();
  }

  #registerGrpcMeters(): GrpcMeters {
    this.#grpc ??= {
      requests: new Counter({
        name: 'echo_grpc_requests_total',
        help: 'gRPC calls ended, by full method path (the echo service, health and reflection; other for any other) and status code name (DEADLINE_EXCEEDED: the deadline passed first; CANCELLED: the client went first)',
        labelNames: ['method', 'code'],
        registers: [this.registry],
      }),
      duration: new Histogram({
        name: 'echo_grpc_request_duration_seconds',
        help: 'gRPC call latency in seconds, from its headers to its end (status sent, deadline passed, or client gone), by full method path',
        labelNames: ['method'],
        buckets: ECHO_DURATION_BUCKETS,
        registers: [this.registry],
      }),
    };
    return this.#grpc;
  }

  recordRequest(
    method: string,
    path: string,
    status: number,
    seconds: number,
    fault: EchoFault = 'none',
  ): void {
    // Batched per series: the registry's firewall (obs's) admits a series' labels, path included,
    // when it is first seen, and each recording past the cap as before. A path holds no NUL (HTTP
    // rejects it) and is last, so the key names one labelset.
    this.#requestsBatch.inc(`${method}\u0000${status}\u0000${fault}\u0000${path}`, {
      method,
      path,
      status,
      fault,
    });
    this.#durationBatch.observe(fault, { fault }, seconds);
  }

  /** A forwarded request's upstream answered with `status` (or failed: `error`) after `seconds`. */
  upstreamAnswered(status: number | 'error', seconds: number): void {
    const label = String(status);
    this.#upstreamRequestsBatch.inc(label, { status: label });
    if (status !== 'error') this.#upstreamDurationBatch.observe('', {}, seconds);
  }

  recordFault(type: string): void {
    this.#chaos.inc({ type });
  }
}

/**
 * The echo service's own service-level objectives, its defaults of `obs.slo` (below every source
 * a person sets: the `OBS_CONFIG_FILE`, `OBS_SLO_*` variables): its answers are available and fast.
 * Both count the service's own answers only (`fault="none"`): a chaos, an `X-Echo-Error`, an
 * `X-Echo-Status`, a scenario or an asked-for delay is the tool doing its job, never a burn of its
 * budget. The chart's `PrometheusRule` uses the same expressions.
 */
export const ECHO_OBS_DEFAULTS = {
  slo: {
    enabled: true,
    objectives: [
      {
        name: 'echo-availability',
        sli: 'availability',
        metric: 'echo_requests_total',
        filter: 'fault="none"',
        'error-filter': 'status=~"5.."',
        target: 0.999,
      },
      {
        name: 'echo-latency',
        sli: 'latency',
        metric: 'echo_request_duration_seconds',
        filter: 'fault="none"',
        threshold: '500ms',
        target: 0.99,
      },
    ],
  },
} as const satisfies ObsConfigInput;
