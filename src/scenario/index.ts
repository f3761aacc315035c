/**
 * `echo-chaos/scenario`: the one scenario schema and everything built on it — validation, the live
 * store, the YAML/JSON file loader and watcher, and the error catalogue. Imports nothing else of
 * echo-chaos, so the echo service, the operator and tools can all depend on it.
 * @packageDocumentation
 */

export {
  JsonDepthScanner,
  jsonDepthWithin,
  MAX_DOCUMENT_DEPTH,
  measureTree,
  type TreeBound,
  type TreeLimits,
  type TreeMeasure,
} from './bounds.ts';
export {
  DELAY_SPEC_FORM,
  DELAY_SPEC_PATTERN,
  type DelayRange,
  type DelayRead,
  type DelaySpec,
  drawDelayMs,
  type LognormalDelay,
  MAX_LOGNORMAL_SIGMA,
  parseDelayBounds,
  parseDelaySpec,
  readDelaySpec,
} from './duration.ts';
export type {
  Mismatch,
  ScenarioHandle,
  ScenarioRequest,
  ScenarioState,
  ScenarioStep,
} from './entry.ts';
export {
  isScenarioError,
  SCENARIO_ERRORS,
  ScenarioError,
  type ScenarioErrorCode,
  ScenarioInvalidError,
  ScenarioSyntaxError,
} from './errors.ts';
export {
  DEFAULT_MAX_FILE_BYTES,
  DEFAULT_WATCH_DEBOUNCE_MS,
  loadScenarioDocument,
  loadScenarioFile,
  MAX_YAML_ALIASES,
  parseScenarioDocument,
  type ScenarioFileOptions,
  type ScenarioFileWatcher,
  type WatchScenarioFileOptions,
  watchScenarioFile,
} from './file.ts';
export { MAX_GLOB_GLOBSTARS, MAX_GLOB_WILDCARDS } from './glob.ts';
export {
  GRPC_BINARY_SUFFIX,
  GRPC_METADATA_KEY_PATTERN,
  GRPC_METADATA_VALUE_PATTERN,
  GRPC_RESERVED_METADATA_KEYS,
  GRPC_RESERVED_PREFIX,
  GRPC_STATUS_FORM,
  GRPC_STATUS_NAMES,
  GRPC_STATUS_OK,
  GRPC_STATUS_PATTERN,
  type GrpcMetadataValue,
  type GrpcStatusName,
  MAX_GRPC_MESSAGE_LENGTH,
  MAX_GRPC_METADATA,
  MAX_GRPC_METADATA_KEY_LENGTH,
  MAX_GRPC_METADATA_VALUE_LENGTH,
  MAX_GRPC_STATUS,
  MAX_GRPC_STATUS_LENGTH,
  parseGrpcStatus,
} from './grpc-answer.ts';
export { canonicalJson, scenarioSetHash } from './hash.ts';
export {
  type Compiled,
  checkPatternsAhead,
  compilePathPattern,
  compileTextMatcher,
  PATTERN_CHECK_SLICE_MS,
  type PatternMatcher,
  type PatternVerdicts,
  REGEX_PREFIX,
  type TextMatcher,
  textMatches,
  withPatternVerdicts,
} from './matchers.ts';
export {
  DEFAULT_WEIGHT,
  MAX_ORDER_LENGTH,
  MAX_WEIGHT,
  ORDER_PATTERN,
  SCENARIO_ORDERS,
  type ScenarioOrder,
  WeightedOrder,
} from './order.ts';
export { MAX_PEEKED_SCENARIOS, type PeekedScenario, type ScenarioPeek } from './peek.ts';
export {
  type BodyCondition,
  BodyConditionSchema,
  HEADER_NAME_PATTERN,
  HEADER_VALUE_PATTERN,
  JSON_POINTER_PATTERN,
  type JsonSchemaObject,
  MAX_BODY_CONDITION_LENGTH,
  MAX_BODY_LENGTH,
  MAX_CONDITIONS,
  MAX_DELAY_LENGTH,
  MAX_HEADER_NAME_LENGTH,
  MAX_HEADER_VALUE_LENGTH,
  MAX_HEADERS,
  MAX_METHOD_LENGTH,
  MAX_METHODS,
  MAX_NAME_LENGTH,
  MAX_PATH_LENGTH,
  MAX_PATTERN_LENGTH,
  MAX_QUERY_VALUE_LENGTH,
  MAX_REGEX_PROGRAM_SIZE,
  MAX_REPEAT,
  MAX_RESPONSES,
  MAX_SCENARIOS,
  MAX_SET_DEPTH,
  MAX_SET_NODES,
  MAX_SET_PATTERNS,
  MAX_SET_SIZE,
  MAX_STATUS,
  MAX_TIMER_DELAY_MS,
  METHOD_PATTERN,
  MIN_STATUS,
  NAME_PATTERN,
  PATH_GLOB_OR_REGEX_PATTERN,
  PATH_PATTERN,
  type Scenario,
  ScenarioListSchema,
  type ScenarioResponse,
  ScenarioResponseSchema,
  ScenarioSchema,
  toOpenApiV3Schema,
  UNSETTABLE_HEADERS,
} from './schema.ts';
export { MAX_SESSION_STATES, MAX_SESSIONS, SessionTable } from './sessions.ts';
export {
  type CursorRule,
  type ReplaceHow,
  type ScenarioSelector,
  ScenarioStore,
  type ScenarioStoreCounts,
  type ScenarioStoreOptions,
  type SetPositionResult,
  type SharedCursorState,
  type SharedCursors,
  type SharedStep,
} from './store.ts';
export {
  isPlainPath,
  MAX_PROBLEMS,
  type ScenarioProblem,
  scenarioPatternTexts,
  type ValidateScenariosOptions,
  type ValidateScenariosResult,
  validateScenarios,
} from './validate.ts';
export {
  drawWeighted,
  MAX_WEIGHTED_ENTRIES,
  MAX_WEIGHTED_LIST_LENGTH,
  parseWeightedList,
  WEIGHTED_LIST_FORM,
  type WeightedEntry,
  type WeightedList,
  type WeightedParse,
} from './weighted.ts';
export {
  ACTIVE_FOR_FORM,
  ACTIVE_FOR_PATTERN,
  type ActiveForRead,
  MAX_ACTIVE_FOR_LENGTH,
  MAX_ACTIVE_FOR_MS,
  MAX_TIMES,
  readActiveFor,
} from './windows.ts';
