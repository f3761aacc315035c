import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { test } from 'node:test';
import { request } from 'undici';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { send } from '../helpers/http.ts';
import { until } from '../helpers/runtime.ts';

/**
 * One record per request, whatever kind of answer it got: `echo_requests_total{method,path,status}`
 * and `echo_request_duration_seconds` count it once, and its history entry (for an echo path that
 * got that far) holds the same status and a duration.
 */

interface Entry {
  readonly id: string;
  readonly status: number | null;
  readonly duration_ms: number | null;
}

async function scrape(echo: RunningEcho): Promise<string> {
  return (await send(`${echo.url}/metrics`)).text;
}

/** `echo_requests_total` by `METHOD path status` (every `fault` summed), from one scrape. */
function requestCounts(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const m of text.matchAll(
    /^echo_requests_total\{method="([^"]*)",path="([^"]*)",status="([^"]*)",fault="[a-z]+"\} (\S+)$/gm,
  )) {
    const key = `${m[1]} ${m[2]} ${m[3]}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(m[4]));
  }
  return counts;
}

/** The sum of a metric's samples over its labels (`NaN` when it has none). */
function sample(text: string, name: string): number {
  const values = [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].map((m) =>
    Number(m[1]),
  );
  return values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0);
}

async function history(echo: RunningEcho): Promise<Entry[]> {
  return JSON.parse((await send(`${echo.url}/history`)).text) as Entry[];
}

/** Statuses are written when a response ends, just after the client has it: wait for them. */
async function settled(echo: RunningEcho, ids: readonly string[]): Promise<Map<string, Entry>> {
  let entries = new Map<string, Entry>();
  await until(`the statuses of ${ids.join(', ')} are written`, async () => {
    entries = new Map((await history(echo)).map((e) => [e.id, e]));
    return ids.every((id) => entries.get(id)?.status !== null && entries.has(id));
  });
  return entries;
}

/** Sends raw HTTP/1.1 and resolves once the server has closed the connection. */
function raw(port: number, text: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    socket.on('data', () => {});
    socket.on('error', () => {});
    socket.on('close', () => resolve());
  });
}

/** A body over MAX_BODY_SIZE: the server may answer 413 before it has read it all. */
function tooLarge(echo: RunningEcho, id: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${echo.url}/big`, { method: 'POST', headers: { 'x-request-id': id } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') reject(err);
    });
    req.end('x'.repeat(2048));
  });
}

