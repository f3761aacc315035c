import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { exitOf, freePort, within } from '../helpers/runtime.ts';

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
      const deadline = Date.now() + 60_000;
      while ((await ready(port)) !== 200) {
        assert.ok(Date.now() < deadline, 'npm start did not serve within 60 s');
        await sleep(100);
      }
      npm.kill(signal);
      if (signal === 'SIGTERM') {
        // Draining: /ready answers 503 for ECHO_DRAIN_DELAY before the port closes.
        let status = await ready(port);
        for (let i = 0; i < 20 && status === 200; i++) {
          await sleep(50);
          status = await ready(port);
        }
        assert.equal(status, 503, 'draining: /ready answers 503');
      }
      const exit = await within(exited, 'npm start had not exited 30 s after the signal', 30_000);
      const logs = exit.stdout;
      assert.match(logs, /"msg":"drained"/, 'the service drained');
      const pid = Number(/"pid":(\d+)/.exec(logs)?.[1]);
      assert.ok(pid > 0 && pid !== npm.pid, 'the log names the node process');
      // The node process has gone with npm, and nothing answers on the port.
      let alive = true;
      for (let i = 0; i < 50 && alive; i++) {
        try {
          process.kill(pid, 0);
          await sleep(100);
        } catch {
          alive = false;
        }
      }
      assert.equal(alive, false, `node (pid ${pid}) is still running after npm exited`);
      assert.equal(await ready(port), undefined, 'the port is closed');
    } finally {
      if (npm.exitCode === null) npm.kill('SIGKILL');
    }
  });
}
