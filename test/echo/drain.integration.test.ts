import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import { test } from 'node:test';
import { WebSocket } from 'ws';
import { type EchoProcess, startEchoProcess } from '../helpers/liveness.ts';
import { quietFor, until } from '../helpers/runtime.ts';

/** The service in a child process, up (its /health answered); no drain delay unless given. */
async function start(env: Record<string, string> = {}): Promise<EchoProcess> {
  // The drain delay has its own tests (drain-load.integration.test.ts); these are about the drain after it.
  return startEchoProcess({ ECHO_DRAIN_DELAY: '0', ...env });
}

/** GET over a fresh connection (no keep-alive), resolving with status and body. */
function get(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

/** Requests in flight but the `/health` request that asks (the service counts it too). */
async function inFlight(port: number): Promise<number> {
  const health = JSON.parse((await get(port, '/health')).body) as { metrics: { in_flight: number } };
  return health.metrics.in_flight - 1;
}

test('drain – SIGTERM with 200 delayed requests, an SSE and a WebSocket client: all answered, /ready 503, clean closes, exit 0', async () => {
  // A drain delay keeps the port open while /ready is polled on new connections: with none the
  // listener may close before the first poll connects (a refused connection, not a 503).
  const { child, port } = await start({
    ECHO_DRAIN_TIMEOUT: '20s',
    ECHO_SSE_TICKER: '100ms',
    ECHO_DRAIN_DELAY: '2s',
  });
  const exited = once(child, 'exit');

  // Streaming clients.
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
  await once(ws, 'open');
  const wsClosed = once(ws, 'close');
  let sseText = '';
  const sseEnded = new Promise<void>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/sse', agent: false }, (res) => {
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          sseText += c;
        });
        res.on('end', resolve);
        res.on('error', reject);
      })
      .on('error', reject);
  });

  // 200 requests, each held by a 1 s delay.
  const startedMs = Date.now();
  const requests = Array.from({ length: 200 }, (_, i) => get(port, `/slow/${i}`, { 'X-Echo-Delay': '1s' }));
  await until('the 200 requests are in flight before the signal', async () => (await inFlight(port)) >= 200);

  child.kill('SIGTERM');
  // The signal arrives asynchronously: poll until it is handled (the port stays open for the 2 s
  // drain delay, and a refused poll fails the wait).
  let ready = await get(port, '/ready');
  await until('/ready turns 503 once the signal is handled', async () => {
    ready = await get(port, '/ready');
    return ready.status !== 200;
  });
  assert.equal(ready.status, 503, '/ready turns 503 as soon as the signal is handled');
  assert.match(ready.body, /draining/);

  const answers = await Promise.all(requests);
  assert.equal(answers.filter((a) => a.status === 200).length, 200, 'every delayed request answered 200');
  assert.ok(Date.now() - startedMs >= 950, 'the delays ran their course');

  const [code] = await wsClosed;
  assert.equal(code, 1001, 'the WebSocket got a going-away close frame');
  await sseEnded;
  assert.match(sseText, /event: close/, 'the SSE stream said goodbye before it ended');

  const [exitCode, signal] = await exited;
  assert.equal(signal, null);
  assert.equal(exitCode, 0);
  assert.ok(Date.now() - startedMs < 15_000, 'exited well before the drain timeout');
});

test('drain – past ECHO_DRAIN_TIMEOUT a waiting request is answered at once and the process exits 0', async () => {
  const { child, port } = await start({ ECHO_DRAIN_TIMEOUT: '300ms' });
  const exited = once(child, 'exit');
  const slow = get(port, '/very-slow', { 'X-Echo-Delay': '30s' });
  await until('the slow request in flight', async () => (await inFlight(port)) >= 1);
  const signalledMs = Date.now();
  child.kill('SIGTERM');
  const answer = await slow;
  assert.equal(answer.status, 200);
  const [exitCode] = await exited;
  assert.equal(exitCode, 0);
  assert.ok(Date.now() - signalledMs < 5_000, `exited ${Date.now() - signalledMs} ms after the signal`);
});

test('drain – a second signal exits at once (the same one again within a second is one press: see npm-start-signals)', async () => {
  const echo = await start({ ECHO_DRAIN_TIMEOUT: '30s' });
  const { child, port } = echo;
  const exited = once(child, 'exit');
  const slow = get(port, '/held', { 'X-Echo-Delay': '20s' }).catch(() => undefined);
  await until('the held request in flight', async () => (await inFlight(port)) >= 1);
  child.kill('SIGTERM');
  await until('the first signal handled: draining', () =>
    echo.stdout().includes('"msg":"draining: /ready answers 503"'),
  );
  // Past the window in which a repeat is the same press (a terminal's Ctrl-C reaches node twice).
  await quietFor(1_100, 'past the one-press window of a repeated signal');
  const signalledMs = Date.now();
  child.kill('SIGTERM');
  const [exitCode] = await exited;
  assert.equal(exitCode, 1);
  // At once: the held request would keep a drain going for 20 s.
  assert.ok(Date.now() - signalledMs < 10_000);
  await slow;
});
