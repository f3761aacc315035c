/**
 * The experiment lifecycle of an EchoScenario: `spec.duration` (a ceiling on how long it runs),
 * `spec.suspend` and an abort by `spec.abortWhen`. A pure function of the EchoScenario as the cache
 * holds it (its status is the memory: `startTime`, and an `Aborted` condition of this generation)
 * and the time, so the plan can leave a stopped EchoScenario out of every array.
 *
 * The clock (docs/adr/0018-experiment-lifecycle.md): `startTime` is the first time this generation
 * is active (not suspended, valid); any spec change (a new generation, `suspend` toggled included)
 * starts a new run with a fresh clock. An `Aborted` condition holds until the spec changes.
 */
import { parseDurationMs } from '@echo-chaos/obs/internal';

/** What the lifecycle reads of an EchoScenario (plan.ts's type, without importing it: no cycle). */
interface EchoScenario {
  metadata: { generation?: number };
  spec?: object;
  status?: EchoScenarioStatus;
}

/** What the lifecycle reads and writes of an EchoScenario's status. */
interface EchoScenarioStatus {
  observedGeneration?: number;
  conditions?: Array<{
    type: string;
    status?: string;
    reason: string;
    message: string;
    observedGeneration?: number;
  }>;
  startTime?: string;
  expiresAt?: string;
  blastRadius?: unknown;
}

/** Why an EchoScenario is off its pods although valid and present. */
export type StopReason = 'Expired' | 'Suspended' | 'Aborted' | 'AbortCheckFailed';

/** `spec.abortWhen`: a Prometheus query compared with a threshold, holding for `for`. */
export interface AbortWhen {
  query?: unknown;
  comparison?: unknown;
  threshold?: unknown;
  for?: unknown;
  /** What a check that cannot be made does once it failed `failureThreshold` times in a row. */
  onError?: unknown;
  failureThreshold?: unknown;
}

/** What `spec.abortWhen.onError` takes; `Suspend` by default (fail closed). */
export const ON_ERROR = ['Suspend', 'Continue'] as const;
export type OnError = (typeof ON_ERROR)[number];
/** Failed checks in a row before `onError` applies, by default (a Kubernetes probe's default too). */
export const DEFAULT_FAILURE_THRESHOLD = 3;
/** Largest `spec.abortWhen.failureThreshold`. */
export const MAX_FAILURE_THRESHOLD = 100;
/** The condition type that says whether `spec.abortWhen` can be evaluated. */
export const ABORT_CHECK_HEALTHY = 'AbortCheckHealthy';

/** `spec.abortWhen.onError`, its default applied. */
export function onErrorOf(abort: AbortWhen | undefined): OnError {
  return abort?.onError === 'Continue' ? 'Continue' : 'Suspend';
}

/** `spec.abortWhen.failureThreshold`, its default applied. */
export function failureThresholdOf(abort: AbortWhen | undefined): number {
  const n = abort?.failureThreshold;
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 ? n : DEFAULT_FAILURE_THRESHOLD;
}

/**
 * Whether `spec.abortWhen` could be evaluated, as the last checks said: `healthy` false once
 * `failureThreshold` checks in a row failed (`reason` and `message` name the URL and the error).
 */
export interface AbortCheck {
  readonly healthy: boolean;
  readonly reason: string;
  readonly message: string;
}

/** The comparisons `spec.abortWhen.comparison` takes; `>` by default. */
export const COMPARISONS = ['>', '>=', '<', '<='] as const;
export type Comparison = (typeof COMPARISONS)[number];

/** Longest `spec.abortWhen.query`, in characters. */
export const MAX_QUERY_LENGTH = 4096;
/** Longest `spec.duration`: a year (a timer is re-armed at most every {@link MAX_TIMER_MS}). */
export const MAX_DURATION_MS = 366 * 86_400_000;
/** Longest `spec.abortWhen.for`: a day. */
export const MAX_FOR_MS = 86_400_000;
/** The longest one expiry timer waits before the key is looked at again (and re-armed). */
export const MAX_TIMER_MS = 3_600_000;

