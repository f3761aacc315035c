import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startKubeApi } from '../helpers/kube-api.ts';
import { eventually, exitOf } from '../helpers/runtime.ts';

const MAIN = new URL('../../src/operator/main.ts', import.meta.url).pathname;

/**
 * Starts the operator with only `env`, and a KUBECONFIG that names a cluster source (the file is
 * read only once every setting is valid, so a bad setting stops startup before it).
 */
async function run(env: Record<string, string>) {
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env['PATH'] ?? '', KUBECONFIG: '/nonexistent/kubeconfig', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const result = await exitOf(child);
  const lines = result.stderr.split('\n').filter((l) => l !== '');
  return { ...result, lines };
}

test('echo-chaos-operator – a bad setting stops startup with one line each, naming it, the value and what was expected', async () => {
  const result = await run({ PORT: 'eighty', LEASE_DURATION_SECONDS: '0' });
  assert.equal(result.code, 1);
  assert.deepEqual(result.lines, [
    'echo-chaos-operator: LEASE_DURATION_SECONDS="0" is invalid: expected integer >= 1',
    'echo-chaos-operator: PORT="eighty" is invalid: expected integer 0-65535',
  ]);
});

test('echo-chaos-operator – a bad OPERATOR_RESYNC_PERIOD stops startup with one line', async () => {
  const result = await run({ OPERATOR_RESYNC_PERIOD: '100ms' });
  assert.equal(result.code, 1);
  assert.deepEqual(result.lines, [
    'echo-chaos-operator: OPERATOR_RESYNC_PERIOD="100ms" is invalid: expected a duration of at least 1s such as 30s, 5m or 1h30m (a bare number is milliseconds)',
  ]);
});

test('echo-chaos-operator – every problem at once: its settings, obs, OpenTelemetry and the cluster, one line each', async () => {
  const result = await run({
    WORKERS: '0',
    OBS_SHUTDOWN_ENABLED: 'maybe',
    OTEL_TRACES_EXPORTER: 'zipkin',
    KUBECONFIG: '',
    HOME: '/nonexistent-home',
  });
  assert.equal(result.code, 1);
  assert.equal(result.lines.length, 4, result.stderr);
  assert.match(result.lines[0]!, /^echo-chaos-operator: WORKERS="0" is invalid/);
  assert.match(result.lines[1]!, /^echo-chaos-operator: obs\.shutdown\.enabled = "maybe"/);
  assert.match(result.lines[2]!, /^echo-chaos-operator: no kubeconfig or in-cluster config was found/);
  assert.match(result.lines[3]!, /^echo-chaos-operator: OTEL_TRACES_EXPORTER="zipkin" is invalid/);
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

test('echo-chaos-operator – without a cluster (no KUBECONFIG, no ~/.kube/config, not in a pod) it stops with one line', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'operator-home-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  // Before the fix this ran forever, logging `HTTP protocol is not allowed when skipTLSVerify is not set`.
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env['PATH'] ?? '', HOME: home, PORT: '0', HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30_000,
  });
  const result = await exitOf(child);
  const lines = result.stderr.split('\n').filter((l) => l !== '');
  assert.equal(result.signal, null, `it did not stop by itself: ${result.stdout.slice(0, 2000)}`);
  assert.equal(result.code, 1);
  assert.equal(lines.length, 1, result.stderr);
  assert.match(lines[0]!, /^echo-chaos-operator: .*no kubeconfig or in-cluster config was found/);
  assert.ok(lines[0]!.includes(JSON.stringify(join(home, '.kube', 'config'))), lines[0]);
  assert.match(lines[0]!, /KUBECONFIG is unset/);
  assert.match(lines[0]!, /KUBERNETES_SERVICE_HOST is unset/);
  assert.doesNotMatch(result.stdout + result.stderr, /skipTLSVerify/);
});

