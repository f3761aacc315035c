import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import {
  aggregateHealth,
  HEALTH_STATUSES,
  type HealthStatus,
  healthHttpStatus,
} from '../../../src/obs/core/health.ts';
import { createObs, isObsError } from '../../../src/obs/index.ts';
import { capturingLogger, startObsApp } from '../helpers.ts';

interface HealthBody {
  status: HealthStatus;
  components: Record<string, { status: HealthStatus; details?: unknown }>;
}

async function health(url: string): Promise<{ status: number; body: HealthBody }> {
  const response = await fetch(`${url}/actuator/health`);
  return { status: response.status, body: (await response.json()) as HealthBody };
}

function core(t: { after(fn: () => void): void }, readinessTimeoutMs?: number) {
  const obs = createObs({
    env: {},
    logger: capturingLogger(),
    ...(readinessTimeoutMs === undefined ? {} : { readinessTimeoutMs }),
  });
  t.after(() => obs.close());
  return obs;
}

test('health – the aggregate is the worst status: DOWN > OUT_OF_SERVICE > DEGRADED > UP', () => {
  assert.deepEqual(HEALTH_STATUSES, ['UP', 'DEGRADED', 'OUT_OF_SERVICE', 'DOWN']);
  assert.equal(aggregateHealth([]), 'UP');
  assert.equal(aggregateHealth(['UP', 'UP']), 'UP');
  assert.equal(aggregateHealth(['UP', 'DEGRADED']), 'DEGRADED');
  assert.equal(aggregateHealth(['DEGRADED', 'OUT_OF_SERVICE', 'UP']), 'OUT_OF_SERVICE');
  assert.equal(aggregateHealth(['OUT_OF_SERVICE', 'DOWN', 'DEGRADED']), 'DOWN');
  assert.equal(aggregateHealth(['DOWN', 'UP']), 'DOWN');
  assert.deepEqual(
    HEALTH_STATUSES.map((s) => healthHttpStatus(s)),
    [200, 200, 503, 503],
  );
});

test('health – /actuator/health answers 200 for UP and DEGRADED, 503 for OUT_OF_SERVICE and DOWN, with each component; readiness follows', async (t) => {
  let current: HealthStatus = 'UP';
  const app = await startObsApp({}, (a) => {
    a.obs.addHealthComponent('app', () => ({ status: current, details: { note: `now ${current}` } }));
  });
  t.after(() => app.close());
  const expected: Record<HealthStatus, number> = { UP: 200, DEGRADED: 200, OUT_OF_SERVICE: 503, DOWN: 503 };
  for (const status of HEALTH_STATUSES) {
    current = status;
    const answer = await health(app.url);
    assert.equal(answer.status, expected[status], status);
    assert.equal(answer.body.status, status);
    assert.deepEqual(answer.body.components.app, { status, details: { note: `now ${status}` } });
    assert.equal(answer.body.components.drain?.status, 'UP', 'obs adds its own components');
    assert.equal(answer.body.components.dependencies?.status, 'UP');
    const readiness = await app.app.obs.readiness();
    assert.equal(readiness.ready, expected[status] === 200, `ready when ${status}`);
    assert.equal(readiness.checks.app?.ok, expected[status] === 200);
  }
});

test('health – a readiness check is a component: ok is UP, not ok is DOWN, its detail as the details', async (t) => {
  const obs = core(t);
  let ok = true;
  obs.addReadinessCheck('legacy', () => ({ ok, detail: ok ? 'fine' : 'broken' }));
  obs.addReadinessCheck('bare', () => true);
  obs.addHealthComponent('slowing', () => ({ status: 'DEGRADED' }));
  let report = await obs.health();
  assert.equal(report.status, 'DEGRADED');
  assert.deepEqual(report.components.legacy, { status: 'UP', details: 'fine' });
  assert.deepEqual(report.components.bare, { status: 'UP' });
  assert.equal((await obs.readiness()).ready, true, 'DEGRADED is ready');
  ok = false;
  report = await obs.health();
  assert.equal(report.status, 'DOWN');
  assert.deepEqual(report.components.legacy, { status: 'DOWN', details: 'broken' });
  const readiness = await obs.readiness();
  assert.equal(readiness.ready, false);
  assert.deepEqual(readiness.checks.legacy, { ok: false, detail: 'broken' });
  assert.deepEqual(readiness.checks.slowing, { ok: true });
});

