/**
 * Background-job observability (`obs.jobs`): `obs.job(name, fn)` wraps a scheduled function so that
 * each run is counted by outcome (`obs_jobs_executions_total{job,outcome}`), timed
 * (`obs_jobs_duration_seconds{job}`) and shown while it runs (`obs_jobs_in_flight{job}`), and runs in
 * a fresh request-like context of its own (request id `job:<name>:<uuid>`, no timeout budget, retry
 * depth 0, priority `background`): its log lines carry that request id and the job's name, and its
 * outbound calls carry the request id and the context's headers. `obs.every(name, intervalMs, fn)`
 * runs a job on a timer and {@link instrumentCron} on `node-cron`; both skip a tick while the last
 * run is still going (`outcome=skipped`).
 *
 * Health: the readiness check `jobs` fails (and the `jobs` component is `DOWN`) when one job has not
 * succeeded within `failure-grace-period`; a job that never succeeded counts from its registration.
 *
 * This module is imported by `obs.ts`: it reaches the obs instance through the structural
 * {@link JobsOwner}, never through `obs.ts` (no import cycle). The plugin hands it the context's
 * propagation ({@link useJobsPropagation}).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { JsonValue } from '../core/config/config-hash.ts';
import type { ObsConfig } from '../core/config/config-schema.ts';
import { ObsError } from '../core/errors.ts';
import {
  type ContextPropagation,
  type ObsPriority,
  type RequestContext,
  runInRequestContext,
} from '../features/request-context/request-context.ts';

const FEATURE = 'jobs';

/** Names of the job meters. */
export const JOBS_METRICS = {
  executions: 'obs_jobs_executions_total',
  duration: 'obs_jobs_duration_seconds',
  inFlight: 'obs_jobs_in_flight',
} as const;

/** The buckets of `obs_jobs_duration_seconds`, seconds: 5 ms to one hour. */
export const JOB_DURATION_BUCKETS = [
  0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600,
] as const;

/** What a job name may be: 1 to 64 of `A-Z a-z 0-9 _ . : -`. */
export const JOB_NAME_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;
/** The most distinct jobs one obs instance tracks; one more is refused at registration. */
export const MAX_JOBS = 200;
/** A run's error is cut to this many characters in the health detail and the snapshot. */
export const MAX_JOB_ERROR_LENGTH = 200;
/** The longest interval of `obs.every`, milliseconds (the largest a Node timer takes). */
export const MAX_JOB_INTERVAL_MS = 2_147_483_647;

/** How one run ended: `skipped` when a tick came while the previous run was still going. */
export type JobOutcome = 'success' | 'failure' | 'skipped';

/** Options of `obs.job`. */
export interface JobOptions {
  /**
   * The clock of the job's health (registration, last success and failure), epoch milliseconds;
   * for tests. Default `Date.now`. The first registration of a name sets it.
   */
  readonly nowMs?: () => number;
  /** The priority of the job's context (when `obs.priority` is on). Default `background`. */
  readonly priority?: ObsPriority;
  /**
   * How long this job may go without a success before its health is `DOWN`, milliseconds (1000 to
   * 30 days). Default `obs.jobs.failure-grace-period`. Make it longer than the job's schedule: a
   * nightly job needs more than a day. The first registration of a name sets it.
   */
  readonly failureGracePeriodMs?: number;
}

/** The longest per-job grace period: 30 days. */
export const MAX_JOB_GRACE_PERIOD_MS = 30 * 24 * 3_600_000;

/** What `obs.every` schedules with; default the global `setInterval` and `clearInterval`. */
export interface JobScheduler {
  setInterval(tick: () => void, intervalMs: number): unknown;
  clearInterval(handle: unknown): void;
}

/** Options of `obs.every`. */
export interface EveryOptions extends JobOptions {
  /** Whether the timer lets the process exit (`timer.unref()`). Default false, as `setInterval`. */
  readonly unref?: boolean;
  /** Run once at once, then at each interval. Default false. */
  readonly runImmediately?: boolean;
  /** For tests: the timer functions. */
  readonly scheduler?: JobScheduler;
}

