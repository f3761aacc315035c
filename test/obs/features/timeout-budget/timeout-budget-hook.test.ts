import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { request as httpRequest } from 'node:http';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { context, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import Fastify, { type FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import {
  bindContext,
  currentTimeoutBudget,
} from '../../../../src/obs/features/request-context/request-context.ts';
import {
  DEADLINE_BAGGAGE_KEY,
  TIMEOUT_BUDGET_METRICS,
} from '../../../../src/obs/features/timeout-budget/timeout-budget-hook.ts';
import { loadObsConfig, obsFastifyOptions, obsPlugin } from '../../../../src/obs/index.ts';
import { until } from '../../../helpers/runtime.ts';
import { budgetOptions, capturingLogger, startObsApp } from '../../helpers.ts';

type Seen = ReturnType<typeof currentTimeoutBudget> | null;

async function seen(app: FastifyInstance, headers: Record<string, string>, url = '/budget'): Promise<Seen> {
  const response = await app.inject({ method: 'GET', url, headers });
  assert.equal(response.statusCode, 200, response.body);
  return response.json<{ budget: Seen }>().budget;
}

type TestContext = { after(fn: () => Promise<void>): void };

/** An app whose `/budget` routes answer what `currentTimeoutBudget()` says; `setup` adds more. */
function withBudgetRoutes(options = budgetOptions(), setup: (app: FastifyInstance) => void = () => {}) {
  return async (t: TestContext) => {
    const registry = new Registry();
    const app = Fastify();
    await app.register(obsPlugin, { env: {}, logger: capturingLogger(), registry, ...options });
    const answer = async () => ({ budget: currentTimeoutBudget() ?? null });
    app.get('/budget', answer);
    app.get('/skip/budget', answer);
    app.post('/budget', answer);
    setup(app);
    await app.ready();
    t.after(() => app.close());
    return { app, registry };
  };
}

test('timeout budget hook – the handler sees the budget of the request’s header, less the margin', async (t) => {
  const { app } = await withBudgetRoutes()(t);
  const budget = await seen(app, { 'obs-timeout-ms': '1000' });
  assert.equal(budget?.source, 'remaining-header');
  assert.ok(budget !== null && budget !== undefined);
  assert.ok(budget.remainingMs <= 950 && budget.remainingMs > 500, String(budget.remainingMs));
  assert.ok(Math.abs(budget.deadlineEpochMs - (Date.now() + budget.remainingMs)) < 500);
  const absolute = Date.now() + 5000;
  assert.deepEqual(
    (await seen(app, { 'obs-timeout-deadline-ms': String(absolute) }))?.deadlineEpochMs,
    absolute,
  );
  assert.equal((await seen(app, {}))?.source, 'default');
  const expired = await seen(app, { 'obs-timeout-ms': '0' });
  assert.deepEqual([expired?.remainingMs, expired?.source], [0, 'remaining-header']);
  const past = await seen(app, { 'obs-timeout-deadline-ms': '1' });
  assert.deepEqual([past?.remainingMs, past?.source], [0, 'deadline-header']);
});

test('timeout budget hook – outside a request there is no budget', () => {
  assert.equal(currentTimeoutBudget(), undefined);
});

test('timeout budget hook – a malformed header counts in obs_timeout_budget_invalid_total and is ignored', async (t) => {
  const { app, registry } = await withBudgetRoutes()(t);
  assert.equal((await seen(app, { 'obs-timeout-ms': 'soon' }))?.source, 'default');
  assert.equal(
    (await seen(app, { 'obs-timeout-deadline-ms': '-1', 'obs-timeout-ms': '700' }))?.source,
    'remaining-header',
  );
  const metric = await registry.getSingleMetric(TIMEOUT_BUDGET_METRICS.invalid)?.get();
  assert.deepEqual(metric?.values.map((v) => [v.labels.header, v.value]).sort(), [
    ['Obs-Timeout-Deadline-Ms', 1],
    ['Obs-Timeout-Ms', 1],
  ]);
});

test('timeout budget hook – enabled=false or an enabled-when rejection: no budget, nothing counted', async (t) => {
  const off = await withBudgetRoutes(budgetOptions({ enabled: false }))(t);
  assert.equal(await seen(off.app, { 'obs-timeout-ms': '1000' }), null);
  assert.equal(off.registry.getSingleMetric(TIMEOUT_BUDGET_METRICS.invalid), undefined);
  const offSection = (await off.app.inject({ url: '/actuator/obs' })).json<{
    sections: Record<string, { enabled?: boolean }>;
  }>().sections['timeout-budget'];
  assert.equal(offSection?.enabled, false, 'the snapshot says it is off');

  const gated = await withBudgetRoutes(
    budgetOptions({
      'enabled-when': { 'header-not-equals': { 'X-Synthetic': 'true' }, 'path-excludes': ['/skip'] },
    }),
  )(t);
  assert.equal(await seen(gated.app, { 'x-synthetic': 'true', 'obs-timeout-ms': 'bad' }), null);
  assert.equal(await seen(gated.app, { 'obs-timeout-ms': 'bad' }, '/skip/budget'), null);
  assert.equal((await seen(gated.app, { 'x-synthetic': 'false' }))?.source, 'default');
  assert.equal((await seen(gated.app, {}))?.source, 'default');
  const invalid = await gated.registry.getSingleMetric(TIMEOUT_BUDGET_METRICS.invalid)?.get();
  assert.deepEqual(invalid?.values, [], 'a skipped request is not looked at');
});

test('timeout budget hook – the budget survives reading a body from a real socket', async (t) => {
  const running = await startObsApp(budgetOptions(), (app) => {
    app.post('/budget', async () => ({ budget: currentTimeoutBudget() ?? null }));
  });
  t.after(() => running.close());
  const body = JSON.stringify({ pad: 'x'.repeat(200_000) });
  const response = await fetch(`${running.url}/budget`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'obs-timeout-ms': '4000' },
    body,
  });
  const seenBudget = (await response.json()) as { budget: Seen };
  assert.equal(seenBudget.budget?.source, 'remaining-header');
});

