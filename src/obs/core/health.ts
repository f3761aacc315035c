/**
 * Health: named components that obs features (dependencies, drain, container memory) and the
 * application add, run together on each `/actuator/health` request, each bounded in time. A
 * component answers one of four statuses; the aggregate is the worst of them
 * (`DOWN` > `OUT_OF_SERVICE` > `DEGRADED` > `UP`), and readiness follows it: ready while the
 * aggregate of the components that count for readiness (all but those added with
 * `{ readiness: false }`) is `UP` or `DEGRADED`. A readiness check (`readiness.ts`) is a component too: `ok` is
 * `UP`, not ok is `DOWN`.
 */
import type { JsonValue } from './config/config-hash.ts';
import { type ReadinessCheck, runReadinessCheck } from './readiness.ts';

/** The statuses of a health component and of the aggregate, best first. */
export const HEALTH_STATUSES = ['UP', 'DEGRADED', 'OUT_OF_SERVICE', 'DOWN'] as const;
/** One of {@link HEALTH_STATUSES}. */
export type HealthStatus = (typeof HEALTH_STATUSES)[number];

/** What a health component answers: a status, with optional details for people. */
export interface HealthResult {
  readonly status: HealthStatus;
  readonly details?: JsonValue;
}
/**
 * A health component. It may be async; it is given `readinessTimeoutMs` (default 2s) to answer. One
 * that throws, does not answer in time or answers no known status is `DOWN`, with the error in its
 * details.
 */
export type HealthComponent = () => HealthResult | Promise<HealthResult>;

/** The outcome of `Obs.health()`. */
export interface HealthReport {
  readonly status: HealthStatus;
  readonly components: Readonly<Record<string, HealthResult>>;
}

/** The HTTP status `/actuator/health` answers a health status with: 200, or 503 for DOWN and OUT_OF_SERVICE. */
export function healthHttpStatus(status: HealthStatus): 200 | 503 {
  return status === 'UP' || status === 'DEGRADED' ? 200 : 503;
}

/** Whether a health status counts as ready: `UP` or `DEGRADED`. */
export function isReadyStatus(status: HealthStatus): boolean {
  return status === 'UP' || status === 'DEGRADED';
}

/** The worst of the statuses (`DOWN` > `OUT_OF_SERVICE` > `DEGRADED` > `UP`); `UP` for none. */
export function aggregateHealth(statuses: Iterable<HealthStatus>): HealthStatus {
  let worst = 0;
  for (const status of statuses) worst = Math.max(worst, HEALTH_STATUSES.indexOf(status));
  return HEALTH_STATUSES[worst] ?? 'DOWN';
}

function isHealthStatus(value: unknown): value is HealthStatus {
  return typeof value === 'string' && (HEALTH_STATUSES as readonly string[]).includes(value);
}

/** How a health component takes part: {@link HealthComponentOptions}. */
export interface HealthComponentOptions {
  /**
   * Whether the component counts for readiness. Default true. False for a component whose trouble
   * should show on `/actuator/health` without taking the instance out of traffic (a background job
   * that stopped succeeding).
   */
  readonly readiness?: boolean;
}

/** A source of health: a component, or a readiness check (ok `UP`, not ok `DOWN`). */
export type HealthSource =
  | { readonly kind: 'component'; readonly component: HealthComponent; readonly readiness: boolean }
  | { readonly kind: 'readiness'; readonly check: ReadinessCheck };

/** Whether a source counts for readiness. */
export function countsForReadiness(source: HealthSource): boolean {
  return source.kind === 'readiness' || source.readiness;
}

/** Runs every source concurrently, each bounded by `timeoutMs`. Never rejects. */
export async function runHealth(
  sources: ReadonlyMap<string, HealthSource>,
  timeoutMs: number,
): Promise<HealthReport> {
  const entries = await Promise.all(
    [...sources].map(async ([name, source]) => [name, await runSource(source, timeoutMs)] as const),
  );
  return {
    status: aggregateHealth(entries.map(([, r]) => r.status)),
    components: Object.fromEntries(entries),
  };
}

async function runSource(source: HealthSource, timeoutMs: number): Promise<HealthResult> {
  if (source.kind === 'readiness') {
    const { ok, detail } = await runReadinessCheck(source.check, timeoutMs);
    return detail === undefined
      ? { status: ok ? 'UP' : 'DOWN' }
      : { status: ok ? 'UP' : 'DOWN', details: detail };
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs}ms`)), timeoutMs);
      timer.unref();
    });
    const result = await Promise.race([Promise.resolve().then(source.component), timeout]);
    const status = (result as { status?: unknown } | undefined)?.status;
    if (!isHealthStatus(status)) {
      return {
        status: 'DOWN',
        details: { error: `not a health status: ${JSON.stringify(status) ?? 'undefined'}` },
      };
    }
    return result.details === undefined ? { status } : { status, details: result.details };
  } catch (error) {
    return { status: 'DOWN', details: { error: error instanceof Error ? error.message : String(error) } };
  } finally {
    clearTimeout(timer);
  }
}
