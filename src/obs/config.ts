/**
 * Resolves the `obs.*` configuration from its sources, later wins:
 *
 * 1. the defaults of {@link OBS_SCHEMA};
 * 2. a shipped preset (`presets/application-obs-<profile>.yml`), only when
 *    `obs.profile-presets.auto-apply=true`, for the profile named by `OBS_PROFILE`;
 * 3. the YAML file named by `OBS_CONFIG_FILE` (a top-level `obs:` mapping);
 * 4. the environment: `OTEL_TRACES_SAMPLER_ARG` (for `obs.sampling.probability`), then `OBS_*`
 *    variables in relaxed form (`OBS_TIMEOUT_BUDGET_DEFAULT_BUDGET=5s`);
 * 5. options in code (the same shape as the file's `obs:` mapping).
 *
 * {@link loadObsConfig} is a pure function of what it is given: it reads no `process.env`, only the
 * file the given environment names (and the shipped presets). Every problem of every source is
 * collected and thrown at once as an {@link ObsConfigError}, one line each.
 *
 * Environment variables, the rule in full:
 * - a key's variable is `OBS_` + its path after `obs.`, upper-cased, with `.` and `-` as `_`
 *   (`obs.trace-guard.fail-on-missing` → `OBS_TRACE_GUARD_FAIL_ON_MISSING`); names are matched
 *   case-insensitively;
 * - a list is comma-separated text (`OBS_TRACE_GUARD_EXCLUDE_PATH_PREFIXES=/actuator,/health`) or a
 *   JSON array; the variable replaces the whole list;
 * - a map is either one variable holding `key=value` pairs separated by commas, or a JSON object
 *   (`OBS_TIMEOUT_BUDGET_ENABLED_WHEN_HEADER_NOT_EQUALS=x-synthetic=true,client-id=probe`), or one
 *   variable per entry, the map's variable + `_` + the key, where the key is lower-cased and `_`
 *   becomes `-` (`..._HEADER_NOT_EQUALS_X_SYNTHETIC=true` → `x-synthetic: true`). Keys that need
 *   other characters (a host name with dots) use the first form. Entries merge with the map of
 *   earlier sources, per key;
 * - a list of objects (`obs.slo.objectives`) is a JSON array;
 * - `OBS_PROFILE` and `OBS_CONFIG_FILE` name the preset and the file, and the variables Kubernetes
 *   injects for a Service named `obs` (`OBS_SERVICE_HOST`, `OBS_PORT_…`) are left alone; any other
 *   `OBS_*` variable that names no key is an error, with the nearest valid name.
 */
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CORE_SCHEMA, loadAll, YAMLException } from 'js-yaml';
import { configHash, flattenTree, type JsonValue } from './config-hash.ts';
import {
  type Field,
  type Fields,
  type LeafField,
  OBS_SCHEMA,
  type ObjectListField,
  type ObsConfig,
  type ObsConfigInput,
  PRESET_PROFILES,
  type PresetProfile,
} from './config-schema.ts';
import { DURATION_FORM, formatDuration, parseDurationMs } from './duration.ts';
import { type ConfigProblem, ObsConfigError } from './errors.ts';

/** Names the preset profile (`dev`, `prod`, `test`, `canary`); used when auto-apply is on. */
export const OBS_PROFILE_VARIABLE = 'OBS_PROFILE';
/** Names the YAML configuration file. */
export const OBS_CONFIG_FILE_VARIABLE = 'OBS_CONFIG_FILE';
/** Largest configuration file read, in bytes (a Kubernetes ConfigMap holds at most 1 MiB). */
export const MAX_CONFIG_FILE_BYTES = 1024 * 1024;
/** Most YAML aliases a configuration file may use (each may repeat a subtree). */
export const MAX_YAML_ALIASES = 100;
/** The legacy key migrated to `obs.enforcement.mode`. */
export const LEGACY_MODE_KEY = 'obs.runtime.mode';

/** Where each preset file lives. */
export function presetFileUrl(profile: PresetProfile): URL {
  return new URL(`./presets/application-obs-${profile}.yml`, import.meta.url);
}

/** What {@link loadObsConfig} reads. */
export interface LoadObsConfigInput {
  /** The environment (default: empty). Pass `process.env` to read the real one. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Options in code; they win over every other source. */
  readonly options?: ObsConfigInput;
  /** Resolves a relative `OBS_CONFIG_FILE`; default `process.cwd()`. */
  readonly cwd?: string;
}

