/**
 * The obs core, independent of fastify and of every feature (docs/adr/0044-obs-feature-plugins.md):
 * the resolved configuration, the enforcement lever, the cardinality firewall over the registry, the
 * obs meters, the drain, the snapshot with its contributed sections, and health and readiness with
 * their contributed checks. Features build on it and nothing else: each takes an {@link ObsCore}
 * and contributes sections, checks, meters and, for some, an API that `createObs` (`../obs.ts`)
 * puts beside the core's members. This module imports no feature.
 */
import type { MeterProvider } from '@opentelemetry/api';
import { Counter, Gauge, Registry } from 'prom-client';
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
import {
  dryRunSnapshot,
  featureSnapshots,
  type ObsSnapshot,
  type RuntimeSnapshot,
  readSections,
} from './snapshot.ts';

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

/**
 * The obs core every feature builds on: configuration, lever, firewall, registry, logger, the drain,
 * the snapshot and health seams. `app.obs` is an `Obs`: this core and the features' APIs (`../obs.ts`).
 */
export interface ObsCore {
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
  /** Where obs writes its own lines (the app's logger under the plugin). */
  readonly logger: ObsLogger;
  /** The application's version, as the snapshot shows it. */
  readonly version: string;
  /** The application's name, as the snapshot shows it. */
  readonly serviceName: string;
  /** Where the process is in its shutdown (`idle`, `draining`, `drained`), and its in-flight requests. */
  readonly drainState: DrainState;
  /** Requests being served now (counted by the plugin's hooks). */
  readonly inFlight: number;
  /**
   * Whether a feature is on and its `enabled-when` block admits this request; false for a planned
   * feature. Never throws.
   */
  isEnabledFor(feature: EnabledWhenFeature, request: MatchableRequest): boolean;
  /** The whole snapshot. */
  snapshot(): ObsSnapshot;
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
  // --- drain and flush, meter guards ---
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
  /**
   * An OpenTelemetry `MeterProvider` whose instruments' attributes pass this obs's firewall (a
   * pass-through when `obs.cardinality.enabled=false`).
   */
  guardMeterProvider(provider: MeterProvider): MeterProvider;
  /** Releases what the core holds (the close hook of its creator runs too). Idempotent. */
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

/** What the creator of a core gives it: the snapshot's runtime figures, and what to run on close. */
export interface ObsCoreSeams {
  /** The runtime section of the snapshot (the diagnostics feature's). */
  readonly runtime: () => RuntimeSnapshot;
  /** Runs on {@link ObsCore.close}. */
  readonly onClose?: () => void;
}

/**
 * Builds the obs core: resolves the configuration (unless given), creates the lever, the
 * firewall and the obs meters, installs the drain, and logs the configuration warnings once.
 * @throws {ObsConfigError} `OBS_ERR_CONFIG` when the configuration is invalid.
 */
export function createObsCore(options: CreateObsOptions, seams: ObsCoreSeams): ObsCore {
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

  mode.onChange(({ previous, current }) => {
    logger.warn(
      { obs: 'enforcement', previous, current },
      `obs enforcement mode changed from ${previous} to ${current}`,
    );
  });

  const matchers = featureMatchers(config);
  const sections = new Map<string, () => JsonValue>();
  const healthSources = new Map<string, HealthSource>();
  const addNamed = <T>(kind: string, map: Map<string, T>, name: string, value: T): void => {
    if (map.has(name)) throw new ObsError('OBS_ERR_DUPLICATE_NAME', [kind, JSON.stringify(name)]);
    map.set(name, value);
  };

  const core: ObsCore = {
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
    isEnabledFor(feature, request) {
      if ((config[feature] as { readonly enabled: boolean }).enabled !== true) return false;
      try {
        return (matchers.get(feature) ?? MATCH_ALL)(request);
      } catch {
        return true;
      }
    },
    snapshot() {
      return {
        service: core.serviceName,
        version: core.version,
        mode: mode.get(),
        dry_run: dryRunSnapshot(config, mode.get()),
        config_hash: resolved.hash,
        profile: {
          name: resolved.profile.name ?? null,
          applied: resolved.profile.applied,
          auto_apply: config['profile-presets']['auto-apply'],
        },
        config_file: resolved.configFile ?? null,
        generated_at: new Date().toISOString(),
        features: featureSnapshots(resolved),
        runtime: seams.runtime(),
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
    guardMeterProvider(provider) {
      return firewall.enabled ? guardMeterProvider(provider, firewall) : provider;
    },
    close() {
      seams.onClose?.();
    },
  };
  // The drain: its meters and health component, and its section of the snapshot.
  if (config.shutdown.enabled) installDrain(core);
  core.addSnapshotSection('shutdown', () => ({
    enabled: config.shutdown.enabled,
    config: resolved.effective.shutdown ?? null,
    ...drainSection(drainState),
  }));
  return core;
}
