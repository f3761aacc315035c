/**
 * The obs core, independent of fastify: the resolved configuration, the enforcement lever, the
 * cardinality firewall, the obs meters, the snapshot and its contributed sections, readiness,
 * the drain state and the wide-event API. {@link obsPlugin} builds one per fastify app and wires
 * it into hooks and actuator routes; other obs features reach it as `app.obs`.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { MeterProvider } from '@opentelemetry/api';
import { Counter, Gauge, Registry } from 'prom-client';
import {
  type ContainerMemoryReading,
  containerMemoryJson,
  installContainerMemory,
} from '../features/container-memory.ts';
import { createDiagnostics, type RuntimeSnapshot } from '../features/diagnostics.ts';
import { createWideEvents, type EventAttributes } from '../features/events.ts';
import { type RetryAttempt, type RetryOptions, retryWithObs } from '../features/retry/retry-helper.ts';
import {
  type EveryOptions,
  installJobs,
  type JobHandle,
  type JobOptions,
  type Jobs,
} from '../integrations/jobs.ts';
import { CardinalityFirewall } from './cardinality.ts';
import { loadObsConfig, type ResolvedObsConfig } from './config/config.ts';
import type { JsonValue } from './config/config-hash.ts';
import {
  ENFORCEMENT_MODES,
  type EnabledWhenFeature,
  type ObsConfig,
  type ObsConfigInput,
} from './config/config-schema.ts';
import {
  type DrainOptions,
  type DrainResult,
  DrainState,
  drainSection,
  type FlushHook,
  type FlushOptions,
  type FlushReport,
  installDrain,
} from './drain.ts';
import { featureMatchers, MATCH_ALL, type MatchableRequest } from './enabled-when.ts';
import { Enforcement } from './enforcement.ts';
import { ObsError } from './errors.ts';
import {
  countsForReadiness,
  type HealthComponent,
  type HealthComponentOptions,
  type HealthReport,
  type HealthSource,
  isReadyStatus,
  runHealth,
} from './health.ts';
import { guardMeterProvider } from './meters.ts';
import { READINESS_TIMEOUT_MS, type ReadinessCheck, type ReadinessReport } from './readiness.ts';
import { featureSnapshots, type ObsSnapshot, readSections } from './snapshot.ts';

/** The logger obs writes to: pino, fastify's logger, or anything with these two methods. */
export interface ObsLogger {
  info(object: object, message?: string): void;
  warn(object: object, message?: string): void;
}

/** What {@link createObs} takes. */
export interface CreateObsOptions {
  /** Configuration in code; wins over every other source. */
  readonly config?: ObsConfigInput;
  /** The environment read for `OBS_*`, `OBS_CONFIG_FILE`, `OBS_PROFILE`, `OTEL_*`. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The registry obs meters go to; default a new one. Pass the app's so one scrape holds all. */
  readonly registry?: Registry;
  /** Default: warnings as JSON lines on stderr, nothing else. */
  readonly logger?: ObsLogger;
  /** The application's version, shown in the snapshot. Default `unknown`. */
  readonly version?: string;
  /** The application's name. Default `OTEL_SERVICE_NAME`, else `unknown_service:node`. */
  readonly serviceName?: string;
  /** An already resolved configuration (skips loading; `config` and `env` are then ignored). */
  readonly resolved?: ResolvedObsConfig;
  /**
   * How long one health component or readiness check may take, in milliseconds. Default
   * {@link READINESS_TIMEOUT_MS}.
   */
  readonly readinessTimeoutMs?: number;
}