/** A job run on a timer by `obs.every`. */
export interface JobHandle {
  readonly name: string;
  /** Whether a run is going now. */
  readonly running: boolean;
  /** Stops the timer; a run in flight finishes. Idempotent. */
  stop(): void;
}

/** The part of an obs instance this module uses (structural: `obs.ts` imports this module). */
export interface JobsOwner {
  readonly config: Pick<ObsConfig, 'jobs' | 'retry' | 'priority' | 'context'>;
  readonly resolved: { readonly effective: Readonly<Record<string, JsonValue | undefined>> };
  readonly registry: Registry;
  readonly logger: { warn(object: object, message?: string): void };
  addSnapshotSection(name: string, section: () => JsonValue): void;
  addHealthComponent(
    name: string,
    component: () => { status: 'UP' | 'DOWN'; details?: JsonValue },
    options?: { readiness?: boolean },
  ): void;
}

/** One job's live figures. */
interface JobRecord {
  readonly name: string;
  readonly nowMs: () => number;
  readonly priority: ObsPriority;
  /** Undefined: `obs.jobs.failure-grace-period`. */
  readonly gracePeriodMs?: number;
  readonly registeredAtMs: number;
  runs: number;
  successes: number;
  failures: number;
  skipped: number;
  inFlight: number;
  outboundCalls: number;
  lastSuccessMs?: number;
  lastFailureMs?: number;
  lastError?: string;
}

interface JobMeters {
  readonly executions: Counter<'job' | 'outcome'>;
  readonly duration: Histogram<'job'>;
  readonly inFlight: Gauge<'job'>;
}

/** The jobs feature's part of `app.obs`. */
export interface JobsApi {
  /**
   * `fn` as the background job `name`: same arguments, same return (sync or async), same errors.
   * Each call is a run counted in `obs_jobs_executions_total{job,outcome}` (success, failure),
   * timed in `obs_jobs_duration_seconds{job}` and shown in `obs_jobs_in_flight{job}`, and runs in a
   * context of its own (request id `job:<name>:<uuid>` on its log lines and outbound calls, no
   * timeout budget, priority `background`). A failure is logged with the job's name. The health
   * check `jobs` fails when a job has not succeeded within `obs.jobs.failure-grace-period`. With
   * `obs.jobs.enabled=false`, `fn` itself.
   * @throws {ObsError} `OBS_ERR_INVALID_JOB` when `name` is not 1 to 64 of `[A-Za-z0-9_.:-]`, `fn`
   *   is not a function, or 200 other jobs are tracked.
   */
  job<F extends (...args: never[]) => unknown>(name: string, fn: F, options?: JobOptions): F;
  /**
   * Runs the job `name` every `intervalMs` milliseconds (`setInterval`); a tick that comes while
   * the previous run is still going is skipped (`outcome=skipped`). A run's error is logged and
   * counted, never thrown. `stop()` ends the timer.
   * @throws {ObsError} `OBS_ERR_INVALID_JOB` as {@link JobsApi.job}, or on an interval that is not an
   *   integer from 1 to 2147483647.
   */
  every(name: string, intervalMs: number, fn: () => unknown, options?: EveryOptions): JobHandle;
}

/** The job context's marker in `state.jobs`: the log lines of the run name their job. */
export interface JobContextState {
  readonly job: string;
}

const installed = new WeakMap<object, JobsImpl>();

function invalid(what: string, reason: string): ObsError {
  return new ObsError('OBS_ERR_INVALID_JOB', [what, reason]);
}

/** Checks a job name: 1 to 64 of `[A-Za-z0-9_.:-]`. */
export function isValidJobName(name: unknown): name is string {
  return typeof name === 'string' && JOB_NAME_PATTERN.test(name);
}

