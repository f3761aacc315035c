/**
 * `@echo-chaos/obs`: observability for fastify services. A fastify plugin ({@link obsPlugin}) over
 * a core usable on its own ({@link createObs}): the `obs.*` configuration, the enforcement lever,
 * the cardinality firewall, the actuator routes and the snapshot. It depends on
 * `@opentelemetry/api` only; the application installs an OpenTelemetry SDK, or none.
 *
 * These exports are the public surface, covered by semver and listed on the API page
 * (docs/obs/api.md). `@echo-chaos/obs/internal` is what the other echo-chaos packages share with
 * obs; it is not for applications and not covered by semver (ADR 0043).
 * @packageDocumentation
 */

export { CounterBatch, HistogramBatch, type MeterBatchOptions } from './batch.ts';
export { type InstrumentCacheOptions, instrumentCache, type LruCacheLike, MAX_CACHES } from './cache.ts';
export {
  CardinalityFirewall,
  type CardinalityFirewallOptions,
  type CardinalityOffender,
  type OverflowListener,
} from './cardinality.ts';
export { type LoadObsConfigInput, loadObsConfig, type ResolvedObsConfig } from './config.ts';
export type { JsonValue } from './config-hash.ts';
export {
  type EnabledWhenFeature,
  type ObsConfig,
  type ObsConfigInput,
  PRESET_PROFILES,
  type PresetProfile,
} from './config-schema.ts';
export type { ConnectionDrain } from './connections.ts';
export type { CgroupVersion, ContainerMemoryReading } from './container-memory.ts';
export { instrumentPg, type PgModuleLike, type PgPoolLike, type PgQueryable, sqlShape } from './db.ts';
export type { RuntimeSnapshot } from './diagnostics.ts';
export {
  type DrainListener,
  type DrainOptions,
  type DrainPhase,
  type DrainResult,
  DrainState,
  type DrainStateOptions,
  type FlushHook,
  type FlushHookResult,
  type FlushOptions,
  type FlushReport,
} from './drain.ts';
export type { MatchableRequest } from './enabled-when.ts';
export {
  ENFORCEMENT_MODES,
  Enforcement,
  type EnforcementMode,
  type ModeChange,
  type ModeListener,
} from './enforcement.ts';
export {
  CodedError,
  type ConfigProblem,
  type ErrorDefinition,
  hasCodeOf,
  isObsError,
  OBS_ERRORS,
  ObsConfigError,
  ObsError,
  type ObsErrorCode,
} from './errors.ts';
export type { EventAttributes } from './events.ts';
export { problemErrorHandler } from './exception-handler.ts';
export {
  createFeatureFlagHook,
  type FeatureFlagHook,
  type FlagEvaluationDetailsLike,
  type FlagHookContextLike,
  MAX_FLAGS_PER_REQUEST,
} from './feature-flags.ts';
export { fingerprint } from './fingerprint.ts';
export {
  HEALTH_STATUSES,
  type HealthComponent,
  type HealthComponentOptions,
  type HealthReport,
  type HealthResult,
  type HealthStatus,
} from './health.ts';
export {
  type CronLike,
  type EveryOptions,
  type InstrumentedCron,
  instrumentCron,
  type JobHandle,
  type JobOptions,
  type JobScheduler,
} from './jobs.ts';
export { instrumentKafka } from './kafka.ts';
export type {
  KafkaBatchLike,
  KafkaConsumerLike,
  KafkaEachBatchPayloadLike,
  KafkaEachMessagePayloadLike,
  KafkaHeadersLike,
  KafkaHeaderValue,
  KafkaLike,
  KafkaMessageLike,
  KafkaProducerBatchLike,
  KafkaProducerLike,
  KafkaProducerRecordLike,
  KafkaRunConfigLike,
  KafkaSenderLike,
} from './kafka-records.ts';
export {
  activeTraceFields,
  type ObsFastifyOptions,
  type ObsLoggerOptionsInput,
  obsFastifyOptions,
  obsLoggerOptions,
  REQUEST_ID_LOG_LABEL,
} from './logging.ts';
export { maskSecrets, maskText } from './masking.ts';
export { type GuardRegistryOptions, guardMeterProvider, guardRegistry, registryGuard } from './meters.ts';
export { type CreateObsOptions, createObs, OBS_METRICS, type Obs, type ObsLogger } from './obs.ts';
export {
  type ObsDrainOptions,
  type ObsPluginOptions,
  type ObsRequestFeatureOptions,
  obsPlugin,
} from './plugin.ts';
export { instrumentPyroscope, type PyroscopeLike } from './profiling.ts';
export type { ReadinessCheck, ReadinessReport, ReadinessResult } from './readiness.ts';
export {
  bindContext,
  currentObsContext,
  currentTimeoutBudget,
  type ObsContext,
  type ObsPriority,
  PRIORITIES,
  type TimeoutBudget,
} from './request-context.ts';
export {
  type CockatielPolicyLike,
  type InstrumentBreakerOptions,
  type InstrumentPolicyOptions,
  instrumentBreaker,
  instrumentPolicy,
  MAX_INSTRUMENTED_RESILIENCE,
  type OpossumBreakerLike,
} from './resilience.ts';
export type { RetryAttempt, RetryOptions } from './retry-helper.ts';
export {
  createErrorUpgradeSpanProcessor,
  createObsSampler,
  type ObsSampler,
  type ObsSamplingDecision,
  type ObsSamplingResult,
  type ObsSamplingSettings,
  type ObsSpanProcessor,
  SAMPLING_DECISION,
  type UpgradableSpan,
} from './sampling.ts';
export {
  type PrometheusRuleResource,
  type SloObjective,
  type SloRule,
  type SloRuleGroup,
  sloPrometheusRule,
  sloPrometheusRuleYaml,
} from './slo.ts';
export type { FeatureSnapshot, ObsSnapshot } from './snapshot.ts';
export type { TimeoutBudgetSource } from './timeout-budget.ts';
export {
  type AxiosInstanceLike,
  type AxiosRequestConfigLike,
  createBudgetInterceptor,
  instrumentAxios,
  TimeoutBudgetExhaustedError,
  type UndiciDispatch,
  type UndiciDispatchOptions,
} from './timeout-budget-clients.ts';
