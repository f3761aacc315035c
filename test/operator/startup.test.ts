import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { exitOf } from '../helpers/runtime.ts';

const MAIN = new URL('../../src/operator/main.ts', import.meta.url).pathname;

/** Starts the operator with only `env` (no cluster is needed: settings are read first). */
async function run(env: Record<string, string>) {
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const result = await exitOf(child);
  const lines = result.stderr.split('\n').filter((l) => l !== '');
  return { ...result, lines };
}

test('echo-chaos-operator – a bad setting stops startup with one line naming it, the value and what was expected', async () => {
  const result = await run({ PORT: 'eighty', LEASE_DURATION_SECONDS: '0' });
  assert.equal(result.code, 1);
  assert.equal(result.lines.length, 1, result.stderr);
  assert.match(result.lines[0]!, /^echo-chaos-operator: .*PORT must be an integer >= 0, got "eighty"/);
  assert.match(result.lines[0]!, /LEASE_DURATION_SECONDS must be an integer >= 1, got "0"/);
});

test('echo-chaos-operator – a typo in an OBS_* variable stops startup, naming the nearest key', async () => {
  const result = await run({ OBS_CARDINALTY_ENABLED: 'false' });
  assert.equal(result.code, 1);
  assert.equal(result.lines.length, 1, result.stderr);
  assert.match(
    result.lines[0]!,
    /^echo-chaos-operator: OBS_CARDINALTY_ENABLED .*did you mean OBS_CARDINALITY_ENABLED/,
  );
});
