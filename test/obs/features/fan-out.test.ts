import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { after, test } from 'node:test';
import axios from 'axios';
import Fastify, { type FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { Agent, request as undiciRequest } from 'undici';
import {
  FAN_OUT_METRICS,
  FAN_OUT_SPAN_ATTRIBUTES,
  FanOutTally,
  MAX_TRACKED_HOSTS,
  registerFanOut,
} from '../../../src/obs/features/fan-out.ts';
import { registerRequestContext } from '../../../src/obs/features/request-context/context-hook.ts';
import {
  createBudgetInterceptor,
  decideOutbound,
  instrumentAxios,
} from '../../../src/obs/features/timeout-budget/timeout-budget-clients.ts';
import { createObs, type ObsConfigInput } from '../../../src/obs/index.ts';
import { installOtelSdk, traceServer } from '../../helpers/otel-sdk.ts';
import { until } from '../../helpers/runtime.ts';
import { capturingLogger, type RunningObsApp, startObsApp } from '../helpers.ts';

/**
 * Request fan-out: each inbound request's outbound calls (fetch, undici, node:http, axios) and
 * distinct hosts, observed per endpoint when the response has finished; a warning above
 * `warn-threshold`, rate-limited per endpoint.
 */

type TestContext = { after(fn: () => Promise<void> | void): void };

const agent = new Agent().compose(createBudgetInterceptor());
after(() => agent.close());
const axiosClient = axios.create();
instrumentAxios(axiosClient);

/** A loopback server that answers `ok` and counts what it gets. */
async function target(t: TestContext): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const server: Server = createServer((_request, response) => {
    hits += 1;
    response.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return { url: `http://127.0.0.1:${port}/`, hits: () => hits };
}

function httpGet(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, (response) => {
      response.resume();
      response.on('end', () => resolve());
    });
    request.on('error', reject);
    request.end();
  });
}

/** One call of each client: fetch to a, undici to b, node:http to a, axios to b. */
async function fourClients(a: string, b: string): Promise<void> {
  await (await fetch(a)).text();
  await (await undiciRequest(b, { dispatcher: agent })).body.text();
  await httpGet(a);
  await axiosClient.get(b);
}

/** `n` fetch calls to `url`. */
async function fetches(url: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1) await (await fetch(url)).text();
}

interface Observed {
  count: number;
  sum: number;
}

/** Count and sum of a fan-out histogram for one endpoint (zeros when it has none). */
async function observed(registry: Registry, name: string, endpoint: string): Promise<Observed> {
  const metric = await registry.getSingleMetric(name)?.get();
  const of = (suffix: string) =>
    metric?.values.find(
      (v) =>
        (v as { metricName?: string }).metricName === `${name}${suffix}` && v.labels.endpoint === endpoint,
    )?.value ?? 0;
  return { count: of('_count'), sum: of('_sum') };
}

// `until`: the response reaches the client before fastify's onResponse runs.

async function observedAfter(
  registry: Registry,
  name: string,
  endpoint: string,
  count: number,
): Promise<Observed> {
  let last: Observed = { count: 0, sum: 0 };
  await until(`${name}{endpoint=${endpoint}} count ${count}`, async () => {
    last = await observed(registry, name, endpoint);
    return last.count >= count;
  });
  return last;
}

async function get(url: string): Promise<number> {
  const response = await fetch(url);
  await response.text();
  return response.status;
}

/** An app whose `/orders/:id` calls each of the four clients once; `/calls?n=` makes n fetches. */
async function fanOutApp(
  t: TestContext,
  config: ObsConfigInput = {},
): Promise<RunningObsApp & { a: Awaited<ReturnType<typeof target>>; b: Awaited<ReturnType<typeof target>> }> {
  const a = await target(t);
  const b = await target(t);
  const running = await startObsApp({ config }, (app) => {
    app.get('/orders/:id', async () => {
      await fourClients(a.url, b.url);
      return 'done';
    });
    app.get('/skip/orders', async () => {
      await fourClients(a.url, b.url);
      return 'done';
    });
    app.get('/calls', async (request) => {
      await fetches(a.url, Number((request.query as { n?: string }).n ?? 0));
      return 'done';
    });
  });
  t.after(() => running.close());
  return { ...running, a, b };
}

