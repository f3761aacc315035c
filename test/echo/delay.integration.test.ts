import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { request } from 'undici';
import type { RandomSource } from '../../src/echo/random.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';

// What a request's delay headers drew is read from `X-Echo-Applied` (every request asks with
// `X-Echo-Explain: true`): which control won and the exact milliseconds. The clock only checks that
// the service waited that long: never shorter than asked (it waits out a timer that fired early, see
// the test below), and not far longer; a loaded 2-core machine can make an answer late by hundreds of
// milliseconds, so the upper bound is loose. Delays stay at or below 400 ms.
const EARLY_MS = 20;
const LATE_MS = 2000;

interface Timed {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  elapsedMs: number;
}

async function timed(url: string, headers: Record<string, string> = {}): Promise<Timed> {
  const start = performance.now();
  const res = await request(url, { headers: { 'X-Echo-Explain': 'true', ...headers } });
  const body = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body, elapsedMs: performance.now() - start };
}

/** The delay the service applied to a request, as `X-Echo-Applied` lists it; undefined when none. */
function appliedDelay(actual: Timed): { control: string; value: number } | undefined {
  const header = actual.headers['x-echo-applied'];
  if (header === undefined) return undefined;
  const list = JSON.parse(String(header)) as Array<{ kind: string; control: string; value: number }>;
  const delays = list.filter((f) => f.kind === 'delay');
  assert.ok(delays.length <= 1, `one delay at most: ${String(header)}`);
  return delays[0] === undefined ? undefined : { control: delays[0].control, value: delays[0].value };
}

function assertDelay(actual: Timed, expectedMs: number, what: string): void {
  assert.equal(actual.status, 200, `${what}: status (body ${actual.body})`);
  assert.equal(appliedDelay(actual)?.value, expectedMs, `${what}: the drawn delay (X-Echo-Applied)`);
  assert.ok(
    actual.elapsedMs >= expectedMs - EARLY_MS,
    `${what}: answered after ${actual.elapsedMs.toFixed(1)} ms, expected at least ${expectedMs - EARLY_MS} ms`,
  );
  assert.ok(
    actual.elapsedMs <= expectedMs + LATE_MS,
    `${what}: answered after ${actual.elapsedMs.toFixed(1)} ms, expected at most ${expectedMs + LATE_MS} ms`,
  );
}

/** Servers shared by the tests that need a given random source and no special environment. */
const servers: Record<'low' | 'high' | 'middle', RunningEcho | undefined> = {
  low: undefined,
  high: undefined,
  middle: undefined,
};
const LOW: RandomSource = () => 0;
const HIGH: RandomSource = () => 0.999;
const MIDDLE: RandomSource = () => 0.5;

before(async () => {
  servers.low = await startEcho({}, { random: LOW });
  servers.high = await startEcho({}, { random: HIGH });
  servers.middle = await startEcho({}, { random: MIDDLE });
  // Warm up (connection pool, JIT) so the first timed request measures the delay, not the start-up.
  for (const s of Object.values(servers))
    if (s !== undefined) await (await request(`${s.url}/warmup`)).body.text();
});

after(async () => {
  await Promise.all(Object.values(servers).map((s) => s?.close()));
});

function url(which: keyof typeof servers, path = '/delay'): string {
  const s = servers[which];
  assert.ok(s, 'server started');
  return `${s.url}${path}`;
}

test('X-Echo-Delay – without any delay header the echo answers at once', async () => {
  const r = await timed(url('low'));
  assert.equal(r.status, 200);
  assert.equal(appliedDelay(r), undefined, 'no delay applied');
  assert.match(r.body, /^GET \/delay HTTP\/1\.1$/m);
});

test('X-Echo-Delay – milliseconds: 300ms holds the answer about 300 ms', async () => {
  assertDelay(await timed(url('low'), { 'X-Echo-Delay': '300ms' }), 300, '300ms');
});

test('X-Echo-Delay – seconds with a fraction: 0.3s holds the answer about 300 ms', async () => {
  assertDelay(await timed(url('low'), { 'X-Echo-Delay': '0.3s' }), 300, '0.3s');
});

test('X-Echo-Delay – a bare number is milliseconds: 300 holds the answer about 300 ms', async () => {
  assertDelay(await timed(url('low'), { 'X-Echo-Delay': '300' }), 300, 'bare 300');
});

