import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { exitOf, freePort, until, within } from '../helpers/runtime.ts';

/**
 * The way docs/service/shutdown.md stops a server started in the background: `npm start & ECHO_PID=$!`, then
 * `kill -TERM "$ECHO_PID"`. `$!` is npm's pid; the signal must reach the service, which drains
 * (`/ready` 503, the port closes) and exits, rather than killing npm and leaving node serving.
 * `npm start` runs node in the shell's place (`exec`), so npm's forwarding reaches node itself.
 */

const ROOT = new URL('../..', import.meta.url).pathname;

async function ready(port: number): Promise<number | undefined> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/ready`, { signal: AbortSignal.timeout(2000) })).status;
  } catch {
    return undefined;
  }
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`npm start & kill -${signal.slice(3)} $!: the service drains and exits, nothing is left serving`, async () => {
    const port = await freePort();
    const npm = spawn('npm', ['start'], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_REQUESTS: 'false',
        ECHO_DRAIN_DELAY: '2s',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = exitOf(npm);
    try {
      await until('npm start serves', async () => (await ready(port)) === 200, 60_000, 100);
      npm.kill(signal);
      if (signal === 'SIGTERM') {
        // Draining: /ready answers 503 for ECHO_DRAIN_DELAY (2 s) before the port closes, so what
        // follows the 200s must be a 503, not the closed port.
        let status: number | undefined = 200;
        await until('/ready stops answering 200 once the signal is handled', async () => {
          status = await ready(port);
          return status !== 200;
        });
        assert.equal(status, 503, 'draining: /ready answers 503');
      }
      const exit = await within(exited, 'npm start had not exited 30 s after the signal', 30_000);
      const logs = exit.stdout;
      assert.match(logs, /"msg":"drained"/, 'the service drained');
      const pid = Number(/"pid":(\d+)/.exec(logs)?.[1]);
      assert.ok(pid > 0 && pid !== npm.pid, 'the log names the node process');
      // The node process has gone with npm, and nothing answers on the port.
      const alive = () => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      await until(`node (pid ${pid}) gone after npm exited`, () => !alive(), 5_000, 100);
      assert.equal(await ready(port), undefined, 'the port is closed');
    } finally {
      if (npm.exitCode === null) npm.kill('SIGKILL');
    }
  });
}

test('npm start, Ctrl-C at the terminal (SIGINT to the whole process group): a request in flight is answered and the service drains', async () => {
  const port = await freePort();
  // A process group of its own, as a terminal's foreground job: npm and node both get the signal,
  // and npm passes its copy on to node as well.
  const npm = spawn('npm', ['start'], {
    cwd: ROOT,
    detached: true,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_REQUESTS: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = exitOf(npm);
  const group = npm.pid as number;
  try {
    await until('npm start serves', async () => (await ready(port)) === 200, 60_000, 100);
    const inFlight = fetch(`http://127.0.0.1:${port}/held`, {
      headers: { 'x-echo-delay': '1500ms' },
      signal: AbortSignal.timeout(20_000),
    }).then(
      (response) => response.status,
      (error: Error) => error.message,
    );
    // Sent once the request is in flight: /health counts it (and itself).
    await until('the request is in flight', async () => {
      const health = (await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as {
        metrics: { in_flight: number };
      };
      return health.metrics.in_flight >= 2;
    });
    process.kill(-group, 'SIGINT');
    assert.equal(await within(inFlight, 'the request in flight was not answered', 20_000), 200);
    const exit = await within(exited, 'npm start had not exited 30 s after Ctrl-C', 30_000);
    assert.match(exit.stdout, /"msg":"drained"/, 'the service drained');
    assert.doesNotMatch(exit.stdout, /second signal/, 'one Ctrl-C is one signal, not two');
  } finally {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});
