/**
 * The soak's liveness prober, run as a worker thread of bench/soak.ts: `GET /health` one at a time,
 * each on a new connection as a kubelet sends it, every `intervalMs`. A thread of its own, so that
 * the soak's traffic and attacks (reading 20 MB bodies, parsing history) do not delay its timers and
 * count as the server's slowness; it reports how late its own timers ran, so that a slow probe caused
 * by a starved client can be told from one caused by the server.
 *
 * Posts `{ atMs, ms, ok }` per probe (atMs: epoch ms when sent); on the message `'stop'` it finishes
 * the probe in flight and posts `{ done: true, loopDelayMaxMs }`.
 */
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parentPort, workerData } from 'node:worker_threads';

const { port, intervalMs, timeoutMs } = workerData as { port: number; intervalMs: number; timeoutMs: number };

function probe(): Promise<{ atMs: number; ms: number; ok: boolean }> {
  const atMs = Date.now();
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    const done = (ok: boolean) => {
      if (settled) return;
      settled = true;
      resolve({ atMs, ms: performance.now() - started, ok });
    };
    const req = http.get(
      { host: '127.0.0.1', port, path: '/health', agent: false, timeout: timeoutMs },
      (res) => {
        res.resume();
        res.on('end', () => done(res.statusCode === 200));
        res.on('error', () => done(false));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => done(false));
  });
}

let running = true;
parentPort?.on('message', (message) => {
  if (message === 'stop') running = false;
});
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
while (running) {
  parentPort?.postMessage(await probe());
  await sleep(intervalMs);
}
delay.disable();
parentPort?.postMessage({ done: true, loopDelayMaxMs: delay.max / 1e6 });