export interface Lifecycle {
  /** `undefined`: running (or not started yet); else why it is off its pods. */
  readonly stopped: StopReason | undefined;
  /** Why, for the condition's message and the Event. */
  readonly message: string;
  /** RFC 3339: when this generation first ran; absent while suspended. */
  readonly startTime: string | undefined;
  /** RFC 3339: `startTime + spec.duration`; absent without a duration or a start. */
  readonly expiresAt: string | undefined;
  /** Milliseconds until it expires, when it runs and has a duration. */
  readonly expiresInMs: number | undefined;
}

/** Problems of the lifecycle fields of a spec (`duration`, `suspend`, `abortWhen`), one line each. */
export function lifecycleProblems(spec: Record<string, unknown> | undefined): string[] {
  const problems: string[] = [];
  const duration = spec?.['duration'];
  if (duration !== undefined) {
    const ms = typeof duration === 'string' ? parseDurationMs(duration) : undefined;
    if (ms === undefined || ms <= 0 || ms > MAX_DURATION_MS)
      problems.push(
        `spec.duration: must be a duration such as 90s, 10m or 1h30m, above 0 and at most 366d, got ${JSON.stringify(duration)}`,
      );
  }
  const suspend = spec?.['suspend'];
  if (suspend !== undefined && typeof suspend !== 'boolean') problems.push('spec.suspend: must be a boolean');
  const abort = spec?.['abortWhen'] as AbortWhen | undefined;
  if (abort !== undefined) {
    if (typeof abort !== 'object' || abort === null) problems.push('spec.abortWhen: must be an object');
    else {
      if (
        typeof abort.query !== 'string' ||
        abort.query.trim() === '' ||
        abort.query.length > MAX_QUERY_LENGTH
      )
        problems.push(`spec.abortWhen.query: must be a PromQL query of 1 to ${MAX_QUERY_LENGTH} characters`);
      if (typeof abort.threshold !== 'number' || !Number.isFinite(abort.threshold))
        problems.push('spec.abortWhen.threshold: must be a number');
      if (abort.comparison !== undefined && !COMPARISONS.includes(abort.comparison as Comparison))
        problems.push(`spec.abortWhen.comparison: must be one of ${COMPARISONS.join(' ')}`);
      if (abort.for !== undefined) {
        const ms = typeof abort.for === 'string' ? parseDurationMs(abort.for) : undefined;
        if (ms === undefined || ms > MAX_FOR_MS)
          problems.push(
            `spec.abortWhen.for: must be a duration such as 30s or 1m30s, at most 1d, got ${JSON.stringify(abort.for)}`,
          );
      }
      if (abort.onError !== undefined && !ON_ERROR.includes(abort.onError as OnError))
        problems.push(
          `spec.abortWhen.onError: must be one of ${ON_ERROR.join(', ')}, got ${JSON.stringify(abort.onError)}`,
        );
      const n = abort.failureThreshold;
      if (
        n !== undefined &&
        (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_FAILURE_THRESHOLD)
      )
        problems.push(
          `spec.abortWhen.failureThreshold: must be an integer from 1 to ${MAX_FAILURE_THRESHOLD}, got ${JSON.stringify(n)}`,
        );
    }
  }
  return problems;
}

/** `spec.duration` in milliseconds, or `undefined` (none, or invalid). */
export function durationMs(es: EchoScenario): number | undefined {
  const duration = (es.spec as Record<string, unknown> | undefined)?.['duration'];
  return typeof duration === 'string' ? parseDurationMs(duration) : undefined;
}

/**
 * What the checks of `spec.abortWhen` say for this generation: `check` (this leader's own, newest),
 * else the `AbortCheckHealthy` condition the status holds for this generation (a new leader picks up
 * a failing check where the last one left it), else nothing known.
 */
