/**
 * `echo-chaos/scenario`: the one scenario schema and everything built on it — validation, the live
 * store, the YAML/JSON file loader and watcher, and the error catalogue. Imports nothing else of
 * echo-chaos, so the echo service, the operator and tools can all depend on it.
 * @packageDocumentation
 */

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
  loadScenarioFile,
  MAX_YAML_ALIASES,
  parseScenarioDocument,
  type ScenarioFileOptions,
  type ScenarioFileWatcher,
  type WatchScenarioFileOptions,
  watchScenarioFile,
} from './file.ts';
export {
  HEADER_NAME_PATTERN,
  HEADER_VALUE_PATTERN,
  type JsonSchemaObject,
  MAX_BODY_LENGTH,
  MAX_DELAY_LENGTH,
  MAX_HEADER_NAME_LENGTH,
  MAX_HEADER_VALUE_LENGTH,
  MAX_HEADERS,
  MAX_PATH_LENGTH,
  MAX_RESPONSES,
  MAX_SCENARIOS,
  MAX_STATUS,
  MAX_TIMER_DELAY_MS,
  MIN_STATUS,
  PATH_PATTERN,
  type Scenario,
  ScenarioListSchema,
  type ScenarioResponse,
  ScenarioResponseSchema,
  ScenarioSchema,
  toOpenApiV3Schema,
} from './schema.ts';
export { type ScenarioStep, ScenarioStore } from './store.ts';
export {
  MAX_PROBLEMS,
  type ScenarioProblem,
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