test('fan-out – fetch, undici, node:http and axios calls count once each, two hosts, per route pattern', async (t) => {
  const running = await fanOutApp(t);
  assert.equal(await get(`${running.url}/orders/1`), 200);
  assert.equal(await get(`${running.url}/orders/2`), 200);
  // every call reached its target: two per target per request
  assert.deepEqual([running.a.hits(), running.b.hits()], [4, 4]);
  const calls = await observedAfter(running.registry, FAN_OUT_METRICS.fanOut, '/orders/:id', 2);
  assert.deepEqual(calls, { count: 2, sum: 8 });
  const hosts = await observedAfter(running.registry, FAN_OUT_METRICS.dependencies, '/orders/:id', 2);
  assert.deepEqual(hosts, { count: 2, sum: 4 });
  // the bucket le=3 holds no request, le=5 both
  const metric = await running.registry.getSingleMetric(FAN_OUT_METRICS.fanOut)?.get();
  const bucket = (le: number) =>
    metric?.values.find(
      (v) =>
        (v as { metricName?: string }).metricName === `${FAN_OUT_METRICS.fanOut}_bucket` &&
        v.labels.le === le,
    )?.value;
  assert.deepEqual([bucket(3), bucket(5)], [0, 2]);
});

test('fan-out – a call outside any request is not counted; a 404 is observed as unmatched with 0 calls', async (t) => {
  const running = await fanOutApp(t);
  await fetches(running.a.url, 3);
  assert.equal(running.a.hits(), 3);
  assert.equal(await get(`${running.url}/nowhere`), 404);
  assert.equal(await get(`${running.url}/calls?n=1`), 200);
  assert.deepEqual(await observedAfter(running.registry, FAN_OUT_METRICS.fanOut, '/calls', 1), {
    count: 1,
    sum: 1,
  });
  assert.deepEqual(await observedAfter(running.registry, FAN_OUT_METRICS.fanOut, 'unmatched', 1), {
    count: 1,
    sum: 0,
  });
  const metric = await running.registry.getSingleMetric(FAN_OUT_METRICS.fanOut)?.get();
  const endpoints = new Set(metric?.values.map((v) => v.labels.endpoint));
  assert.ok(!endpoints.has('/nowhere'), [...endpoints].join());
});

test('fan-out – counted with obs.timeout-budget.enabled=false: no budget, the context is still entered', async (t) => {
  const running = await fanOutApp(t, { 'timeout-budget': { enabled: false } });
  assert.equal(await get(`${running.url}/orders/7`), 200);
  assert.deepEqual(await observedAfter(running.registry, FAN_OUT_METRICS.fanOut, '/orders/:id', 1), {
    count: 1,
    sum: 4,
  });
  assert.deepEqual(await observedAfter(running.registry, FAN_OUT_METRICS.dependencies, '/orders/:id', 1), {
    count: 1,
    sum: 2,
  });
});

test('fan-out – warn-threshold: exactly threshold calls logs nothing, one more logs a warning', async (t) => {
  const running = await fanOutApp(t, { 'fan-out': { 'warn-threshold': 3 } });
  const warnings = () => running.logger.lines.filter((l) => (l.object as { obs?: string }).obs === 'fan-out');
  assert.equal(await get(`${running.url}/calls?n=3`), 200);
  await observedAfter(running.registry, FAN_OUT_METRICS.fanOut, '/calls', 1);
  assert.deepEqual(warnings(), []);
  assert.equal(await get(`${running.url}/calls?n=4`), 200);
  await observedAfter(running.registry, FAN_OUT_METRICS.fanOut, '/calls', 2);
  const [line, ...rest] = warnings();
  assert.deepEqual(rest, []);
  assert.equal(line?.level, 'warn');
  assert.deepEqual(line?.object, {
    obs: 'fan-out',
    endpoint: '/calls',
    fan_out: 4,
    dependencies: 1,
    threshold: 3,
    suppressed: 0,
  });
  assert.match(String(line?.message), /\/calls made 4 outbound calls to 1 hosts/);
});

