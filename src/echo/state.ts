import type { monitorEventLoopDelay } from 'node:perf_hooks';
import type { ScenarioStore } from '../scenario/index.ts';
import type { FaultGate } from './applied.ts';
import type { EchoConfig } from './config.ts';
import type { History } from './history.ts';
import type { EchoMetrics } from './metrics.ts';
import type { TokenBucket } from './rate-limit.ts';
import type { FleetHistory } from './shared-history.ts';
import type { UpgradeHandler } from './transport/index.ts';

/** The service's live state, reachable as `app.echo`. */
export interface EchoState {
  readonly config: EchoConfig;
  readonly history: History;
  readonly scenarios: ScenarioStore;
  readonly metrics: EchoMetrics;
  /** More `/metrics` series in the Prometheus text format (the OpenTelemetry meters), when any. */
  readonly metricsText?: () => Promise<string>;
  readonly startedAt: Date;
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
  shared?: {
    readonly store: string;
    readonly up: boolean;
    takeToken(rps: number, burst: number): Promise<number> | undefined;
    /** Settles once the last set replaced here is in the store (or could not be written). */
    written(): Promise<void>;
    /** The fleet's history (shared-history.ts), unless history is off. */
    readonly history: FleetHistory | undefined;
  };
}

export type { UpgradeHandler };

declare module 'fastify' {
  interface FastifyInstance {
    echo: EchoState;
  }
}
