/**
 * `echo-chaos/obs`: observability for fastify services. A fastify plugin ({@link obsPlugin}) over
 * a core usable on its own ({@link createObs}): the `obs.*` configuration, the enforcement lever,
 * the cardinality firewall, the actuator routes and the snapshot. It depends on
 * `@opentelemetry/api` only; the application installs an OpenTelemetry SDK, or none.
 * @packageDocumentation
 */

export { CounterBatch, HistogramBatch, type MeterBatchOptions } from './batch.ts';
export {
  CACHE_METRICS,
  type InstrumentCacheOptions,
  instrumentCache,
  type LruCacheLike,
  MAX_CACHES,
} from './cache.ts';
export {
  CARDINALITY_OVERFLOW_METRIC,
  CardinalityFirewall,
  type CardinalityFirewallOptions,
  type CardinalityOffender,
  DEFAULT_MAX_VALUES_PER_TAG,
  OVERFLOW_VALUE,
  type OverflowListener,
} from './cardinality.ts';
export { type LoadObsConfigInput, loadObsConfig, type ResolvedObsConfig } from './config.ts';
export { OBS_CONFIG_FILE_VARIABLE, OBS_PROFILE_VARIABLE } from './config-env.ts';
export type { JsonValue } from './config-hash.ts';
export {
  type EnabledWhen,
  type EnabledWhenFeature,
  type ObsConfig,
  type ObsConfigInput,
  PRESET_PROFILES,
  type PresetProfile,
} from './config-schema.ts';
export type { ConnectionDrain } from './connections.ts';
export {
  type CgroupVersion,
  CONTAINER_MEMORY_METRICS,
  type ContainerMemoryOptions,
  type ContainerMemoryReading,
  readContainerMemory,
  registerContainerMemoryMetrics,
} from './container-memory.ts';
export {
  DB_METRICS,
  DB_SPAN_ATTRIBUTES,
  instrumentPg,
  type PgModuleLike,
  type PgPoolLike,
  type PgQueryable,
  sqlShape,
} from './db.ts';
export { DEPENDENCY_METRICS, DEPENDENCY_OUTCOMES, type DependencyOutcome } from './dependencies.ts';
export {
  createDiagnostics,
  type Diagnostics,
  type DiagnosticsOptions,
  type RuntimeSnapshot,
} from './diagnostics.ts';
export {
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_FLUSH_TIMEOUT_MS,
  DRAIN_METRICS,
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
export { DURATION_FORM, DURATION_PATTERN, formatDuration, parseDurationMs } from './duration.ts';
export type { MatchableRequest, RequestMatcher } from './enabled-when.ts';
export {
  ENFORCEMENT_MODES,
  Enforcement,
  type EnforcementMode,
  isEnforcementMode,
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
export {
  createWideEvents,
  EVENTS_METRIC,
  type EventAttributes,
  type WideEvents,
  type WideEventsDependencies,
} from './events.ts';
export {
  EXCEPTION_METRICS,
  type ExceptionHandlerOptions,
  PROBLEM_CONTENT_TYPE,
  problemErrorHandler,
  type RecordedError,
  registerExceptionHandler,
} from './exception-handler.ts';
export {
  FAN_OUT_BUCKETS,
  FAN_OUT_METRICS,
  FAN_OUT_SPAN_ATTRIBUTES,
} from './fan-out.ts';
export {
  createFeatureFlagHook,
  FEATURE_FLAG_ATTRIBUTES,
  FEATURE_FLAG_EVENT,
  type FeatureFlagHook,
  type FlagEvaluationDetailsLike,
  type FlagHookContextLike,
  MAX_FLAGS_PER_REQUEST,
} from './feature-flags.ts';
export { type FingerprintFrame, fingerprint, fingerprintFrames } from './fingerprint.ts';
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
  JOB_DURATION_BUCKETS,
  JOB_NAME_PATTERN,
  JOBS_METRICS,
  type JobHandle,
  type JobOptions,
  type JobOutcome,
  type JobScheduler,
  MAX_JOB_GRACE_PERIOD_MS,
  MAX_JOBS,
} from './jobs.ts';
export { instrumentKafka, KAFKA_METRICS } from './kafka.ts';
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
export { isSecretName, MASK, maskLogLine, maskSecrets, maskText, mayHoldSecret } from './masking.ts';
export {
  type GuardRegistryOptions,
  guardMeter,
  guardMeterProvider,
  guardMetric,
  guardRegistry,
  registryGuard,
} from './meters.ts';
export { nearestName } from './nearest-name.ts';
export { type CreateObsOptions, createObs, OBS_METRICS, type Obs, type ObsLogger } from './obs.ts';
export { OBSUI_CSP, renderObsUi } from './obsui.ts';
export {
  type ObsDrainOptions,
  type ObsPluginOptions,
  type ObsRequestFeatureOptions,
  obsPlugin,
} from './plugin.ts';
export {
  instrumentPyroscope,
  PROFILING_SPAN_ATTRIBUTES,
  PYROSCOPE_PROFILE_TYPE,
  PYROSCOPE_SPAN_LABEL,
  type PyroscopeLike,
  profileUrl,
} from './profiling.ts';
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
  CIRCUIT_TRANSITION_EVENT,
  type CircuitOutcome,
  type CircuitStateName,
  type CockatielEventLike,
  type CockatielPolicyLike,
  type InstrumentBreakerOptions,
  type InstrumentPolicyOptions,
  instrumentBreaker,
  instrumentPolicy,
  MAX_INSTRUMENTED_RESILIENCE,
  MAX_RESILIENCE_NAME_LENGTH,
  type OpossumBreakerLike,
  RESILIENCE_METRICS,
} from './resilience.ts';
export { RETRY_METRICS } from './retry.ts';
export { MAX_RETRY_DEPTH, RETRY_DEPTH_BAGGAGE_KEY } from './retry-depth.ts';
export { MAX_RETRY_ATTEMPTS, type RetryAttempt, type RetryOptions } from './retry-helper.ts';
export {
  createErrorUpgradeSpanProcessor,
  createObsSampler,
  type ObsSampler,
  type ObsSamplingDecision,
  type ObsSamplingResult,
  type ObsSamplingSettings,
  type ObsSpanProcessor,
  SAMPLING_DECISION,
  UPGRADABLE_ATTRIBUTE,
  UPGRADED_ATTRIBUTE,
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
export { DEADLINE_HEADER, type TimeoutBudgetSource } from './timeout-budget.ts';
export {
  type AxiosInstanceLike,
  type AxiosRequestConfigLike,
  createBudgetInterceptor,
  instrumentAxios,
  TimeoutBudgetExhaustedError,
  type UndiciDispatch,
  type UndiciDispatchOptions,
} from './timeout-budget-clients.ts';
export {
  DEADLINE_BAGGAGE_KEY,
  TIMEOUT_BUDGET_METRICS,
  TIMEOUT_BUDGET_SPAN_ATTRIBUTES,
} from './timeout-budget-hook.ts';
export { registerTraceGuard, TRACE_GUARD_METRICS } from './trace-guard.ts';
