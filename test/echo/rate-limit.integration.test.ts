import assert from 'node:assert/strict';
import { test } from 'node:test';
import WebSocket from 'ws';
import { TokenBucket } from '../../src/echo/rate-limit.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { until } from '../helpers/runtime.ts';

/** A clock the test moves by hand, in milliseconds. */
function manualClock(): { now: () => number; advance(ms: number): void } {
  let t = 1_000;
  return {
    now: () => t,
    advance(ms) {
      t += ms;
    },
  };
}

test('TokenBucket – burst 0 means max(1, ceil(rps)) tokens to start with', () => {
  assert.equal(new TokenBucket(2, 0).burst, 2);
  assert.equal(new TokenBucket(2.5, 0).burst, 3);
  assert.equal(new TokenBucket(0.5, 0).burst, 1);
  assert.equal(new TokenBucket(10, 4).burst, 4);
});

test('TokenBucket – grants the burst at once, then says how long until the next token', () => {
  const clock = manualClock();
  const bucket = new TokenBucket(2, 0, clock.now);
  assert.equal(bucket.take(), 0);
  assert.equal(bucket.take(), 0);
  assert.equal(bucket.take(), 500);
  clock.advance(200);
  assert.equal(bucket.take(), 300);
});

test('TokenBucket – a refused take costs nothing: the token still comes at its time', () => {
  const clock = manualClock();
  const bucket = new TokenBucket(1, 1, clock.now);
  assert.equal(bucket.take(), 0);
  for (let i = 0; i < 5; i++) assert.equal(bucket.take(), 1000);
  clock.advance(1000);
  assert.equal(bucket.take(), 0);
  assert.equal(bucket.take(), 1000);
});

test('TokenBucket – refills at rps tokens a second, never above the burst', () => {
  const clock = manualClock();
  const bucket = new TokenBucket(10, 3, clock.now);
  for (let i = 0; i < 3; i++) assert.equal(bucket.take(), 0);
  assert.ok(bucket.take() > 0);
  clock.advance(60_000);
  for (let i = 0; i < 3; i++) assert.equal(bucket.take(), 0, `token ${i + 1} of the burst`);
  assert.equal(bucket.take(), 100);
  clock.advance(100);
  assert.equal(bucket.take(), 0);
});

test('TokenBucket – a fractional rate: 0.5 rps gives one token every two seconds', () => {
  const clock = manualClock();
  const bucket = new TokenBucket(0.5, 0, clock.now);
  assert.equal(bucket.take(), 0);
  assert.equal(bucket.take(), 2000);
  clock.advance(1999);
  assert.equal(bucket.take(), 1);
  clock.advance(1);
  assert.equal(bucket.take(), 0);
});

async function get(server: RunningEcho, path: string): Promise<Response> {
  const response = await fetch(server.url + path);
  await response.arrayBuffer();
  return response;
}

test('rate limit – ECHO_RATE_LIMIT_RPS=2: the third immediate request is a 429 JSON error with Retry-After', async (t) => {
  const server = await startEcho({ ECHO_RATE_LIMIT_RPS: '2' });
  t.after(() => server.close());
  assert.equal((await get(server, '/a')).status, 200);
  assert.equal((await get(server, '/b')).status, 200);
  const limited = await fetch(`${server.url}/c`, { headers: { 'X-Request-ID': 'rl-1' } });
  assert.equal(limited.status, 429);
  assert.match(limited.headers.get('content-type') ?? '', /^application\/json/);
  const retryAfter = Number(limited.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1, `Retry-After: ${retryAfter}`);
  assert.equal(limited.headers.get('x-request-id'), 'rl-1');
  assert.equal(limited.headers.get('x-echo-fault'), null, 'the limit is ours, not an injected fault');
  assert.deepEqual(await limited.json(), {
    error: {
      code: 'ECHO_ERR_RATE_LIMITED',
      message: 'rate limit of 2 requests per second exceeded',
      request_id: 'rl-1',
    },
  });
});

test('rate limit – a limited request does nothing: no history entry, no echo', async (t) => {
  const server = await startEcho({ ECHO_RATE_LIMIT_RPS: '1' });
  t.after(() => server.close());
  assert.equal((await get(server, '/first')).status, 200);
  const limited = await fetch(`${server.url}/second`, { method: 'POST', body: 'payload' });
  assert.equal(limited.status, 429);
  assert.doesNotMatch(await limited.text(), /payload/);
  // GET /history would be limited too: read the store itself.
  assert.deepEqual(
    server.app.echo.history.list().map((e) => e.path),
    ['/first'],
  );
});