function errorText(error: unknown): string {
  try {
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return text.length > MAX_JOB_ERROR_LENGTH ? `${text.slice(0, MAX_JOB_ERROR_LENGTH - 1)}…` : text;
  } catch {
    return 'unprintable error';
  }
}

function iso(ms: number | undefined): string | null {
  if (ms === undefined) return null;
  try {
    return new Date(ms).toISOString();
  } catch {
    return null;
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

class JobsImpl implements JobsApi {
  readonly #owner: JobsOwner;
  readonly #records = new Map<string, JobRecord>();
  readonly #meters: JobMeters | undefined;
  #propagation: ContextPropagation | undefined;

  constructor(owner: JobsOwner) {
    this.#owner = owner;
    const config = owner.config.jobs;
    if (config.enabled) {
      this.#meters = {
        executions: new Counter({
          name: JOBS_METRICS.executions,
          help: 'Runs of background jobs, by job and outcome (success, failure, skipped: the previous run was still going)',
          labelNames: ['job', 'outcome'],
          registers: [owner.registry],
        }),
        duration: new Histogram({
          name: JOBS_METRICS.duration,
          help: 'How long background-job runs took, seconds, by job',
          labelNames: ['job'],
          buckets: [...JOB_DURATION_BUCKETS],
          registers: [owner.registry],
        }),
        inFlight: new Gauge({
          name: JOBS_METRICS.inFlight,
          help: 'Background-job runs going now, by job',
          labelNames: ['job'],
          registers: [owner.registry],
        }),
      };
    }
    owner.addSnapshotSection(FEATURE, () => ({
      enabled: config.enabled,
      config: owner.resolved.effective[FEATURE] ?? null,
      health_indicator: config.enabled && config['health-indicator-enabled'],
      tracked: this.#records.size,
      max_jobs: MAX_JOBS,
      jobs: Object.fromEntries(
        [...this.#records.values()].map((r) => [
          r.name,
          {
            runs: r.runs,
            successes: r.successes,
            failures: r.failures,
            skipped: r.skipped,
            in_flight: r.inFlight,
            outbound_calls: r.outboundCalls,
            registered_at: iso(r.registeredAtMs),
            last_success: iso(r.lastSuccessMs),
            last_failure: iso(r.lastFailureMs),
            last_error: r.lastError ?? null,
            status: this.#status(r),
          },
        ]),
      ),
    }));
  }

  set propagation(propagation: ContextPropagation) {
    this.#propagation = propagation;
  }

  /** `UP`, or `DOWN` when the last success (else the registration) is older than the grace period. */
  #status(record: JobRecord): 'UP' | 'DOWN' {
    const since = record.lastSuccessMs ?? record.registeredAtMs;
    const grace = record.gracePeriodMs ?? this.#owner.config.jobs['failure-grace-period'];
    return record.nowMs() - since > grace ? 'DOWN' : 'UP';
  }

  #health(): { ok: boolean; detail: JsonValue } {
    let ok = true;
    const detail: Record<string, JsonValue> = {};
    for (const record of this.#records.values()) {
      const status = this.#status(record);
      if (status === 'DOWN') ok = false;
      detail[record.name] = {
        status,
        last_success: iso(record.lastSuccessMs),
        last_failure: iso(record.lastFailureMs),
        ...(record.lastError === undefined ? {} : { last_error: record.lastError }),
      };
    }
    return { ok, detail };
  }

  /** The record of `name`, made on its first registration. Throws on a bad name or too many jobs. */
  #register(name: string, options: JobOptions | undefined): JobRecord | undefined {
    if (!isValidJobName(name)) {
      throw invalid(
        `name ${JSON.stringify(String(name)).slice(0, 80)}`,
        'expected 1 to 64 of A-Z a-z 0-9 _ . : -',
      );
    }
    if (options?.nowMs !== undefined && typeof options.nowMs !== 'function') {
      throw invalid(`${name} option nowMs`, 'expected a function');
    }
    const grace = options?.failureGracePeriodMs;
    if (
      grace !== undefined &&
      (typeof grace !== 'number' ||
        !Number.isInteger(grace) ||
        grace < 1000 ||
        grace > MAX_JOB_GRACE_PERIOD_MS)
    ) {
      throw invalid(
        `${name} option failureGracePeriodMs ${JSON.stringify(grace)}`,
        `expected whole milliseconds from 1000 to ${MAX_JOB_GRACE_PERIOD_MS} (30 days)`,
      );
    }
    if (!this.#owner.config.jobs.enabled) return undefined;
    const known = this.#records.get(name);
    if (known !== undefined) return known;
    if (this.#records.size >= MAX_JOBS) {
      throw invalid(name, `at most ${MAX_JOBS} distinct jobs are tracked`);
    }
    const nowMs = options?.nowMs ?? Date.now;
    const record: JobRecord = {
      name,
      nowMs,
      priority: options?.priority ?? 'background',
      ...(grace === undefined ? {} : { gracePeriodMs: grace }),
      registeredAtMs: nowMs(),
      runs: 0,
      successes: 0,
      failures: 0,
      skipped: 0,
      inFlight: 0,
      outboundCalls: 0,
    };
    this.#records.set(name, record);
    const config = this.#owner.config.jobs;
    if (this.#records.size === 1 && config['health-indicator-enabled']) {
      // Added with the first job: an app without jobs has no jobs component. A job that stopped
      // succeeding shows on /actuator/health; it does not take the instance out of traffic.
      this.#owner.addHealthComponent(
        FEATURE,
        () => {
          const { ok, detail } = this.#health();
          return { status: ok ? 'UP' : 'DOWN', details: detail };
        },
        { readiness: false },
      );
    }
    try {
      // The series exist from the start: an alert on a missing success rate needs its zero.
      for (const outcome of ['success', 'failure', 'skipped'] as const) {
        this.#meters?.executions.inc({ job: name, outcome }, 0);
      }
      this.#meters?.inFlight.set({ job: name }, 0);
    } catch (error) {
      this.#failed(name, error);
    }
    return record;
  }

  #failed(job: string, error: unknown): void {
    try {
      this.#owner.logger.warn(
        { obs: FEATURE, job, err: String(error) },
        `obs could not record a run of job ${job}; the job goes on`,
      );
    } catch {
      // nothing more to do
    }
  }

  #context(record: JobRecord): RequestContext {
    const config = this.#owner.config;
    const shared = this.#propagation;
    // The request's propagation (header names, fan-out's per-call hook) read now, plus the request
    // id on each outbound call and the job's own count of them.
    const propagation: ContextPropagation = {
      ...shared,
      failed:
        shared?.failed ?? ((transport, error) => this.#failed(record.name, `${transport}: ${String(error)}`)),
      requestIdHeader: config.context['request-id-header'],
      outbound(context, transport, host) {
        record.outboundCalls += 1;
        shared?.outbound?.(context, transport, host);
      },
    };
    return {
      requestId: `job:${record.name}:${randomUUID()}`,
      ...(config.retry.enabled ? { retryDepth: 0 } : {}),
      ...(config.priority.enabled ? { priority: record.priority } : {}),
      state: { [FEATURE]: { job: record.name } satisfies JobContextState },
      propagation,
    };
  }

  #started(record: JobRecord): number {
    try {
      record.runs += 1;
      record.inFlight += 1;
      this.#meters?.inFlight.inc({ job: record.name });
    } catch (error) {
      this.#failed(record.name, error);
    }
    return performance.now();
  }

  #finished(record: JobRecord, startedAt: number, failed: boolean, error: unknown, requestId: string): void {
    try {
      const seconds = (performance.now() - startedAt) / 1000;
      record.inFlight -= 1;
      this.#meters?.inFlight.dec({ job: record.name });
      this.#meters?.duration.observe({ job: record.name }, seconds);
      this.#meters?.executions.inc({ job: record.name, outcome: failed ? 'failure' : 'success' });
      if (failed) {
        record.failures += 1;
        record.lastFailureMs = record.nowMs();
        record.lastError = errorText(error);
        this.#owner.logger.warn(
          { obs: FEATURE, job: record.name, request_id: requestId, err: record.lastError },
          `job ${record.name} failed`,
        );
      } else {
        record.successes += 1;
        record.lastSuccessMs = record.nowMs();
      }
    } catch (failure) {
      this.#failed(record.name, failure);
    }
  }

  /** Counts a tick skipped because the previous run was still going. */
  skipped(name: string): void {
    const record = this.#records.get(name);
    if (record === undefined) return;
    try {
      record.skipped += 1;
      this.#meters?.executions.inc({ job: name, outcome: 'skipped' });
    } catch (error) {
      this.#failed(name, error);
    }
  }

  /** Runs `call` as one run of `record`: counted, timed, in the job's own context. */
  #run<T>(record: JobRecord, call: () => T): T {
    let context: RequestContext;
    try {
      context = this.#context(record);
    } catch (error) {
      this.#failed(record.name, error);
      return call();
    }
    const startedAt = this.#started(record);
    let result: T;
    try {
      result = runInRequestContext(context, call);
    } catch (error) {
      this.#finished(record, startedAt, true, error, context.requestId);
      throw error;
    }
    if (isThenable(result)) {
      try {
        result.then(
          () => this.#finished(record, startedAt, false, undefined, context.requestId),
          (error: unknown) => this.#finished(record, startedAt, true, error, context.requestId),
        );
      } catch (error) {
        this.#finished(record, startedAt, true, error, context.requestId);
      }
      return result;
    }
    this.#finished(record, startedAt, false, undefined, context.requestId);
    return result;
  }

  job<F extends (...args: never[]) => unknown>(name: string, fn: F, options?: JobOptions): F {
    if (typeof fn !== 'function') throw invalid(String(name), 'the job is not a function');
    const record = this.#register(name, options);
    if (record === undefined) return fn;
    const run = this.#run.bind(this);
    const wrapped = function (this: unknown, ...args: unknown[]): unknown {
      return run(record, () => Reflect.apply(fn, this, args));
    };
    Object.defineProperty(wrapped, 'name', { value: fn.name, configurable: true });
    // It takes what `fn` takes and returns what it returns (the run only counts and times it), so it
    // is an `F`; TypeScript cannot see that through a rest-argument wrapper.
    return wrapped as unknown as F;
  }

  /**
   * A run of `fn` that never overlaps the one before: while that one is going, a call is skipped
   * (counted `outcome=skipped`) and resolves at once. Never rejects: the run's error was logged.
   */
  exclusive(name: string, fn: (...args: never[]) => unknown, options?: JobOptions) {
    const wrapped = this.job(name, fn, options) as (...args: unknown[]) => unknown;
    let running = false;
    const tick = async (...args: unknown[]): Promise<void> => {
      if (running) {
        this.skipped(name);
        return;
      }
      running = true;
      try {
        await wrapped(...args);
      } catch {
        // counted and logged by the wrapper
      } finally {
        running = false;
      }
    };
    return { tick, running: () => running };
  }

  every(name: string, intervalMs: number, fn: () => unknown, options: EveryOptions = {}): JobHandle {
    if (!Number.isInteger(intervalMs) || intervalMs < 1 || intervalMs > MAX_JOB_INTERVAL_MS) {
      throw invalid(
        `${String(name)} interval ${String(intervalMs)}`,
        `expected an integer from 1 to ${MAX_JOB_INTERVAL_MS} ms`,
      );
    }
    const { tick, running } = this.exclusive(name, fn, options);
    const scheduler: JobScheduler = options.scheduler ?? {
      setInterval: (callback, ms) => setInterval(callback, ms),
      clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
    };
    const timer = scheduler.setInterval(() => void tick(), intervalMs);
    if (options.unref === true) (timer as { unref?: () => void } | undefined)?.unref?.();
    if (options.runImmediately === true) void tick();
    let stopped = false;
    return {
      name,
      get running() {
        return running();
      },
      stop() {
        if (stopped) return;
        stopped = true;
        scheduler.clearInterval(timer);
      },
    };
  }
}

