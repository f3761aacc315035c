import assert from 'node:assert/strict';
import { test } from 'node:test';
import { flattenEffective } from '../../src/obs/config-effective.ts';
import { ENV_VARIABLES } from '../../src/obs/config-env.ts';
import { OBS_SCHEMA } from '../../src/obs/config-schema.ts';
import { FEATURES } from '../../src/obs/features.ts';
import { loadObsConfig, type ObsConfigInput, PRESET_PROFILES } from '../../src/obs/index.ts';
import { problemsOf, tempFile } from './helpers.ts';

/** The features with no code yet. Building one moves it out of this list (and flips its status). */
const PLANNED = ['dependencies', 'resilience', 'jobs', 'db', 'cache', 'feature-flags', 'profiling'];

const yaml = (text: string) => ({ OBS_CONFIG_FILE: tempFile('obs.yml', text) });
const reason = (feature: string) => `the ${feature} feature is not built yet (planned); remove the setting`;

test('features – exactly the features without code are planned; each has a subtree of the schema', () => {
  assert.deepEqual(
    FEATURES.filter((f) => f.status === 'planned').map((f) => f.key),
    PLANNED,
  );
  for (const key of PLANNED) {
    const group = OBS_SCHEMA.fields[key as keyof typeof OBS_SCHEMA.fields];
    assert.equal(group?.kind, 'group', `obs.${key} documents what will come`);
  }
});

test('features – a key of a planned feature stops startup, from the environment, a file or code', () => {
  const env = {
    ...yaml(['obs:', '  jobs.health-indicator-enabled: false'].join('\n')),
    OBS_DEPENDENCIES_MAP: 'api.example.com=payments',
    OBS_DB_ENABLED_WHEN_HEADER_NOT_EQUALS_X_SYNTHETIC: 'true',
  };
  const options = {
    cache: { enabled: true },
    profiling: { 'pyroscope-url': null },
  } as unknown as ObsConfigInput;
  const file = env.OBS_CONFIG_FILE;
  assert.deepEqual(
    problemsOf({ env, options }).map((p) => p.message),
    [
      `obs.jobs.health-indicator-enabled = false (file ${file}): ${reason('jobs')}`,
      `obs.db.enabled-when.header-not-equals = {"x-synthetic":"true"} (env OBS_DB_ENABLED_WHEN_HEADER_NOT_EQUALS_X_SYNTHETIC): ${reason('db')}`,
      `obs.dependencies.map = "api.example.com=payments" (env OBS_DEPENDENCIES_MAP): ${reason('dependencies')}`,
      `obs.cache.enabled = true (options): ${reason('cache')}`,
      `obs.profiling.pyroscope-url = null (options): ${reason('profiling')}`,
    ],
  );
});

test('features – every key of every planned feature is refused through its variable', () => {
  let refused = 0;
  const features = new Set<string>();
  for (const [name, { path, field }] of ENV_VARIABLES) {
    const feature = PLANNED.find((key) => path.startsWith(`obs.${key}.`));
    if (feature === undefined) continue;
    const value = field.kind === 'object-list' ? '[]' : field.kind === 'string-map' ? 'a=b' : '1';
    const [problem, ...more] = problemsOf({ env: { [name]: value } });
    assert.equal(problem?.key, path);
    assert.equal(problem?.expected, reason(feature), path);
    assert.deepEqual(more, [], path);
    refused++;
    features.add(feature);
  }
  // every planned feature has variables, each one checked
  assert.deepEqual([...features].sort(), [...PLANNED].sort());
  assert.ok(refused > PLANNED.length, `${refused} variables checked`);
});

test('features – an unknown key under a planned feature is refused as planned, not offered a planned key', () => {
  const [inFile] = problemsOf({ env: yaml('obs:\n  db:\n    slow-query-treshold: 1s\n') });
  assert.equal(inFile?.key, 'obs.db.slow-query-treshold');
  assert.match(inFile?.message ?? '', /the db feature is not built yet \(planned\)/);
  const [variable] = problemsOf({ env: { OBS_DB_SLOW_QUERY_TRESHOLD: '1s' } });
  assert.match(variable?.message ?? '', /unknown variable/);
  assert.doesNotMatch(variable?.expected ?? '', /OBS_DB_/, 'a planned variable is never suggested');
  const [top] = problemsOf({ options: { zzz: 1 } as ObsConfigInput });
  assert.match(
    top?.message ?? '',
    /valid keys under obs: cardinality, timeout-budget, context, trace-guard, logging/,
  );
  assert.doesNotMatch(top?.message ?? '', /dependencies|jobs/);
});

test('features – context propagation is built: both its keys may be set', () => {
  const { config, effective, origins } = loadObsConfig({
    env: { OBS_CONTEXT_REQUEST_ID_HEADER: 'X-Correlation-ID', OBS_CONTEXT_ENABLED: 'false' },
  });
  assert.equal(config.context['request-id-header'], 'X-Correlation-ID');
  assert.equal(config.context.enabled, false);
  assert.deepEqual(effective.context, { enabled: false, 'request-id-header': 'X-Correlation-ID' });
  assert.equal(origins['obs.context.request-id-header'], 'env OBS_CONTEXT_REQUEST_ID_HEADER');
  const [typo] = problemsOf({ options: { context: { 'request-id-heder': 'X' } } as ObsConfigInput });
  assert.match(typo?.message ?? '', /unknown key; did you mean obs\.context\.request-id-header\?/);
});

test('features – the effective configuration and its hash hold the keys of built features only', () => {
  const { effective } = loadObsConfig();
  const keys = Object.keys(flattenEffective(effective));
  const planned = keys.filter((k) => PLANNED.some((p) => k.startsWith(`obs.${p}.`)));
  assert.deepEqual(planned, []);
  assert.ok(keys.includes('obs.cardinality.enabled') && keys.includes('obs.diagnostics.top-offenders'));
  for (const key of PLANNED) assert.ok(!(key in effective), key);
});

test('features – the shipped presets set no key of a planned feature', () => {
  for (const profile of PRESET_PROFILES) {
    const { origins, profile: applied } = loadObsConfig({
      env: { OBS_PROFILE: profile, OBS_PROFILE_PRESETS_AUTO_APPLY: 'true' },
    });
    assert.deepEqual(applied, { name: profile, applied: true });
    const fromPreset = Object.entries(origins).filter(([, source]) => source === `preset ${profile}`);
    assert.ok(fromPreset.length > 0, `preset ${profile} sets something`);
    for (const [key] of fromPreset) {
      assert.ok(!PLANNED.some((p) => key.startsWith(`obs.${p}.`)), `preset ${profile} sets ${key}`);
    }
  }
});
