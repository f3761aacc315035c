/**
 * Resolves the `obs.*` configuration from its sources, later wins:
 *
 * 1. the defaults of {@link OBS_SCHEMA}, then the application's own (`defaults`: the echo service
 *    declares its SLO objectives there);
 * 2. a shipped preset (`presets/application-obs-<profile>.yml`), only when
 *    `obs.profile-presets.auto-apply=true`, for the profile named by `OBS_PROFILE`;
 * 3. the YAML file named by `OBS_CONFIG_FILE` (a top-level `obs:` mapping);
 * 4. the environment: `OTEL_TRACES_SAMPLER_ARG` (for `obs.sampling.probability`), then `OBS_*`
 *    variables in relaxed form (`OBS_SHUTDOWN_DRAIN_TIMEOUT=20s`);
 * 5. options in code (the same shape as the file's `obs:` mapping).
 *
 * {@link loadObsConfig} is a pure function of what it is given: it reads no `process.env`, only the
 * file the given environment names (and the shipped presets). Every problem of every source is
 * collected and thrown at once as an {@link ObsConfigError}, one line each. A key of a planned
 * feature (`features.ts`) set by any source is such a problem.
 *
 * The environment variables, in full: see `config-env.ts`.
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Value } from '@sinclair/typebox/value';
import { formatDuration } from '../duration.ts';
import { type ConfigProblem, ObsConfigError } from '../errors.ts';
import { FEATURES, plannedFeatureOf } from '../features.ts';
import { effectiveOf } from './config-effective.ts';
import {
  LEGACY_VARIABLE,
  OBS_CONFIG_FILE_VARIABLE,
  OBS_PROFILE_VARIABLE,
  readObsVariables,
  readOtelSampling,
} from './config-env.ts';
import { obsSubtree, presetFileUrl, readYamlFile } from './config-file.ts';
import { configHash, type JsonValue } from './config-hash.ts';
import { LEGACY_MODE_KEY, type LegacyUse, migrateLegacy } from './config-legacy.ts';
import { problem, show } from './config-problems.ts';
import {
  OBS_SCHEMA,
  type ObsConfig,
  type ObsConfigInput,
  PRESET_PROFILES,
  type PresetProfile,
} from './config-schema.ts';
import { isPlainObject, type Tree } from './config-values.ts';
import { deepFreeze, defaultsOf, mergeInto, normalise } from './config-walk.ts';

/** What {@link loadObsConfig} reads. */
export interface LoadObsConfigInput {
  /** The environment (default: empty). Pass `process.env` to read the real one. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Options in code; they win over every other source. */
  readonly options?: ObsConfigInput;
  /**
   * The application's own defaults: above obs's defaults, below every other source (a preset, the
   * file, the environment, code options). The echo service declares its SLO objectives here.
   */
  readonly defaults?: ObsConfigInput;
  /** Resolves a relative `OBS_CONFIG_FILE`; default `process.cwd()`. */
  readonly cwd?: string;
}

