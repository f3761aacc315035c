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
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Array<Record<string, unknown>> = [];
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    for (const line of chunk.split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line));
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
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
    assert.equal(await exited, 0, stderr);
    assert.ok(lines.some((l) => l['msg'] === 'drained'));
    assert.equal(holder(), '', 'the lease is released on SIGTERM');
  } finally {
    child.kill('SIGKILL');
    await echo.close();
  }
});
