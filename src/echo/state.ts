import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { type Scenario, ScenarioStore } from '../scenario/index.ts';
import { FaultGate } from './applied.ts';
import { type EchoConfig, scenarioLimits } from './config.ts';
import { History } from './history.ts';
import { maskedEntry, maskedPath } from './history-secrets.ts';
import { EchoMetrics } from './metrics.ts';
import { TokenBucket } from './rate-limit.ts';
import { startScenarioFile } from './scenario-file.ts';
import type { FleetHistory } from './shared-history.ts';
import type { SharedState } from './shared-state.ts';
import type { Transport, UpgradeHandler } from './transport/index.ts';

/** Sampling interval of the event-loop delay monitor behind `/health`. */
export const EVENT_LOOP_RESOLUTION_MS = 20;

/** The service's live state, reachable as `app.echo`. */
export interface EchoState {
  readonly config: EchoConfig;
  readonly history: History;
  readonly scenarios: ScenarioStore;
  readonly metrics: EchoMetrics;
  /** More `/metrics` series in the Prometheus text format (the OpenTelemetry meters), when any. */
  readonly metricsText?: () => Promise<string>;
  readonly startedAt: Date;
  /** Requests received since the start (the counting hook of request-hooks.ts adds each). */
  requestCount: number;
  /** Open streaming connections, by kind (filled by the WebSocket and SSE endpoints). */
  readonly openStreams: { ws: number; sse: number };
  readonly eventLoopDelay: ReturnType<typeof monitorEventLoopDelay>;
  /** Aborted when the server starts draining: `/ready` turns 503, streams are closed. */
  readonly drain: AbortController;
  /**
   * Aborted when the drain runs out of time, or when the app closes: requests still waiting in a
   * delay are answered at once. Until then a delay in flight runs its course.
   */
  readonly drainDeadline: AbortController;
  /**
   * The lifecycle faults set by `PUT /control/readiness` and `PUT /control/liveness`: while `ready`
   * is false `/ready` answers 503, while `healthy` is false `/health` does. In memory, per process.
   */
  readonly lifecycle: { ready: boolean; healthy: boolean };
  /** Fires `change` after a `PUT /control/readiness` or `/control/liveness` changed `lifecycle` (gRPC's health follows it). */
  readonly lifecycleEvents: EventTarget;
  /** The safety valve and master switch of echo faults (`ECHO_MAX_ACTIVE_FAULTS`, `PUT /control/faults`). */
  readonly faults: FaultGate;
  /**
   * The global bucket of `ECHO_RATE_LIMIT_RPS`, when it is set: every request but the probes takes a
   * token from it, WebSocket upgrades included.
   */
  readonly rateLimit?: TokenBucket;
  /**
   * HTTP/1.1 `Upgrade` handlers by exact path (the WebSocket endpoint registers `/ws`), `*` for any
   * other WebSocket upgrade (the reverse proxy's): the transport's, which dispatches them.
   */
  readonly upgradeHandlers: Map<string, UpgradeHandler>;
  /** The shared store of `ECHO_STATE_URL` (issue #33), when there is one: `/health` names it. */
  readonly shared?: SharedStore;
}

/** What the service sees of the shared store of `ECHO_STATE_URL` (shared-state.ts). */
export interface SharedStore {
  readonly store: string;
  readonly up: boolean;
  takeToken(rps: number, burst: number): Promise<number> | undefined;
  /** Settles once the last set replaced here is in the store (or could not be written). */
  written(): Promise<void>;
  /** The fleet's history (shared-history.ts), unless history is off. */
  readonly history: FleetHistory | undefined;
}

export type { UpgradeHandler };

declare module 'fastify' {
  interface FastifyInstance {
    readonly echo: EchoState;
  }
}

/** What the live state is made of besides the configuration. */
export interface EchoStateSources {
  /** The registry obs's firewall guards: the echo's meters are made in it. */
  readonly registry: Registry;
  readonly logger: Logger;
  /** Its upgrade handlers are the state's; its connections are counted in the state's meters. */
  readonly transport: Pick<Transport, 'upgradeHandlers' | 'meter'>;
  /** Scenarios to start with instead of `ECHO_SCENARIO_FILE`. */
  readonly scenarios?: readonly Scenario[] | undefined;
  readonly metricsText?: (() => Promise<string>) | undefined;
  /** The log lines stdout's destination dropped, when the app logs there. */
  readonly logLinesDropped?: (() => number) | undefined;
}

