import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startEcho } from '../helpers/echo-server.ts';
import { type KubeApi, startKubeApi } from '../helpers/kube-api.ts';
import { until } from './fixture.ts';

const MAIN = new URL('../../src/operator/main.ts', import.meta.url).pathname;

let api: KubeApi;
let dir: string;
before(async () => {
  api = await startKubeApi();
  dir = await mkdtemp(join(tmpdir(), 'operator-main-'));
});
after(async () => {
  await api.close();
  await rm(dir, { recursive: true, force: true });
});

/** The operator's main, as its image runs it, against the test API server; its log lines parsed. */
function runOperator(kubeconfig: string, env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env['PATH'] ?? '',
      KUBECONFIG: kubeconfig,
      PORT: '0',
      HOST: '127.0.0.1',
      POD_NAME: 'main-test',
      WATCH_NAMESPACE: 'default',
      LEASE_DURATION_SECONDS: '2',
      LEASE_RETRY_INTERVAL_MS: '100',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Array<Record<string, unknown>> = [];
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    for (const line of chunk.split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line));
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, lines, exited, stderr: () => err };
}

test('echo-chaos-operator – runs from KUBECONFIG (plain http, skipTLSVerify), pushes, and drains on SIGTERM', async () => {
  const kubeconfig = join(dir, 'config');
  await writeFile(kubeconfig, api.kubeconfigFile());
  const echo = await startEcho();
  api.create('pods', {
    metadata: { name: 'echo-0', namespace: 'default', labels: { app: 'echo' } },
    spec: { containers: [{ name: 'echo', ports: [{ name: 'http', containerPort: echo.port }] }] },
    status: { phase: 'Running', podIP: '127.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] },
  });
  api.create('echoscenarios', {
    metadata: { name: 'one', namespace: 'default' },
    spec: {
      target: { selector: { matchLabels: { app: 'echo' } }, port: 'http' },
      path: '/one',
      responses: [{ status: 503 }],
    },
  });
  const { child, lines, exited, stderr } = runOperator(kubeconfig);
  try {
    await until('listening', () => lines.some((l) => l['msg'] === 'operator listening'), 15_000);
    const port = lines.find((l) => l['msg'] === 'operator listening')!['port'] as number;
    await until('ready', async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200, 5000);
    await until(
      'pushed',
      async () => ((await (await fetch(`${echo.url}/scenario`)).json()) as unknown[]).length === 1,
      5000,
    );
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    assert.match(metrics, /echo_operator_leader 1/);
    // One registry with obs's series: the config hash, the enforcement mode, the firewall's counter.
    assert.match(metrics, /^obs_config_info\{hash="[0-9a-f]{64}"\} 1$/m);
    assert.match(metrics, /^obs_enforcement_mode\{mode="ENFORCING"\} 1$/m);
    assert.match(metrics, /^# TYPE obs_cardinality_overflow_total counter$/m);
    assert.match(metrics, /^process_cpu_user_seconds_total /m);
    const holder = () =>
      (api.get('leases', 'default', 'echo-chaos-operator')?.spec as { holderIdentity?: string } | undefined)
        ?.holderIdentity;
    assert.equal(holder(), 'main-test');
    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr());
    const drained = lines.find((l) => l['msg'] === 'drained');
    assert.ok(drained, 'a drained line');
    // Without OpenTelemetry nothing is flushed, and the line says so.
    const flush = drained['flush'] as { ok: boolean; durationMs: number; hooks: Record<string, unknown> };
    assert.equal(flush.ok, true);
    assert.equal(typeof flush.durationMs, 'number');
    assert.deepEqual(flush.hooks, {});
    assert.equal(holder(), '', 'the lease is released on SIGTERM');
  } finally {
    child.kill('SIGKILL');
    await echo.close();
  }
});

test('echo-chaos-operator – a drain says how long the telemetry flush took, here an OTLP endpoint that does not answer', async () => {
  const kubeconfig = join(dir, 'config-otel');
  await writeFile(kubeconfig, api.kubeconfigFile());
  // Port 9 (discard) on loopback: nothing listens, every export is refused and retried.
  const { child, lines, exited, stderr } = runOperator(kubeconfig, {
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
  });
  try {
    await until('listening', () => lines.some((l) => l['msg'] === 'operator listening'), 15_000);
    assert.ok(lines.some((l) => l['msg'] === 'OpenTelemetry SDK started'));
    const port = lines.find((l) => l['msg'] === 'operator listening')!['port'] as number;
    // Ready once it has started (and installed its signal handlers).
    await until('ready', async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200, 5000);
    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr());
    const drained = lines.find((l) => l['msg'] === 'drained');
    assert.ok(drained, 'a drained line');
    const flush = drained['flush'] as { durationMs: number; hooks: Record<string, { durationMs: number }> };
    assert.equal(typeof flush.durationMs, 'number');
    assert.equal(typeof flush.hooks['opentelemetry']?.durationMs, 'number', JSON.stringify(flush));
  } finally {
    child.kill('SIGKILL');
  }
});
