/**
 * The environment as a source of the `obs.*` configuration.
 *
 * Environment variables, the rule in full:
 * - a key's variable is `OBS_` + its path after `obs.`, upper-cased, with `.` and `-` as `_`
 *   (`obs.trace-guard.fail-on-missing` → `OBS_TRACE_GUARD_FAIL_ON_MISSING`); names are matched
 *   case-insensitively;
 * - a list is comma-separated text (`OBS_TRACE_GUARD_EXCLUDE_PATH_PREFIXES=/actuator,/health`) or a
 *   JSON array; the variable replaces the whole list;
 * - a map is either one variable holding `key=value` pairs separated by commas, or a JSON object
 *   (`OBS_TRACE_GUARD_ENABLED_WHEN_HEADER_NOT_EQUALS=x-synthetic=true,client-id=probe`), or one
 *   variable per entry, the map's variable + `_` + the key, where the key is lower-cased and `_`
 *   becomes `-` (`..._HEADER_NOT_EQUALS_X_SYNTHETIC=true` → `x-synthetic: true`). Keys that need
 *   other characters (a host name with dots) use the first form. Entries merge with the map of
 *   earlier sources, per key;
 * - a list of objects (`obs.slo.objectives`) is a JSON array;
 * - `OBS_PROFILE` and `OBS_CONFIG_FILE` name the preset and the file, and the variables Kubernetes
 *   injects for a Service named `obs` (`OBS_SERVICE_HOST`, `OBS_PORT_…`) are left alone; any other
 *   `OBS_*` variable that names no key is an error, with the nearest valid name;
 * - a variable of a key of a planned feature (`features.ts`) is an error too.
 */
import assert from 'node:assert/strict';
import type { ConfigProblem } from '../errors.ts';
import { plannedFeatureOf } from '../features.ts';
import { nearestName } from '../nearest-name.ts';
import { type Field, isGroup, isStringMap } from './config-fields.ts';
import { ALL_PATHS, FIELD_BY_PATH } from './config-keys.ts';
import { LEGACY_MODE_KEY } from './config-legacy.ts';
import { problem, show } from './config-problems.ts';
import { checkMap, childTree, expectedForm, type Tree } from './config-values.ts';

/** Names the preset profile (`dev`, `prod`, `test`, `canary`); used when auto-apply is on. */
export const OBS_PROFILE_VARIABLE = 'OBS_PROFILE';
/** Names the YAML configuration file. */
export const OBS_CONFIG_FILE_VARIABLE = 'OBS_CONFIG_FILE';

/** The environment variable of a key: `obs.shutdown.drain-timeout` → `OBS_SHUTDOWN_DRAIN_TIMEOUT`. */
export function envVariableOf(path: string): string {
  return `OBS_${path
    .replace(/^obs\./, '')
    .toUpperCase()
    .replace(/[.-]/g, '_')}`;
}

/** The variable of every key, to the key and its field (keys of planned features too: set, they are refused). */
export const ENV_VARIABLES: ReadonlyMap<string, { readonly path: string; readonly field: Field }> = (() => {
  const out = new Map<string, { path: string; field: Field }>();
  for (const { path, field } of ALL_PATHS) {
    if (isGroup(field)) continue;
    const name = envVariableOf(path);
    const clash = out.get(name);
    assert.ok(clash === undefined, `obs schema: ${path} and ${clash?.path} share the variable ${name}`);
    out.set(name, { path, field });
  }
  return out;
})();

const MAP_VARIABLES = [...ENV_VARIABLES].filter(([, v]) => isStringMap(v.field));
/** The variables offered as "did you mean": those of planned features are refused, so never offered. */
const SETTABLE_VARIABLES = [...ENV_VARIABLES]
  .filter(([, v]) => plannedFeatureOf(v.path) === undefined)
  .map(([name]) => name);
const RESERVED_VARIABLES = new Set([OBS_PROFILE_VARIABLE, OBS_CONFIG_FILE_VARIABLE]);
/** Variables Kubernetes injects for a Service named `obs`. */
const SERVICE_LINK =
  /^OBS_(?:SERVICE_HOST|SERVICE_PORT(?:_\w+)?|PORT(?:_\d+_(?:TCP|UDP|SCTP)(?:_(?:PROTO|PORT|ADDR))?)?)$/;