test('X-Echo-Delay – the delayed answer is still the normal echo', async () => {
  const r = await timed(url('low', '/slow?x=1'), { 'X-Echo-Delay': '50ms', 'X-Request-ID': 'delay-1' });
  assertDelay(r, 50, '50ms');
  assert.equal(r.headers['x-request-id'], 'delay-1');
  assert.match(r.body, /^GET \/slow\?x=1 HTTP\/1\.1\n/);
});

test('X-Echo-Jitter – base,jitter: the lowest draw waits base - jitter', async () => {
  // random 0 → base - jitter = 200 - 150 = 50 ms (the highest draw would be 350 ms).
  assertDelay(await timed(url('low'), { 'X-Echo-Jitter': '200,150' }), 50, 'jitter low');
});

test('X-Echo-Jitter – base,jitter: the highest draw waits base + jitter', async () => {
  const r = await timed(url('high'), { 'X-Echo-Jitter': '200,150' });
  assertDelay(r, 350, 'jitter high');
});

test('X-Echo-Jitter – a jitter larger than the base never makes a negative delay', async () => {
  const r = await timed(url('low'), { 'X-Echo-Jitter': '10,300' });
  assert.equal(r.status, 200);
  // 10 - 300 clamps to 0: no delay, so none listed (a listed negative or positive value fails).
  assert.equal(appliedDelay(r), undefined, `applied ${JSON.stringify(appliedDelay(r))}`);
});

test('X-Echo-Random-Delay – min,max: the lowest draw waits min', async () => {
  const r = await timed(url('low'), { 'X-Echo-Random-Delay': '50,350' });
  assertDelay(r, 50, 'random-delay low');
});

test('X-Echo-Random-Delay – min,max: the highest draw waits max', async () => {
  const r = await timed(url('high'), { 'X-Echo-Random-Delay': '50,350' });
  assertDelay(r, 350, 'random-delay high');
});

test('X-Echo-Random-Delay – min above max is a 400', async () => {
  const r = await timed(url('low'), { 'X-Echo-Random-Delay': '300,100' });
  assert.equal(r.status, 400);
  const body = JSON.parse(r.body);
  assert.equal(body.error.code, 'ECHO_ERR_INVALID_HEADER');
  assert.equal(body.error.details[0].field, 'x-echo-random-delay');
});

test('X-Echo-Exponential – base,attempt: a middle draw waits exactly base * 2^(attempt-1)', async () => {
  // 25 * 2^3 = 200 ms; attempt 1-based, so attempt 1 would be 25 ms and a 0-based count 400 ms.
  assertDelay(await timed(url('middle'), { 'X-Echo-Exponential': '25,4' }), 200, 'exponential nominal');
});

test('X-Echo-Exponential – the lowest draw is 25% below the nominal delay', async () => {
  assertDelay(await timed(url('low'), { 'X-Echo-Exponential': '25,4' }), 150, 'exponential -25%');
});

test('X-Echo-Exponential – the highest draw is 25% above the nominal delay', async () => {
  assertDelay(await timed(url('high'), { 'X-Echo-Exponential': '25,4' }), 250, 'exponential +25%');
});

test('X-Echo-Exponential – attempt 1 waits the base itself', async () => {
  const r = await timed(url('middle'), { 'X-Echo-Exponential': '100,1' });
  assertDelay(r, 100, 'exponential attempt 1');
});

test('X-Echo-Exponential – attempt 0, attempt 33 and a missing attempt are each a 400', async () => {
  for (const value of ['100,0', '100,33', '100', 'abc,2']) {
    const r = await timed(url('low'), { 'X-Echo-Exponential': value });
    assert.equal(r.status, 400, `X-Echo-Exponential: ${value}`);
    assert.equal(JSON.parse(r.body).error.details[0].field, 'x-echo-exponential');
  }
});

test('X-Echo-Latency – a fixed duration waits that long', async () => {
  assertDelay(await timed(url('high'), { 'X-Echo-Latency': '300ms' }), 300, 'latency fixed');
});

test('X-Echo-Latency – a min-max range: the lowest draw waits min', async () => {
  assertDelay(await timed(url('low'), { 'X-Echo-Latency': '100-300ms' }), 100, 'latency range low');
});

