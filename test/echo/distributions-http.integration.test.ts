import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { Agent, request } from 'undici';
import { startEcho } from '../helpers/echo-server.ts';
import { send } from '../helpers/http.ts';
import { countDelta, faultCounts } from '../helpers/metrics.ts';
import { binomialViolations } from '../helpers/statistics.ts';

/**
 * Distributions and seeds through HTTP: over 10,000 seeded requests each weighted list's observed
 * shares lie within 5-sigma binomial bounds of its weights (the bound is shown to reject wrong
 * distributions in distributions.test.ts, and here against the observed counts); two runs with the
 * same seeds give byte-identical answers; bad lists are 400s naming the header.
 */

type Applied = Array<{ kind: string; control: string; source: string; value: string | number }>;

interface Seen {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

const N = 10_000;
const CONCURRENCY = 16;

/** Sends one request per seed, `CONCURRENCY` at a time over keep-alive, and keeps every answer. */
async function run(
  base: string,
  seeds: readonly number[],
  headersFor: (seed: number) => Record<string, string>,
  options: { method?: 'GET' | 'POST'; body?: string } = {},
): Promise<Seen[]> {
  const dispatcher = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 10_000 });
  const out: Seen[] = new Array(seeds.length);
  let next = 0;
  const worker = async () => {
    while (next < seeds.length) {
      const i = next++;
      const seed = seeds[i]!;
      const res = await request(`${base}/dist`, {
        dispatcher,
        method: options.method ?? 'GET',
        headers: { 'X-Echo-Seed': String(seed), 'X-Echo-History-Enabled': 'false', ...headersFor(seed) },
        ...(options.body === undefined ? {} : { body: options.body }),
      });
      out[i] = {
        status: res.statusCode,
        headers: res.headers,
        body: Buffer.from(await res.body.arrayBuffer()),
      };
    }
  };
  try {
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  } finally {
    await dispatcher.close();
  }
  return out;
}

function appliedOf(seen: Seen): Applied {
  return JSON.parse(String(seen.headers['x-echo-applied'] ?? '[]')) as Applied;
}

function tally(values: Iterable<string>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}

const SEEDS = Array.from({ length: N }, (_, i) => i);

test('distributions – over 10,000 seeded requests X-Echo-Status, X-Echo-Latency and X-Echo-Response-Size follow their weights', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const before = await faultCounts(echo.url);
  const seen = await run(echo.url, SEEDS, () => ({
    'X-Echo-Explain': 'true',
    'X-Echo-Status': '503:10,500:5',
    'X-Echo-Latency': '1ms:30,2ms:20',
    'X-Echo-Response-Size': '3:40,5:10',
  }));
  const statuses = tally(seen.map((s) => (s.status === 200 ? 'rest' : String(s.status))));
  const delays = tally(
    seen.map((s) => String(appliedOf(s).find((a) => a.kind === 'delay')?.value ?? 'rest')),
  );
  const sizes = tally(
    seen.map((s) =>
      s.headers['content-type'] === 'application/octet-stream' ? String(s.body.length) : 'rest',
    ),
  );
  const expected = {
    status: { 503: 0.1, 500: 0.05, rest: 0.85 },
    delay: { 1: 0.3, 2: 0.2, rest: 0.5 },
    size: { 3: 0.4, 5: 0.1, rest: 0.5 },
  };
  assert.deepEqual(binomialViolations(statuses, N, expected.status), [], JSON.stringify(statuses));
  assert.deepEqual(binomialViolations(delays, N, expected.delay), [], JSON.stringify(delays));
  assert.deepEqual(binomialViolations(sizes, N, expected.size), [], JSON.stringify(sizes));
  // The same bound rejects these counts against a wrong distribution.
  assert.notDeepEqual(binomialViolations(statuses, N, { 503: 0.05, 500: 0.1, rest: 0.85 }), []);
  assert.notDeepEqual(binomialViolations(delays, N, { 1: 0.2, 2: 0.3, rest: 0.5 }), []);
  assert.notDeepEqual(binomialViolations(sizes, N, { 3: 0.5, 5: 0.1, rest: 0.4 }), []);

  // The ledger agrees: each response's X-Echo-Fault names what X-Echo-Applied lists, each status
  // fault carries the status answered, and the counters moved by the faults applied, no more.
  let statusFaults = 0;
  let delayFaults = 0;
  for (const s of seen) {
    const applied = appliedOf(s);
    const kinds = [...new Set(applied.map((a) => a.kind))].join(',');
    assert.equal(s.headers['x-echo-fault'] ?? '', kinds);
    const status = applied.find((a) => a.kind === 'status');
    if (s.status !== 200)
      assert.deepEqual(status, {
        kind: 'status',
        control: 'X-Echo-Status',
        source: 'header',
        value: s.status,
      });
    else assert.equal(status, undefined, 'the rest applies nothing');
    if (status !== undefined) statusFaults++;
    if (applied.some((a) => a.kind === 'delay')) delayFaults++;
  }
  assert.deepEqual(countDelta(before, await faultCounts(echo.url)), {
    status: statusFaults,
    delay: delayFaults,
  });
});