/** The variable of the legacy key {@link LEGACY_MODE_KEY}. */
export const LEGACY_VARIABLE = 'OBS_RUNTIME_MODE';

function setPath(tree: Tree, path: string, value: unknown): void {
  const parts = path.split('.').slice(1);
  let node = tree;
  for (const part of parts.slice(0, -1)) node = childTree(node, part);
  node[parts[parts.length - 1]!] = value;
}

/** The raw tree the `OBS_*` variables describe, and which variable set which key. */
export function readObsVariables(
  env: Readonly<Record<string, string | undefined>>,
  problems: ConfigProblem[],
): { raw: Tree; variables: Map<string, string> } {
  const raw: Tree = {};
  const variables = new Map<string, string>();
  const mapEntries = new Map<string, { whole?: string; entries: Record<string, string>; names: string[] }>();
  for (const name of Object.keys(env).sort()) {
    const value = env[name];
    const upper = name.toUpperCase();
    if (value === undefined || !upper.startsWith('OBS_')) continue;
    if (RESERVED_VARIABLES.has(upper) || SERVICE_LINK.test(upper)) continue;
    if (upper === LEGACY_VARIABLE) {
      raw.runtime = { mode: value };
      variables.set(LEGACY_MODE_KEY, name);
      continue;
    }
    const known = ENV_VARIABLES.get(upper);
    if (known !== undefined) {
      if (isStringMap(known.field)) {
        const m = mapEntries.get(known.path) ?? { entries: {}, names: [] };
        m.whole = value;
        m.names.unshift(name);
        mapEntries.set(known.path, m);
      } else {
        setPath(raw, known.path, value);
        variables.set(known.path, name);
      }
      continue;
    }
    const map = MAP_VARIABLES.find(
      ([mapName]) => upper.startsWith(`${mapName}_`) && upper.length > mapName.length + 1,
    );
    if (map !== undefined) {
      const [mapName, { path }] = map;
      const m = mapEntries.get(path) ?? { entries: {}, names: [] };
      m.entries[
        upper
          .slice(mapName.length + 1)
          .toLowerCase()
          .replaceAll('_', '-')
      ] = value;
      m.names.push(name);
      mapEntries.set(path, m);
      continue;
    }
    const near = nearestName(upper, [...SETTABLE_VARIABLES, ...RESERVED_VARIABLES]);
    const hint =
      near === undefined
        ? `no obs key has this variable; docs/obs/index.md (the configuration) lists them`
        : `did you mean ${near}${ENV_VARIABLES.has(near) ? ` (${ENV_VARIABLES.get(near)?.path})` : ''}?`;
    problems.push({
      key: name,
      value,
      source: 'environment',
      expected: hint,
      message: `${name} = ${show(value)} (environment): unknown variable; ${hint}`,
    });
  }
  for (const [path, m] of mapEntries) {
    if (plannedFeatureOf(path) !== undefined) {
      // Refused as a key of a planned feature when the tree is read, whatever its form.
      setPath(raw, path, m.whole ?? m.entries);
      variables.set(path, m.names.join(', '));
      continue;
    }
    const field = FIELD_BY_PATH.get(path);
    let whole: Record<string, string> = {};
    if (m.whole !== undefined && field !== undefined && isStringMap(field)) {
      const parsed = checkMap(field, m.whole);
      if (parsed === undefined) {
        problems.push(problem(path, m.whole, `env ${m.names[0]}`, expectedForm(field)));
        continue;
      }
      whole = parsed;
    }
    setPath(raw, path, { ...whole, ...m.entries });
    variables.set(path, m.names.join(', '));
  }
  return { raw, variables };
}

/** OTEL_TRACES_SAMPLER_ARG is a probability only for the ratio samplers (and when no sampler is named). */
const RATIO_SAMPLERS = new Set(['traceidratio', 'parentbased_traceidratio']);

/** The raw tree `OTEL_TRACES_SAMPLER_ARG` describes (`sampling.probability`), if it counts. */
export function readOtelSampling(env: Readonly<Record<string, string | undefined>>): Tree | undefined {
  const arg = env.OTEL_TRACES_SAMPLER_ARG;
  if (arg === undefined || arg.trim() === '') return undefined;
  const sampler = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase();
  if (sampler !== undefined && sampler !== '' && !RATIO_SAMPLERS.has(sampler)) return undefined;
  return { sampling: { probability: arg } };
}