test('health – a component that hangs is DOWN after the bound; one that throws or answers no status is DOWN with the error', async (t) => {
  const obs = core(t, 50);
  obs.addHealthComponent('hangs', () => new Promise(() => {}));
  obs.addHealthComponent('throws', () => {
    throw new Error('database unreachable');
  });
  obs.addHealthComponent('rejects', async () => Promise.reject(new Error('nope')));
  obs.addHealthComponent('odd', () => ({ status: 'MAYBE' }) as never);
  obs.addHealthComponent('fine', async () => ({ status: 'UP' }));
  const report = await obs.health();
  assert.equal(report.status, 'DOWN');
  assert.deepEqual(report.components.hangs, { status: 'DOWN', details: { error: 'no answer within 50ms' } });
  assert.deepEqual(report.components.throws, { status: 'DOWN', details: { error: 'database unreachable' } });
  assert.deepEqual(report.components.rejects, { status: 'DOWN', details: { error: 'nope' } });
  assert.equal(report.components.odd?.status, 'DOWN');
  assert.match(JSON.stringify(report.components.odd?.details), /MAYBE/);
  assert.deepEqual(report.components.fine, { status: 'UP' });
});

test('health – a name is taken once, by a readiness check or a component', (t) => {
  const obs = core(t);
  obs.addReadinessCheck('db', () => true);
  assert.throws(
    () => obs.addHealthComponent('db', () => ({ status: 'UP' })),
    (error) => isObsError(error) && error.code === 'OBS_ERR_DUPLICATE_NAME',
  );
  obs.addHealthComponent('cache', () => ({ status: 'UP' }));
  assert.throws(
    () => obs.addReadinessCheck('cache', () => true),
    (error) => isObsError(error) && error.code === 'OBS_ERR_DUPLICATE_NAME',
  );
});

test('health – a draining instance is OUT_OF_SERVICE (503, not ready), not DOWN', async (t) => {
  const obs = core(t);
  assert.deepEqual((await obs.health()).components.drain, { status: 'UP', details: 'idle' });
  await obs.drain({ timeoutMs: 1000 });
  const report = await obs.health();
  assert.equal(report.status, 'OUT_OF_SERVICE');
  assert.deepEqual(report.components.drain, { status: 'OUT_OF_SERVICE', details: 'drained' });
  assert.equal((await obs.readiness()).ready, false);
  assert.equal(healthHttpStatus(report.status), 503);
});

test('health – a failing downstream makes /actuator/health DEGRADED (200), its dependency listed with its ratio', async (t) => {
  const downstream = Fastify();
  downstream.get('/', async (_request, reply) => reply.code(500).send('broken'));
  await downstream.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => downstream.close());
  const address = downstream.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const app = await startObsApp({
    env: {
      OBS_DEPENDENCIES_HEALTH_MINIMUM_CALLS: '3',
      OBS_DEPENDENCIES_MAP: `127.0.0.1:${port}=inventory`,
    },
  });
  t.after(() => app.close());
  for (let i = 0; i < 3; i++) await fetch(`http://127.0.0.1:${port}/`);
  const answer = await health(app.url);
  assert.equal(answer.status, 200);
  assert.equal(answer.body.status, 'DEGRADED');
  const details = answer.body.components.dependencies?.details as {
    degraded: Record<string, { error_ratio: number }>;
  };
  assert.equal(answer.body.components.dependencies?.status, 'DEGRADED');
  assert.equal(details.degraded.inventory?.error_ratio, 1);
});