test('distributions – over 10,000 seeded requests X-Echo-Error and an ECHO_DELAY list follow their weights', async (t) => {
  const echo = await startEcho({ ECHO_DELAY: '1ms:25,2ms:5' });
  t.after(() => echo.close());
  const before = await faultCounts(echo.url);
  const seen = await run(echo.url, SEEDS, () => ({
    'X-Echo-Explain': 'true',
    'X-Echo-Error': '502:10,rate-limit:5,random:5',
  }));
  const errors = tally(
    seen.map((s) => {
      const error = appliedOf(s).find((a) => a.kind === 'error');
      if (error === undefined) return 'rest';
      // `random` draws one of 500, 502, 503, 504, 429 after the entry: 502 and 429 mix with it.
      return String(error.value);
    }),
  );
  const delays = tally(
    seen.map((s) => String(appliedOf(s).find((a) => a.control === 'ECHO_DELAY')?.value ?? 'rest')),
  );
  // 502: 10% + 5%/5, 429: 5% + 5%/5, 500, 503, 504: 5%/5 each.
  const expectedErrors = { 502: 0.11, 429: 0.06, 500: 0.01, 503: 0.01, 504: 0.01, rest: 0.8 };
  assert.deepEqual(binomialViolations(errors, N, expectedErrors), [], JSON.stringify(errors));
  assert.deepEqual(
    binomialViolations(delays, N, { 1: 0.25, 2: 0.05, rest: 0.7 }),
    [],
    JSON.stringify(delays),
  );
  assert.notDeepEqual(binomialViolations(errors, N, { ...expectedErrors, 502: 0.06, 429: 0.11 }), []);
  assert.notDeepEqual(binomialViolations(delays, N, { 1: 0.05, 2: 0.25, rest: 0.7 }), []);
  for (const s of seen) {
    const error = appliedOf(s).find((a) => a.kind === 'error');
    assert.equal(s.status, error === undefined ? 200 : Number(error.value));
  }
  const errorFaults = N - (errors['rest'] ?? 0);
  const delayFaults = N - (delays['rest'] ?? 0);
  assert.deepEqual(countDelta(before, await faultCounts(echo.url)), {
    error: errorFaults,
    delay: delayFaults,
  });
});

/** What must be identical between two runs: everything but the request's own id, count and date. */
function fingerprint(s: Seen): string {
  const h = s.headers;
  return JSON.stringify([
    s.status,
    h['content-type'],
    h['content-length'],
    h['content-encoding'],
    h['x-echo-seed'],
    h['x-echo-fault'],
    h['x-echo-applied'],
    createHash('sha256').update(s.body).digest('hex'),
  ]);
}