/** The outcome of {@link loadObsConfig}. */
export interface ResolvedObsConfig {
  /** The resolved tree (frozen). Durations are milliseconds. */
  readonly config: ObsConfig;
  /** The same tree as JSON for people and for hashing: durations as text (`2s`), unset values `null`. */
  readonly effective: { readonly [key: string]: JsonValue };
  /** Hex SHA-256 of the canonical JSON of {@link effective}. */
  readonly hash: string;
  /** Where each key that is not at its default got its value, `obs.a.b` → `env OBS_A_B`. */
  readonly origins: Readonly<Record<string, string>>;
  /** Lines to log once at startup (the legacy-key migration, overridden preset pins). */
  readonly warnings: readonly string[];
  /** The preset profile named by `OBS_PROFILE` and whether it was applied. */
  readonly profile: { readonly name: PresetProfile | undefined; readonly applied: boolean };
  /** The absolute path of the configuration file read, if any. */
  readonly configFile: string | undefined;
}

type Tree = Record<string, unknown>;
type Checked =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly expected: string };

interface Layer {
  readonly tree: Tree;
  readonly origins: Map<string, string>;
}

interface WalkContext {
  readonly source: (path: string) => string;
  readonly problems: ConfigProblem[];
  readonly origins: Map<string, string>;
  /** Keys starting with `_` under `obs` are YAML scaffolding (anchors), ignored (files only). */
  readonly allowScaffolding: boolean;
}

const isPlainObject = (v: unknown): v is Tree => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The subtree `node[key]`, created empty when missing. */
function childTree(node: Tree, key: string): Tree {
  const existing = node[key];
  if (isPlainObject(existing)) return existing;
  const created: Tree = {};
  node[key] = created;
  return created;
}

// ---------------------------------------------------------------------------------------------
// Problems and suggestions

function show(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function problem(key: string, value: unknown, source: string, expected: string): ConfigProblem {
  const shown = value === undefined ? '' : ` = ${show(value)}`;
  return { key, value, source, expected, message: `${key}${shown} (${source}): expected ${expected}` };
}

function unknownKey(key: string, value: unknown, source: string, hint: string): ConfigProblem {
  return {
    key,
    value,
    source,
    expected: hint,
    message: `${key} = ${show(value)} (${source}): unknown key; ${hint}`,
  };
}

/** Levenshtein distance with adjacent transpositions (optimal string alignment). */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const row = d[i]!;
      let best = Math.min(d[i - 1]![j]! + 1, row[j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      }
      row[j] = best;
    }
  }
  return d[rows - 1]![cols - 1]!;
}