/**
 * Installs the jobs of an obs instance (meters, snapshot section, readiness check; once per owner)
 * and answers its API.
 */
export function installJobs(owner: JobsOwner): JobsApi {
  let jobs = installed.get(owner);
  if (jobs === undefined) {
    jobs = new JobsImpl(owner);
    installed.set(owner, jobs);
  }
  const impl = jobs;
  return {
    job: (name, fn, options) => impl.job(name, fn, options),
    every: (name, intervalMs, fn, options) => impl.every(name, intervalMs, fn, options),
  };
}

function jobsOf(owner: object): JobsImpl {
  const jobs = installed.get(owner);
  if (jobs === undefined) throw invalid('owner', 'not an obs instance (createObs or app.obs)');
  return jobs;
}

/**
 * Hands the request context's propagation of an obs instance to its jobs, so that a job's outbound
 * calls carry the context's headers and reach its per-call hooks. The plugin calls it.
 */
export function useJobsPropagation(owner: object, propagation: ContextPropagation): void {
  const jobs = installed.get(owner);
  if (jobs !== undefined) jobs.propagation = propagation;
}

/** The job a context runs for, when it is a job's context. */
export function jobOfContext(context: Pick<RequestContext, 'state'> | undefined): string | undefined {
  const state = context?.state?.[FEATURE] as JobContextState | undefined;
  return typeof state?.job === 'string' ? state.job : undefined;
}

