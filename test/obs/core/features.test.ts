import assert from 'node:assert/strict';
import { test } from 'node:test';
import { flattenEffective } from '../../../src/obs/core/config/config-effective.ts';
import { isGroup } from '../../../src/obs/core/config/config-fields.ts';
import { OBS_SCHEMA } from '../../../src/obs/core/config/config-schema.ts';
import { FEATURES } from '../../../src/obs/core/features.ts';
import { loadObsConfig, type ObsConfigInput } from '../../../src/obs/index.ts';
import { problemsOf, tempFile } from '../helpers.ts';

const yaml = (text: string) => ({ OBS_CONFIG_FILE: tempFile('obs.yml', text) });

test('features – every feature of the seed is built; each has a subtree of the schema', () => {
  assert.deepEqual(
    FEATURES.filter((f) => f.status !== 'built').map((f) => f.key),
    [],
    'no obs.* key is configuration without behaviour',
  );
  for (const feature of FEATURES.filter((f) => f.key !== 'config-validation')) {
    const group = OBS_SCHEMA.properties[feature.key as keyof typeof OBS_SCHEMA.properties];
    assert.ok(group !== undefined && isGroup(group), `obs.${feature.key}`);
  }
});

test('features – the effective configuration and its hash hold every feature’s keys', () => {
  const { effective } = loadObsConfig();
  for (const feature of FEATURES.filter((f) => f.key !== 'config-validation')) {
    assert.ok(feature.key in effective, feature.key);
  }
  const keys = Object.keys(flattenEffective(effective));
  assert.ok(keys.includes('obs.slo.enabled') && keys.includes('obs.dependencies.health.window'));
});

test('features – a key set in a file, a variable or code reaches the resolved configuration', () => {
  const { config, origins } = loadObsConfig({
    env: { ...yaml('obs:\n  jobs:\n    failure-grace-period: 2m\n'), OBS_DB_N_PLUS_ONE_THRESHOLD: '7' },
    options: { cache: { enabled: true } } as ObsConfigInput,
  });
  assert.equal(config.jobs['failure-grace-period'], 120_000);
  assert.equal(config.db['n-plus-one-threshold'], 7);
  assert.equal(config.cache.enabled, true);
  assert.equal(origins['obs.db.n-plus-one-threshold'], 'env OBS_DB_N_PLUS_ONE_THRESHOLD');
  const [typo] = problemsOf({ env: yaml('obs:\n  jobs:\n    failure-grace-perod: 1h\n') });
  assert.match(typo?.message ?? '', /unknown key; did you mean obs\.jobs\.failure-grace-period\?/);
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