test('X-Echo-Latency – a min-max range: the highest draw waits max', async () => {
  assertDelay(await timed(url('high'), { 'X-Echo-Latency': '100-300ms' }), 300, 'latency range high');
});

test('X-Echo-Latency – a reversed range is a 400', async () => {
  const r = await timed(url('low'), { 'X-Echo-Latency': '300-100ms' });
  assert.equal(r.status, 400);
  assert.equal(JSON.parse(r.body).error.details[0].field, 'x-echo-latency');
});

test('X-Echo-Delay – malformed values are a 400 that names the header and the form', async () => {
  for (const value of ['fast', '-5ms', '10w', '1,5s']) {
    const r = await timed(url('low'), { 'X-Echo-Delay': value });
    assert.equal(r.status, 400, `X-Echo-Delay: ${value}`);
    const detail = JSON.parse(r.body).error.details[0];
    assert.equal(detail.field, 'x-echo-delay');
    assert.equal(detail.value, value);
    assert.match(detail.message, /duration/);
  }
});

// Precedence: each pair sends a short delay in the header that should win and a long one
// (400 ms) in the header that should lose, with the loser listed first on the wire.
const PRECEDENCE: ReadonlyArray<readonly [string, string, string, string]> = [
  ['X-Echo-Jitter', '400,0', 'X-Echo-Delay', '20ms'],
  ['X-Echo-Random-Delay', '400,400', 'X-Echo-Jitter', '20,0'],
  ['X-Echo-Exponential', '400,1', 'X-Echo-Random-Delay', '20,20'],
  ['X-Echo-Latency', '400ms', 'X-Echo-Exponential', '20,1'],
];

for (const [loser, loserValue, winner, winnerValue] of PRECEDENCE) {
  test(`delay precedence – ${winner} beats ${loser}: only the first present counts`, async () => {
    const r = await timed(url('middle'), { [loser]: loserValue, [winner]: winnerValue });
    assertDelay(r, 20, `${winner} over ${loser}`);
    assert.equal(appliedDelay(r)?.control, winner);
  });
}

test('delay precedence – X-Echo-Delay beats every other delay header at once', async () => {
  const r = await timed(url('middle'), {
    'X-Echo-Latency': '400ms',
    'X-Echo-Exponential': '400,1',
    'X-Echo-Random-Delay': '400,400',
    'X-Echo-Jitter': '400,0',
    'X-Echo-Delay': '0',
  });
  assert.equal(r.status, 200, r.body);
  assert.notEqual(appliedDelay(r)?.control ?? 'X-Echo-Delay', 'X-Echo-Latency');
  assert.ok([undefined, 0].includes(appliedDelay(r)?.value), `applied ${JSON.stringify(appliedDelay(r))}`);
});

test('delay precedence – the delays do not add up: Delay 200ms with Latency 200ms waits about 200 ms', async () => {
  const r = await timed(url('middle'), { 'X-Echo-Latency': '200ms', 'X-Echo-Delay': '200ms' });
  assertDelay(r, 200, 'not summed');
  assert.equal(appliedDelay(r)?.control, 'X-Echo-Delay');
});

test('ECHO_DELAY – applies to a request that sends no delay header', async () => {
  const echo = await startEcho({ ECHO_DELAY: '300ms' });
  try {
    assertDelay(await timed(`${echo.url}/default`), 300, 'ECHO_DELAY');
  } finally {
    await echo.close();
  }
});

test('ECHO_DELAY – a range draws from it with the injected random source', async () => {
  const low = await startEcho({ ECHO_DELAY: '50-350ms' }, { random: LOW });
  const high = await startEcho({ ECHO_DELAY: '50-350ms' }, { random: HIGH });
  try {
    assertDelay(await timed(`${low.url}/default`), 50, 'ECHO_DELAY range low');
    assertDelay(await timed(`${high.url}/default`), 350, 'ECHO_DELAY range high');
  } finally {
    await Promise.all([low.close(), high.close()]);
  }
});