test('fan-out – enabled-when skips a request: nothing counted or observed; enabled=false registers nothing', async (t) => {
  const running = await fanOutApp(t, { 'fan-out': { 'enabled-when': { 'path-excludes': ['/skip'] } } });
  assert.equal(await get(`${running.url}/skip/orders`), 200);
  assert.equal(await get(`${running.url}/calls?n=1`), 200);
  await observedAfter(running.registry, FAN_OUT_METRICS.fanOut, '/calls', 1);
  assert.deepEqual(await observed(running.registry, FAN_OUT_METRICS.fanOut, '/skip/orders'), {
    count: 0,
    sum: 0,
  });
  const snapshot = (await (await fetch(`${running.url}/actuator/obs`)).json()) as {
    sections: Record<string, { skipped: number; observed: number }>;
  };
  assert.equal(snapshot.sections['fan-out']?.skipped, 1);

  const off = await fanOutApp(t, { 'fan-out': { enabled: false } });
  assert.equal(await get(`${off.url}/orders/1`), 200);
  assert.equal(off.registry.getSingleMetric(FAN_OUT_METRICS.fanOut), undefined);
  assert.equal(off.registry.getSingleMetric(FAN_OUT_METRICS.dependencies), undefined);
  const offSnapshot = (await (await fetch(`${off.url}/actuator/obs`)).json()) as {
    sections: Record<string, { enabled: boolean; observed: number }>;
  };
  assert.deepEqual(
    [offSnapshot.sections['fan-out']?.enabled, offSnapshot.sections['fan-out']?.observed],
    [false, 0],
  );
});

test('fan-out – the warning is rate-limited per endpoint, on an injected clock, and says how many it suppressed', async (t) => {
  const a = await target(t);
  const logger = capturingLogger();
  const obs = createObs({
    env: {},
    logger,
    registry: new Registry(),
    config: { 'fan-out': { 'warn-threshold': 1 } },
  });
  let now = 1_000_000;
  const app: FastifyInstance = Fastify();
  registerRequestContext(app, obs);
  registerFanOut(app, obs, { nowMs: () => now });
  app.get('/one', async () => {
    await fetches(a.url, 2);
    return 'ok';
  });
  app.get('/two/:x', async () => {
    await fetches(a.url, 2);
    return 'ok';
  });
  await app.ready();
  t.after(() => app.close());
  const warned = () => logger.lines.filter((l) => (l.object as { obs?: string }).obs === 'fan-out');
  // inject resolves after onResponse has run
  const hit = async (url: string) => assert.equal((await app.inject(url)).statusCode, 200);
  await hit('/one');
  await hit('/one');
  await hit('/two/1');
  assert.deepEqual(
    warned().map((l) => (l.object as { endpoint: string }).endpoint),
    ['/one', '/two/:x'],
  );
  now += 59_999;
  await hit('/one');
  assert.equal(warned().length, 2);
  now += 1;
  await hit('/one');
  const last = warned().at(-1)?.object as { endpoint: string; suppressed: number };
  assert.deepEqual([warned().length, last.endpoint, last.suppressed], [3, '/one', 2]);
  assert.match(String(warned().at(-1)?.message), /2 such warnings suppressed/);
  const section = obs.snapshot().sections['fan-out'] as { warnings: number; warnings_suppressed: number };
  assert.deepEqual([section.warnings, section.warnings_suppressed], [3, 2]);
});

test('fan-out – a tally counts calls without a host, and distinct hosts up to its bound plus one other', () => {
  const tally = new FanOutTally();
  tally.count(undefined);
  tally.count('Example.com:80');
  tally.count('example.com:80');
  assert.deepEqual([tally.calls, tally.dependencies], [3, 1]);
  for (let i = 0; i < MAX_TRACKED_HOSTS + 50; i += 1) tally.count(`h${i}:1`);
  assert.equal(tally.calls, 3 + MAX_TRACKED_HOSTS + 50);
  assert.equal(tally.dependencies, MAX_TRACKED_HOSTS + 1);
  tally.count(`x${'y'.repeat(100_000)}`);
  assert.equal(tally.dependencies, MAX_TRACKED_HOSTS + 1);
});