/** The candidate nearest to `word`, if near enough to be a plausible typo. */
function nearest(word: string, candidates: Iterable<string>): string | undefined {
  const w = word.toLowerCase();
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const distance = editDistance(w, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const limit = Math.max(2, Math.floor(w.length / 3));
  return best !== undefined && bestDistance <= limit ? best : undefined;
}

interface PathEntry {
  readonly path: string;
  readonly field: Field;
}

/** Every key of the schema, groups included, as `obs.a.b` (object-list items left out). */
const ALL_PATHS: readonly PathEntry[] = (() => {
  const out: PathEntry[] = [];
  const walk = (fields: Fields, path: string): void => {
    for (const [key, field] of Object.entries(fields)) {
      out.push({ path: `${path}.${key}`, field });
      if (field.kind === 'group') walk(field.fields, `${path}.${key}`);
    }
  };
  walk(OBS_SCHEMA.fields, 'obs');
  return out;
})();

const FIELD_BY_PATH = new Map(ALL_PATHS.map((e) => [e.path, e.field]));

/** Says what an unknown key under `parent` probably meant. */
function suggestKey(parent: string, key: string, siblings: Fields): string {
  const sibling = nearest(key, Object.keys(siblings));
  if (sibling !== undefined) return `did you mean ${parent}.${sibling}?`;
  // A known key in the wrong place: `obs.skip-stale-records` for `obs.kafka.skip-stale-records`.
  const last = key.includes('.') ? key.slice(key.lastIndexOf('.') + 1) : key;
  const elsewhere = ALL_PATHS.filter((e) => e.path.endsWith(`.${last}`)).map((e) => e.path);
  if (elsewhere.length > 0 && elsewhere.length <= 3) return `did you mean ${elsewhere.join(' or ')}?`;
  return `valid keys under ${parent}: ${Object.keys(siblings).join(', ')}`;
}

// ---------------------------------------------------------------------------------------------
// Values

function rangeText(min: number, max: number, unit: (n: number) => string = String): string {
  return `from ${unit(min)} to ${unit(max)}`;
}

/** The accepted form of a field, worded for error messages. */
export function expectedForm(field: LeafField): string {
  switch (field.kind) {
    case 'boolean':
      return 'true or false';
    case 'integer':
      return `a whole number ${rangeText(field.min, field.max)}`;
    case 'number':
      return `a number ${rangeText(field.min, field.max)}`;
    case 'duration':
      return `${DURATION_FORM}, ${rangeText(field.min, field.max, formatDuration)}`;
    case 'string':
      return field.form ?? 'text';
    case 'enum':
      return `one of ${field.values.join(', ')}`;
    case 'string-list':
      return `a list of ${field.form === undefined ? 'text items' : `items, each ${field.form}`} (a YAML list, comma-separated text or a JSON array)`;
    case 'string-map':
      return `a map of ${field.keyForm} to text (a YAML mapping, key=value pairs separated by commas, or a JSON object)`;
    case 'object-list':
      return 'a list of objects (a YAML list or a JSON array)';
  }
}

const INTEGER_TEXT = /^[+-]?\d+$/;
const NUMBER_TEXT = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

function checkNumber(raw: unknown, whole: boolean, min: number, max: number): number | undefined {
  let n: number;
  if (typeof raw === 'number') n = raw;
  else if (typeof raw === 'string' && (whole ? INTEGER_TEXT : NUMBER_TEXT).test(raw.trim()))
    n = Number(raw.trim());
  else return undefined;
  if (!Number.isFinite(n) || (whole && !Number.isSafeInteger(n))) return undefined;
  return n >= min && n <= max ? n : undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function checkList(field: Extract<LeafField, { kind: 'string-list' }>, raw: unknown): string[] | undefined {
  let items: unknown;
  if (typeof raw === 'string') {
    const t = raw.trim();
    items = t.startsWith('[')
      ? parseJson(t)
      : t === ''
        ? []
        : t
            .split(',')
            .map((s) => s.trim())
            .filter((s) => s !== '');
  } else {
    items = raw;
  }
  if (!Array.isArray(items)) return undefined;
  const out: string[] = [];
  for (const item of items) {
    if (typeof item !== 'string') return undefined;
    if (field.pattern !== undefined && !field.pattern.test(item)) return undefined;
    out.push(item);
  }
  return out;
}

function checkMap(
  field: Extract<LeafField, { kind: 'string-map' }>,
  raw: unknown,
): Record<string, string> | undefined {
  let entries: Array<[string, unknown]>;
  if (typeof raw === 'string') {
    const t = raw.trim();
    if (t.startsWith('{')) {
      const parsed = parseJson(t);
      if (!isPlainObject(parsed)) return undefined;
      entries = Object.entries(parsed);
    } else {
      entries = [];
      for (const pair of t.split(',')) {
        if (pair.trim() === '') continue;
        const eq = pair.indexOf('=');
        if (eq <= 0) return undefined;
        entries.push([pair.slice(0, eq).trim(), pair.slice(eq + 1).trim()]);
      }
    }
  } else if (isPlainObject(raw)) {
    entries = Object.entries(raw);
  } else {
    return undefined;
  }
  const out: Record<string, string> = {};
  for (const [key, value] of entries) {
    // YAML reads `x-synthetic: true` as a boolean; a header value is text either way.
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
      return undefined;
    if (key.trim() === '') return undefined;
    out[field.lowerCaseKeys === true ? key.trim().toLowerCase() : key.trim()] = String(value);
  }
  return out;
}

/** Validates and normalises one value. */
function checkLeaf(field: Exclude<LeafField, ObjectListField>, raw: unknown): Checked {
  const bad: Checked = { ok: false, expected: expectedForm(field) };
  const ok = (value: unknown): Checked => ({ ok: true, value });
  switch (field.kind) {
    case 'boolean': {
      if (typeof raw === 'boolean') return ok(raw);
      const t = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
      return t === 'true' ? ok(true) : t === 'false' ? ok(false) : bad;
    }
    case 'integer':
    case 'number': {
      const n = checkNumber(raw, field.kind === 'integer', field.min, field.max);
      return n === undefined ? bad : ok(n);
    }
    case 'duration': {
      const n = parseDurationMs(raw);
      return n === undefined || n < field.min || n > field.max ? bad : ok(n);
    }
    case 'string':
      if (typeof raw !== 'string' || (field.pattern !== undefined && !field.pattern.test(raw))) return bad;
      return ok(raw);
    case 'enum': {
      if (typeof raw !== 'string') return bad;
      // Relaxed like Spring's enum binding: case and `-`/`_` do not matter.
      const wanted = raw.trim().toUpperCase().replaceAll('-', '_');
      const match = field.values.find((v) => v.toUpperCase().replaceAll('-', '_') === wanted);
      return match === undefined ? bad : ok(match);
    }
    case 'string-list': {
      const list = checkList(field, raw);
      return list === undefined ? bad : ok(list);
    }
    case 'string-map': {
      const map = checkMap(field, raw);
      return map === undefined ? bad : ok(map);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Walking a source against the schema

function walkGroup(fields: Fields, raw: unknown, path: string, ctx: WalkContext, out: Tree): void {
  if (raw === undefined || raw === null) return;
  if (!isPlainObject(raw)) {
    ctx.problems.push(problem(path, raw, ctx.source(path), `a mapping of the keys of ${path}`));
    return;
  }
  for (const [key, value] of Object.entries(raw)) {
    const field = Object.hasOwn(fields, key) ? fields[key] : undefined;
    if (field === undefined) {
      const dot = key.indexOf('.');
      const head = dot > 0 ? key.slice(0, dot) : '';
      const headField = Object.hasOwn(fields, head) ? fields[head] : undefined;
      if (headField?.kind === 'group') {
        // A dotted key (`timeout-budget.default-budget: 5s`) is the nested form written on one line.
        walkGroup(
          headField.fields,
          { [key.slice(dot + 1)]: value },
          `${path}.${head}`,
          ctx,
          childTree(out, head),
        );
      } else if (!(ctx.allowScaffolding && path === 'obs' && key.startsWith('_'))) {
        const where = `${path}.${key}`;
        ctx.problems.push(unknownKey(where, value, ctx.source(where), suggestKey(path, key, fields)));
      }
      continue;
    }
    walkField(field, key, value, `${path}.${key}`, ctx, out);
  }
}

function walkField(
  field: Field,
  key: string,
  value: unknown,
  path: string,
  ctx: WalkContext,
  out: Tree,
): void {
  // `undefined` (code options only: YAML and the environment have no such value) means "not set".
  if (value === undefined) return;
  if (field.kind === 'group') {
    walkGroup(field.fields, value, path, ctx, childTree(out, key));
    return;
  }
  if (field.kind === 'object-list') {
    const items = walkObjectList(field, value, path, ctx);
    if (items !== undefined) {
      out[key] = items;
      ctx.origins.set(path, ctx.source(path));
    }
    return;
  }
  if (value === null || (value === '' && 'optional' in field)) {
    if ('optional' in field && field.optional === true) {
      out[key] = undefined;
      ctx.origins.set(path, ctx.source(path));
    } else {
      ctx.problems.push(problem(path, value, ctx.source(path), expectedForm(field)));
    }
    return;
  }
  const checked = checkLeaf(field, value);
  if (!checked.ok) {
    ctx.problems.push(problem(path, value, ctx.source(path), checked.expected));
    return;
  }
  out[key] =
    field.kind === 'string-map' && isPlainObject(out[key])
      ? { ...(out[key] as Tree), ...(checked.value as Tree) }
      : checked.value;
  ctx.origins.set(path, ctx.source(path));
}

function walkObjectList(
  field: ObjectListField,
  raw: unknown,
  path: string,
  ctx: WalkContext,
): Tree[] | undefined {
  const items = typeof raw === 'string' && raw.trim().startsWith('[') ? parseJson(raw.trim()) : raw;
  if (!Array.isArray(items)) {
    ctx.problems.push(problem(path, raw, ctx.source(path), expectedForm(field)));
    return undefined;
  }
  const before = ctx.problems.length;
  const out: Tree[] = [];
  items.forEach((item: unknown, i: number) => {
    const where = `${path}[${i}]`;
    const normalised: Tree = {};
    if (!isPlainObject(item)) {
      ctx.problems.push(
        problem(where, item, ctx.source(path), `an object with keys ${Object.keys(field.item).join(', ')}`),
      );
      return;
    }
    walkGroup(
      field.item,
      item,
      where,
      { ...ctx, source: () => ctx.source(path), origins: new Map() },
      normalised,
    );
    for (const required of field.required) {
      if (item[required] === undefined || item[required] === null) {
        ctx.problems.push(problem(`${where}.${required}`, undefined, ctx.source(path), 'a value (required)'));
      }
    }
    out.push({ ...defaultsOf(field.item), ...normalised });
  });
  return ctx.problems.length === before ? out : undefined;
}

function defaultsOf(fields: Fields): Tree {
  const out: Tree = {};
  for (const [key, field] of Object.entries(fields)) {
    out[key] = field.kind === 'group' ? defaultsOf(field.fields) : field.default;
  }
  return out;
}

function mergeInto(target: Tree, layer: Tree, fields: Fields): void {
  for (const [key, value] of Object.entries(layer)) {
    const field = fields[key];
    if (field === undefined) continue;
    if (field.kind === 'group') {
      mergeInto(target[key] as Tree, value as Tree, field.fields);
    } else if (field.kind === 'string-map') {
      target[key] = { ...(target[key] as Tree), ...(value as Tree) };
    } else {
      target[key] = value;
    }
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

function normalise(raw: unknown, ctx: WalkContext): Tree {
  const tree: Tree = {};
  walkGroup(OBS_SCHEMA.fields, raw, 'obs', ctx, tree);
  return tree;
}

// ---------------------------------------------------------------------------------------------
// The legacy key

interface LegacyUse {
  readonly value: unknown;
  readonly source: string;
  readonly superseded: boolean;
}

/**
 * Moves `runtime.mode` (nested or dotted) of one source to `enforcement.mode` of the same source,
 * unless that source also sets `enforcement.mode`, which then wins.
 * @returns the raw tree without the legacy key, and the use found (if any).
 */
function migrateLegacy(
  raw: unknown,
  source: string,
  problems: ConfigProblem[],
): { raw: unknown; use: LegacyUse | undefined } {
  if (!isPlainObject(raw)) return { raw, use: undefined };
  const hasNested = Object.hasOwn(raw, 'runtime');
  const hasDotted = Object.hasOwn(raw, 'runtime.mode');
  if (!hasNested && !hasDotted) return { raw, use: undefined };
  const copy: Tree = { ...raw };
  let value: unknown;
  if (hasNested) {
    const runtime = copy.runtime;
    delete copy.runtime;
    if (isPlainObject(runtime)) {
      for (const [key, v] of Object.entries(runtime)) {
        if (key === 'mode') value = v;
        else {
          const where = `obs.runtime.${key}`;
          problems.push(
            unknownKey(
              where,
              v,
              source,
              `obs.runtime holds only the deprecated mode; see ${LEGACY_MODE_KEY}`,
            ),
          );
        }
      }
    } else if (runtime !== null && runtime !== undefined) {
      problems.push(
        problem('obs.runtime', runtime, source, `a mapping with mode (deprecated: ${LEGACY_MODE_KEY})`),
      );
    }
  }
  if (hasDotted) {
    value = copy['runtime.mode'];
    delete copy['runtime.mode'];
  }
  if (value === undefined) return { raw: copy, use: undefined };
  if (typeof value === 'string' && value.trim().toUpperCase() === 'OFF') {
    problems.push(
      problem(
        LEGACY_MODE_KEY,
        value,
        source,
        `ENFORCING or DRY_RUN; the OFF mode was dropped, turn a feature off with obs.<feature>.enabled=false`,
      ),
    );
    return { raw: copy, use: undefined };
  }
  const enforcement = copy.enforcement;
  const superseded =
    Object.hasOwn(copy, 'enforcement.mode') ||
    (isPlainObject(enforcement) && Object.hasOwn(enforcement, 'mode'));
  if (!superseded) copy.enforcement = { ...(isPlainObject(enforcement) ? enforcement : {}), mode: value };
  return { raw: copy, use: { value, source, superseded } };
}

// ---------------------------------------------------------------------------------------------
// The environment

/** The environment variable of a key: `obs.timeout-budget.default-budget` → `OBS_TIMEOUT_BUDGET_DEFAULT_BUDGET`. */
export function envVariableOf(path: string): string {
  return `OBS_${path
    .replace(/^obs\./, '')
    .toUpperCase()
    .replace(/[.-]/g, '_')}`;
}

/** Every variable that sets a key, to the key and its field. */
export const ENV_VARIABLES: ReadonlyMap<string, { readonly path: string; readonly field: LeafField }> =
  (() => {
    const out = new Map<string, { path: string; field: LeafField }>();
    for (const { path, field } of ALL_PATHS) {
      if (field.kind === 'group') continue;
      const name = envVariableOf(path);
      const clash = out.get(name);
      if (clash !== undefined)
        throw new Error(`obs schema: ${path} and ${clash.path} share the variable ${name}`);
      out.set(name, { path, field });
    }
    return out;
  })();

const MAP_VARIABLES = [...ENV_VARIABLES].filter(([, v]) => v.field.kind === 'string-map');
const RESERVED_VARIABLES = new Set([OBS_PROFILE_VARIABLE, OBS_CONFIG_FILE_VARIABLE]);
/** Variables Kubernetes injects for a Service named `obs`. */
const SERVICE_LINK =
  /^OBS_(?:SERVICE_HOST|SERVICE_PORT(?:_\w+)?|PORT(?:_\d+_(?:TCP|UDP|SCTP)(?:_(?:PROTO|PORT|ADDR))?)?)$/;
const LEGACY_VARIABLE = 'OBS_RUNTIME_MODE';

function setPath(tree: Tree, path: string, value: unknown): void {
  const parts = path.split('.').slice(1);
  let node = tree;
  for (const part of parts.slice(0, -1)) node = childTree(node, part);
  node[parts[parts.length - 1]!] = value;
}

/** The raw tree the `OBS_*` variables describe, and which variable set which key. */
function readObsVariables(
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
      if (known.field.kind === 'string-map') {
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
    const near = nearest(upper, [...ENV_VARIABLES.keys(), ...RESERVED_VARIABLES]);
    const hint =
      near === undefined
        ? `no obs key has this variable; see src/obs/README.md for the list`
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
    const field = FIELD_BY_PATH.get(path);
    let whole: Record<string, string> = {};
    if (m.whole !== undefined && field?.kind === 'string-map') {
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

function readOtelSampling(env: Readonly<Record<string, string | undefined>>): Tree | undefined {
  const arg = env.OTEL_TRACES_SAMPLER_ARG;
  if (arg === undefined || arg.trim() === '') return undefined;
  const sampler = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase();
  if (sampler !== undefined && sampler !== '' && !RATIO_SAMPLERS.has(sampler)) return undefined;
  return { sampling: { probability: arg } };
}

// ---------------------------------------------------------------------------------------------
// Files

function readYamlFile(path: string, source: string, problems: ConfigProblem[], variable: string): unknown {
  let text: string;
  try {
    const info = statSync(path);
    if (!info.isFile()) throw new Error('not a regular file');
    if (info.size > MAX_CONFIG_FILE_BYTES) throw new Error(`larger than ${MAX_CONFIG_FILE_BYTES} bytes`);
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const reason =
      (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'it does not exist' : (error as Error).message;
    problems.push(problem(variable, path, 'environment', `a readable YAML file; ${reason}`));
    return undefined;
  }
  try {
    // loadAll: an empty (or comments-only) file is no document rather than an error.
    const documents = loadAll(text, { filename: path, schema: CORE_SCHEMA, maxAliases: MAX_YAML_ALIASES });
    if (documents.length > 1) {
      problems.push(problem(variable, path, source, `one YAML document, found ${documents.length}`));
      return undefined;
    }
    return documents[0];
  } catch (error) {
    const where =
      error instanceof YAMLException
        ? `line ${(error.mark?.line ?? 0) + 1}, column ${(error.mark?.column ?? 0) + 1}: ${error.reason}`
        : String(error);
    problems.push(problem(variable, path, source, `valid YAML; ${where}`));
    return undefined;
  }
}

/** The `obs:` mapping of a file; anything else at the top level is a problem. */
function obsSubtree(document: unknown, source: string, problems: ConfigProblem[]): unknown {
  if (document === undefined || document === null) return undefined;
  if (!isPlainObject(document)) {
    problems.push(problem('(top level)', document, source, 'a mapping with the key obs'));
    return undefined;
  }
  for (const [key, value] of Object.entries(document)) {
    if (key === 'obs' || key.startsWith('_')) continue;
    const hint = Object.hasOwn(OBS_SCHEMA.fields, key)
      ? `did you mean obs.${key}? (the file's settings go under a top-level obs: mapping)`
      : `the file holds a top-level obs: mapping only`;
    problems.push(unknownKey(key, value, source, hint));
  }
  return document.obs;
}

// ---------------------------------------------------------------------------------------------
// Effective form

function effectiveOf(fields: Fields, node: Tree): { [key: string]: JsonValue } {
  const out: { [key: string]: JsonValue } = {};
  for (const [key, field] of Object.entries(fields)) {
    out[key] = effectiveValue(field, node[key]);
  }
  return out;
}

function effectiveValue(field: Field, value: unknown): JsonValue {
  switch (field.kind) {
    case 'group':
      return effectiveOf(field.fields, value as Tree);
    case 'object-list':
      return (value as Tree[]).map((item) => effectiveOf(field.item, item));
    case 'duration':
      return value === undefined ? null : formatDuration(value as number);
    case 'string-map': {
      const map = value as Record<string, string>;
      return Object.fromEntries(
        Object.keys(map)
          .sort()
          .map((k) => [k, map[k] ?? '']),
      );
    }
    case 'string-list':
      return [...(value as string[])];
    default:
      return (value ?? null) as JsonValue;
  }
}

/** Whether `obs.a.b` names a map setting (whose object value is a value, not a subtree). */
export function isMapKey(path: string): boolean {
  return FIELD_BY_PATH.get(path)?.kind === 'string-map';
}

/** The leaves of an effective tree as `obs.a.b` → value, sorted, for the config-hash route. */
export function flattenEffective(effective: {
  readonly [key: string]: JsonValue;
}): Record<string, JsonValue> {
  return flattenTree(effective, 'obs', isMapKey);
}

// ---------------------------------------------------------------------------------------------
// Cross-key rules

function crossCheck(config: Tree, origins: Map<string, string>, problems: ConfigProblem[]): void {
  const budget = config['timeout-budget'] as Record<string, number>;
  const max = budget['maximum-budget'] ?? 0;
  for (const key of ['default-budget', 'minimum-budget'] as const) {
    const value = budget[key] ?? 0;
    if (value > max) {
      const path = `obs.timeout-budget.${key}`;
      problems.push(
        problem(
          path,
          formatDuration(value),
          origins.get(path) ?? 'defaults',
          `at most obs.timeout-budget.maximum-budget (${formatDuration(max)})`,
        ),
      );
    }
  }
  const objectives = (config.slo as Tree).objectives as Tree[];
  objectives.forEach((o, i) => {
    if (o.sli === 'latency' && o.threshold === undefined) {
      problems.push(
        problem(
          `obs.slo.objectives[${i}].threshold`,
          undefined,
          origins.get('obs.slo.objectives') ?? 'defaults',
          'a duration (required by a latency objective)',
        ),
      );
    }
  });
}

// ---------------------------------------------------------------------------------------------

/**
 * Resolves the `obs.*` configuration from the defaults, a preset, the file named by
 * `OBS_CONFIG_FILE`, the environment and code options (later wins).
 * @throws {ObsConfigError} `OBS_ERR_CONFIG` listing every problem of every source, one line each.
 */
export function loadObsConfig(input: LoadObsConfigInput = {}): ResolvedObsConfig {
  const env = input.env ?? {};
  const problems: ConfigProblem[] = [];
  const legacy: LegacyUse[] = [];

  const layer = (raw: unknown, source: (path: string) => string, allowScaffolding = false): Layer => {
    const origins = new Map<string, string>();
    const tree = normalise(raw, { source, problems, origins, allowScaffolding });
    return { tree, origins };
  };
  const withLegacy = (raw: unknown, source: string): unknown => {
    const migrated = migrateLegacy(raw, source, problems);
    if (migrated.use !== undefined) legacy.push(migrated.use);
    return migrated.raw;
  };

  // The file.
  const fileName = env[OBS_CONFIG_FILE_VARIABLE]?.trim();
  const configFile =
    fileName === undefined || fileName === '' ? undefined : resolve(input.cwd ?? process.cwd(), fileName);
  let fileLayer: Layer | undefined;
  if (configFile !== undefined) {
    const source = `file ${configFile}`;
    const document = readYamlFile(configFile, source, problems, OBS_CONFIG_FILE_VARIABLE);
    const raw = withLegacy(obsSubtree(document, source, problems), source);
    fileLayer = layer(raw, () => source, true);
    const mode = fileLayer.origins.get('obs.enforcement.mode');
    if (mode !== undefined && legacy.some((u) => u.source === source && !u.superseded)) {
      fileLayer.origins.set('obs.enforcement.mode', `${source} (as ${LEGACY_MODE_KEY})`);
    }
  }

  // The environment: OTEL_TRACES_SAMPLER_ARG first, then OBS_* on top of it.
  const otel = readOtelSampling(env);
  const otelLayer = otel === undefined ? undefined : layer(otel, () => 'env OTEL_TRACES_SAMPLER_ARG');
  const { raw: envRaw, variables } = readObsVariables(env, problems);
  const envTree = withLegacy(envRaw, `env ${variables.get(LEGACY_MODE_KEY) ?? LEGACY_VARIABLE}`);
  const envLayer = layer(envTree, (path) => {
    if (path === 'obs.enforcement.mode' && !variables.has(path) && variables.has(LEGACY_MODE_KEY)) {
      return `env ${variables.get(LEGACY_MODE_KEY)} (as ${LEGACY_MODE_KEY})`;
    }
    return `env ${variables.get(path) ?? [...variables].find(([p]) => path.startsWith(`${p}[`))?.[1] ?? 'OBS_*'}`;
  });

  // Code.
  const codeRaw = withLegacy(input.options, 'options');
  const codeLayer = layer(codeRaw, (path) =>
    path === 'obs.enforcement.mode' && legacy.some((u) => u.source === 'options' && !u.superseded)
      ? `options (as ${LEGACY_MODE_KEY})`
      : 'options',
  );

  // The preset, when auto-apply is on (as decided by the sources above it).
  const later = [codeLayer, envLayer, fileLayer].filter((l): l is Layer => l !== undefined);
  const autoApply = later
    .map((l) => (l.tree['profile-presets'] as Tree | undefined)?.['auto-apply'])
    .find((v) => v !== undefined) as boolean | undefined;
  const profileText = env[OBS_PROFILE_VARIABLE]?.trim().toLowerCase();
  let profileName: PresetProfile | undefined;
  if (profileText !== undefined && profileText !== '') {
    if ((PRESET_PROFILES as readonly string[]).includes(profileText))
      profileName = profileText as PresetProfile;
    else
      problems.push(
        problem(
          OBS_PROFILE_VARIABLE,
          env[OBS_PROFILE_VARIABLE],
          'environment',
          `one of ${PRESET_PROFILES.join(', ')}`,
        ),
      );
  }
  const warnings: string[] = [];
  let presetLayer: Layer | undefined;
  if (autoApply === true && profileName !== undefined) {
    const source = `preset ${profileName}`;
    const document = readYamlFile(
      fileURLToPath(presetFileUrl(profileName)),
      source,
      problems,
      `${source} file`,
    );
    presetLayer = layer(obsSubtree(document, source, problems), () => source);
  } else if (autoApply === true && profileText === undefined) {
    warnings.push(
      `obs.profile-presets.auto-apply is true but ${OBS_PROFILE_VARIABLE} is not set: no preset applied`,
    );
  }

  if (legacy.length > 0) {
    const uses = legacy
      .map(
        (u) =>
          `${show(u.value)} from ${u.source}${u.superseded ? ', ignored: obs.enforcement.mode is also set there' : ''}`,
      )
      .join('; ');
    warnings.unshift(
      `${LEGACY_MODE_KEY} is deprecated and will be removed in a future minor release; migrated to obs.enforcement.mode (${uses}). Rename it to obs.enforcement.mode.`,
    );
  }
  if (problems.length > 0) throw new ObsConfigError(problems);

  // Merge, later wins.
  const merged = defaultsOf(OBS_SCHEMA.fields);
  const origins = new Map<string, string>();
  for (const l of [presetLayer, fileLayer, otelLayer, envLayer, codeLayer]) {
    if (l === undefined) continue;
    mergeInto(merged, l.tree, OBS_SCHEMA.fields);
    for (const [path, source] of l.origins) origins.set(path, source);
  }
  const budget = merged['timeout-budget'] as Tree;
  if (budget['outbound-header'] === undefined) {
    budget['outbound-header'] = budget['inbound-header'];
    if (origins.has('obs.timeout-budget.inbound-header')) {
      origins.set('obs.timeout-budget.outbound-header', 'obs.timeout-budget.inbound-header');
    }
  }
  crossCheck(merged, origins, problems);
  if (problems.length > 0) throw new ObsConfigError(problems);

  const mode = (merged.enforcement as Tree).mode;
  if (profileName === 'canary' && presetLayer !== undefined && mode !== 'DRY_RUN') {
    warnings.push(
      `preset canary pins obs.enforcement.mode=DRY_RUN, but ${origins.get('obs.enforcement.mode')} sets ${String(mode)} and wins (later sources win)`,
    );
  }

  const config = deepFreeze(merged) as unknown as ObsConfig;
  const effective = deepFreeze(effectiveOf(OBS_SCHEMA.fields, merged));
  return {
    config,
    effective,
    hash: configHash(effective),
    origins: Object.freeze(Object.fromEntries([...origins].sort(([a], [b]) => (a < b ? -1 : 1)))),
    warnings,
    profile: { name: profileName, applied: presetLayer !== undefined },
    configFile,
  };
}
