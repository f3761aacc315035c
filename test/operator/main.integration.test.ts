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

/** Whether a process with this pid is still running. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The operator's environment for a run started through npm or a shell. */
function operatorEnv(kubeconfig: string): Record<string, string> {
  return {
    ...(process.env as Record<string, string>),
    KUBECONFIG: kubeconfig,
    PORT: '0',
    HOST: '127.0.0.1',
    POD_NAME: 'npm-test',
    WATCH_NAMESPACE: 'default',
    LEASE_DURATION_SECONDS: '2',
    LEASE_RETRY_INTERVAL_MS: '100',
  };
}

/** The JSON log lines a child writes to stdout, parsed as they come. */
function logLines(child: import('node:child_process').ChildProcess): Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  let rest = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop() ?? '';
    for (const line of parts) if (line.startsWith('{')) lines.push(JSON.parse(line));
  });
  return lines;
}

test('npm run operator & kill -TERM $!: the signal reaches the operator, which drains and exits', async () => {
  const kubeconfig = join(dir, 'config-npm');
  await writeFile(kubeconfig, api.kubeconfigFile());
  const npm = spawn('npm', ['run', '--silent', 'operator'], {
    cwd: new URL('../..', import.meta.url).pathname,
    env: operatorEnv(kubeconfig),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines = logLines(npm);
  const npmExited = new Promise<number | null>((resolve) => npm.on('exit', (code) => resolve(code)));
  let pid = 0;
  try {
    await until('listening', () => lines.some((l) => l['msg'] === 'operator listening'), 30_000);
    const listening = lines.find((l) => l['msg'] === 'operator listening')!;
    pid = listening['pid'] as number;
    assert.ok(pid > 0 && pid !== npm.pid, 'the log names the node process');
    // Ready once it has started (and installed its signal handlers); a signal before is node's default.
    const readyz = `http://127.0.0.1:${listening['port']}/readyz`;
    await until('ready', async () => (await fetch(readyz)).status === 200, 10_000);
    npm.kill('SIGTERM');
    await npmExited;
    await until('the operator drained', () => lines.some((l) => l['msg'] === 'drained'), 15_000);
    await until('the node process is gone', () => !alive(pid), 15_000);
  } finally {
    npm.kill('SIGKILL');
    // A failed test must not leave the operator running (its pipe would hold this file open).
    if (pid > 0 && alive(pid)) process.kill(pid, 'SIGKILL');
  }
});

test('started by npm through a shell that dies (npx): the operator drains once its parent has gone', async () => {
  const kubeconfig = join(dir, 'config-npx');
  await writeFile(kubeconfig, api.kubeconfigFile());
  // As `npx echo-chaos-operator` runs the bin: a shell between npm and node, which a signal kills
  // without passing it on. Here the shell is killed outright; node is left with another parent.
  const shell = spawn('sh', ['-c', `"${process.execPath}" "${MAIN}"; true`], {
    env: { ...operatorEnv(kubeconfig), npm_command: 'exec' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines = logLines(shell);
  let pid = 0;
  try {
    await until('listening', () => lines.some((l) => l['msg'] === 'operator listening'), 30_000);
    pid = lines.find((l) => l['msg'] === 'operator listening')!['pid'] as number;
    assert.notEqual(pid, shell.pid, 'node runs under the shell');
    // At once: a parent that dies while the operator still starts counts too.
    shell.kill('SIGKILL');
    await until('the node process is gone', () => !alive(pid), 15_000);
    // Its stdout was the dead shell's pipe, which this test still reads.
    assert.ok(
      lines.some((l) => String(l['msg']).startsWith('the npm process that started this one has gone')),
      JSON.stringify(lines.map((l) => l['msg'])),
    );
    assert.ok(
      lines.some((l) => l['msg'] === 'drained'),
      'a drained line',
    );
  } finally {
    shell.kill('SIGKILL');
  }
});