test('ECHO_DELAY – any delay header beats it, even a zero one', async () => {
  const echo = await startEcho({ ECHO_DELAY: '400ms' }, { random: LOW });
  try {
    const zero = await timed(`${echo.url}/x`, { 'X-Echo-Delay': '0ms' });
    assert.equal(zero.status, 200);
    assert.ok(
      [undefined, 0].includes(appliedDelay(zero)?.value),
      `applied ${JSON.stringify(appliedDelay(zero))}`,
    );
    const latency = await timed(`${echo.url}/x`, { 'X-Echo-Latency': '50ms' });
    assertDelay(latency, 50, 'latency over ECHO_DELAY');
    assert.equal(appliedDelay(latency)?.control, 'X-Echo-Latency');
  } finally {
    await echo.close();
  }
});

test('ECHO_DELAY – never delays the service routes', async () => {
  const echo = await startEcho({ ECHO_DELAY: '400ms' });
  try {
    for (const path of ['/health', '/ready', '/info', '/metrics', '/history', '/scenario']) {
      const r = await timed(`${echo.url}${path}`);
      assert.equal(r.status, 200, path);
      assert.equal(appliedDelay(r), undefined, `${path}: no delay applied`);
      assert.equal(r.headers['x-echo-fault'], undefined, `${path}: no fault`);
    }
  } finally {
    await echo.close();
  }
});

test('ECHO_MAX_DELAY – a delay header above the ceiling is an immediate 400', async () => {
  const echo = await startEcho({ ECHO_MAX_DELAY: '2s' }, { random: LOW });
  try {
    const cases: Record<string, string> = {
      'X-Echo-Delay': '2001ms',
      'X-Echo-Jitter': '1500,1000',
      'X-Echo-Random-Delay': '1500,3000',
      'X-Echo-Exponential': '1000,3',
      'X-Echo-Latency': '1500-3000ms',
    };
    for (const [name, value] of Object.entries(cases)) {
      const r = await timed(`${echo.url}/capped`, { [name]: value });
      assert.equal(r.status, 400, `${name}: ${value}`);
      assert.equal(appliedDelay(r), undefined, `${name}: the 400 waited for no delay`);
      const body = JSON.parse(r.body);
      assert.equal(body.error.code, 'ECHO_ERR_INVALID_HEADER');
      assert.equal(body.error.details[0].field, name.toLowerCase());
      assert.match(body.error.details[0].message, /ECHO_MAX_DELAY/);
    }
    // Nothing else happened for those requests: none was recorded.
    assert.deepEqual(await (await request(`${echo.url}/history`)).body.json(), []);
  } finally {
    await echo.close();
  }
});

test('ECHO_MAX_DELAY – a delay exactly at the ceiling is served', async () => {
  const echo = await startEcho({ ECHO_MAX_DELAY: '200ms' });
  try {
    assertDelay(await timed(`${echo.url}/edge`, { 'X-Echo-Delay': '200ms' }), 200, 'at the ceiling');
  } finally {
    await echo.close();
  }
});

test('ECHO_MAX_DELAY – ECHO_DELAY above the ceiling stops startup, naming the variable', async () => {
  await assert.rejects(startEcho({ ECHO_MAX_DELAY: '200ms', ECHO_DELAY: '5s' }), (err: Error) => {
    assert.match(err.message, /ECHO_DELAY="5s"/);
    return true;
  });
});

test('delay – never shorter than asked on the service clock, though libuv keeps whole milliseconds', async () => {
  // A timer of 10 ms armed at 100.9 ms on libuv's millisecond clock fires at 110 ms: 9.1 ms later.
  // The request's duration (fastify's, on performance.now, from before the delay began) must not
  // fall in the 10 ms bucket: without the service waiting out the rest, 4 to 6 of the 40 did.
  const echo = await startEcho();
  try {
    for (let i = 0; i < 40; i++) {
      const res = await request(`${echo.url}/short`, { headers: { 'x-echo-delay': '10ms' } });
      assert.equal(res.statusCode, 200);
      await res.body.text();
    }
    const metrics = await (await request(`${echo.url}/metrics`)).body.text();
    const count = /^echo_request_duration_seconds_count\{fault="delay"\} (\d+)$/m.exec(metrics)?.[1];
    const within10ms = /^echo_request_duration_seconds_bucket\{le="0.01",fault="delay"\} (\d+)$/m.exec(
      metrics,
    )?.[1];
    assert.equal(count, '40', metrics);
    assert.equal(within10ms, '0', 'some 10 ms delays took 10 ms or less');
  } finally {
    await echo.close();
  }
});