/** The obs instance of an application, reachable as `app.obs`. */
export interface Obs {
  /** The resolved `obs.*` tree (frozen; durations in milliseconds). */
  readonly config: ObsConfig;
  /** The resolution: effective tree, hash, origins of each key, profile, file. */
  readonly resolved: ResolvedObsConfig;
  /** The enforcement lever: `get()`, `set(mode)`, `onChange(listener)`. */
  readonly mode: Enforcement;
  /** The cardinality firewall every meter's labels pass through. */
  readonly firewall: CardinalityFirewall;
  /** The registry holding the obs meters. */
  readonly registry: Registry;
  readonly logger: ObsLogger;
  readonly version: string;
  readonly serviceName: string;
  /** Where the process is in its shutdown (`idle`, `draining`, `drained`), and its in-flight requests. */
  readonly drainState: DrainState;
  /** Requests being served now (counted by the plugin's hooks). */
  readonly inFlight: number;
  /** Counts a request in; call {@link requestFinished} exactly once for it. */
  requestStarted(): void;
  requestFinished(): void;
  /**
   * Whether a feature is on and its `enabled-when` block admits this request; false for a planned
   * feature. Never throws.
   */
  isEnabledFor(feature: EnabledWhenFeature, request: MatchableRequest): boolean;
  /** The whole snapshot. */
  snapshot(): ObsSnapshot;
  /** The runtime figures alone. */
  runtime(): RuntimeSnapshot;
  /**
   * Adds a section to the snapshot, computed on each read. A section that throws shows its error.
   * @throws {ObsError} `OBS_ERR_DUPLICATE_NAME` when the name is taken.
   */
  addSnapshotSection(name: string, section: () => JsonValue): void;
  /**
   * Adds a readiness check, run on each {@link health} and {@link readiness} call: a health
   * component that is `UP` when the check passes and `DOWN` when it fails.
   * @throws {ObsError} `OBS_ERR_DUPLICATE_NAME` when the name is taken (by a check or a component).
   */
  addReadinessCheck(name: string, check: ReadinessCheck): void;
  /**
   * Adds a health component, run on each {@link health} and {@link readiness} call; it answers
   * `UP`, `DEGRADED`, `OUT_OF_SERVICE` or `DOWN` (one that throws or hangs past the bound is `DOWN`).
   * With `{ readiness: false }` it shows in {@link health} but does not count for {@link readiness}.
   * @throws {ObsError} `OBS_ERR_DUPLICATE_NAME` when the name is taken (by a check or a component).
   */
  addHealthComponent(name: string, component: HealthComponent, options?: HealthComponentOptions): void;
  /**
   * Runs every health component (readiness checks included) concurrently; the status is the worst
   * of theirs (`DOWN` > `OUT_OF_SERVICE` > `DEGRADED` > `UP`). Never rejects.
   */
  health(): Promise<HealthReport>;
  /**
   * Readiness follows health: ready while the components that count for readiness (all but those
   * added with `{ readiness: false }`) are `UP` or `DEGRADED`; each of them is a check, ok while it
   * is `UP` or `DEGRADED`. Never rejects.
   */
  readiness(): Promise<ReadinessReport>;
  /**
   * Emits a wide event: a span event on the active span (a no-op without an SDK), one increment of
   * `obs_events_total{event}` and one log line, as `obs.wide-events` allows. Never throws.
   */
  event(name: string, attributes?: EventAttributes): void;
  // --- drain and flush, container memory, meter guards ---
  /**
   * Starts draining (readiness fails) and waits until no request is in flight or `timeoutMs`
   * (default `obs.shutdown.drain-timeout`, 30s) passes. `delayMs` serves as usual first;
   * `closeListener` closes the listener and waits for the connections too (see {@link DrainOptions}).
   * Every call ends; never rejects. With `obs.shutdown.enabled=false` it does not wait and the state
   * does not move.
   */
  drain(options?: DrainOptions): Promise<DrainResult>;
  /**
   * Runs every flush hook at once, at most `timeoutMs` (default `obs.shutdown.flush-timeout`, 10s).
   * Never rejects. The plugin calls it when the app closes, when `obs.shutdown.enabled`.
   */
  flush(options?: FlushOptions): Promise<FlushReport>;
  /**
   * Adds a flush hook: pushes buffered telemetry out (`() => sdkMeterProvider.forceFlush()`).
   * @throws {ObsError} `OBS_ERR_DUPLICATE_NAME` when the name is taken.
   */
  addFlushHook(name: string, hook: FlushHook): void;
  /** Reads the container memory now; `undefined` when `obs.container-memory.enabled=false`. */
  containerMemory(): ContainerMemoryReading | undefined;
  /**
   * An OpenTelemetry `MeterProvider` whose instruments' attributes pass this obs's firewall (a
   * pass-through when `obs.cardinality.enabled=false`).
   */
  guardMeterProvider(provider: MeterProvider): MeterProvider;
  // --- end ---
  // --- context propagation (obs.context) ---
  /**
   * `fn` bound to the current context (request id, budget, retry depth, priority, tenant, trace
   * context): wherever and whenever it is called later, it runs in the context it was bound in.
   * For a callback handed to a pool, a queue or an emitter registered outside the request. With
   * `obs.context.enabled=false`, `fn` itself.
   */
  bind<F extends (...args: never[]) => unknown>(fn: F): F;
  /**
   * A submitter that carries its caller's context to the work it is given: each function argument
   * of a call is bound to the context current at that call (`obs.wrap(queue.push.bind(queue))`,
   * `obs.wrap(setImmediate)`), the rest pass as they are. With `obs.context.enabled=false`,
   * `submit` itself.
   */
  wrap<F extends (...args: never[]) => unknown>(submit: F): F;
  // --- end ---
  // --- retry amplification (obs.retry) ---
  /**
   * Calls `fn(attempt, signal)` until it fulfils, at most `options.attempts` times (default 3, at
   * most 10), with exponential backoff (default 50 ms doubling, at most 1000 ms). Attempt 0 runs in
   * the current context; attempt n runs with the retry depth raised by n (request context and
   * baggage `obs.retry.depth`), so its outbound calls carry `Obs-Retry-Depth` + n. Stops early on an
   * error `retryOn` refuses (default: all but `OBS_ERR_TIMEOUT_BUDGET_EXHAUSTED`), on
   * `options.signal`'s abort, or when the request's timeout budget leaves `minimum-budget` or less
   * after the next delay; it then rejects with the last attempt's error. With
   * `obs.retry.enabled=false` it retries the same and stamps nothing.
   * A bad option (out of bounds, of the wrong type or unknown) rejects with `ObsError`
   * `OBS_ERR_INVALID_RETRY_OPTION` before any attempt.
   */
  retry<T>(fn: RetryAttempt<T>, options?: RetryOptions): Promise<T>;
  // --- end ---
  // --- background jobs (obs.jobs) ---
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
   * @throws {ObsError} `OBS_ERR_INVALID_JOB` as {@link job}, or on an interval that is not an integer
   *   from 1 to 2147483647.
   */
  every(name: string, intervalMs: number, fn: () => unknown, options?: EveryOptions): JobHandle;
  // --- end ---
  /** Stops the event-loop monitor. */
  close(): void;
}