test('X-Echo-Seed – two runs with the same seeds give byte-identical answers, generated bodies included', async (t) => {
  const scenarios = [
    { path: '/dist', responses: [{ status: 200, delay: '1ms:50,2-4ms:30' }, { status: 202 }] },
  ];
  const first = await startEcho({}, { scenarios });
  const second = await startEcho({}, { scenarios });
  t.after(() => Promise.all([first.close(), second.close()]));
  const seeds = Array.from({ length: 200 }, (_, i) => 1_000_003 * i);
  const headersFor = (seed: number): Record<string, string> => ({
    'X-Echo-Explain': 'true',
    'X-Echo-Chaos': '10',
    'X-Echo-Jitter': '3,2',
    'X-Echo-Error': 'random:10,503:5',
    'X-Echo-Status': '503:10,500:5,201:40',
    'X-Echo-Response-Size': '100:30,70000:60',
    ...(seed % 3 === 0 ? { 'X-Echo-Compress': 'gzip' } : {}),
  });
  // One request at a time, so the scenario's cycle meets the seeds in the same order on both.
  const sequential = async (base: string) => {
    const out: Seen[] = [];
    for (const seed of seeds) {
      const r = await send(`${base}/dist`, {
        method: 'POST',
        body: 'hello',
        headers: { 'X-Echo-Seed': String(seed), ...headersFor(seed) },
      });
      out.push({ status: r.status, headers: r.headers, body: r.body });
    }
    return out;
  };
  const a = await sequential(first.url);
  const b = await sequential(second.url);
  for (let i = 0; i < seeds.length; i++) {
    assert.equal(fingerprint(b[i]!), fingerprint(a[i]!), `seed ${seeds[i]}`);
    assert.equal(a[i]!.headers['x-echo-seed'], String(seeds[i]));
  }
  // The draws really vary with the seed: statuses, delays and bodies differ between seeds.
  assert.ok(new Set(a.map((s) => s.status)).size >= 5, 'several statuses');
  assert.ok(new Set(a.map(fingerprint)).size > 150, 'answers differ between seeds');
  const generated = a.filter(
    (s) => s.headers['content-type'] === 'application/octet-stream' && s.body.length >= 70000,
  );
  assert.ok(generated.length > 20);
  // Over 64 KiB: the seeded stream crosses a chunk. And an unseeded body differs each time.
  const unseeded = await send(`${first.url}/other`, { headers: { 'X-Echo-Response-Size': '70000' } });
  const again = await send(`${first.url}/other`, { headers: { 'X-Echo-Response-Size': '70000' } });
  assert.notDeepEqual(unseeded.body, again.body);
  assert.equal(unseeded.headers['x-echo-seed'], undefined, 'no seed, no X-Echo-Seed');
});

test('distributions – bad lists and seeds are 400s naming the header; the server keeps serving', async (t) => {
  const echo = await startEcho({ ECHO_MAX_DELAY: '10s' });
  t.after(() => echo.close());
  const cases: Array<[string, string, RegExp]> = [
    ['X-Echo-Status', '503:60,500:50', /the weights sum to 110, above 100/],
    ['X-Echo-Status', '503:10,600:5', /entry "600:5"/],
    ['X-Echo-Status', Array.from({ length: 33 }, () => '500:1').join(','), /at most 32 entries/],
    ['X-Echo-Error', '503:10,nope:5', /entry "nope:5"/],
    ['X-Echo-Error', 'reset:90,503:20', /sum to 110/],
    ['X-Echo-Response-Size', '1024:50,1048576:60', /sum to 110/],
    ['X-Echo-Response-Size', '1024:50,999999999999:10', /entry/],
    ['X-Echo-Delay', '100ms:90,2s', /entry "2s"/],
    ['X-Echo-Delay', '100ms:90,20s:10', /above ECHO_MAX_DELAY/],
    ['X-Echo-Delay', 'lognormal:100ms,1', /expected/],
    ['X-Echo-Latency', 'lognormal:100ms,6', /sigma/],
    ['X-Echo-Latency', 'lognormal:20s,1', /above ECHO_MAX_DELAY/],
    ['X-Echo-Latency', '100ms:50,500-100ms:10', /low to high/],
    ['X-Echo-Seed', '4294967296', /integer seed 0-4294967295/],
    ['X-Echo-Seed', 'abc', /integer seed/],
    ['X-Echo-Status', `503:10,${'5'.repeat(1100)}:1`, /at most 1024 characters/],
  ];
  for (const [name, value, message] of cases) {
    const r = await send(`${echo.url}/bad`, { headers: { [name]: value } });
    assert.equal(r.status, 400, `${name}: ${value}`);
    const body = JSON.parse(r.text);
    assert.equal(body.error.code, 'ECHO_ERR_INVALID_HEADER');
    assert.equal(body.error.details[0].field, name.toLowerCase());
    assert.match(body.error.details[0].message, message, `${name}: ${value}`);
  }
  const ok = await send(`${echo.url}/good`, { headers: { 'X-Echo-Status': '503:100' } });
  assert.equal(ok.status, 503);
});