test('echo-chaos-operator – ~/.kube/config is found when KUBECONFIG is unset', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'operator-home-'));
  const api = await startKubeApi();
  t.after(async () => {
    await api.close();
    rmSync(home, { recursive: true, force: true });
  });
  mkdirSync(join(home, '.kube'));
  writeFileSync(join(home, '.kube', 'config'), api.kubeconfigFile());
  const watching = () => (api.requests.get('WATCH echoscenarios') ?? 0) > 0;
  const { out, result } = await firstLogLine({ HOME: home, WATCH_NAMESPACE: 'default' }, watching);
  assert.match(out, /"msg":"operator listening"/, result);
  assert.ok(watching(), `it watches the cluster of ~/.kube/config: ${result}`);
});

/**
 * Starts the operator with `env` (plus PATH, PORT 0, 127.0.0.1), waits for its "operator listening"
 * line (and `until`, for at most 10 s), stops it with SIGTERM; returns the first line of its log and everything it wrote.
 */
async function firstLogLine(env: Record<string, string>, until: () => boolean = () => true) {
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env['PATH'] ?? '', PORT: '0', HOST: '127.0.0.1', POD_NAME: 'startup-test', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30_000,
  });
  const exited = exitOf(child);
  let out = '';
  await new Promise<void>((resolve) => {
    const onData = (chunk: Buffer) => {
      out += chunk;
      if (out.includes('"msg":"operator listening"')) {
        child.stdout.off('data', onData);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.once('exit', () => resolve());
  });
  await eventually(until, 10_000);
  child.kill('SIGTERM');
  const end = await exited;
  const result = `${out}${end.stdout}${end.stderr}`;
  const first = JSON.parse(out.split('\n')[0] || '{}') as Record<string, unknown>;
  return { first, out, result };
}

test('echo-chaos-operator – logs ISO 8601 UTC times, as the echo service does (not epoch milliseconds)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'operator-log-'));
  const api = await startKubeApi();
  t.after(async () => {
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  });
  writeFileSync(join(dir, 'config'), api.kubeconfigFile());
  const before = Date.now();
  const { out, result } = await firstLogLine({ KUBECONFIG: join(dir, 'config'), WATCH_NAMESPACE: 'default' });
  const records = out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.ok(
    records.some((r) => r['msg'] === 'operator listening'),
    result,
  );
  for (const record of records) {
    assert.equal(typeof record['time'], 'string', `time is not an ISO string: ${JSON.stringify(record)}`);
    assert.match(record['time'] as string, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    const at = Date.parse(record['time'] as string);
    assert.ok(at >= before - 1000 && at <= Date.now() + 1000, `${record['time']} is not now`);
  }
});

test('echo-chaos-operator – a KUBECONFIG that does not exist, or names a plain-HTTP server without skipping TLS checks, stops with one line', async (t) => {
  const missing = await run({ KUBECONFIG: '/nonexistent/kubeconfig', PORT: '0', HOST: '127.0.0.1' });
  assert.equal(missing.code, 1, missing.stderr);
  assert.equal(missing.lines.length, 1, missing.stderr);
  assert.match(
    missing.lines[0]!,
    /^echo-chaos-operator: cannot use the cluster from KUBECONFIG="\/nonexistent\/kubeconfig": .*ENOENT/,
  );

  const dir = mkdtempSync(join(tmpdir(), 'operator-kubeconfig-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'config');
  writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]',
      'users: [{name: u, user: {token: t}}]',
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x',
      '',
    ].join('\n'),
  );
  const plain = await run({ KUBECONFIG: file, PORT: '0', HOST: '127.0.0.1' });
  assert.equal(plain.code, 1, plain.stderr);
  assert.equal(plain.lines.length, 1, plain.stderr);
  assert.match(
    plain.lines[0]!,
    /the server http:\/\/127\.0\.0\.1:1 is plain HTTP: .*insecure-skip-tls-verify: true/,
  );
});
