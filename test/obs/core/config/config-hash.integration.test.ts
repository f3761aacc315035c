import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { flattenEffective } from '../../../../src/obs/core/config/config-effective.ts';
import { canonicalJson, configHash } from '../../../../src/obs/core/config/config-hash.ts';
import { createObs, loadObsConfig } from '../../../../src/obs/index.ts';
import { tempFile } from '../../helpers.ts';

const INDEX = new URL('../../../../src/obs/index.ts', import.meta.url).href;

/** The hash a separate Node process computes for an environment. */
function hashInChildProcess(env: Record<string, string>): string {
  const script = `import { loadObsConfig } from ${JSON.stringify(INDEX)};
process.stdout.write(loadObsConfig({ env: JSON.parse(process.env.OBS_TEST_ENV) }).hash);`;
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH ?? '', OBS_TEST_ENV: JSON.stringify(env) },
    encoding: 'utf8',
  });
}

test('config-hash – canonical JSON sorts keys at every depth and keeps list order', () => {
  assert.equal(canonicalJson({ b: 1, a: { d: [2, 1], c: null } }), '{"a":{"c":null,"d":[2,1]},"b":1}');
  assert.equal(canonicalJson({ a: 1, b: 2 }), canonicalJson({ b: 2, a: 1 }));
  assert.notEqual(canonicalJson([1, 2]), canonicalJson([2, 1]));
});

test('config-hash – a SHA-256 in hex of the resolved tree', () => {
  const { hash, effective } = loadObsConfig();
  assert.match(hash, /^[0-9a-f]{64}$/);
  assert.equal(hash, configHash(effective));
});

test('config-hash – the same configuration gives the same hash in two separate processes', () => {
  const env = { OBS_SHUTDOWN_DRAIN_TIMEOUT: '5s', OBS_ENFORCEMENT_MODE: 'DRY_RUN' };
  const first = hashInChildProcess(env);
  const second = hashInChildProcess(env);
  assert.match(first, /^[0-9a-f]{64}$/);
  assert.equal(first, second);
  assert.equal(first, loadObsConfig({ env }).hash, 'and in this process');
  assert.notEqual(first, hashInChildProcess({ ...env, OBS_SHUTDOWN_DRAIN_TIMEOUT: '6s' }));
});

test('config-hash – independent of key order and of how a value is written', () => {
  const a = tempFile(
    'a.yml',
    'obs:\n  wide-events:\n    max-attributes: 4\n  shutdown:\n    flush-timeout: 1s\n    drain-timeout: 3s\n',
  );
  const b = tempFile(
    'b.yml',
    'obs:\n  shutdown:\n    drain-timeout: 3000ms\n    flush-timeout: 1000\n  wide-events.max-attributes: "4"\n',
  );
  const fromA = loadObsConfig({ env: { OBS_CONFIG_FILE: a } }).hash;
  assert.equal(fromA, loadObsConfig({ env: { OBS_CONFIG_FILE: b } }).hash);
  assert.equal(
    fromA,
    loadObsConfig({
      options: {
        shutdown: { 'drain-timeout': '3s', 'flush-timeout': '1s' },
        'wide-events': { 'max-attributes': 4 },
      },
    }).hash,
    'and of the source that sets it',
  );
});

test('config-hash – a different value gives a different hash, a map entry included', () => {
  const base = loadObsConfig().hash;
  assert.notEqual(
    base,
    loadObsConfig({ options: { cardinality: { 'max-tag-values-per-meter': 999 } } }).hash,
  );
  assert.notEqual(
    base,
    loadObsConfig({ env: { OBS_TRACE_GUARD_ENABLED_WHEN_HEADER_NOT_EQUALS_X_PROBE: '1' } }).hash,
  );
  assert.notEqual(base, loadObsConfig({ options: { 'trace-guard': { 'exclude-path-prefixes': [] } } }).hash);
});

test('config-hash – covers the keys of every feature', () => {
  const { hash, effective, config } = loadObsConfig();
  const hashed = Object.keys(flattenEffective(effective));
  assert.ok(hashed.includes('obs.shutdown.drain-timeout'));
  assert.ok(hashed.includes('obs.context.request-id-header'));
  assert.ok(hashed.includes('obs.slo.enabled') && hashed.includes('obs.jobs.failure-grace-period'));
  assert.equal(config.jobs['failure-grace-period'], 3_600_000, 'still in the resolved tree');
  assert.equal(hash, configHash(effective));
});

test('config-hash – exported as obs_config_info{hash} 1', async () => {
  const registry = new Registry();
  const obs = createObs({ env: {}, registry });
  try {
    const text = await registry.metrics();
    assert.ok(text.includes(`obs_config_info{hash="${obs.resolved.hash}"} 1`), text);
    assert.match(text, /# TYPE obs_config_info gauge/);
  } finally {
    obs.close();
  }
  const off = new Registry();
  createObs({ env: { OBS_CONFIG_DRIFT_ENABLED: 'false' }, registry: off }).close();
  assert.doesNotMatch(await off.metrics(), /obs_config_info/);
});
