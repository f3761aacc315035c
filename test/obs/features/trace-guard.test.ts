import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import {
  isValidTraceparent,
  TRACE_CONTEXT_MISSING_CODE,
  traceIdOfTraceparent,
} from '../../../src/obs/features/trace-guard.ts';
import { post, type RunningObsApp, startObsApp } from '../helpers.ts';

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

function routes(app: FastifyInstance): void {
  app.get('/orders/:id', async () => 'order');
  app.post('/orders', async () => 'created');
  app.get('/health', async () => 'up');
  app.get('/metrics', async (_request, reply) =>
    reply.type(app.obs.registry.contentType).send(await app.obs.registry.metrics()),
  );
}

/** The trace-guard series of the registry, sorted (read directly: `/metrics` may be guarded). */
async function series(obs: RunningObsApp): Promise<string[]> {
  const text = await obs.registry.metrics();
  return text
    .split('\n')
    .filter((l) => /^obs_trace_(received|missing)_total\{/.test(l))
    .sort();
}

const get = (obs: RunningObsApp, path: string, traceparent?: string) =>
  fetch(`${obs.url}${path}`, { headers: traceparent === undefined ? {} : { traceparent } });

test('trace-guard – isValidTraceparent follows W3C Trace Context', () => {
  assert.equal(isValidTraceparent(TRACEPARENT), true);
  assert.equal(traceIdOfTraceparent(TRACEPARENT), '4bf92f3577b34da6a3ce929d0e0e4736');
  assert.equal(
    isValidTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later'),
    true,
    'a later version may add fields',
  );
  for (const bad of [
    undefined,
    '',
    ['a', 'b'],
    '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
    '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
    '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
    'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra',
    '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01',
    `${TRACEPARENT}, ${TRACEPARENT}`,
  ]) {
    assert.equal(isValidTraceparent(bad), false, JSON.stringify(bad));
  }
});

test('trace-guard – counts received and missing per route pattern, not per raw path; excluded paths are not counted', async (t) => {
  const obs = await startObsApp({}, routes);
  t.after(() => obs.close());
  for (const id of ['1', '2', '3']) assert.equal((await get(obs, `/orders/${id}`, TRACEPARENT)).status, 200);
  assert.equal((await get(obs, '/orders/4')).status, 200, 'counted, not rejected: fail-on-missing is off');
  assert.equal((await get(obs, '/orders/5', 'garbage')).status, 200);
  await post(`${obs.url}/orders`, '{}');
  assert.equal((await get(obs, '/nowhere')).status, 404);
  await get(obs, '/health');
  await get(obs, '/actuator/obs');
  assert.deepEqual(await series(obs), [
    'obs_trace_missing_total{route="/orders"} 1',
    'obs_trace_missing_total{route="/orders/:id"} 2',
    'obs_trace_missing_total{route="unmatched"} 1',
    'obs_trace_received_total{route="/orders/:id"} 3',
  ]);
});

test('trace-guard – fail-on-missing rejects with 400 in ENFORCING, only logs and counts in DRY_RUN, and a mode switch applies to the next request', async (t) => {
  const obs = await startObsApp({ config: { 'trace-guard': { 'fail-on-missing': true } } }, routes);
  t.after(() => obs.close());

  const rejected = await get(obs, '/orders/1');
  assert.equal(rejected.status, 400);
  const body = (await rejected.json()) as { error: { code: string; message: string; request_id: string } };
  assert.equal(body.error.code, TRACE_CONTEXT_MISSING_CODE);
  assert.match(body.error.message, /traceparent/);
  assert.ok(body.error.request_id);
  assert.equal((await get(obs, '/orders/1', TRACEPARENT)).status, 200, 'with trace context it passes');

  const switched = await post(`${obs.url}/actuator/obs/enforcement`, '{"value":"DRY_RUN"}');
  assert.equal(switched.status, 200, 'the actuator itself is never rejected');
  await switched.arrayBuffer();
  assert.equal((await get(obs, '/orders/2')).status, 200, 'DRY_RUN: the very next request passes');

  await (await post(`${obs.url}/actuator/obs/enforcement`, '{"value":"ENFORCING"}')).arrayBuffer();
  assert.equal((await get(obs, '/orders/3')).status, 400, 'ENFORCING again: the next request is rejected');

  const lines = obs.logger.lines
    .filter((l) => (l.object as { obs?: string }).obs === 'trace-guard')
    .map((l) => l.object as { mode: string; rejected: boolean; route: string });
  assert.deepEqual(
    lines.map((l) => [l.mode, l.rejected, l.route]),
    [
      ['ENFORCING', true, '/orders/:id'],
      ['DRY_RUN', false, '/orders/:id'],
      ['ENFORCING', true, '/orders/:id'],
    ],
  );
  assert.deepEqual(await series(obs), [
    'obs_trace_missing_total{route="/orders/:id"} 3',
    'obs_trace_received_total{route="/orders/:id"} 1',
  ]);
  const snapshot = (await (await fetch(`${obs.url}/actuator/obs`)).json()) as {
    features: Record<string, { enabled: boolean; config: Record<string, unknown> }>;
    sections: Record<string, { effect: string; never_checked: string[] }>;
  };
  assert.equal(snapshot.features['trace-guard']?.enabled, true);
  assert.equal(snapshot.features['trace-guard']?.config['fail-on-missing'], true);
  assert.match(String(snapshot.sections['trace-guard']?.effect), /rejects/);
});

test('trace-guard – never rejected: the actuator (whatever the prefixes), excluded prefixes, enabled-when and CORS preflights', async (t) => {
  const obs = await startObsApp(
    {
      config: {
        actuator: { 'base-path': '/manage' },
        'trace-guard': {
          'fail-on-missing': true,
          'exclude-path-prefixes': ['/health'],
          'enabled-when': { 'header-not-equals': { 'x-synthetic': 'true' }, 'path-excludes': ['/internal'] },
        },
      },
    },
    (app) => {
      routes(app);
      app.get('/internal/jobs', async () => 'jobs');
      app.options('/orders/:id', async () => '');
    },
  );
  t.after(() => obs.close());
  assert.equal((await get(obs, '/manage/obs')).status, 200);
  assert.equal((await get(obs, '/manage/obs/enforcement')).status, 200);
  assert.equal((await get(obs, '/health')).status, 200);
  assert.equal((await get(obs, '/internal/jobs')).status, 200);
  assert.equal((await fetch(`${obs.url}/orders/1`, { headers: { 'x-synthetic': 'true' } })).status, 200);
  const preflight = await fetch(`${obs.url}/orders/1`, {
    method: 'OPTIONS',
    headers: { origin: 'https://a.example', 'access-control-request-method': 'GET' },
  });
  assert.equal(preflight.status, 200);
  assert.equal((await get(obs, '/orders/1')).status, 400, 'the rest is guarded');
  assert.equal(
    (await get(obs, '/metrics')).status,
    400,
    '/metrics is guarded once the prefixes leave it out',
  );
  assert.deepEqual(await series(obs), [
    'obs_trace_missing_total{route="/metrics"} 1',
    'obs_trace_missing_total{route="/orders/:id"} 1',
  ]);
});

test('trace-guard – the route label passes the cardinality firewall', async (t) => {
  const obs = await startObsApp({ config: { cardinality: { 'max-tag-values-per-meter': 2 } } }, (app) => {
    for (const n of [1, 2, 3, 4]) app.get(`/r${n}`, async () => n);
    routes(app);
  });
  t.after(() => obs.close());
  for (const n of [1, 2, 3, 4]) await get(obs, `/r${n}`);
  assert.deepEqual(await series(obs), [
    'obs_trace_missing_total{route="/r1"} 1',
    'obs_trace_missing_total{route="/r2"} 1',
    'obs_trace_missing_total{route="OVERFLOW"} 2',
  ]);
});

test('trace-guard – enabled=false: no counting, no rejection', async (t) => {
  const obs = await startObsApp(
    { env: { OBS_TRACE_GUARD_ENABLED: 'false', OBS_TRACE_GUARD_FAIL_ON_MISSING: 'true' } },
    routes,
  );
  t.after(() => obs.close());
  assert.equal((await get(obs, '/orders/1')).status, 200);
  assert.deepEqual(await series(obs), []);
  assert.doesNotMatch(await (await get(obs, '/metrics')).text(), /obs_trace_/);
});

test('trace-guard – /actuator/obs lists each never-checked prefix once, the actuator base path included', async (t) => {
  for (const [config, expected] of [
    [{}, ['/actuator', '/health', '/ready', '/metrics']],
    [{ actuator: { 'base-path': '/manage' } }, ['/actuator', '/health', '/ready', '/metrics', '/manage']],
  ] as const) {
    const obs = await startObsApp({ config }, routes);
    t.after(() => obs.close());
    const snapshot = (await (
      await fetch(`${obs.url}${config.actuator?.['base-path'] ?? '/actuator'}/obs`)
    ).json()) as {
      sections: Record<string, { never_checked: string[] }>;
    };
    assert.deepEqual(snapshot.sections['trace-guard']?.never_checked, expected);
  }
});