test('completion – every kind of answer is counted once, with the status its history entry holds', async (t) => {
  const echo = await startEcho(
    { MAX_BODY_SIZE: '1024', ECHO_ERROR_TIMEOUT: '50ms', ECHO_SSE_TICKER: '50ms' },
    { scenarios: [{ path: '/scripted', responses: [{ status: 418, body: 'teapot' }] }] },
  );
  t.after(() => echo.close());
  const get = (path: string, id: string, headers: Record<string, string> = {}) =>
    send(`${echo.url}${path}`, { headers: { 'X-Request-ID': id, ...headers } });

  const startedMs = Date.now();
  assert.equal((await get('/plain', 'plain')).status, 200);
  assert.equal(
    (await get('/status', 'status', { 'X-Echo-Status': '201', 'X-Echo-Delay': '100ms' })).status,
    201,
  );
  const chaos = (await get('/chaos', 'chaos', { 'X-Echo-Chaos': '100' })).status;
  assert.equal((await get('/error', 'error', { 'X-Echo-Error': 'bad-gateway' })).status, 502);
  assert.equal((await get('/timeout', 'timeout', { 'X-Echo-Error': 'timeout' })).status, 504);
  assert.equal((await get('/scripted', 'scripted')).status, 418);
  assert.equal((await get('/malformed', 'malformed', { 'X-Echo-Status': 'abc' })).status, 400);
  assert.equal(await tooLarge(echo, 'big'), 413);
  await raw(
    echo.port,
    'GET /reset HTTP/1.1\r\nHost: x\r\nX-Request-ID: reset\r\nX-Echo-Error: reset\r\n\r\n',
  );
  await raw(
    echo.port,
    'GET /close HTTP/1.1\r\nHost: x\r\nX-Request-ID: close\r\nX-Echo-Error: close\r\n\r\n',
  );

  // A client that leaves during a delay.
  const leaving = new AbortController();
  const left = request(`${echo.url}/left`, {
    headers: { 'X-Request-ID': 'left', 'X-Echo-Delay': '10s' },
    signal: leaving.signal,
  }).catch(() => undefined);
  await until('the delayed request is in the history', async () =>
    (await history(echo)).some((e) => e.id === 'left'),
  );
  leaving.abort();
  await left;

  // A client that leaves while the body is still coming (a throttled body): fastify sees no end.
  const midBody = new AbortController();
  const partial = await request(`${echo.url}/midbody`, {
    headers: { 'X-Request-ID': 'midbody', 'X-Echo-Response-Size': '100000', 'X-Echo-Throttle': '1KB/s' },
    signal: midBody.signal,
  });
  assert.equal(partial.statusCode, 200);
  midBody.abort();
  await partial.body.text().catch(() => undefined);

  // An /sse stream the client leaves.
  const sse = new AbortController();
  const stream = await fetch(`${echo.url}/sse`, { signal: sse.signal });
  assert.equal(stream.status, 200);
  sse.abort();

  // A replay of the plain request: the replay route, and the re-sent request on the echo route.
  const replay = await send(`${echo.url}/replay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'status' }),
  });
  assert.equal(replay.status, 201);

  const ids = [
    'plain',
    'status',
    'chaos',
    'error',
    'timeout',
    'scripted',
    'reset',
    'close',
    'left',
    'midbody',
  ];
  const entries = await settled(echo, ids);
  assert.deepEqual(Object.fromEntries(ids.map((id) => [id, entries.get(id)?.status])), {
    plain: 200,
    status: 201,
    chaos,
    error: 502,
    timeout: 504,
    scripted: 418,
    reset: 0,
    close: 0,
    left: 499,
    midbody: 499,
  });
  // Each duration is in milliseconds, within the time this test has run; the known waits are in them.
  const ranMs = Date.now() - startedMs;
  for (const id of ids) {
    const ms = entries.get(id)?.duration_ms;
    assert.ok(typeof ms === 'number' && ms >= 0 && ms <= ranMs, `${id}: duration_ms ${ms} (ran ${ranMs} ms)`);
  }
  assert.ok((entries.get('status')?.duration_ms ?? 0) >= 99, 'the 100 ms delay is in its duration');
  assert.ok((entries.get('timeout')?.duration_ms ?? 0) >= 40, 'the timeout is in its duration');
  assert.ok(!entries.has('malformed') && !entries.has('big'), 'rejected requests are not recorded');
  const replayed = (await history(echo)).at(-1)!;
  assert.equal(replayed.status, 201, 'the re-sent request is recorded with its status');

  let text = '';
  let counts = new Map<string, number>();
  await until('the SSE request is counted', async () => {
    text = await scrape(echo);
    counts = requestCounts(text);
    return counts.get('GET /sse 200') === 1;
  });
  const expected: Record<string, number> = {
    'GET /plain 200': 1,
    'GET /status 201': 2, // the request and its replay
    [`GET /chaos ${chaos}`]: 1,
    'GET /error 502': 1,
    'GET /timeout 504': 1,
    'GET /scripted 418': 1,
    'GET /malformed 400': 1,
    'POST /big 413': 1,
    'GET /reset 0': 1,
    'GET /close 0': 1,
    'GET /left 499': 1,
    'GET /midbody 499': 1,
    'GET /sse 200': 1,
    'POST /replay 201': 1,
  };
  for (const [series, n] of Object.entries(expected)) assert.equal(counts.get(series), n, series);
  // Every request counted is timed too, and nothing is counted twice.
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  assert.equal(sample(text, 'echo_request_duration_seconds_count'), total);
});

test('completion – a 429 from the rate limit is counted once, and the limited request is not in history', async (t) => {
  const echo = await startEcho({ ECHO_RATE_LIMIT_RPS: '0.001', ECHO_RATE_LIMIT_BURST: '1' });
  t.after(() => echo.close());
  assert.equal((await send(`${echo.url}/m`, { headers: { 'X-Request-ID': 'first' } })).status, 200);
  assert.equal((await send(`${echo.url}/m`, { headers: { 'X-Request-ID': 'second' } })).status, 429);
  // /history is rate limited too: read the entries from the app.
  const recorded = () => echo.app.echo.history.list().map((e) => [e.id, e.status]);
  await until('the first request has its status recorded', () => recorded()[0]?.[1] !== null);
  assert.deepEqual(recorded(), [['first', 200]]);
  const text = await scrape(echo);
  const counts = requestCounts(text);
  assert.equal(counts.get('GET /m 200'), 1);
  assert.equal(counts.get('GET /m 429'), 1);
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  assert.equal(sample(text, 'echo_request_duration_seconds_count'), total);
});
