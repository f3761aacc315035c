import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { test } from 'node:test';
import { request } from 'undici';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { type Answer, type SendOptions, send as sendTo } from '../helpers/http.ts';
import { until } from '../helpers/runtime.ts';

const PACKAGE_VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const UPTIME = /^(\d+d)?(\d+h)?(\d+m)?\d+s$/;

const send = (echo: RunningEcho, path: string, options?: SendOptions): Promise<Answer> =>
  sendTo(echo.url + path, options);

async function getJson<T>(echo: RunningEcho, path: string, headers: Record<string, string> = {}): Promise<T> {
  const res = await send(echo, path, { headers });
  assert.equal(res.status, 200, `${path}: ${res.text}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  return JSON.parse(res.text) as T;
}

interface Health {
  status: string;
  timestamp: string;
  uptime: string;
  uptime_seconds: number;
  metrics: Record<string, number>;
}

test('service routes – /health reports status, UTC timestamp, uptime and basic metrics', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const before = Date.now();
  const health = await getJson<Health>(echo, '/health');
  assert.equal(health.status, 'healthy');
  assert.match(health.timestamp, ISO_UTC);
  assert.ok(Math.abs(Date.parse(health.timestamp) - before) < 5000, health.timestamp);
  assert.match(health.uptime, UPTIME);
  assert.equal(typeof health.uptime_seconds, 'number');
  assert.ok(health.uptime_seconds >= 0 && health.uptime_seconds < 60, String(health.uptime_seconds));
  for (const name of [
    'requests',
    'in_flight',
    'open_websockets',
    'open_sse_streams',
    'history_size',
    'history_bytes',
    'scenario_count',
    'rss_bytes',
    'heap_used_bytes',
    'event_loop_lag_ms',
  ]) {
    assert.equal(typeof health.metrics[name], 'number', `metrics.${name}`);
    assert.ok((health.metrics[name] ?? -1) >= 0, `metrics.${name} = ${health.metrics[name]}`);
  }
  assert.ok((health.metrics['rss_bytes'] ?? 0) > 0);
  assert.equal(health.metrics['in_flight'], 1, 'the health request itself is in flight');
  assert.equal(health.metrics['history_size'], 0);
  assert.equal(health.metrics['history_bytes'], 0);
  assert.equal(health.metrics['scenario_count'], 0);
});

test('service routes – /health counters move: requests, history_size, scenario_count, uptime', async (t) => {
  const echo = await startEcho(
    {},
    {
      scenarios: [
        { path: '/a', responses: [{ status: 200 }] },
        { path: '/b', responses: [{ status: 201 }] },
      ],
    },
  );
  t.after(() => echo.close());
  const beforeFirst = Date.now();
  const first = await getJson<Health>(echo, '/health');
  const afterFirst = Date.now();
  assert.equal(first.metrics['scenario_count'], 2);

  await send(echo, '/one');
  await send(echo, '/two', { method: 'POST', body: 'x' });
  await send(echo, '/three', { headers: { 'X-Echo-History-Enabled': 'false' } });
  // Some time between the two probes, for the uptime to show it (in seconds, to the millisecond).
  await until('50 ms since the first probe', () => Date.now() - afterFirst >= 50, 10_000, 5);
  const beforeSecond = Date.now();
  const second = await getJson<Health>(echo, '/health');
  const afterSecond = Date.now();
  assert.equal(
    second.metrics['requests'],
    (first.metrics['requests'] ?? 0) + 4,
    'three echoes and this probe',
  );
  assert.equal(second.metrics['history_size'], 2);
  // The uptime grows by the time between the probes, in seconds: bounds from this test's own clock
  // readings around each probe (1 ms of slack for the rounding), none from a fixed time.
  const grown = second.uptime_seconds - first.uptime_seconds;
  assert.ok(
    grown >= (beforeSecond - afterFirst - 1) / 1000 && grown <= (afterSecond - beforeFirst + 1) / 1000,
    `uptime grew by ${grown} s between probes ${beforeSecond - afterFirst} to ${afterSecond - beforeFirst} ms apart`,
  );

  await send(echo, '/scenario', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify([{ path: '/only', responses: [{ status: 200 }] }]),
  });
  assert.equal((await getJson<Health>(echo, '/health')).metrics['scenario_count'], 1);
});

test('service routes – /health counts requests in flight', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  // Delayed long enough to be in flight still when /health answers on a loaded machine.
  const slow = [1, 2].map(() => send(echo, '/slow', { headers: { 'X-Echo-Delay': '1s' } }));
  await until('the two slow echoes are in flight', () => echo.app.obs.drainState.inFlight === 2);
  const health = await getJson<Health>(echo, '/health');
  assert.equal(health.metrics['in_flight'], 3, 'two slow echoes and the probe');
  await Promise.all(slow);
});

test('service routes – /ready is 200 ready, then 503 draining once the drain starts', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const ready = await send(echo, '/ready');
  assert.equal(ready.status, 200);
  assert.match(String(ready.headers['content-type']), /^application\/json/);
  assert.deepEqual(JSON.parse(ready.text), { status: 'ready' });

  echo.app.echo.drain.abort();
  const draining = await send(echo, '/ready');
  assert.equal(draining.status, 503);
  assert.match(String(draining.headers['content-type']), /^application\/json/);
  assert.deepEqual(JSON.parse(draining.text), { status: 'draining' });
  assert.ok(draining.headers['x-request-id'], 'the request id is on the 503 too');
  // Liveness stays up while draining.
  assert.equal((await send(echo, '/health')).status, 200);
});

interface Info {
  method: string;
  path: string;
  url: string;
  query: unknown;
  remote_addr: string;
  request_id: string;
  protocol: string;
  tls: boolean;
  user_agent: string;
  content_type: string;
  body_size: number;
  headers: Record<string, string>;
  server: {
    hostname: string;
    version: string;
    uptime: string;
    start_time: string;
    request_count: number;
    node_version: string;
  };
}

test('service routes – /info describes the request and the server', async (t) => {
  const started = Date.now();
  const echo = await startEcho();
  t.after(() => echo.close());
  await send(echo, '/warm-up');
  const info = await getJson<Info>(echo, '/info?x=1&y=two', {
    'X-Request-ID': 'info-1',
    'User-Agent': 'echo-test/1.0',
    'Content-Type': 'application/json',
    'X-Custom': 'custom',
  });
  assert.equal(info.method, 'GET');
  assert.equal(info.path, '/info');
  assert.equal(info.url, '/info?x=1&y=two');
  assert.equal(info.query, 'x=1&y=two');
  assert.equal(info.remote_addr, '127.0.0.1');
  assert.equal(info.request_id, 'info-1');
  assert.equal(info.protocol, 'HTTP/1.1');
  assert.equal(info.tls, false);
  assert.equal(info.user_agent, 'echo-test/1.0');
  assert.equal(info.content_type, 'application/json');
  assert.equal(info.body_size, 0);
  assert.equal(info.headers['x-custom'], 'custom');
  assert.equal(info.headers['x-request-id'], 'info-1');

  assert.equal(info.server.hostname, hostname());
  assert.equal(info.server.version, PACKAGE_VERSION);
  assert.equal(typeof info.server.uptime, 'string');
  assert.match(info.server.uptime, UPTIME);
  assert.match(info.server.start_time, ISO_UTC);
  const startTime = Date.parse(info.server.start_time);
  assert.ok(startTime >= started - 1000 && startTime <= Date.now(), info.server.start_time);
  assert.equal(info.server.request_count, 2, 'the warm-up and this request, as a number');
  assert.equal(info.server.node_version, process.version);
});

test('service routes – /info without optional headers reports empty strings, not missing fields', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const res = await request(`${echo.url}/info`, { headers: { 'user-agent': '' } });
  const info = (await res.body.json()) as Info;
  assert.equal(info.query, '');
  assert.equal(info.content_type, '');
  assert.equal(typeof info.user_agent, 'string');
  assert.equal(typeof info.request_id, 'string');
  assert.ok(info.request_id.length > 0);
  assert.equal(info.request_id, res.headers['x-request-id']);
});

test('service routes – faults and delays never act on the service’s own routes', async (t) => {
  const echo = await startEcho({ ECHO_CHAOS: '100', ECHO_DELAY: '2s' });
  t.after(() => echo.close());
  const fault = { 'X-Echo-Error': '500', 'X-Echo-Delay': '2s', 'X-Echo-Status': '503' };
  for (const path of ['/health', '/ready', '/info', '/history', '/scenario', '/metrics']) {
    const res = await send(echo, path, { headers: fault });
    assert.equal(res.status, 200, `${path} answered ${res.status}`);
    assert.equal(res.headers['x-echo-fault'], undefined, path);
    assert.ok(res.ms < 1500, `${path} took ${res.ms} ms`);
  }
  // Whereas an echoed path does get the chaos.
  const echoed = await send(echo, '/anything', { headers: { 'X-Echo-Delay': '0ms' } });
  assert.ok(echoed.status >= 400, `chaos at 100% answered ${echoed.status}`);
  assert.equal(echoed.headers['x-echo-fault'], 'chaos');
});

test('service routes – another method is a 405 naming the allowed ones, never an echo, and changes nothing', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const cases: Array<[string, string, string]> = [
    ['POST', '/control/faults', 'GET, HEAD, PUT'],
    ['PATCH', '/control/readiness', 'GET, HEAD, PUT'],
    ['POST', '/control/liveness', 'GET, HEAD, PUT'],
    ['DELETE', '/scenario', 'GET, HEAD, POST'],
    ['POST', '/scenario/state', 'GET, HEAD, PUT'],
    ['GET', '/scenario/reset', 'POST'],
    ['POST', '/health', 'GET, HEAD'],
    ['PUT', '/metrics', 'GET, HEAD'],
  ];
  // A form body (curl -d) is a 405 too, not a 415 about its type.
  const form = await fetch(`${echo.url}/control/faults`, {
    method: 'POST',
    body: new URLSearchParams({ x: '1' }),
  });
  assert.equal(form.status, 405);
  for (const [method, path, allow] of cases) {
    const r = await fetch(`${echo.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'X-Echo-Status': '200' },
      ...(method === 'GET' ? {} : { body: '{"enabled": false, "ready": false, "healthy": false}' }),
    });
    assert.equal(r.status, 405, `${method} ${path}`);
    assert.equal(r.headers.get('allow'), allow, `${method} ${path}`);
    const body = (await r.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'ECHO_ERR_METHOD_NOT_ALLOWED');
    assert.match(body.error.message, new RegExp(`^${method} is not allowed on ${path}`));
  }
  assert.deepEqual(await (await fetch(`${echo.url}/control/faults`)).json(), { enabled: true });
  assert.equal((await fetch(`${echo.url}/ready`)).status, 200, 'readiness unchanged');
  // Echo paths take every method, as before; OPTIONS on a service route is not refused either.
  const echoed = await fetch(`${echo.url}/control`, { method: 'POST', body: 'mirror' });
  assert.equal(await echoed.text(), 'mirror');
  assert.notEqual((await fetch(`${echo.url}/health`, { method: 'OPTIONS' })).status, 405);
});

test('service routes – /info and /health give the request count as the same type, a number', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const info = await getJson<Info>(echo, '/info');
  const health = await getJson<{ metrics: { requests: unknown } }>(echo, '/health');
  assert.equal(typeof info.server.request_count, 'number');
  assert.equal(typeof health.metrics.requests, 'number');
  assert.equal(health.metrics.requests, info.server.request_count + 1, 'one request later');
});