/**
 * The live state of `app`, every part made before the object: the scenario set loaded (from
 * `sources.scenarios` or `ECHO_SCENARIO_FILE`), the fleet's store of `ECHO_STATE_URL` connected when
 * it is set, the meters watching them. What it started stops when the app closes; obs's drain and
 * `close()` abort its drain signals.
 */
export async function createEchoState(
  app: FastifyInstance,
  config: EchoConfig,
  sources: EchoStateSources,
): Promise<EchoState> {
  const startedAt = new Date();
  const eventLoopDelay = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
  eventLoopDelay.enable();
  const history = new History(config.historySize, config.historyMaxBodyBytes, {
    maxBytes: config.historyMaxBytes,
    ...(config.historySecrets === 'mask' ? { view: maskedEntry, pathView: maskedPath } : {}),
  });
  const scenarios = new ScenarioStore();
  let scenarioFile: { close(): void } | undefined;
  if (sources.scenarios !== undefined) scenarios.replace([...sources.scenarios]);
  else scenarioFile = startScenarioFile(config, scenarios, sources.logger);
  // Replicas that agree (`ECHO_STATE_URL`): the scenario set shared on Redis. Loaded only then.
  let shared: SharedState | undefined;
  if (config.stateUrl !== undefined) {
    const { startSharedState } = await import('./shared-state.ts');
    shared = await startSharedState({
      url: config.stateUrl,
      password: config.statePassword,
      scenarios,
      history,
      adopt: (set) => scenarios.replace(set, scenarioLimits(config)),
      logger: sources.logger,
    });
  }
  const state: EchoState = {
    config,
    history,
    scenarios,
    metrics: new EchoMetrics(sources.registry),
    ...(sources.metricsText === undefined ? {} : { metricsText: sources.metricsText }),
    startedAt,
    requestCount: 0,
    openStreams: { ws: 0, sse: 0 },
    eventLoopDelay,
    drain: new AbortController(),
    drainDeadline: new AbortController(),
    lifecycle: { ready: true, healthy: true },
    lifecycleEvents: new EventTarget(),
    faults: new FaultGate(config.faultsEnabled, config.maxActiveFaults),
    ...(config.rateLimitRps > 0
      ? { rateLimit: new TokenBucket(config.rateLimitRps, config.rateLimitBurst) }
      : {}),
    upgradeHandlers: sources.transport.upgradeHandlers,
    ...(shared === undefined ? {} : { shared }),
  };
  watchState(state, sources);
  if (shared !== undefined) {
    const store = shared;
    app.addHook('onClose', () => store.close());
  }
  // obs's drain (main.ts) begins: /ready turns 503, SSE streams and WebSockets are closed.
  app.obs.drainState.onChange((phase) => {
    if (phase !== 'idle') state.drain.abort();
  });
  // Closing drains: waiting requests are answered at once instead of holding close() for their delay.
  app.addHook('preClose', (done) => {
    state.drain.abort();
    state.drainDeadline.abort();
    done();
  });
  app.addHook('onClose', async () => {
    scenarioFile?.close();
    eventLoopDelay.disable();
  });
  return state;
}

/** The meters that read the state: connections, active faults, scenarios, log lines, the shared store. */
function watchState(state: EchoState, sources: EchoStateSources): void {
  const { metrics, shared } = state;
  sources.transport.meter(metrics);
  metrics.watchActiveFaults(() => state.faults.active);
  metrics.watchScenarios(() => state.scenarios.counts());
  if (sources.logLinesDropped !== undefined) metrics.watchLogLinesDropped(sources.logLinesDropped);
  if (shared !== undefined) {
    const fleetHistory = shared.history;
    metrics.watchStateStore(
      () => shared.up,
      fleetHistory === undefined ? undefined : () => fleetHistory.dropped,
    );
  }
}
