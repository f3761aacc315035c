/**
 * `@echo-chaos/obs/internal`: what the other packages of the echo-chaos repository share with obs
 * and a user of the library does not need (ADR 0043). Not covered by semver: a name here may change
 * or go in any release, because `echo-chaos` depends on the very same version of `@echo-chaos/obs`.
 * An application imports `@echo-chaos/obs` only.
 *
 * - The one duration grammar (`100ms`, `2s`, `5m`, `1h`, `1d`, bare milliseconds) of obs's settings,
 *   which the scenario schema, the echo's settings and headers and the operator read too.
 * - The "did you mean" of every area's messages.
 * - The masking steps the echo's access log and request history use to mask faster than
 *   `maskSecrets` on every line.
 * - The name of the deadline header, which the echo's replay leaves out of a replayed request.
 * - The one settings mechanism (settings.ts, ADR 0045): a TypeBox schema per environment variable,
 *   every problem on one line, the reference table from the same definitions.
 * @packageDocumentation
 */

export { DURATION_FORM, DURATION_PATTERN, parseDurationMs } from './core/duration.ts';
export { nearestName } from './core/nearest-name.ts';
export { isSecretName, MASK, maskLogLine, mayHoldSecret } from './features/logging/masking.ts';
export { DEADLINE_HEADER } from './features/timeout-budget/timeout-budget.ts';
export {
  formOf,
  HTTP_URL,
  loadSettings,
  type Setting,
  type SettingOptions,
  type SettingRow,
  type SettingsDefinition,
  type SettingsOf,
  type SettingsResult,
  setting,
  settingsRows,
  settingsTable,
} from './settings.ts';