test('timeout budget hook – bindContext carries the budget into work run later from elsewhere', async (t) => {
  const queue = new EventEmitter();
  const results: Array<{ bound: boolean; source: string | null }> = [];
  // A worker started outside any request: what it runs has no request context of its own.
  const worker = setInterval(() => queue.emit('drain'), 5);
  t.after(() => clearInterval(worker));
  const { app } = await withBudgetRoutes(budgetOptions(), (app) =>
    app.get('/queue', async () => {
      const bound = bindContext(() =>
        results.push({ bound: true, source: currentTimeoutBudget()?.source ?? null }),
      );
      const plain = () => results.push({ bound: false, source: currentTimeoutBudget()?.source ?? null });
      queue.once('drain', bound);
      queue.once('drain', plain);
      return {};
    }),
  )(t);
  await app.inject({ url: '/queue', headers: { 'obs-timeout-ms': '3000' } });
  await until('both drain listeners have run', () => results.length >= 2);
  assert.deepEqual(results, [
    { bound: true, source: 'remaining-header' },
    { bound: false, source: null },
  ]);
});

test('timeout budget hook – the deadline is in OpenTelemetry baggage (real AsyncLocalStorage context manager)', async (t) => {
  const manager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(manager);
  t.after(() => {
    context.disable();
    manager.disable();
  });
  const { app } = await withBudgetRoutes(budgetOptions(), (app) =>
    app.get('/baggage', async () => {
      await new Promise((r) => setImmediate(r)); // an async hop: the baggage crosses it
      const entry = propagation.getBaggage(context.active())?.getEntry(DEADLINE_BAGGAGE_KEY);
      return { entry: entry?.value ?? null };
    }),
  )(t);
  const deadline = Date.now() + 6000;
  const response = await app.inject({
    url: '/baggage',
    headers: { 'obs-timeout-deadline-ms': String(deadline) },
  });
  assert.deepEqual(response.json<{ entry: string }>().entry, String(deadline));
});

test('timeout budget hook – every log line inside a request carries timeout_remaining_ms', async (t) => {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  const config = loadObsConfig({ env: {} }).config;
  const app = Fastify({ logger: { ...obsFastifyOptions({ config }).logger, stream } });
  await app.register(obsPlugin, { env: {}, registry: new Registry(), ...budgetOptions() });
  app.get('/log', async (request) => {
    request.log.info('inside');
    return {};
  });
  await app.ready();
  t.after(() => app.close());
  await app.inject({ url: '/log', headers: { 'obs-timeout-ms': '2000' } });
  const inside = lines.find((l) => l.msg === 'inside');
  assert.equal(typeof inside?.timeout_remaining_ms, 'number');
  assert.ok(
    (inside?.timeout_remaining_ms as number) <= 1950 && (inside?.timeout_remaining_ms as number) > 1000,
  );
  app.log.info('outside');
  assert.equal(lines.find((l) => l.msg === 'outside')?.timeout_remaining_ms, undefined);
});

test('timeout budget hook – default-budget 0: no budget without a header, so nothing stamped; a header still sets one (#40)', async (t) => {
  const received: Array<string | undefined> = [];
  const { app } = await withBudgetRoutes(budgetOptions({ 'default-budget': 0 }), (app) => {
    // What a downstream would receive: the headers obs stamps on a node:http call, read off the request.
    app.get('/stamped', async () => {
      const call = httpRequest('http://127.0.0.1:9/');
      call.on('error', () => {});
      received.push(call.getHeader('obs-timeout-ms') as string | undefined);
      call.destroy();
      return { budget: currentTimeoutBudget() ?? null };
    });
  })(t);
  assert.equal(await seen(app, {}), null);
  assert.equal(await seen(app, {}, '/stamped'), null);
  // An explicit 0 is still an expired budget, and stamped.
  const expired = await seen(app, { 'obs-timeout-ms': '0' }, '/stamped');
  assert.deepEqual([expired?.remainingMs, expired?.source], [0, 'remaining-header']);
  assert.deepEqual(received, [undefined, '0'], 'stamped only where a header set a budget');
  const section = (await app.inject({ url: '/actuator/obs' })).json<{
    sections: Record<string, Record<string, unknown>>;
  }>().sections['timeout-budget'];
  // The snapshot's own request came without a header too.
  assert.equal(section?.without_budget, 3);
  assert.deepEqual(section?.established, { 'deadline-header': 0, 'remaining-header': 1, default: 0 });
});

test('timeout budget hook – /actuator/obs shows the feature with live figures', async (t) => {
  const { app } = await withBudgetRoutes()(t);
  await seen(app, { 'obs-timeout-ms': '100' });
  await seen(app, { 'obs-timeout-ms': 'x' });
  const snapshot = (await app.inject({ url: '/actuator/obs' })).json<{
    sections: Record<string, Record<string, unknown>>;
  }>();
  const section = snapshot.sections['timeout-budget'];
  assert.equal(section?.enabled, true);
  // The snapshot's own request has the default budget too.
  assert.deepEqual(section?.established, { 'deadline-header': 0, 'remaining-header': 1, default: 2 });
  assert.equal(section?.invalid, 1);
  assert.deepEqual(section?.headers, {
    deadline: 'Obs-Timeout-Deadline-Ms',
    inbound: 'Obs-Timeout-Ms',
    outbound: 'Obs-Timeout-Ms',
  });
});