export function abortCheckOf(es: EchoScenario, check: AbortCheck | undefined): AbortCheck | undefined {
  if (check !== undefined) return check;
  const condition = es.status?.conditions?.find((c) => c.type === ABORT_CHECK_HEALTHY);
  if (condition === undefined || condition.observedGeneration !== (es.metadata.generation ?? 0))
    return undefined;
  return { healthy: condition.status === 'True', reason: condition.reason, message: condition.message };
}

/**
 * Where a valid EchoScenario stands in its lifecycle at `now`.
 * @param aborted an abort decided by this operator for this generation and not yet in the status.
 * @param check this operator's last word on whether `spec.abortWhen` can be evaluated (abort.ts).
 */
export function lifecycleOf(
  es: EchoScenario,
  now: Date,
  aborted?: { message: string },
  check?: AbortCheck,
): Lifecycle {
  const spec = es.spec as Record<string, unknown> | undefined;
  const generation = es.metadata.generation ?? 0;
  const status = es.status;
  if (spec?.['suspend'] === true) {
    return {
      stopped: 'Suspended',
      message: 'spec.suspend is true: removed from its pods until it is set back',
      startTime: undefined,
      expiresAt: undefined,
      expiresInMs: undefined,
    };
  }
  // The status of this generation keeps its start; a new generation starts a new run.
  const sameRun = status?.observedGeneration === generation && status.startTime !== undefined;
  const start = sameRun ? new Date(status.startTime!) : now;
  const startTime = timestamp(Number.isNaN(start.getTime()) ? now : start);
  const ms = durationMs(es);
  const expires = ms === undefined ? undefined : new Date(new Date(startTime).getTime() + ms);
  const expiresAt = expires === undefined ? undefined : timestamp(expires);
  const ready = status?.conditions?.find((c) => c.type === 'Ready');
  const abortedBefore = ready?.reason === 'Aborted' && ready.observedGeneration === generation;
  if (aborted !== undefined || abortedBefore) {
    return {
      stopped: 'Aborted',
      message: aborted?.message ?? ready!.message,
      startTime,
      expiresAt,
      expiresInMs: undefined,
    };
  }
  if (expires !== undefined && expires.getTime() <= now.getTime()) {
    return {
      stopped: 'Expired',
      message: `spec.duration ${String(spec?.['duration'])} ran out at ${expiresAt}: removed from its pods`,
      startTime,
      expiresAt,
      expiresInMs: undefined,
    };
  }
  // Fail closed: a steady-state check that cannot be made stops the experiment unless told to go on.
  const abortWhen = spec?.['abortWhen'] as AbortWhen | undefined;
  const health = abortWhen === undefined ? undefined : abortCheckOf(es, check);
  if (health !== undefined && !health.healthy && onErrorOf(abortWhen) === 'Suspend') {
    return {
      stopped: 'AbortCheckFailed',
      message: `${health.message}; spec.abortWhen.onError is Suspend: removed from its pods until a check succeeds`,
      startTime,
      expiresAt,
      expiresInMs: expires === undefined ? undefined : expires.getTime() - now.getTime(),
    };
  }
  return {
    stopped: undefined,
    message: '',
    startTime,
    expiresAt,
    expiresInMs: expires === undefined ? undefined : expires.getTime() - now.getTime(),
  };
}

/**
 * The status as a merge patch: `startTime` and `expiresAt` that `next` no longer has (suspended, or
 * a new run without a duration), and a `blastRadius` it no longer has (every pod chosen, or not
 * running), are set to null, which removes them.
 */
export function clearingRunTimes<S extends EchoScenarioStatus>(current: S | undefined, next: S): S {
  const patch: { [K in keyof S]?: S[K] | null } = { ...next };
  for (const key of ['startTime', 'expiresAt', 'blastRadius'] as const)
    if (next[key] === undefined && current?.[key] !== undefined) patch[key] = null;
  // A merge patch, whose null removes a field; the status type writeStatus takes has no null.
  return patch as S;
}

/** A Kubernetes `Time`: RFC 3339 in UTC, whole seconds. */
function timestamp(at: Date): string {
  return at.toISOString().replace(/\.\d+Z$/, 'Z');
}