/** The outcome of {@link loadObsConfig}. */
export interface ResolvedObsConfig {
  /**
   * The resolved tree (frozen). Durations are milliseconds. A planned feature's subtree holds the
   * schema's defaults, with `enabled: false`.
   */
  readonly config: ObsConfig;
  /**
   * The same tree as JSON for people and for hashing: durations as text (`2s`), unset values `null`,
   * keys of planned features left out.
   */
  readonly effective: { readonly [key: string]: JsonValue };
  /** Hex SHA-256 of the canonical JSON of {@link effective}: it covers the keys of built features only. */
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

interface Layer {
  readonly tree: Tree;
  readonly origins: Map<string, string>;
}

// ---------------------------------------------------------------------------------------------
// Cross-key rules

/**
 * The rules between keys: the budgets within the maximum; each SLO objective with a target below 1,
 * a threshold when it is a latency one (and no `le` matcher), a name of its own; at most
 * {@link MAX_SLO_OBJECTIVES} objectives.
 */
export function crossCheck(config: Tree, origins: Map<string, string>, problems: ConfigProblem[]): void {
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
  const source = origins.get('obs.slo.objectives') ?? 'defaults';
  if (objectives.length > MAX_SLO_OBJECTIVES) {
    problems.push(
      problem(
        'obs.slo.objectives',
        `${objectives.length} objectives`,
        source,
        `at most ${MAX_SLO_OBJECTIVES}`,
      ),
    );
  }
  const names = new Set<string>();
  objectives.forEach((o, i) => {
    const at = `obs.slo.objectives[${i}]`;
    if (o.sli === 'latency' && o.threshold === undefined) {
      problems.push(
        problem(`${at}.threshold`, undefined, source, 'a duration (required by a latency objective)'),
      );
    }
    if (o.sli === 'latency' && typeof o.threshold === 'number' && o.threshold <= 0) {
      problems.push(problem(`${at}.threshold`, formatDuration(o.threshold), source, 'a duration above 0'));
    }
    const target = o.target as number;
    if (!(target > 0 && target < 1)) {
      problems.push(
        problem(
          `${at}.target`,
          target,
          source,
          'a number above 0 and below 1 (1 leaves no error budget, 0 sets no objective)',
        ),
      );
    }
    // `-` and `_` name the same rules (`slo:a_b:...`) and alerts (`AB...`): the names must differ after it.
    const key = String(o.name).toLowerCase().replaceAll('-', '_').replaceAll('_', '');
    if (names.has(key)) {
      problems.push(
        problem(`${at}.name`, o.name, source, 'a name no other objective has (ignoring case, - and _)'),
      );
    }
    names.add(key);
    if (typeof o.filter === 'string' && o.sli === 'latency' && /(?:^|[\s,])le\s*[=!]/.test(o.filter)) {
      problems.push(problem(`${at}.filter`, o.filter, source, 'matchers without le (the threshold sets it)'));
    }
  });
}

/** Whether a merged tree fits the whole schema: it is then an {@link ObsConfig}. */
const fitsSchema = (tree: Tree): tree is Tree & ObsConfig => Value.Check(OBS_SCHEMA, tree);

/** Most objectives `obs.slo.objectives` may declare. */
export const MAX_SLO_OBJECTIVES = 50;

/**
 * Resolves the `obs.*` configuration from the defaults, the application's defaults, a preset, the
 * file named by `OBS_CONFIG_FILE`, the environment and code options (later wins).
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

  // The application's defaults.
  const appLayer =
    input.defaults === undefined ? undefined : layer(input.defaults, () => 'application defaults');

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
  const merged = defaultsOf(OBS_SCHEMA.properties);
  const origins = new Map<string, string>();
  for (const l of [appLayer, presetLayer, fileLayer, otelLayer, envLayer, codeLayer]) {
    if (l === undefined) continue;
    mergeInto(merged, l.tree, OBS_SCHEMA.properties);
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
  // A planned feature has no code: its `enabled` reads false, whatever the schema's default says.
  for (const feature of FEATURES) {
    const group = merged[feature.key];
    if (isPlainObject(group) && 'enabled' in group && plannedFeatureOf(`obs.${feature.key}.enabled`)) {
      group.enabled = false;
    }
  }

  const mode = (merged.enforcement as Tree).mode;
  if (profileName === 'canary' && presetLayer !== undefined && mode !== 'DRY_RUN') {
    warnings.push(
      `preset canary pins obs.enforcement.mode=DRY_RUN, but ${origins.get('obs.enforcement.mode')} sets ${String(mode)} and wins (later sources win)`,
    );
  }

  // Every source was checked key by key; the whole tree is checked once more, and so typed.
  if (!fitsSchema(merged))
    throw new TypeError('obs: the resolved configuration does not fit OBS_SCHEMA (a bug)');
  const config: ObsConfig = deepFreeze(merged);
  const effective = deepFreeze(effectiveOf(OBS_SCHEMA.properties, merged));
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