const STDERR_LOGGER: ObsLogger = {
  info() {},
  warn(object, message) {
    process.stderr.write(`${JSON.stringify({ level: 'warn', ...object, msg: message })}\n`);
  },
};

/** Names of the obs meters. */
export const OBS_METRICS = {
  configInfo: 'obs_config_info',
  inFlight: 'obs_requests_in_flight',
  cardinalityOverflow: 'obs_cardinality_overflow_total',
  enforcementMode: 'obs_enforcement_mode',
  events: 'obs_events_total',
} as const;

/**
 * Builds the obs core: resolves the configuration (unless given), creates the lever, the
 * firewall and the obs meters, and logs the configuration warnings once.
 * @throws {ObsConfigError} `OBS_ERR_CONFIG` when the configuration is invalid.
 */
export function createObs(options: CreateObsOptions = {}): Obs {
  const env = options.env ?? process.env;
  const resolved = options.resolved ?? loadObsConfig({ env, options: options.config });
  const config = resolved.config;
  const logger = options.logger ?? STDERR_LOGGER;
  for (const warning of resolved.warnings) logger.warn({ obs: 'config' }, warning);

  const registry = options.registry ?? new Registry();
  const readinessTimeoutMs = options.readinessTimeoutMs ?? READINESS_TIMEOUT_MS;
  const mode = new Enforcement(config.enforcement.mode);
  const drainState = new DrainState({
    drainTimeoutMs: config.shutdown['drain-timeout'],
    flushTimeoutMs: config.shutdown['flush-timeout'],
  });
  const startedAt = new Date();

  const overflow = new Counter({
    name: OBS_METRICS.cardinalityOverflow,
    help: 'Label values past the cardinality cap, by meter and label (rewritten in ENFORCING, let through in DRY_RUN)',
    labelNames: ['meter', 'tag_key'],
    registers: [registry],
  });
  const cardinality = config.cardinality;
  const firewall = new CardinalityFirewall({
    enabled: cardinality.enabled,
    maxValuesPerTag: cardinality['max-tag-values-per-meter'],
    overflowValue: cardinality['overflow-value'],
    meterPrefixesToProtect: cardinality['meter-prefixes-to-protect'],
    exemptMeterPrefixes: cardinality['exempt-meter-prefixes'],
    mode: () => mode.get(),
    onOverflow: (meter, tagKey) => overflow.inc({ meter, tag_key: tagKey }),
  });

  if (config['config-drift'].enabled) {
    new Gauge({
      name: OBS_METRICS.configInfo,
      help: 'Hash (SHA-256) of the resolved obs configuration; more than one value across a fleet is drift',
      labelNames: ['hash'],
      registers: [registry],
    }).set({ hash: resolved.hash }, 1);
  }
  new Gauge({
    name: OBS_METRICS.inFlight,
    help: 'HTTP requests being served',
    registers: [registry],
    collect() {
      this.set(drainState.inFlight);
    },
  });
  new Gauge({
    name: OBS_METRICS.enforcementMode,
    help: 'The enforcement mode of the process: 1 for the current mode, 0 for the other',
    labelNames: ['mode'],
    registers: [registry],
    collect() {
      for (const m of ENFORCEMENT_MODES) this.set({ mode: m }, m === mode.get() ? 1 : 0);
    },
  });
  // --- wide events (events.ts): a counter now, nothing else until obs.event is called ---
  const wideEvents = createWideEvents({ config, firewall, registry, logger });
  // --- end ---

  mode.onChange(({ previous, current }) => {
    logger.warn(
      { obs: 'enforcement', previous, current },
      `obs enforcement mode changed from ${previous} to ${current}`,
    );
  });

  // --- diagnostics: the runtime section (container memory is read once its feature is installed) ---
  let readContainerMemory: (() => ContainerMemoryReading) | undefined;
  const diagnostics = createDiagnostics({
    enabled: config.diagnostics.enabled,
    topOffenders: config.diagnostics['top-offenders'],
    eventLoopResolutionMs: config.diagnostics['event-loop-resolution'],
    firewall,
    drain: drainState,
    containerMemory: () => readContainerMemory?.(),
    startedAt,
  });
  const runtime = (): RuntimeSnapshot => diagnostics.runtime();
  // --- end ---

  const matchers = featureMatchers(config);

  const sections = new Map<string, () => JsonValue>();
  const healthSources = new Map<string, HealthSource>();

  const addNamed = <T>(kind: string, map: Map<string, T>, name: string, value: T): void => {
    if (map.has(name)) throw new ObsError('OBS_ERR_DUPLICATE_NAME', [kind, JSON.stringify(name)]);
    map.set(name, value);
  };

  let jobs: Jobs;
  const obs: Obs = {
    config,
    resolved,
    mode,
    firewall,
    registry,
    logger,
    version: options.version ?? 'unknown',
    serviceName: options.serviceName ?? env.OTEL_SERVICE_NAME ?? 'unknown_service:node',
    drainState,
    get inFlight() {
      return drainState.inFlight;
    },
    requestStarted() {
      drainState.requestStarted();
    },
    requestFinished() {
      drainState.requestFinished();
    },
    isEnabledFor(feature, request) {
      if ((config[feature] as { readonly enabled: boolean }).enabled !== true) return false;
      try {
        return (matchers.get(feature) ?? MATCH_ALL)(request);
      } catch {
        return true;
      }
    },
    runtime,
    snapshot() {
      return {
        service: obs.serviceName,
        version: obs.version,
        mode: mode.get(),
        config_hash: resolved.hash,
        profile: {
          name: resolved.profile.name ?? null,
          applied: resolved.profile.applied,
          auto_apply: config['profile-presets']['auto-apply'],
        },
        config_file: resolved.configFile ?? null,
        generated_at: new Date().toISOString(),
        features: featureSnapshots(resolved),
        runtime: runtime(),
        sections: readSections(sections),
      };
    },
    addSnapshotSection(name, section) {
      addNamed('snapshot section', sections, name, section);
    },
    addReadinessCheck(name, check) {
      addNamed('readiness check', healthSources, name, { kind: 'readiness', check });
    },
    addHealthComponent(name, component, componentOptions) {
      addNamed('health component', healthSources, name, {
        kind: 'component',
        component,
        readiness: componentOptions?.readiness !== false,
      });
    },
    health() {
      return runHealth(healthSources, readinessTimeoutMs);
    },
    async readiness() {
      const counted = new Map([...healthSources].filter(([, source]) => countsForReadiness(source)));
      const report = await runHealth(counted, readinessTimeoutMs);
      const checks = Object.fromEntries(
        Object.entries(report.components).map(([name, c]) => {
          const ok = isReadyStatus(c.status);
          return [name, c.details === undefined ? { ok } : { ok, detail: c.details }] as const;
        }),
      );
      return { ready: isReadyStatus(report.status), checks };
    },
    event(name, attributes) {
      wideEvents.emit(name, attributes);
    },
    // --- drain and flush, container memory, meter guards ---
    async drain(drainOptions) {
      if (!config.shutdown.enabled)
        return { completed: drainState.inFlight === 0, durationMs: 0, dropped: 0 };
      return drainState.drain(drainOptions);
    },
    flush(flushOptions) {
      return drainState.flush(flushOptions);
    },
    addFlushHook(name, hook) {
      drainState.addFlushHook(name, hook);
    },
    containerMemory() {
      return readContainerMemory?.();
    },
    guardMeterProvider(provider) {
      return firewall.enabled ? guardMeterProvider(provider, firewall) : provider;
    },
    // --- end ---
    // --- context propagation ---
    bind(fn) {
      return config.context.enabled ? AsyncLocalStorage.bind(fn) : fn;
    },
    wrap(submit) {
      if (!config.context.enabled) return submit;
      return function (this: unknown, ...args: unknown[]) {
        const bound = args.map((arg) =>
          typeof arg === 'function' ? AsyncLocalStorage.bind(arg as (...a: unknown[]) => unknown) : arg,
        );
        return (submit as unknown as (...a: unknown[]) => unknown).apply(this, bound);
      } as unknown as typeof submit;
    },
    // --- end ---
    retry(fn, retryOptions) {
      return retryWithObs(obs, fn, retryOptions);
    },
    job(name, fn, jobOptions) {
      return jobs.job(name, fn, jobOptions);
    },
    every(name, intervalMs, fn, everyOptions) {
      return jobs.every(name, intervalMs, fn, everyOptions);
    },
    close() {
      diagnostics.close();
    },
  };
  // --- features installed by their own modules: drain, container memory, diagnostics ---
  // Each shows in the snapshot's sections as `enabled`, its effective `config` and its live state.
  const section = (key: 'shutdown' | 'container-memory' | 'diagnostics', live: () => object) => () => ({
    enabled: config[key].enabled,
    config: resolved.effective[key] ?? null,
    ...live(),
  });
  if (config.shutdown.enabled) installDrain(obs);
  obs.addSnapshotSection(
    'shutdown',
    section('shutdown', () => drainSection(drainState)),
  );
  readContainerMemory = installContainerMemory(obs, config['container-memory']);
  obs.addSnapshotSection(
    'container-memory',
    section('container-memory', () => {
      const reading = readContainerMemory?.();
      return { reading: reading === undefined ? null : containerMemoryJson(reading) };
    }),
  );
  obs.addSnapshotSection(
    'diagnostics',
    section('diagnostics', () => ({})),
  );
  // --- end ---
  jobs = installJobs(obs);
  return obs;
}
