/**
 * `echo-chaos/obs`: observability for fastify services. A fastify plugin ({@link obsPlugin}) over
 * a core usable on its own ({@link createObs}): the `obs.*` configuration, the enforcement lever,
 * the cardinality firewall, the actuator routes and the snapshot. It depends on
 * `@opentelemetry/api` only; the application installs an OpenTelemetry SDK, or none.
 * @packageDocumentation
 */
export { MAX_ACTUATOR_BODY_BYTES, MODE_CHANGE_NOTE } from './actuator.ts';
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
export { flattenEffective } from './config-effective.ts';
export {
  ENV_VARIABLES,
  envVariableOf,
  OBS_CONFIG_FILE_VARIABLE,
  OBS_PROFILE_VARIABLE,
} from './config-env.ts';
export { MAX_CONFIG_FILE_BYTES, presetFileUrl } from './config-file.ts';
export { canonicalJson, configHash, type JsonValue } from './config-hash.ts';
export { LEGACY_MODE_KEY } from './config-legacy.ts';
export {
  type EnabledWhen,
  type EnabledWhenFeature,
  OBS_SCHEMA,
  type ObsConfig,
  type ObsConfigInput,
  PRESET_PROFILES,
  type PresetProfile,
} from './config-schema.ts';
// --- container memory, drain and flush, diagnostics, meter guards ---
export {
  type CgroupVersion,
  CONTAINER_MEMORY_METRICS,
  type ContainerMemoryOptions,
  type ContainerMemoryReading,
  DEFAULT_CGROUP_ROOT,
  DEFAULT_CRITICAL_HEADROOM_RATIO,
  locateCgroup,
  readContainerMemory,
  registerContainerMemoryMetrics,
  SELF_CGROUP_FILE,
  UNLIMITED_THRESHOLD_BYTES,
} from './container-memory.ts';
export {
  createDiagnostics,
  DEFAULT_EVENT_LOOP_RESOLUTION_MS,
  DEFAULT_TOP_OFFENDERS,
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
// --- end ---
export { DURATION_FORM, DURATION_PATTERN, formatDuration, parseDurationMs } from './duration.ts';
export {
  createRequestMatcher,
  MATCH_ALL,
  type MatchableRequest,
  type RequestMatcher,
} from './enabled-when.ts';
export {
  ENFORCEMENT_MODES,
  Enforcement,
  type EnforcementMode,
  isEnforcementMode,
  type ModeChange,
  type ModeListener,
} from './enforcement.ts';
export {
  type ConfigProblem,
  isObsError,
  OBS_ERRORS,
  ObsConfigError,
  ObsError,
  type ObsErrorCode,
} from './errors.ts';
// --- request-level features: structured logs, exception fingerprints, trace guard, sampling, wide events ---
export {
  boundEventAttributes,
  createWideEvents,
  EVENTS_METRIC,
  type EventAttributes,
  MAX_EVENT_KEY_CHARS,
  MAX_EVENT_NAME_CHARS,
  type WideEvents,
  type WideEventsDependencies,
} from './events.ts';
export {
  EXCEPTION_METRICS,
  type ExceptionHandlerOptions,
  errorStatus,
  PROBLEM_CONTENT_TYPE,
  problemBody,
  problemErrorHandler,
  type RecordedError,
  registerExceptionHandler,
  SERVER_ERROR_DETAIL,
} from './exception-handler.ts';
export { FEATURES } from './features.ts';
export {
  DEFAULT_FINGERPRINT_FRAMES,
  errorType,
  type FingerprintFrame,
  fingerprint,
  fingerprintFrames,
} from './fingerprint.ts';
export {
  activeTraceFields,
  type ObsFastifyOptions,
  type ObsLoggerOptionsInput,
  obsFastifyOptions,
  obsLoggerOptions,
  REQUEST_ID_LOG_LABEL,
} from './logging.ts';
export {
  isSecretName,
  luhnValid,
  MASK,
  MASK_LIMITS,
  MASKS,
  maskLogLine,
  maskSecrets,
  maskText,
} from './masking.ts';
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
export { escapeHtml, OBSUI_CSP, renderObsUi } from './obsui.ts';
export { type ObsPluginOptions, type ObsRequestFeatureOptions, obsPlugin } from './plugin.ts';
export {
  READINESS_TIMEOUT_MS,
  type ReadinessCheck,
  type ReadinessReport,
  type ReadinessResult,
} from './readiness.ts';
export {
  createErrorUpgradeSpanProcessor,
  createObsSampler,
  type ObsSampler,
  type ObsSamplingDecision,
  type ObsSamplingResult,
  type ObsSamplingSettings,
  type ObsSpanProcessor,
  SAMPLING_DECISION,
  traceIdSampled,
  UPGRADABLE_ATTRIBUTE,
  UPGRADED_ATTRIBUTE,
  type UpgradableSpan,
} from './sampling.ts';
export type { FeatureSnapshot, ObsSnapshot } from './snapshot.ts';
export {
  isValidTraceparent,
  registerTraceGuard,
  TRACE_CONTEXT_MISSING_CODE,
  TRACE_CONTEXT_MISSING_STATUS,
  TRACE_GUARD_METRICS,
  traceContextMissingBody,
  traceIdOfTraceparent,
  UNMATCHED_ROUTE,
} from './trace-guard.ts';
// --- end ---