test('rate limit – /health, /ready and /metrics are never limited', async (t) => {
  const server = await startEcho({ ECHO_RATE_LIMIT_RPS: '1' });
  t.after(() => server.close());
  assert.equal((await get(server, '/use-the-token')).status, 200);
  assert.equal((await get(server, '/now-limited')).status, 429);
  for (let i = 0; i < 5; i++) {
    for (const path of ['/health', '/ready', '/metrics', '/health?verbose=1']) {
      assert.equal((await get(server, path)).status, 200, `${path} round ${i + 1}`);
    }
  }
  assert.equal((await get(server, '/still-limited')).status, 429);
});

test('rate limit – the service routes that are not probes are limited like the echo', async (t) => {
  const server = await startEcho({ ECHO_RATE_LIMIT_RPS: '1' });
  t.after(() => server.close());
  assert.equal((await get(server, '/info')).status, 200);
  assert.equal((await get(server, '/history')).status, 429);
});

test('rate limit – a token comes back after waiting for it', async (t) => {
  const server = await startEcho({ ECHO_RATE_LIMIT_RPS: '5' });
  t.after(() => server.close());
  let status = 200;
  for (let i = 0; i < 20 && status === 200; i++) status = (await get(server, '/drain')).status;
  assert.equal(status, 429);
  // 5 rps: one token every 200 ms. A refused request takes none, so asking until one passes is waiting.
  await until('a token comes back', async () => (await get(server, '/later')).status === 200, 10_000, 50);
});

test('rate limit – ECHO_RATE_LIMIT_BURST allows that many immediate requests', async (t) => {
  const server = await startEcho({ ECHO_RATE_LIMIT_RPS: '1', ECHO_RATE_LIMIT_BURST: '4' });
  t.after(() => server.close());
  const statuses = [];
  for (let i = 0; i < 6; i++) statuses.push((await get(server, `/burst/${i}`)).status);
  assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429]);
});

test('rate limit – Retry-After is the wait for the next token, in whole seconds rounded up', async (t) => {
  const server = await startEcho({ ECHO_RATE_LIMIT_RPS: '0.25' });
  t.after(() => server.close());
  assert.equal((await get(server, '/one')).status, 200);
  const limited = await get(server, '/two');
  assert.equal(limited.status, 429);
  const retryAfter = Number(limited.headers.get('retry-after'));
  assert.ok(retryAfter >= 3 && retryAfter <= 4, `Retry-After: ${retryAfter} (next token in about 4 s)`);
});

test('rate limit – ECHO_RATE_LIMIT_RPS=0 (the default) never limits', async (t) => {
  const server = await startEcho({});
  t.after(() => server.close());
  const statuses = await Promise.all(Array.from({ length: 30 }, (_, i) => get(server, `/free/${i}`)));
  assert.ok(statuses.every((r) => r.status === 200));
});

test('rate limit – limited requests are counted in echo_requests_total with status 429', async (t) => {
  const server = await startEcho({ ECHO_RATE_LIMIT_RPS: '1' });
  t.after(() => server.close());
  await get(server, '/m');
  await get(server, '/m');
  await get(server, '/m');
  const scrape = await (await fetch(`${server.url}/metrics`)).text();
  assert.match(scrape, /^echo_requests_total\{method="GET",path="\/m",status="200",fault="none"\} 1$/m);
  assert.match(scrape, /^echo_requests_total\{method="GET",path="\/m",status="429",fault="none"\} 2$/m);
});

/** Opens a WebSocket to `/ws`: 'open', or the status, Retry-After and body of the refusal. */
function upgrade(
  server: RunningEcho,
): Promise<{ open: true } | { status: number; retryAfter: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/ws`);
    ws.on('open', () => {
      ws.close();
      resolve({ open: true });
    });
    ws.on('unexpected-response', (_request, response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, retryAfter: response.headers['retry-after'], body }),
      );
    });
    ws.on('error', (error) => {
      if (!/Unexpected server response/.test(error.message)) reject(error);
    });
  });
}

test('rate limit – a WebSocket upgrade takes its token like any request: past the limit it is a 429 JSON error with Retry-After', async (t) => {
  // One token, the next in 100 s: nothing refills it during the test, however slow the machine.
  const server = await startEcho({ ECHO_RATE_LIMIT_RPS: '0.01' });
  t.after(() => server.close());
  assert.deepEqual(await upgrade(server), { open: true });
  const refused = await upgrade(server);
  assert.ok(!('open' in refused), 'the second upgrade was let through');
  assert.equal(refused.status, 429);
  assert.ok(Number(refused.retryAfter) >= 1, `Retry-After: ${refused.retryAfter}`);
  assert.equal(JSON.parse(refused.body).error.code, 'ECHO_ERR_RATE_LIMITED');
  // The upgrades drew from the one bucket the HTTP requests draw from.
  assert.equal((await get(server, '/after-upgrades')).status, 429);
  assert.equal((await get(server, '/health')).status, 200);
});