test('fan-out – a call in a retry attempt’s context copy counts on the same tally', async (t) => {
  const { runWithContextChanges } = await import(
    '../../../src/obs/features/request-context/request-context.ts'
  );
  const a = await target(t);
  const running = await startObsApp({}, (app) => {
    app.get('/retry', async () => {
      await fetches(a.url, 1);
      await runWithContextChanges({ retryDepth: 1 }, () => fetches(a.url, 2));
      return 'ok';
    });
  });
  t.after(() => running.close());
  assert.equal(await get(`${running.url}/retry`), 200);
  assert.deepEqual(await observedAfter(running.registry, FAN_OUT_METRICS.fanOut, '/retry', 1), {
    count: 1,
    sum: 3,
  });
});

test('fan-out – a Kafka produce counts as a call without a host', async (t) => {
  const a = await target(t);
  const running = await startObsApp({}, (app) => {
    app.get('/produce', async () => {
      // what instrumentKafka's send does for each produce
      decideOutbound('kafka');
      await fetches(a.url, 1);
      return 'ok';
    });
  });
  t.after(() => running.close());
  assert.equal(await get(`${running.url}/produce`), 200);
  assert.deepEqual(await observedAfter(running.registry, FAN_OUT_METRICS.fanOut, '/produce', 1), {
    count: 1,
    sum: 2,
  });
  assert.deepEqual(await observedAfter(running.registry, FAN_OUT_METRICS.dependencies, '/produce', 1), {
    count: 1,
    sum: 1,
  });
});

test('fan-out – the request’s span carries the calls and hosts so far; the snapshot lists the endpoints', async (t) => {
  const sdk = installOtelSdk(t);
  const a = await target(t);
  const b = await target(t);
  const running = await startObsApp({}, (app) => {
    traceServer(app.server, sdk, { ignore: (request) => request.url?.startsWith('/actuator') === true });
    app.get('/traced', async () => {
      await fourClients(a.url, b.url);
      return 'ok';
    });
    app.get('/quiet', async () => 'ok');
  });
  t.after(() => running.close());
  assert.equal(await get(`${running.url}/traced`), 200);
  assert.equal(await get(`${running.url}/quiet`), 200);
  // the server spans the SDK exported, in the order they ended: /traced, then /quiet
  const spans = await sdk.finishedSpans();
  assert.deepEqual(
    spans.map((s) => s.attributes['url.path']),
    ['/traced', '/quiet'],
  );
  assert.deepEqual(
    spans.map((s) => [
      s.attributes[FAN_OUT_SPAN_ATTRIBUTES.fanOut],
      s.attributes[FAN_OUT_SPAN_ATTRIBUTES.dependencies],
    ]),
    [
      [4, 2],
      [0, 0],
    ],
  );
  await observedAfter(running.registry, FAN_OUT_METRICS.fanOut, '/quiet', 1);
  const snapshot = (await (await fetch(`${running.url}/actuator/obs`)).json()) as {
    sections: Record<string, Record<string, unknown>>;
  };
  const section = snapshot.sections['fan-out'];
  assert.equal(section?.enabled, true);
  assert.deepEqual(section?.metrics, [FAN_OUT_METRICS.fanOut, FAN_OUT_METRICS.dependencies]);
  assert.equal(section?.observed, 2);
  assert.equal(section?.max_fan_out, 4);
  assert.deepEqual(section?.top_endpoints, [
    { endpoint: '/traced', requests: 1, mean_fan_out: 4, max_fan_out: 4 },
    { endpoint: '/quiet', requests: 1, mean_fan_out: 0, max_fan_out: 0 },
  ]);
  assert.deepEqual(section?.config, {
    enabled: true,
    'warn-threshold': 20,
    'enabled-when': { 'header-not-equals': {}, 'path-excludes': [] },
  });
});