test('distributions – a bare value keeps its meaning; X-Echo-Error takes any single value as an entry', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  assert.equal((await send(`${echo.url}/a`, { headers: { 'X-Echo-Status': '418' } })).status, 418);
  assert.equal((await send(`${echo.url}/a`, { headers: { 'X-Echo-Error': 'unavailable' } })).status, 503);
  // Weights at 100 always apply; a weight of 0 never does.
  assert.equal((await send(`${echo.url}/a`, { headers: { 'X-Echo-Error': 'bad-gateway:100' } })).status, 502);
  const never = await send(`${echo.url}/a`, {
    headers: { 'X-Echo-Error': 'bad-gateway:0', 'X-Echo-Status': '503:0' },
  });
  assert.equal(never.status, 200);
  assert.equal(never.headers['x-echo-fault'], undefined);
  // reset as an entry: the connection is reset, as with the bare value.
  await assert.rejects(
    send(`${echo.url}/a`, { headers: { 'X-Echo-Error': 'reset:100' } }),
    (e: Error & { code?: string }) => /ECONNRESET|UND_ERR_SOCKET/.test(String(e.code)),
  );
});

test('scenario delay – takes a weighted list and lognormal; a bad list is a 400 and the old set stays', async (t) => {
  const echo = await startEcho({ ECHO_MAX_DELAY: '5s' });
  t.after(() => echo.close());
  const post = (scenarios: unknown) =>
    send(`${echo.url}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(scenarios),
    });
  const good = await post([
    { path: '/w', responses: [{ status: 200, delay: '1ms:50,2ms:50' }] },
    { path: '/l', responses: [{ status: 200, delay: 'lognormal:2ms,0.5' }] },
  ]);
  assert.equal(good.status, 200, good.text);
  const w = await send(`${echo.url}/w`, { headers: { 'X-Echo-Explain': 'true', 'X-Echo-Seed': '5' } });
  const delay = (JSON.parse(String(w.headers['x-echo-applied'])) as Applied).find((a) => a.kind === 'delay');
  assert.ok(delay?.value === 1 || delay?.value === 2, JSON.stringify(delay));
  assert.equal(delay?.control, 'scenario /w');
  const l = await send(`${echo.url}/l`, { headers: { 'X-Echo-Explain': 'true' } });
  assert.equal(l.status, 200);
  for (const [delayText, message] of [
    ['1ms:60,2ms:60', /delay must be/],
    ['1ms:50,9s:10', /at most 5000ms/],
    ['lognormal:9s,1', /at most 5000ms/],
    ['lognormal:1s,0', /delay must be/],
  ] as const) {
    const bad = await post([{ path: '/bad', responses: [{ status: 200, delay: delayText }] }]);
    assert.equal(bad.status, 400, delayText);
    assert.match(bad.text, message, delayText);
  }
  const list = JSON.parse((await send(`${echo.url}/scenario`)).text) as Array<{ path: string }>;
  assert.deepEqual(
    list.map((s) => s.path),
    ['/w', '/l'],
  );
});

test('ECHO_SEED – every answer carries its seed, and that seed alone replays it elsewhere, bytes included', async (t) => {
  const seeded = await startEcho({ ECHO_SEED: '11' });
  const plain = await startEcho();
  t.after(() => Promise.all([seeded.close(), plain.close()]));
  const headers = {
    'X-Echo-Explain': 'true',
    'X-Echo-Status': '503:20,201:30',
    'X-Echo-Latency': '1ms:50,1-3ms:20',
    'X-Echo-Response-Size': '10:40,3000:40',
  };
  const seen: Seen[] = [];
  for (let i = 0; i < 40; i++) {
    const r = await send(`${seeded.url}/dist`, { method: 'POST', body: 'x', headers });
    seen.push({ status: r.status, headers: r.headers, body: r.body });
  }
  const seeds = seen.map((s) => String(s.headers['x-echo-seed']));
  assert.equal(new Set(seeds).size, 40, 'a seed of its own for each request');
  for (const s of seen) {
    const r = await send(`${plain.url}/dist`, {
      method: 'POST',
      body: 'x',
      headers: { ...headers, 'X-Echo-Seed': String(s.headers['x-echo-seed']) },
    });
    assert.equal(fingerprint({ status: r.status, headers: r.headers, body: r.body }), fingerprint(s));
  }
});