// ---------------------------------------------------------------------------------------------
// node-cron

/** The part of the `node-cron` module obs uses (`import cron from 'node-cron'`). */
export interface CronLike<Task, Options> {
  schedule(expression: string, fn: (context: unknown) => unknown, options?: Options): Task;
}

/** {@link instrumentCron}'s answer: node-cron's `schedule`, with a job name first. */
export interface InstrumentedCron<Task, Options> {
  /**
   * Schedules `fn` as the job `name` (`cron.schedule(expression, wrapped, options)`), returning
   * node-cron's task. A tick that comes while the previous run is still going is skipped and counted
   * `outcome=skipped`. Throws `OBS_ERR_INVALID_JOB` on a bad name.
   */
  schedule(
    name: string,
    expression: string,
    fn: (...args: never[]) => unknown,
    options?: Options & JobOptions,
  ): Task;
}

/**
 * Background-job observability for `node-cron`: `instrumentCron(cron, app.obs).schedule('cleanup',
 * '0 * * * *', cleanup)`. Each run is an `obs.job` run (metrics, context, health). The module is
 * typed by its shape: obs does not depend on `node-cron`.
 */
export function instrumentCron<Task, Options extends object>(
  cron: CronLike<Task, Options>,
  obs: object,
): InstrumentedCron<Task, Options> {
  const jobs = jobsOf(obs);
  return {
    schedule(name, expression, fn, options) {
      const { nowMs, priority, failureGracePeriodMs, ...cronOptions } = (options ?? {}) as Options &
        JobOptions;
      const jobOptions: JobOptions = {
        ...(nowMs === undefined ? {} : { nowMs }),
        ...(priority === undefined ? {} : { priority }),
        ...(failureGracePeriodMs === undefined ? {} : { failureGracePeriodMs }),
      };
      const { tick } = jobs.exclusive(name, fn, jobOptions);
      return cron.schedule(expression, tick as (context: unknown) => unknown, cronOptions as Options);
    },
  };
}
