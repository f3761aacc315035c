/**
 * The default scenario file (`scenarios.yaml` in the working directory, ECHO_SCENARIO_FILE unset) is
 * optional: an invalid one is a warning, not a stop. Named in ECHO_SCENARIO_FILE, the same file stops
 * startup. The service runs as a child process in a working directory of the test's own.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { exitOf, until } from '../helpers/runtime.ts';

const MAIN = fileURLToPath(new URL('../../src/echo/main.ts', import.meta.url));
const INVALID = '- path: /orders\n  responses:\n    - status: 999\n';

function directoryWith(text: string): string {
  const cwd = mkdtempSync(join(tmpdir(), 'echo-default-scenarios-'));
  writeFileSync(join(cwd, 'scenarios.yaml'), text);
  return cwd;
}

function launch(cwd: string, env: Record<string, string> = {}) {
  return spawn(process.execPath, [MAIN], {
    cwd,
    env: { PATH: process.env['PATH'] ?? '', ECHO_DRAIN_DELAY: '0', PORT: '0', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30_000,
  });
}

test('default scenario file – an invalid scenarios.yaml in the working directory is a warning naming the problem; the service starts without scenarios', async (t) => {
  const cwd = directoryWith(INVALID);
  t.after(() => rmSync(cwd, { recursive: true, force: true }));
  const child = launch(cwd);
  const exited = exitOf(child);
  try {
    const records: Array<Record<string, unknown>> = [];
    const url = await new Promise<string>((resolve, reject) => {
      let buffered = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        buffered += chunk;
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) if (line.trim() !== '') records.push(JSON.parse(line));
        const listening = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(
          records.map((r) => String(r['msg'])).join('\n'),
        );
        if (listening) resolve(listening[1]!);
      });
      void exited.then((end) => reject(new Error(`exited with ${end.code}: ${end.stderr}`)));
    });
    const warning = records.find((r) => r['level'] === 40 && String(r['msg']).includes('scenarios.yaml'));
    assert.ok(warning, `a warning about scenarios.yaml: ${JSON.stringify(records)}`);
    assert.match(String(warning['msg']), /invalid and ignored until it is fixed: starting without scenarios/);
    assert.match(String(warning['problem']), /status/);
    assert.match(String(warning['problem']), /999/);
    assert.deepEqual(await (await fetch(`${url}/scenario`)).json(), []);
    assert.equal((await fetch(`${url}/orders`)).status, 200, 'served by the echo, not a scenario');
    // Fixed while the service runs: the file is watched, the fix is applied.
    writeFileSync(join(cwd, 'scenarios.yaml'), '- path: /orders\n  responses:\n    - status: 418\n');
    await until(
      'the fixed default file was applied',
      async () => (await fetch(`${url}/orders`)).status === 418,
      20_000,
      100,
    );
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
});

test('default scenario file – the same file named in ECHO_SCENARIO_FILE still stops startup with one line', async (t) => {
  const cwd = directoryWith(INVALID);
  t.after(() => rmSync(cwd, { recursive: true, force: true }));
  const result = await exitOf(launch(cwd, { ECHO_SCENARIO_FILE: 'scenarios.yaml' }));
  assert.equal(result.code, 1);
  const lines = result.stderr.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, result.stderr);
  assert.match(lines[0]!, /^echo-chaos: ECHO_SCENARIO_FILE="scenarios.yaml" is invalid: .*999/);
});

test('default scenario file – a valid scenarios.yaml in the working directory is loaded', async (t) => {
  const cwd = directoryWith('- path: /orders\n  responses:\n    - status: 503\n');
  t.after(() => rmSync(cwd, { recursive: true, force: true }));
  const child = launch(cwd);
  const exited = exitOf(child);
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk;
        const listening = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
        if (listening) resolve(listening[1]!);
      });
      void exited.then((end) => reject(new Error(`exited with ${end.code}: ${end.stderr}`)));
    });
    assert.equal((await fetch(`${url}/orders`)).status, 503);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
});
