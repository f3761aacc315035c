import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { EchoMetrics } from '../../src/echo/metrics.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';

interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Parses the samples of a Prometheus text exposition (enough for prom-client's output). */
function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_s, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

function typesOf(text: string): Map<string, string> {
  const types = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(m[1]!, m[2]!);
  return types;
}

async function scrape(server: RunningEcho): Promise<string> {
  const response = await fetch(`${server.url}/metrics`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return response.text();
}

function value(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  return found.reduce((sum, s) => sum + s.value, 0);
}

async function hit(server: RunningEcho, path: string, init: RequestInit = {}): Promise<Response> {
  const response = await fetch(server.url + path, init);
  await response.arrayBuffer();
  return response;
}

test('metrics – /metrics has the echo series, process_* and nodejs_* with their types', async (t) => {
  const server = await startEcho({});
  t.after(() => server.close());
  await hit(server, '/warm-up', { headers: { 'X-Echo-Chaos': '100' } });
  const text = await scrape(server);
  const types = typesOf(text);
  assert.equal(types.get('echo_requests_total'), 'counter');
  assert.equal(types.get('echo_request_duration_seconds'), 'histogram');
  assert.equal(types.get('echo_chaos_errors_total'), 'counter');
  const names = [...types.keys()];
  assert.ok(
    names.some((n) => n.startsWith('process_')),
    names.join(' '),
  );
  assert.ok(
    names.some((n) => n.startsWith('nodejs_')),
    names.join(' '),
  );
  assert.ok(types.has('process_resident_memory_bytes'));
  assert.ok(types.has('nodejs_eventloop_lag_seconds'));

  const samples = parseSamples(text);
  const request = samples.find((s) => s.name === 'echo_requests_total');
  assert.deepEqual(Object.keys(request?.labels ?? {}).sort(), ['fault', 'method', 'path', 'status']);
  const bucket = samples.find((s) => s.name === 'echo_request_duration_seconds_bucket');
  assert.deepEqual(
    Object.keys(bucket?.labels ?? {}).sort(),
    ['fault', 'le'],
    'the histogram has no labels but fault and le',
  );
  const chaos = samples.find((s) => s.name === 'echo_chaos_errors_total');
  assert.deepEqual(chaos?.labels, { type: 'chaos' });
});

test('metrics – echo_log_lines_dropped_total counts what the log destination dropped, never going back', async () => {
  const metrics = new EchoMetrics(new Registry());
  const value = async () =>
    parseSamples(await metrics.registry.metrics()).find((s) => s.name === 'echo_log_lines_dropped_total')
      ?.value;
  assert.equal(await value(), 0, 'a counter with no destination watched reads 0');
  let dropped = 3;
  metrics.watchLogLinesDropped(() => dropped);
  assert.equal(await value(), 3);
  dropped = 10;
  assert.equal(await value(), 10);
  assert.equal(await value(), 10, 'a scrape does not count twice');
  assert.equal(
    (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === 'echo_log_lines_dropped_total')?.type,
    'counter',
  );
});

test('metrics – echo_requests_total counts by method, path (query cut) and status', async (t) => {
  const server = await startEcho({});
  t.after(() => server.close());
  await hit(server, '/orders');
  await hit(server, '/orders?page=2');
  await hit(server, '/orders', { method: 'POST', body: 'x' });
  await hit(server, '/orders', { headers: { 'X-Echo-Status': '418' } });
  await hit(server, '/bad', { headers: { 'X-Echo-Status': 'abc' } });
  const samples = parseSamples(await scrape(server));
  assert.equal(value(samples, 'echo_requests_total', { method: 'GET', path: '/orders', status: '200' }), 2);
  assert.equal(value(samples, 'echo_requests_total', { method: 'POST', path: '/orders', status: '200' }), 1);
  assert.equal(value(samples, 'echo_requests_total', { method: 'GET', path: '/orders', status: '418' }), 1);
  assert.equal(value(samples, 'echo_requests_total', { method: 'GET', path: '/bad', status: '400' }), 1);
  assert.equal(
    samples.filter((s) => s.name === 'echo_requests_total' && s.labels['path']?.includes('?')).length,
    0,
  );
});

test('metrics – a scrape counts the previous scrape: every answered request is counted once', async (t) => {
  const server = await startEcho({});
  t.after(() => server.close());
  const first = parseSamples(await scrape(server));
  await hit(server, '/one');
  await hit(server, '/two');
  const second = parseSamples(await scrape(server));
  const total = (s: Sample[]) => value(s, 'echo_requests_total');
  const count = (s: Sample[]) => value(s, 'echo_request_duration_seconds_count');
  // The first scrape, /one and /two.
  assert.equal(total(second) - total(first), 3);
  assert.equal(count(second) - count(first), 3);
  assert.equal(value(second, 'echo_requests_total', { path: '/metrics', status: '200' }), 1);
});

test('metrics – echo_request_duration_seconds sees an injected delay, in seconds', async (t) => {
  const server = await startEcho({});
  t.after(() => server.close());
  await hit(server, '/slow', { headers: { 'X-Echo-Delay': '300ms' } });
  const samples = parseSamples(await scrape(server));
  const bucket = (le: string) => value(samples, 'echo_request_duration_seconds_bucket', { le });
  assert.equal(bucket('+Inf'), 1);
  assert.equal(bucket('0.25'), 0, 'a 300 ms request is not under 0.25 s');
  assert.equal(bucket('1'), 1);
  const sum = value(samples, 'echo_request_duration_seconds_sum');
  assert.ok(sum >= 0.3 && sum < 5, `sum ${sum} s`);
});

test('metrics – echo_chaos_errors_total counts chaos and each X-Echo-Error by type', async (t) => {
  const server = await startEcho({});
  t.after(() => server.close());
  for (let i = 0; i < 3; i++) await hit(server, '/flaky', { headers: { 'X-Echo-Chaos': '100' } });
  await hit(server, '/err', { headers: { 'X-Echo-Error': 'unavailable' } });
  await hit(server, '/err', { headers: { 'X-Echo-Error': 'unavailable' } });
  await hit(server, '/err', { headers: { 'X-Echo-Error': '502' } });
  await hit(server, '/fine', { headers: { 'X-Echo-Chaos': '0' } });
  const samples = parseSamples(await scrape(server));
  assert.equal(value(samples, 'echo_chaos_errors_total', { type: 'chaos' }), 3);
  assert.equal(value(samples, 'echo_chaos_errors_total', { type: 'unavailable' }), 2);
  assert.equal(value(samples, 'echo_chaos_errors_total', { type: '502' }), 1);
  assert.equal(value(samples, 'echo_chaos_errors_total'), 6);
  assert.equal(value(samples, 'echo_requests_total', { path: '/err', status: '503' }), 2);
});

test("metrics – ECHO_CHAOS=100 counts no fault on the service's own routes", async (t) => {
  const server = await startEcho({ ECHO_CHAOS: '100' });
  t.after(() => server.close());
  // ECHO_CHAOS never touches the service's own routes.
  for (let i = 0; i < 3; i++) assert.equal((await hit(server, '/health')).status, 200);
  const samples = parseSamples(await scrape(server));
  assert.equal(value(samples, 'echo_chaos_errors_total'), 0);
});

test('metrics – 1,500 distinct paths leave at most 1,000 path values plus OVERFLOW', async (t) => {
  const server = await startEcho({ ECHO_HISTORY_SIZE: '0' });
  t.after(() => server.close());
  const paths = Array.from({ length: 1500 }, (_, i) => `/item/${i}`);
  for (let i = 0; i < paths.length; i += 100) {
    await Promise.all(paths.slice(i, i + 100).map((p) => hit(server, p)));
  }
  const samples = parseSamples(await scrape(server)).filter((s) => s.name === 'echo_requests_total');
  const values = new Set(samples.map((s) => s.labels['path']));
  assert.ok(values.has('OVERFLOW'));
  assert.ok(values.size <= 1001, `${values.size} distinct path values`);
  // Nothing is lost: every request is still counted, under its path or under OVERFLOW.
  assert.equal(value(samples, 'echo_requests_total', { method: 'GET' }), 1500);
  assert.ok(value(samples, 'echo_requests_total', { path: 'OVERFLOW' }) >= 500);
  // A path admitted before the cap keeps its own series.
  assert.equal(value(samples, 'echo_requests_total', { path: '/item/0' }), 1);
});

for (const [mode, expectOverflow] of [
  ['ENFORCING', true],
  ['DRY_RUN', false],
] as const) {
  test(`metrics – 5,000 distinct paths under ${mode}: ${expectOverflow ? 'the cap plus OVERFLOW' : 'every path'}, overflow counted`, async (t) => {
    const server = await startEcho({
      ECHO_HISTORY_SIZE: '0',
      LOG_REQUESTS: 'false',
      OBS_ENFORCEMENT_MODE: mode,
    });
    t.after(() => server.close());
    for (let i = 0; i < 5000; i += 250) {
      await Promise.all(Array.from({ length: 250 }, (_, j) => hit(server, `/p/${i + j}`)));
    }
    const all = parseSamples(await scrape(server));
    const samples = all.filter((s) => s.name === 'echo_requests_total' && s.labels['method'] === 'GET');
    const values = new Set(samples.map((s) => s.labels['path']));
    if (expectOverflow) {
      assert.ok(values.has('OVERFLOW'));
      assert.ok(values.size <= 1001, `${values.size} distinct path values`);
    } else {
      assert.ok(!values.has('OVERFLOW'));
      assert.equal(values.size, 5000);
    }
    assert.equal(value(samples, 'echo_requests_total'), 5000);
    const overflow = value(all, 'obs_cardinality_overflow_total', {
      meter: 'echo_requests_total',
      tag_key: 'path',
    });
    assert.ok(overflow >= 4000, `overflow counted ${overflow} times`);
  });
}

function promtool(): { found: boolean; run(input: string): ReturnType<typeof spawnSync> } {
  const probe = spawnSync('promtool', ['--version'], { encoding: 'utf8', timeout: 10_000 });
  return {
    found: probe.error === undefined,
    run: (input) => spawnSync('promtool', ['check', 'metrics'], { input, encoding: 'utf8', timeout: 30_000 }),
  };
}

test('metrics – promtool check metrics accepts the scrape', async (t) => {
  const tool = promtool();
  if (!tool.found) {
    const why = 'promtool not found on PATH (Debian package prometheus); .ci/run installs it';
    if (process.env['CI']) assert.fail(`${why}: required in CI`);
    t.skip(why);
    return;
  }
  const server = await startEcho({});
  t.after(() => server.close());
  await hit(server, '/a');
  await hit(server, '/a', { method: 'POST', body: 'b' });
  await hit(server, '/c', { headers: { 'X-Echo-Chaos': '100' } });
  await hit(server, '/d', { headers: { 'X-Echo-Error': 'internal' } });
  await hit(server, '/e', { headers: { 'X-Echo-Delay': '20ms' } });
  await scrape(server);
  const result = tool.run(await scrape(server));
  assert.equal(result.error, undefined);
  assert.equal(result.status, 0, `promtool check metrics:\n${result.stdout}${result.stderr}`);
});

test("metrics – NaN is spelled NaN (never prom-client's `Nan`), and an unknown container figure has no sample", async (t) => {
  const server = await startEcho({});
  t.after(() => server.close());
  const text = await scrape(server);
  // A NaN may be there (prom-client's event-loop lag mean before its first sample), but only as the
  // format spells it.
  const nan = text.split('\n').filter((line) => !line.startsWith('#') && /\snan(\s|$)/i.test(line));
  assert.deepEqual(
    nan.filter((line) => !/ NaN$/.test(line)),
    [],
  );
  assert.equal(
    nan.filter((line) => line.startsWith('obs_container_')).length,
    0,
    'an unknown container figure has no sample',
  );
  // The container meters are there, with their HELP, whether this machine's cgroup knows a figure or not.
  assert.match(text, /^# TYPE obs_container_memory_headroom_ratio gauge$/m);
});
