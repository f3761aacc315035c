import assert from 'node:assert/strict';
import { test } from 'node:test';
import { context, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import Fastify, { type FastifyInstance } from 'fastify';
import { Counter, Registry } from 'prom-client';
import { contextFields } from '../../../src/obs/features/logging/logging.ts';
import {
  MAX_PRIORITY_HEADER_LENGTH,
  PRIORITY_BAGGAGE_KEY,
  PRIORITY_METRICS,
  parsePriority,
} from '../../../src/obs/features/priority.ts';
import { PRIORITIES } from '../../../src/obs/features/request-context/request-context.ts';
import { currentObsContext, type ObsConfigInput, obsPlugin } from '../../../src/obs/index.ts';
import { capturingLogger } from '../helpers.ts';

type TestContext = { after(fn: () => Promise<void>): void };

/** The label names a prom-client metric holds now (obs adds its context labels there). */
const labelNamesOf = (metric: object) => (metric as { labelNames?: readonly string[] }).labelNames;

test('priority – parsePriority: each priority, trimmed and in any case', () => {
  for (const p of PRIORITIES) {
    assert.deepEqual(parsePriority(p, 'normal'), { priority: p, source: 'header' });
    assert.deepEqual(parsePriority(` ${p.toUpperCase()}\t`, 'normal'), { priority: p, source: 'header' });
  }
  assert.deepEqual(parsePriority('Background', 'critical'), { priority: 'background', source: 'header' });
});

test('priority – parsePriority: absent, empty or blank gives the default, not counted as invalid', () => {
  for (const value of [undefined, '', '   ']) {
    assert.deepEqual(parsePriority(value, 'low'), { priority: 'low', source: 'default' }, String(value));
  }
  assert.deepEqual(parsePriority(undefined, 'critical'), { priority: 'critical', source: 'default' });
});

test('priority – parsePriority: unknown, too long and repeated give the default with the reason', () => {
  const invalid = (value: string | string[], reason: string) =>
    assert.deepEqual(
      parsePriority(value, 'normal'),
      { priority: 'normal', source: 'default', invalid: reason },
      String(value),
    );
  invalid('urgent', 'unknown');
  invalid('hi gh', 'unknown');
  invalid('high;q=1', 'unknown');
  invalid('highest', 'unknown');
  invalid('1', 'unknown');
  // node joins a repeated header with ", "
  invalid('high, low', 'repeated');
  invalid('high,', 'repeated');
  invalid(['high', 'low'], 'repeated');
  // the length is judged before trimming
  const padded = `${' '.repeat(MAX_PRIORITY_HEADER_LENGTH - 4)}high`;
  assert.equal(padded.length, MAX_PRIORITY_HEADER_LENGTH);
  assert.deepEqual(parsePriority(padded, 'normal'), { priority: 'high', source: 'header' });
  invalid(` ${padded}`, 'too-long');
  invalid('x'.repeat(10_000), 'too-long');
});

/** A plain fastify app (no obs) answering the headers it was sent. */
async function downstream(t: TestContext): Promise<string> {
  const app = Fastify();
  app.get('/echo', async (request) => ({ headers: request.headers }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => app.close());
  const address = app.server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/echo`;
}

interface Seen {
  priority: string | null;
  fields: Record<string, unknown>;
  outbound: Record<string, string>;
  baggage: string | null;
}

async function priorityApp(
  t: TestContext,
  config: ObsConfigInput,
  setup: (app: FastifyInstance, registry: Registry) => void = () => {},
) {
  const target = await downstream(t);
  const registry = new Registry();
  const app = Fastify();
  await app.register(obsPlugin, { env: {}, logger: capturingLogger(), registry, config });
  app.get('/seen', async (): Promise<Seen> => {
    const response = await fetch(target);
    const { headers } = (await response.json()) as { headers: Record<string, string> };
    return {
      priority: currentObsContext()?.priority ?? null,
      fields: contextFields(),
      outbound: headers,
      baggage: propagation.getBaggage(context.active())?.getEntry(PRIORITY_BAGGAGE_KEY)?.value ?? null,
    };
  });
  setup(app, registry);
  await app.ready();
  t.after(() => app.close());
  const seen = async (headers: Record<string, string> = {}): Promise<Seen> => {
    const response = await app.inject({ url: '/seen', headers });
    assert.equal(response.statusCode, 200, response.body);
    return response.json<Seen>();
  };
  return { app, registry, seen };
}

const ON: ObsConfigInput = { priority: { enabled: true } };

test('priority – the request context, the log fields and the outbound header carry the priority', async (t) => {
  const { seen } = await priorityApp(t, ON);
  const high = await seen({ 'obs-priority': ' HIGH ' });
  assert.equal(high.priority, 'high');
  assert.equal(high.fields.priority, 'high');
  assert.equal(high.outbound['obs-priority'], 'high');
  const plain = await seen();
  assert.deepEqual(
    [plain.priority, plain.fields.priority, plain.outbound['obs-priority']],
    ['normal', 'normal', 'normal'],
  );
  const unknown = await seen({ 'obs-priority': 'urgent' });
  assert.deepEqual([unknown.priority, unknown.outbound['obs-priority']], ['normal', 'normal']);
});

test('priority – header-name and default-priority are read in and sent on', async (t) => {
  const { seen } = await priorityApp(t, {
    priority: { enabled: true, 'header-name': 'X-Prio', 'default-priority': 'background' },
  });
  const low = await seen({ 'x-prio': 'low', 'obs-priority': 'critical' });
  assert.equal(low.priority, 'low');
  assert.equal(low.outbound['x-prio'], 'low');
  assert.equal(low.outbound['obs-priority'], undefined);
  assert.equal((await seen()).outbound['x-prio'], 'background');
});

test('priority – an unusable header counts in obs_priority_invalid_total{reason}', async (t) => {
  const { registry, seen } = await priorityApp(t, ON);
  await seen({ 'obs-priority': 'urgent' });
  await seen({ 'obs-priority': 'x'.repeat(40) });
  await seen({ 'obs-priority': 'high, low' });
  await seen({ 'obs-priority': 'high' });
  await seen({});
  const values = (await registry.getSingleMetric(PRIORITY_METRICS.invalid)?.get())?.values ?? [];
  assert.deepEqual(Object.fromEntries(values.map((v) => [v.labels.reason, v.value])), {
    unknown: 1,
    'too-long': 1,
    repeated: 1,
  });
});

test('priority – the priority is in OpenTelemetry baggage (real AsyncLocalStorage context manager)', async (t) => {
  const manager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(manager);
  t.after(() => {
    context.disable();
    manager.disable();
  });
  const { seen } = await priorityApp(t, ON);
  assert.equal((await seen({ 'obs-priority': 'critical' })).baggage, 'critical');
  assert.equal((await seen()).baggage, 'normal');
});

test('priority – a meter in tag-meters gets a priority label filled from the context; others do not', async (t) => {
  const registry = new Registry();
  const orders = new Counter({ name: 'orders_total', help: 'orders', registers: [registry] });
  const other = new Counter({ name: 'other_total', help: 'other', registers: [registry] });
  const app = Fastify();
  await app.register(obsPlugin, {
    env: {},
    logger: capturingLogger(),
    registry,
    config: { priority: { enabled: true, 'tag-meters': ['orders_total'] } },
  });
  app.get('/order', async () => {
    orders.inc();
    other.inc();
    return {};
  });
  await app.ready();
  t.after(() => app.close());
  await app.inject({ url: '/order', headers: { 'obs-priority': 'high' } });
  await app.inject({ url: '/order', headers: { 'obs-priority': 'high' } });
  await app.inject({ url: '/order' });
  orders.inc(); // outside a request
  const series = (await orders.get()).values.map((v) => [v.labels, v.value]);
  assert.deepEqual(series, [
    [{ priority: 'high' }, 2],
    [{ priority: 'normal' }, 1],
    [{ priority: 'none' }, 1],
  ]);
  assert.deepEqual(
    (await other.get()).values.map((v) => [v.labels, v.value]),
    [[{}, 3]],
  );
});

test('priority – /actuator/obs shows requests per priority and invalid counts', async (t) => {
  const { app, seen } = await priorityApp(t, { priority: { enabled: true, 'tag-meters': ['orders_total'] } });
  await seen({ 'obs-priority': 'high' });
  await seen({ 'obs-priority': 'LOW' });
  await seen({ 'obs-priority': 'nope' });
  const section = (await app.inject({ url: '/actuator/obs' })).json<{
    sections: Record<string, Record<string, unknown>>;
  }>().sections.priority;
  assert.equal(section?.enabled, true);
  // the snapshot's own request is the fourth, with the default priority
  assert.deepEqual(section?.requests, { critical: 0, high: 1, normal: 2, low: 1, background: 0 });
  assert.equal(section?.from_header, 2);
  assert.equal(section?.defaulted, 2);
  assert.deepEqual(section?.invalid, { unknown: 1, 'too-long': 0, repeated: 0 });
  assert.deepEqual(section?.tag_meters, { listed: ['orders_total'], tagged: [], distinct_values: {} });
});

test('priority – disabled (the default): no priority, no header sent, no meter, no label', async (t) => {
  const registry = new Registry();
  const orders = new Counter({ name: 'orders_total', help: 'orders', registers: [registry] });
  const target = await downstream(t);
  const app = Fastify();
  await app.register(obsPlugin, {
    env: {},
    logger: capturingLogger(),
    registry,
    config: { priority: { 'tag-meters': ['orders_total'] } },
  });
  app.get('/seen', async () => {
    orders.inc();
    const { headers } = (await (await fetch(target)).json()) as { headers: Record<string, string> };
    return { priority: currentObsContext()?.priority ?? null, fields: contextFields(), outbound: headers };
  });
  await app.ready();
  t.after(() => app.close());
  const body = (await app.inject({ url: '/seen', headers: { 'obs-priority': 'high' } })).json<Seen>();
  assert.equal(body.priority, null);
  assert.equal(body.fields.priority, undefined);
  assert.equal(body.outbound['obs-priority'], undefined);
  assert.equal(registry.getSingleMetric(PRIORITY_METRICS.invalid), undefined);
  assert.deepEqual(labelNamesOf(orders), []);
  assert.deepEqual(
    (await orders.get()).values.map((v) => v.labels),
    [{}],
  );
  const section = (await app.inject({ url: '/actuator/obs' })).json<{
    sections: Record<string, Record<string, unknown>>;
  }>().sections.priority;
  assert.equal(section?.enabled, false);
});
