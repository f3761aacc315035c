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

export { CounterBatch, HistogramBatch, type MeterBatchOptions } from './core/batch.ts';
export {
  CardinalityFirewall,
  type CardinalityFirewallOptions,
  type CardinalityOffender,
  type OverflowListener,
} from './core/cardinality.ts';
export { type LoadObsConfigInput, loadObsConfig, type ResolvedObsConfig } from './core/config/config.ts';
export type { JsonValue } from './core/config/config-hash.ts';
export {
  type EnabledWhenFeature,
  type ObsConfig,
  type ObsConfigInput,
  PRESET_PROFILES,
  type PresetProfile,
} from './core/config/config-schema.ts';
export type { ConnectionDrain } from './core/connections.ts';
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
} from './core/drain.ts';
export type { MatchableRequest } from './core/enabled-when.ts';
export {
  ENFORCEMENT_MODES,
  Enforcement,
  type EnforcementMode,
  type ModeChange,
  type ModeListener,
} from './core/enforcement.ts';
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
} from './core/errors.ts';
export {
  HEALTH_STATUSES,
  type HealthComponent,
  type HealthComponentOptions,
  type HealthReport,
  type HealthResult,
  type HealthStatus,
} from './core/health.ts';
export {
  type GuardRegistryOptions,
  guardMeterProvider,
  guardRegistry,
  registryGuard,
} from './core/meters.ts';
export {
  type CreateObsOptions,
  OBS_METRICS,
  type ObsCore,
  type ObsLogger,
} from './core/obs.ts';
export type { ReadinessCheck, ReadinessReport, ReadinessResult } from './core/readiness.ts';
export type {
  DryRunChange,
  DryRunSnapshot,
  FeatureSnapshot,
  ObsSnapshot,
  RuntimeSnapshot,
} from './core/snapshot.ts';
export type {
  CgroupVersion,
  ContainerMemoryApi,
  ContainerMemoryReading,
} from './features/container-memory.ts';
export type { DiagnosticsApi } from './features/diagnostics.ts';
export type { EventAttributes, WideEventsApi } from './features/events.ts';
export { problemErrorHandler } from './features/exception-handler/exception-handler.ts';
export { fingerprint } from './features/exception-handler/fingerprint.ts';
export {
  activeTraceFields,
  type ObsFastifyOptions,
  type ObsLoggerOptionsInput,
  obsFastifyOptions,
  obsLoggerOptions,
  REQUEST_ID_LOG_LABEL,
} from './features/logging/logging.ts';
export { maskSecrets, maskText } from './features/logging/masking.ts';
export type { ContextApi } from './features/request-context/context-api.ts';
export {
  bindContext,
  currentObsContext,
  currentTimeoutBudget,
  type ObsContext,
  type ObsPriority,
  PRIORITIES,
  type TimeoutBudget,
} from './features/request-context/request-context.ts';
export type { RetryApi, RetryAttempt, RetryOptions } from './features/retry/retry-helper.ts';
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
} from './features/sampling.ts';
export {
  type PrometheusRuleResource,
  type SloObjective,
  type SloRule,
  type SloRuleGroup,
  sloPrometheusRule,
  sloPrometheusRuleYaml,
} from './features/slo.ts';
export type { TimeoutBudgetSource } from './features/timeout-budget/timeout-budget.ts';
export {
  type AxiosInstanceLike,
  type AxiosRequestConfigLike,
  createBudgetInterceptor,
  instrumentAxios,
  TimeoutBudgetExhaustedError,
  type UndiciDispatch,
  type UndiciDispatchOptions,
} from './features/timeout-budget/timeout-budget-clients.ts';
export {
  type InstrumentCacheOptions,
  instrumentCache,
  type LruCacheLike,
  MAX_CACHES,
} from './integrations/cache.ts';
export {
  instrumentPg,
  type PgModuleLike,
  type PgPoolLike,
  type PgQueryable,
  sqlShape,
} from './integrations/db.ts';
export {
  createFeatureFlagHook,
  type FeatureFlagHook,
  type FlagEvaluationDetailsLike,
  type FlagHookContextLike,
  MAX_FLAGS_PER_REQUEST,
} from './integrations/feature-flags.ts';
export {
  type CronLike,
  type EveryOptions,
  type InstrumentedCron,
  instrumentCron,
  type JobHandle,
  type JobOptions,
  type JobScheduler,
  type JobsApi,
} from './integrations/jobs.ts';
export { instrumentKafka } from './integrations/kafka/kafka.ts';
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
} from './integrations/kafka/kafka-records.ts';
export { instrumentPyroscope, type PyroscopeLike } from './integrations/profiling.ts';
export {
  type CockatielPolicyLike,
  type InstrumentBreakerOptions,
  type InstrumentPolicyOptions,
  instrumentBreaker,
  instrumentPolicy,
  MAX_INSTRUMENTED_RESILIENCE,
  type OpossumBreakerLike,
} from './integrations/resilience.ts';
export { createObs, type Obs } from './obs.ts';
export {
  type ObsDrainOptions,
  type ObsPluginOptions,
  type ObsRequestFeatureOptions,
  obsPlugin,
} from './plugin.ts';
