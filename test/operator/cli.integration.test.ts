import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { OPERATOR_VARIABLES } from '../../src/operator/cli.ts';
import { OPERATOR_SETTINGS } from '../../src/operator/config.ts';
import { OTEL_VARIABLES } from '../../src/telemetry/otel-config.ts';
import { exitOf } from '../helpers/runtime.ts';

const MAIN = fileURLToPath(new URL('../../src/operator/main.ts', import.meta.url));

function run(args: string[]) {
  return exitOf(
    spawn(process.execPath, [MAIN, ...args], {
      env: { PATH: process.env['PATH'] ?? '' },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 15_000,
    }),
  );
}

test('operator cli – the help lists exactly the variables config.ts reads', () => {
  const source = readFileSync(new URL('../../src/operator/config.ts', import.meta.url), 'utf8');
  const read = new Set<string>();
  // The settings (setting('NAME', ...)) and the cluster's variables (env['NAME']).
  for (const m of source.matchAll(/env\['([A-Z_]+)'\]|setting\(\s*'([A-Z_]+)'/g)) read.add((m[1] ?? m[2])!);
  assert.ok(read.size >= 10, `found only ${[...read].join(', ')}`);
  assert.deepEqual(OPERATOR_VARIABLES.map((v) => v.name).sort(), [...read].sort());
  assert.deepEqual(
    Object.values(OPERATOR_SETTINGS)
      .map((s) => s.env)
      .sort(),
    [...read].filter((name) => !name.startsWith('KUBE')).sort(),
  );
});

test('operator cli – --help prints every variable and exits 0 without a cluster', async () => {
  const result = await run(['--help']);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^Usage: echo-chaos-operator/m);
  for (const v of OPERATOR_VARIABLES) assert.match(result.stdout, new RegExp(`^  ${v.name}$`, 'm'));
  // The OTEL_* it reads for its traces; not the metrics exporter (it serves no OpenTelemetry meters).
  for (const v of OTEL_VARIABLES) {
    const listed = new RegExp(`^  ${v.name}$`, 'm').test(result.stdout);
    assert.equal(listed, v.name !== 'OTEL_METRICS_EXPORTER', v.name);
  }
  assert.doesNotMatch(result.stdout, /\.;|;;|\.\./, 'no doubled punctuation');
});

test('operator cli – an unknown argument is a usage error with one line (exit 2)', async () => {
  const result = await run(['--namespace=x']);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /^echo-chaos-operator: unexpected argument "--namespace=x"/);
});
