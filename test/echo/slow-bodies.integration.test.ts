import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { request } from 'undici';
import { ShapingStream } from '../../src/echo/shaping.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { countDelta, faultCounts, scrapeValue } from '../helpers/metrics.ts';
import { h2Request, openH2 } from '../helpers/protocol-clients.ts';
import { until } from '../helpers/runtime.ts';

/**
 * Slow bodies through a real server and real clients: `X-Echo-Throttle` (every body kind,
 * compressed ones on the wire), `X-Echo-Chunk-Delay` with `X-Echo-Chunk-Size`, and
 * `X-Echo-Body-Delay` (headers first). Timings bound only what a loaded machine cannot miss:
 * never faster than asked, and generous upper bounds; the 5 s ± 10% is measured once.
 */

let echo: RunningEcho;
before(async () => {
  echo = await startEcho(
    { ECHO_MAX_DELAY: '60s' },
    { scenarios: [{ path: '/scripted', responses: [{ status: 202, body: 'x'.repeat(2_000) }] }] },
  );
});
after(() => echo.close());

type Applied = Array<{ kind: string; control: string; source: string; value: string | number }>;

interface Timed {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** Milliseconds from the request to the response head, and to the end of the body. */
  headAt: number;
  endAt: number;
  /** When (ms from the request) each piece of the body arrived, and its size. */
  arrivals: Array<{ at: number; bytes: number }>;
}

