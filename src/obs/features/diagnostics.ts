/**
 * Live diagnostics (`obs.diagnostics`): the `runtime` section of the snapshot, also served alone at
 * `/actuator/obs/runtime`. Uptime, process and container memory, event-loop lag, requests in
 * flight, the drain state and the cardinality firewall's top offenders, computed on each read.
 * The event-loop monitor runs only while the feature is on, and stops on close. With the feature
 * off the section keeps its shape, with the live figures empty: lag `null`, no offenders, no
 * container reading.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import type { CardinalityFirewall } from '../core/cardinality.ts';
import type { DrainState } from '../core/drain.ts';
import type { ObsCore } from '../core/obs.ts';
import type { RuntimeSnapshot } from '../core/snapshot.ts';
import {
  type ContainerMemoryApi,
  type ContainerMemoryReading,
  containerMemoryJson,
} from './container-memory.ts';

/** How many top offenders the runtime lists by default (`obs.diagnostics.top-offenders`). */
export const DEFAULT_TOP_OFFENDERS = 10;
/** Sampling interval of the event-loop delay monitor by default, in milliseconds. */
export const DEFAULT_EVENT_LOOP_RESOLUTION_MS = 10;

/** What {@link createDiagnostics} takes. */
export interface DiagnosticsOptions {
  readonly enabled: boolean;
  /** How many offenders to list. Default {@link DEFAULT_TOP_OFFENDERS}. */
  readonly topOffenders?: number;
  /** Event-loop monitor resolution, in milliseconds. Default {@link DEFAULT_EVENT_LOOP_RESOLUTION_MS}. */
  readonly eventLoopResolutionMs?: number;
  readonly firewall: CardinalityFirewall;
  readonly drain: DrainState;
  /** Reads the container memory; absent or `undefined` when that feature is off. */
  readonly containerMemory?: () => ContainerMemoryReading | undefined;
  /** When the process (or the obs core) started. Default now. */
  readonly startedAt?: Date;
}

/** The live diagnostics of one obs core. */
export interface Diagnostics {
  readonly enabled: boolean;
  /** The runtime figures, now. Never throws. */
  runtime(): RuntimeSnapshot;
  /** Stops the event-loop monitor. Idempotent. */
  close(): void;
}

const round = (n: number, digits = 3): number => {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
};

/**
 * A figure of `monitorEventLoopDelay` (nanoseconds) as event-loop lag in milliseconds. The monitor
 * samples on a timer of `resolutionMs`, so every delay it records includes that interval; the lag is
 * what is left above it (0 before the first sample, when the histogram holds NaN or a huge value).
 */
export function lagAboveResolutionMs(nanos: number, resolutionMs: number): number {
  if (!Number.isFinite(nanos) || nanos >= Number.MAX_SAFE_INTEGER) return 0;
  return round(Math.max(0, nanos / 1e6 - resolutionMs));
}

/** Builds the diagnostics; with `enabled`, starts the event-loop monitor. */
export function createDiagnostics(options: DiagnosticsOptions): Diagnostics {
  const { enabled, firewall, drain } = options;
  const startedAt = options.startedAt ?? new Date();
  const topOffenders = Math.max(1, Math.floor(options.topOffenders ?? DEFAULT_TOP_OFFENDERS));
  const resolution = Math.max(
    1,
    Math.round(options.eventLoopResolutionMs ?? DEFAULT_EVENT_LOOP_RESOLUTION_MS),
  );
  const eventLoop = enabled ? monitorEventLoopDelay({ resolution }) : undefined;
  eventLoop?.enable();
  const ms = (v: number | undefined) => (v === undefined ? null : lagAboveResolutionMs(v, resolution));

  return {
    enabled,
    runtime() {
      const memory = process.memoryUsage();
      let container: RuntimeSnapshot['memory']['container'] = null;
      if (enabled) {
        try {
          const reading = options.containerMemory?.();
          if (reading !== undefined) container = containerMemoryJson(reading);
        } catch {
          // diagnostics never fail their reader
        }
      }
      return {
        enabled,
        started_at: startedAt.toISOString(),
        uptime_seconds: round((Date.now() - startedAt.getTime()) / 1000),
        pid: process.pid,
        node_version: process.version,
        memory: {
          rss_bytes: memory.rss,
          heap_used_bytes: memory.heapUsed,
          heap_total_bytes: memory.heapTotal,
          heap_limit_bytes: getHeapStatistics().heap_size_limit,
          external_bytes: memory.external,
          array_buffers_bytes: memory.arrayBuffers,
          container,
        },
        event_loop_lag_ms: {
          mean: ms(eventLoop?.mean),
          p50: ms(eventLoop?.percentile(50)),
          p99: ms(eventLoop?.percentile(99)),
          max: ms(eventLoop?.max),
        },
        in_flight_requests: drain.inFlight,
        cardinality: {
          enabled: firewall.enabled,
          max_values_per_tag: firewall.maxValuesPerTag,
          overflow_value: firewall.overflowValue,
          top_offenders: enabled ? firewall.offenders(topOffenders) : [],
        },
        drain: { state: drain.phase, since: drain.since.toISOString() },
      };
    },
    close() {
      eventLoop?.disable();
    },
  };
}

/** The diagnostics feature's part of `app.obs`. */
export interface DiagnosticsApi {
  /** The runtime figures alone: the snapshot's `runtime` section, now. Never throws. */
  runtime(): RuntimeSnapshot;
}

/**
 * The diagnostics of an obs core, as `obs.diagnostics` says, reading the container memory through
 * its feature; adds the `diagnostics` section to the snapshot. Close it to stop its monitor.
 */
export function installDiagnostics(core: ObsCore, memory: ContainerMemoryApi): Diagnostics {
  const settings = core.config.diagnostics;
  const diagnostics = createDiagnostics({
    enabled: settings.enabled,
    topOffenders: settings['top-offenders'],
    eventLoopResolutionMs: settings['event-loop-resolution'],
    firewall: core.firewall,
    drain: core.drainState,
    containerMemory: () => memory.containerMemory(),
  });
  core.addSnapshotSection('diagnostics', () => ({
    enabled: settings.enabled,
    config: core.resolved.effective.diagnostics ?? null,
  }));
  return diagnostics;
}
