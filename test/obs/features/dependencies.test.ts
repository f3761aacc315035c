import assert from 'node:assert/strict';
import { createServer, request as httpRequest } from 'node:http';
import { test } from 'node:test';
import axios from 'axios';
import Fastify, { type FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { Agent, request as undiciRequest } from 'undici';
import {
  DEPENDENCY_METRICS,
  DependencyHealth,
  dependencyName,
  methodLabel,
  outcomeOf,
  registerDependencies,
  SlidingWindow,
  statusLabel,
} from '../../../src/obs/features/dependencies.ts';
import {
  createBudgetInterceptor,
  type OutboundCallStart,
  onOutboundCall,
} from '../../../src/obs/features/timeout-budget/timeout-budget-clients.ts';
import { createObs, instrumentAxios, type ObsConfigInput } from '../../../src/obs/index.ts';
import { capturingLogger, problemsOf, startObsApp } from '../helpers.ts';

interface Downstream {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** The status it answers from now on. */
  status: number;
  close(): Promise<void>;
}

/** A real fastify service on loopback answering `status` to any request; `/hang` never answers. */
async function startDownstream(
  t: { after(fn: () => Promise<void>): void },
  status = 500,
): Promise<Downstream> {
  const app: FastifyInstance = Fastify({ forceCloseConnections: true });
  const downstream = { status } as Downstream;
  // Never answers: the client's own timeout ends the request, and closing the service its connection.
  app.get('/hang', () => new Promise<never>(() => {}));
  app.all('/*', async (_request, reply) => reply.code(downstream.status).send('answer'));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  Object.assign(downstream, {
    url: `http://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    port,
    close: () => app.close(),
  });
  t.after(() => app.close());
  return downstream;
}

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** An obs core with the dependency map on a clock the test moves. */
function depsObs(t: { after(fn: () => void): void }, config: ObsConfigInput = {}) {
  const clock = { now: 1_000_000 };
  const registry = new Registry();
  const obs = createObs({ env: {}, config, registry, logger: capturingLogger() });
  const stop = registerDependencies(obs, { nowMs: () => clock.now });
  t.after(() => {
    stop();
    obs.close();
  });
  return { obs, registry, clock };
}

async function requestsOf(
  registry: Registry,
): Promise<Array<{ labels: Record<string, string | number>; value: number }>> {
  const metric = registry.getSingleMetric(DEPENDENCY_METRICS.requests);
  assert.ok(metric !== undefined);
  return (await metric.get()).values.map((v) => ({
    labels: v.labels as Record<string, string>,
    value: v.value,
  }));
}

async function countOf(registry: Registry, labels: Record<string, string>): Promise<number> {
  let sum = 0;
  for (const v of await requestsOf(registry)) {
    if (Object.entries(labels).every(([k, value]) => v.labels[k] === value)) sum += v.value;
  }
  return sum;
}

async function component(obs: ReturnType<typeof createObs>) {
  const report = await obs.health();
  const dependencies = report.components.dependencies;
  assert.ok(dependencies !== undefined, 'the dependencies component is registered');
  return dependencies as {
    status: string;
    details: { degraded?: Record<string, { error_ratio: number; calls: number }> };
  };
}

test('dependencies – a failing downstream turns the component DEGRADED after the minimum calls, and UP when the window has passed', async (t) => {
  const down = await startDownstream(t, 500);
  const { obs, clock } = depsObs(t, {
    dependencies: { map: { [down.host]: 'orders' }, health: { 'minimum-calls': 4, window: 12_000 } },
  });
  for (let i = 0; i < 3; i++) assert.equal((await fetch(down.url)).status, 500);
  assert.equal((await component(obs)).status, 'UP', 'three calls are below the minimum: not judged');
  await fetch(down.url);
  const degraded = await component(obs);
  assert.equal(degraded.status, 'DEGRADED');
  assert.deepEqual(degraded.details.degraded, { orders: { error_ratio: 1, calls: 4, errors: 4 } });
  assert.equal((await obs.health()).status, 'DEGRADED');
  assert.equal((await obs.readiness()).ready, true, 'a degraded instance is still ready');

  clock.now += 11_000;
  assert.equal((await component(obs)).status, 'DEGRADED', 'still within the window');
  clock.now += 2_000;
  const after = await component(obs);
  assert.equal(after.status, 'UP', 'the failures left the window');
  assert.equal(after.details.degraded, undefined);
});

test('dependencies – the component goes back to UP when the downstream recovers and the ratio falls below the threshold', async (t) => {
  const down = await startDownstream(t, 503);
  const { obs } = depsObs(t, {
    dependencies: {
      map: { [down.host]: 'orders' },
      health: { 'minimum-calls': 4, 'error-rate-threshold': 0.5 },
    },
  });
  for (let i = 0; i < 4; i++) await fetch(down.url);
  assert.equal((await component(obs)).status, 'DEGRADED');
  down.status = 200;
  for (let i = 0; i < 4; i++) assert.equal((await fetch(down.url)).status, 200);
  assert.equal((await component(obs)).status, 'DEGRADED', '4 errors in 8 calls is at the threshold');
  await fetch(down.url);
  const up = await component(obs);
  assert.equal(up.status, 'UP', '4 errors in 9 calls is below it');
});

test('dependencies – a call to a closed port counts as transport_error, a timed-out call as timeout, both as errors', async (t) => {
  const down = await startDownstream(t, 200);
  const port = await closedPort();
  const { obs, registry } = depsObs(t, {
    dependencies: {
      map: { [`127.0.0.1:${port}`]: 'gone', [down.host]: 'slow' },
      health: { 'minimum-calls': 2 },
    },
  });
  await assert.rejects(fetch(`http://127.0.0.1:${port}/`));
  await assert.rejects(fetch(`${down.url}/hang`, { signal: AbortSignal.timeout(50) }), {
    name: 'TimeoutError',
  });
  assert.equal(
    await countOf(registry, { dep: 'gone', outcome: 'transport_error', status: 'none', method: 'GET' }),
    1,
  );
  assert.equal(
    await countOf(registry, { dep: 'slow', outcome: 'timeout', status: 'none', method: 'GET' }),
    1,
  );
  await assert.rejects(fetch(`http://127.0.0.1:${port}/`));
  await assert.rejects(fetch(`${down.url}/hang`, { signal: AbortSignal.timeout(50) }));
  const c = await component(obs);
  assert.equal(c.status, 'DEGRADED');
  assert.deepEqual(Object.keys(c.details.degraded ?? {}).sort(), ['gone', 'slow']);
  // node:http too: a refused connection and a destroyed request
  await new Promise<void>((resolve) => {
    const req = httpRequest(`http://127.0.0.1:${port}/`);
    req.on('error', () => resolve());
    req.end();
  });
  assert.equal(await countOf(registry, { dep: 'gone', outcome: 'transport_error' }), 3);
  const latency = registry.getSingleMetric(DEPENDENCY_METRICS.latency);
  const counts =
    (await latency?.get())?.values.filter((v) =>
      (v as { metricName?: string }).metricName?.endsWith('_count'),
    ) ?? [];
  assert.deepEqual(counts.map((v) => [v.labels.dep, v.value]).sort(), [
    ['gone', 3],
    ['slow', 2],
  ]);
});

test('dependencies – each transport counts a call exactly once: fetch, fetch over an instrumented undici, undici, node:http, axios', async (t) => {
  const down = await startDownstream(t, 200);
  const { registry } = depsObs(t, { dependencies: { map: { [down.host]: 'down' } } });
  const seen: OutboundCallStart[] = [];
  t.after(
    onOutboundCall((call) => {
      if (call.host === down.host) seen.push(call);
      return undefined;
    }),
  );
  const agent = new Agent().compose(createBudgetInterceptor());
  t.after(() => agent.close());
  const plainAxios = axios.create();
  const obsAxios = axios.create();
  instrumentAxios(obsAxios);

  const calls: Array<[string, () => Promise<unknown>]> = [
    ['fetch', () => fetch(down.url).then((r) => r.text())],
    ['fetch', () => fetch(down.url, { dispatcher: agent } as RequestInit).then((r) => r.text())],
    [
      'undici',
      () => undiciRequest(down.url, { dispatcher: agent, method: 'PUT' }).then((r) => r.body.text()),
    ],
    [
      'http',
      () =>
        new Promise((resolve, reject) => {
          const req = httpRequest(`${down.url}/x`, { method: 'DELETE' }, (res) => {
            res.resume();
            res.on('end', resolve);
          });
          req.on('error', reject);
          req.end();
        }),
    ],
    ['http', () => plainAxios.get(down.url)],
    ['http', () => obsAxios.post(down.url, { a: 1 })],
  ];
  let expected = 0;
  for (const [transport, call] of calls) {
    await call();
    expected += 1;
    assert.equal(await countOf(registry, { dep: 'down' }), expected, `one more call after ${transport}`);
    assert.equal(seen.length, expected);
    assert.equal(seen.at(-1)?.transport, transport);
  }
  assert.equal(await countOf(registry, { dep: 'down', method: 'PUT', status: '200', outcome: 'success' }), 1);
  assert.equal(await countOf(registry, { dep: 'down', method: 'DELETE' }), 1);
  assert.equal(await countOf(registry, { dep: 'down', method: 'POST' }), 1);
});

test('dependencies – the undici interceptor sees an error and a 5xx too', async (t) => {
  const down = await startDownstream(t, 502);
  const port = await closedPort();
  const { registry } = depsObs(t, {
    dependencies: { map: { [down.host]: 'down', [`127.0.0.1:${port}`]: 'gone' } },
  });
  const agent = new Agent().compose(createBudgetInterceptor());
  t.after(() => agent.close());
  const res = await undiciRequest(down.url, { dispatcher: agent });
  await res.body.text();
  await assert.rejects(undiciRequest(`http://127.0.0.1:${port}/`, { dispatcher: agent }));
  await assert.rejects(
    undiciRequest(`${down.url}/hang`, { dispatcher: agent, headersTimeout: 50 }),
    (error: { code?: string }) => error.code === 'UND_ERR_HEADERS_TIMEOUT',
  );
  assert.equal(await countOf(registry, { dep: 'down', status: '502', outcome: 'error' }), 1);
  assert.equal(await countOf(registry, { dep: 'gone', status: 'none', outcome: 'transport_error' }), 1);
  assert.equal(await countOf(registry, { dep: 'down', status: 'none', outcome: 'timeout' }), 1);
});

test('dependencies – the map: host:port first, then host, else the default name', () => {
  const map = new Map([
    ['api.internal:8443', 'payments'],
    ['api.internal', 'api'],
    ['[::1]', 'v6'],
  ]);
  assert.equal(dependencyName('api.internal:8443', map, 'unknown'), 'payments');
  assert.equal(dependencyName('API.internal:8080', map, 'unknown'), 'api');
  assert.equal(dependencyName('api.internal', map, 'unknown'), 'api');
  assert.equal(dependencyName('[::1]:9000', map, 'unknown'), 'v6');
  assert.equal(dependencyName('elsewhere:80', map, 'other'), 'other');
  assert.equal(dependencyName(undefined, map, 'unknown'), 'unknown');
});

test('dependencies – the map and default-name from the configuration name the dep label', async (t) => {
  const down = await startDownstream(t, 200);
  const named = depsObs(t, { dependencies: { map: { '127.0.0.1': 'loopback' } } });
  await fetch(down.url);
  assert.equal(await countOf(named.registry, { dep: 'loopback' }), 1);
  const unnamed = depsObs(t, { dependencies: { 'default-name': 'elsewhere' } });
  await fetch(down.url);
  assert.equal(await countOf(unnamed.registry, { dep: 'elsewhere' }), 1);
  assert.deepEqual(
    [...new Set((await requestsOf(unnamed.registry)).map((v) => v.labels.dep))],
    ['elsewhere'],
    'an unmapped host never becomes a label value',
  );
});

test('dependencies – labels are bounded: standard methods or OTHER, a status code or none, four outcomes', async (t) => {
  assert.equal(methodLabel('get'), 'GET');
  assert.equal(methodLabel('PURGE'), 'OTHER');
  assert.equal(methodLabel('x'.repeat(1000)), 'OTHER');
  assert.equal(statusLabel(204), '204');
  assert.equal(statusLabel(undefined), 'none');
  assert.equal(statusLabel(1234), 'none');
  assert.equal(outcomeOf({ status: 404 }), 'success');
  assert.equal(outcomeOf({ status: 500 }), 'error');
  assert.equal(outcomeOf({ error: new Error('refused') }), 'transport_error');
  assert.equal(outcomeOf({ error: new Error('aborted'), timedOut: true }), 'timeout');

  const down = await startDownstream(t, 200);
  const { registry } = depsObs(t);
  for (const method of ['PURGE', 'LOCK', 'MKCOL']) {
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(down.url, { method }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('error', reject);
      req.end();
    });
  }
  const values = await requestsOf(registry);
  assert.deepEqual(
    values.map((v) => [v.labels.dep, v.labels.method, v.value]),
    [['unknown', 'OTHER', 3]],
  );
});

test('dependencies – the sliding window keeps twelve buckets and forgets what is older than the window', () => {
  const window = new SlidingWindow(12_000);
  window.record(0, true);
  window.record(999, false);
  window.record(1_000, true);
  assert.deepEqual(window.totals(1_000), { calls: 3, errors: 2 });
  assert.deepEqual(window.totals(11_999), { calls: 3, errors: 2 });
  assert.deepEqual(window.totals(12_000), { calls: 1, errors: 1 }, 'the first bucket has left');
  assert.deepEqual(window.totals(13_000), { calls: 0, errors: 0 });
  // a bucket reused a window later starts afresh
  window.record(24_500, false);
  assert.deepEqual(window.totals(24_500), { calls: 1, errors: 0 });

  const health = new DependencyHealth({ windowMs: 12_000, threshold: 0.5, minimumCalls: 2 });
  health.record('a', 'timeout', 'none', 0.1, 0);
  assert.equal(health.health(0).status, 'UP', 'one call is below the minimum');
  health.record('a', 'success', '200', 0.1, 0);
  assert.equal(health.health(0).status, 'DEGRADED', 'a ratio at the threshold degrades');
});

test('dependencies – calls inside requests count too, except in a request enabled-when skips', async (t) => {
  const down = await startDownstream(t, 200);
  const app = await startObsApp(
    {
      config: {
        dependencies: { map: { [down.host]: 'down' }, 'enabled-when': { 'path-excludes': ['/internal'] } },
      },
    },
    (a) => {
      a.get('/call', async () => (await fetch(down.url)).status);
      a.get('/internal/call', async () => (await fetch(down.url)).status);
    },
  );
  t.after(() => app.close());
  await fetch(`${app.url}/call`);
  await fetch(`${app.url}/internal/call`);
  assert.equal(await countOf(app.registry, { dep: 'down' }), 1);
  const snapshot = (await (await fetch(`${app.url}/actuator/obs`)).json()) as {
    sections: { dependencies: Record<string, unknown> };
    features: Array<{ key: string; status: string; enabled: boolean }>;
  };
  const section = snapshot.sections.dependencies as {
    enabled: boolean;
    observed: number;
    skipped: number;
    dependencies: Record<
      string,
      { calls: number; outcomes: Record<string, number>; window: { calls: number } }
    >;
  };
  assert.equal(section.enabled, true);
  assert.ok(section.observed >= 1);
  assert.equal(section.skipped, 1);
  assert.equal(section.dependencies.down?.calls, 1);
  assert.equal(section.dependencies.down?.outcomes.success, 1);
  assert.equal(section.dependencies.down?.window.calls, 1);
  const health = (await (await fetch(`${app.url}/actuator/health`)).json()) as {
    components: Record<string, { status: string }>;
  };
  assert.equal(health.components.dependencies?.status, 'UP');
});

test('dependencies – enabled=false records nothing and adds no component; health.enabled=false keeps the meters only', async (t) => {
  const down = await startDownstream(t, 500);
  const off = depsObs(t, { dependencies: { enabled: false } });
  const noHealth = depsObs(t, { dependencies: { health: { enabled: false, 'minimum-calls': 1 } } });
  await fetch(down.url);
  assert.equal(off.registry.getSingleMetric(DEPENDENCY_METRICS.requests), undefined);
  assert.equal((await off.obs.health()).components.dependencies, undefined);
  assert.equal(await countOf(noHealth.registry, { outcome: 'error' }), 1);
  assert.equal((await noHealth.obs.health()).components.dependencies, undefined);
  assert.equal((await noHealth.obs.health()).status, 'UP');
});

test('dependencies – health.minimum-calls is bounded', () => {
  const problems = problemsOf({ env: { OBS_DEPENDENCIES_HEALTH_MINIMUM_CALLS: '0' } });
  assert.equal(problems.length, 1);
  assert.match(problems[0]?.message ?? String(problems[0]), /minimum-calls/);
});