/** A request with node:http, timing the head and every piece of the body. */
function timed(
  path: string,
  headers: Record<string, string>,
  options: { method?: string; body?: Buffer } = {},
): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const req = http.request(
      { host: '127.0.0.1', port: echo.port, path, method: options.method ?? 'GET', headers, agent: false },
      (res) => {
        const headAt = performance.now() - start;
        const arrivals: Timed['arrivals'] = [];
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => {
          arrivals.push({ at: performance.now() - start, bytes: chunk.length });
          chunks.push(chunk);
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
            headAt,
            endAt: performance.now() - start,
            arrivals,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

async function historyFaults(requestId: string): Promise<Applied | undefined> {
  const history = (await (await fetch(`${echo.url}/history`)).json()) as Array<{
    request_id: string;
    faults?: Applied;
  }>;
  return history.find((e) => e.request_id === requestId)?.faults;
}

/**
 * The bytes received by `at` ms never exceed what `bytesPerSecond` allows since the request was
 * sent. (Not since the head arrived: on a loaded machine the head can reach the client late, with
 * the first pieces the server's bucket already allowed right behind it.)
 */
function assertNeverFaster(r: Timed, bytesPerSecond: number, slackBytes: number): void {
  let total = 0;
  for (const a of r.arrivals) {
    total += a.bytes;
    const allowed = (bytesPerSecond * (a.at + 5)) / 1000 + slackBytes;
    assert.ok(
      total <= allowed,
      `${total} bytes by ${Math.round(a.at)} ms: faster than ${bytesPerSecond} B/s`,
    );
  }
}

test('X-Echo-Throttle – 1 MB at 200KB/s takes 5 s ± 10%, holds one chunk, arrives whole, and is recorded as throttle', async (t) => {
  // A probe on the server's shaping stream (same process): what it holds each time it sends a piece.
  const probe = { pieces: 0, maxHeld: 0 };
  const push = ShapingStream.prototype.push;
  ShapingStream.prototype.push = function (this: ShapingStream, chunk: unknown, encoding?: BufferEncoding) {
    if (chunk !== null) probe.pieces++;
    probe.maxHeld = Math.max(probe.maxHeld, this.writableLength + this.readableLength);
    return push.call(this, chunk, encoding);
  };
  t.after(() => {
    ShapingStream.prototype.push = push;
  });
  const before = await faultCounts(echo.url);
  const r = await timed('/big', {
    'X-Echo-Response-Size': '1000000',
    'X-Echo-Throttle': '200KB/s',
    'X-Echo-Explain': 'true',
  });
  const seconds = r.endAt / 1000;
  // Reported so a loaded machine's numbers can be read from the test output.
  console.log(`# 1 MB at 200KB/s took ${seconds.toFixed(3)} s`);
  assert.equal(r.status, 200);
  assert.equal(r.body.length, 1_000_000);
  assert.equal(r.headers['content-length'], '1000000', 'a throttled body keeps its length');
  assert.ok(seconds >= 4.5 && seconds <= 5.5, `took ${seconds} s, not 5 s ± 10%`);
  assertNeverFaster(r, 200_000, 16_384);
  assert.ok(probe.pieces >= 1_000_000 / 16_384, `${probe.pieces} pieces of at most 16 KiB`);
  // The generated body comes in 64 KiB chunks: the shaper never held more than the one it cuts.
  assert.ok(probe.maxHeld <= 64 * 1024, `the shaping stream held ${probe.maxHeld} bytes`);

  assert.equal(r.headers['x-echo-fault'], 'throttle');
  const applied: Applied = [
    { kind: 'throttle', control: 'X-Echo-Throttle', source: 'header', value: '200KB/s' },
  ];
  assert.deepEqual(JSON.parse(String(r.headers['x-echo-applied'])), applied);
  assert.deepEqual(countDelta(before, await faultCounts(echo.url)), { throttle: 1 });
  assert.deepEqual(await historyFaults(String(r.headers['x-request-id'])), applied);
  assert.equal(
    await scrapeValue(echo.url, 'echo_requests_total{method="GET",path="/big",status="200",fault="delay"}'),
    1,
    'a throttled answer is not one of the service’s own (fault="delay")',
  );
});

test('X-Echo-Throttle – every body kind: echoed, summary, scenario, generated and compressed (on the wire)', async () => {
  const payload = Buffer.alloc(4_000, 'e');
  const cases: Array<{ name: string; path: string; headers: Record<string, string>; body?: Buffer }> = [
    { name: 'echoed body', path: '/echoed', headers: { 'Content-Type': 'text/plain' }, body: payload },
    { name: 'summary', path: '/summary', headers: {} },
    { name: 'scenario body', path: '/scripted', headers: {} },
    { name: 'generated', path: '/generated', headers: { 'X-Echo-Response-Size': '4000' } },
    {
      name: 'compressed',
      path: '/compressed',
      headers: { 'X-Echo-Response-Size': '4000', 'X-Echo-Compress': 'gzip' },
    },
  ];
  const rate = 4_000;
  for (const c of cases) {
    const before = await faultCounts(echo.url);
    const r = await timed(
      c.path,
      { ...c.headers, 'X-Echo-Throttle': `${rate}B/s` },
      c.body === undefined ? {} : { method: 'POST', body: c.body },
    );
    const wireBytes = r.body.length;
    const expectedMs = (wireBytes / rate) * 1000;
    assert.ok(wireBytes > 0, c.name);
    assert.ok(
      r.endAt >= expectedMs * 0.95,
      `${c.name}: ${wireBytes} bytes in ${r.endAt} ms, faster than ${rate} B/s`,
    );
    assert.ok(r.endAt <= expectedMs + 5_000, `${c.name}: ${r.endAt} ms for ${expectedMs} ms of bytes`);
    assertNeverFaster(r, rate, 400);
    assert.equal(
      r.headers['x-echo-fault'],
      c.path === '/scripted' ? 'scenario,throttle' : 'throttle',
      c.name,
    );
    const wanted: Record<string, number> =
      c.path === '/scripted' ? { scenario: 1, throttle: 1 } : { throttle: 1 };
    assert.deepEqual(countDelta(before, await faultCounts(echo.url)), wanted, c.name);
    if (c.name === 'echoed body') assert.deepEqual(r.body, payload);
    if (c.name === 'summary') assert.match(r.body.toString(), /^GET \/summary HTTP\/1.1\n/);
    if (c.name === 'scenario body') assert.equal(r.status, 202);
    if (c.name === 'compressed') {
      assert.equal(r.headers['content-encoding'], 'gzip');
      assert.equal(gunzipSync(r.body).length, 4_000, 'the throttle counted the gzip bytes');
    }
  }
});

test('X-Echo-Throttle – an injected error body and a HEAD: the error is throttled, HEAD has no body to slow', async () => {
  const r = await timed('/err', { 'X-Echo-Error': 'unavailable', 'X-Echo-Throttle': '40B/s' });
  assert.equal(r.status, 503);
  assert.equal(r.headers['x-echo-fault'], 'error,throttle');
  assert.ok(r.endAt >= (r.body.length / 40) * 1000 * 0.95, `${r.body.length} bytes in ${r.endAt} ms`);

  const before = await faultCounts(echo.url);
  const head = await timed('/head', { 'X-Echo-Throttle': '1B/s' }, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.headers['x-echo-fault'], undefined);
  assert.deepEqual(countDelta(before, await faultCounts(echo.url)), {});
});

test('X-Echo-Chunk-Delay – the client sees chunks of X-Echo-Chunk-Size with the delay between them', async () => {
  const before = await faultCounts(echo.url);
  const r = await timed('/chunks', {
    'X-Echo-Response-Size': '4000',
    'X-Echo-Chunk-Size': '1000',
    'X-Echo-Chunk-Delay': '250ms',
    'X-Echo-Explain': 'true',
  });
  assert.equal(r.body.length, 4_000);
  assert.deepEqual(
    r.arrivals.map((a) => a.bytes),
    [1000, 1000, 1000, 1000],
    'each chunk arrives on its own',
  );
  for (let i = 1; i < r.arrivals.length; i++) {
    const gap = (r.arrivals[i]?.at ?? 0) - (r.arrivals[i - 1]?.at ?? 0);
    assert.ok(gap >= 240, `gap ${i} of ${gap} ms, not 250 ms`);
  }
  assert.equal(r.headers['x-echo-fault'], 'throttle');
  assert.deepEqual(JSON.parse(String(r.headers['x-echo-applied'])), [
    { kind: 'throttle', control: 'X-Echo-Chunk-Delay', source: 'header', value: 250 },
  ]);
  assert.deepEqual(countDelta(before, await faultCounts(echo.url)), { throttle: 1 });
  assert.deepEqual(await historyFaults(String(r.headers['x-request-id'])), [
    { kind: 'throttle', control: 'X-Echo-Chunk-Delay', source: 'header', value: 250 },
  ]);

  // X-Echo-Chunk-Size alone cuts the body into chunks and injects nothing.
  const cut = await timed('/cut', { 'X-Echo-Response-Size': '3000', 'X-Echo-Chunk-Size': '1000' });
  assert.equal(cut.body.length, 3_000);
  assert.equal(cut.headers['x-echo-fault'], undefined);
});

test('X-Echo-Body-Delay – the headers come first, the body after the delay; X-Echo-Delay still comes before the headers', async () => {
  const before = await faultCounts(echo.url);
  const r = await timed('/late-body', { 'X-Echo-Body-Delay': '600ms', 'X-Echo-Explain': 'true' });
  assert.equal(r.status, 200);
  const first = r.arrivals[0]?.at ?? 0;
  // The gap between the head and the body is the proof the head went first (no upper wall-clock bound).
  assert.ok(first - r.headAt >= 590, `headers at ${r.headAt} ms, body at ${first} ms`);
  assert.equal(r.headers['x-echo-fault'], 'delay');
  assert.deepEqual(JSON.parse(String(r.headers['x-echo-applied'])), [
    { kind: 'delay', control: 'X-Echo-Body-Delay', source: 'header', value: 600 },
  ]);
  assert.deepEqual(countDelta(before, await faultCounts(echo.url)), { delay: 1 });

  const both = await timed('/both', { 'X-Echo-Delay': '400ms', 'X-Echo-Body-Delay': '400ms' });
  assert.ok(both.headAt >= 390, `headers after X-Echo-Delay (${both.headAt} ms)`);
  assert.ok((both.arrivals[0]?.at ?? 0) - both.headAt >= 390, 'then the body after X-Echo-Body-Delay');
  assert.equal(both.headers['x-echo-fault'], 'delay');
});

test('slow bodies – over HTTP/2 the throttle and the body delay work the same', async (t) => {
  const session = await openH2(echo.url);
  t.after(() => session.close());
  const before = await faultCounts(echo.url);
  const start = performance.now();
  const r = await h2Request(session, {
    ':path': '/h2-throttled',
    'x-echo-response-size': '6000',
    'x-echo-throttle': '6KB/s',
  });
  const ms = performance.now() - start;
  assert.equal(r.body.length, 6_000);
  assert.ok(ms >= 950, `6000 bytes at 6KB/s in ${ms} ms`);
  assert.equal(r.headers['x-echo-fault'], 'throttle');
  assert.deepEqual(countDelta(before, await faultCounts(echo.url)), { throttle: 1 });

  const stream = session.request({ ':path': '/h2-late', 'x-echo-body-delay': '500ms' });
  const t0 = performance.now();
  const [headAt, dataAt] = await new Promise<[number, number]>((resolve, reject) => {
    let head = 0;
    stream.on('response', () => {
      head = performance.now() - t0;
    });
    stream.once('data', () => resolve([head, performance.now() - t0]));
    stream.on('error', reject);
  });
  stream.resume();
  assert.deepEqual(countDelta(before, await faultCounts(echo.url)), { throttle: 1, delay: 1 });
  assert.ok(headAt > 0 && dataAt - headAt >= 490, `headers at ${headAt} ms, body at ${dataAt} ms`);
});

test('slow bodies – a client that leaves mid-body frees the slot at once; the server keeps serving', async () => {
  const leaving = new AbortController();
  const res = await request(`${echo.url}/leave`, {
    headers: { 'X-Echo-Response-Size': '1000000', 'X-Echo-Throttle': '10KB/s' },
    signal: leaving.signal,
  });
  assert.equal(res.headers['x-echo-fault'], 'throttle');
  const reader = res.body[Symbol.asyncIterator]();
  await reader.next();
  assert.equal(await scrapeValue(echo.url, 'echo_active_faults'), 1, 'the throttled body holds a slot');
  leaving.abort();
  await reader.next().catch(() => undefined);
  await until(
    'the slot came free when the client left',
    async () => (await scrapeValue(echo.url, 'echo_active_faults')) === 0,
  );
  const ok = await fetch(`${echo.url}/after`);
  assert.equal(ok.status, 200);
});

test('slow bodies – closing the server (drain deadline) ends the throttle: the body goes at once', async () => {
  const server = await startEcho({ ECHO_MAX_DELAY: '600s' });
  const start = performance.now();
  const res = await request(`${server.url}/drained`, {
    headers: { 'X-Echo-Response-Size': '300000', 'X-Echo-Throttle': '1KB/s' },
  });
  assert.equal(res.headers['x-echo-fault'], 'throttle');
  const reader = res.body[Symbol.asyncIterator]();
  await reader.next();
  assert.deepEqual(await faultCounts(server.url).then((c) => countDelta({}, c)), { throttle: 1 });
  const closing = server.close();
  let bytes = 0;
  for await (const chunk of { [Symbol.asyncIterator]: () => reader }) bytes += (chunk as Buffer).length;
  await closing;
  const seconds = (performance.now() - start) / 1000;
  assert.ok(bytes > 250_000, `the rest of the body came (${bytes} bytes)`);
  assert.ok(seconds < 30, `in ${seconds} s, not the 300 s the throttle asked for`);
});

test('slow bodies – ECHO_MAX_DELAY bounds the waiting: past it the rest goes at full speed', async () => {
  const server = await startEcho({ ECHO_MAX_DELAY: '1s' });
  try {
    const start = performance.now();
    const res = await request(`${server.url}/capped`, {
      headers: { 'X-Echo-Response-Size': '50000', 'X-Echo-Throttle': '1KB/s' },
    });
    const body = Buffer.from(await res.body.arrayBuffer());
    const seconds = (performance.now() - start) / 1000;
    assert.equal(body.length, 50_000);
    assert.equal(res.headers['x-echo-fault'], 'throttle');
    assert.deepEqual(countDelta({}, await faultCounts(server.url)), { throttle: 1 });
    assert.ok(seconds >= 0.9 && seconds < 15, `${seconds} s, not the 50 s the rate alone would take`);
  } finally {
    await server.close();
  }
});

test('slow bodies – bad values are a 400 naming the header; faults off means no shaping', async () => {
  const server = await startEcho({ ECHO_MAX_DELAY: '2s' });
  try {
    const bad: Array<[string, string]> = [
      ['X-Echo-Throttle', 'fast'],
      ['X-Echo-Throttle', '0B/s'],
      ['X-Echo-Throttle', '0.5B/s'],
      ['X-Echo-Throttle', '10KB'],
      ['X-Echo-Chunk-Size', '0'],
      ['X-Echo-Chunk-Size', '1048577'],
      ['X-Echo-Chunk-Size', 'big'],
      ['X-Echo-Chunk-Delay', '3s'],
      ['X-Echo-Chunk-Delay', 'soon'],
      ['X-Echo-Body-Delay', '3s'],
      ['X-Echo-Body-Delay', '-1'],
    ];
    for (const [name, value] of bad) {
      const r = await fetch(`${server.url}/bad`, { headers: { [name]: value } });
      assert.equal(r.status, 400, `${name}: ${value}`);
      const error = ((await r.json()) as { error: { code: string; message: string } }).error;
      assert.equal(error.code, 'ECHO_ERR_INVALID_HEADER');
      assert.ok(error.message.includes(name.toLowerCase()), error.message);
    }
    assert.equal(
      (await fetch(`${server.url}/ok`, { headers: { 'X-Echo-Chunk-Size': '1048576' } })).status,
      200,
    );

    const off = await fetch(`${server.url}/control/faults`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ enabled: false }),
    });
    assert.equal(off.status, 200);
    const start = performance.now();
    const plain = await fetch(`${server.url}/plain`, {
      headers: { 'X-Echo-Response-Size': '10000', 'X-Echo-Throttle': '1KB/s', 'X-Echo-Body-Delay': '1s' },
    });
    assert.equal((await plain.arrayBuffer()).byteLength, 10_000);
    assert.ok(performance.now() - start < 900, 'served plainly, at full speed');
    assert.equal(plain.headers.get('x-echo-fault'), null);
  } finally {
    await server.close();
  }
});
