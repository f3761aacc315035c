import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { boundEventAttributes, createWideEvents } from '../../../src/obs/features/events.ts';
import { MASKS } from '../../../src/obs/features/logging/masking.ts';
import { CardinalityFirewall } from '../../../src/obs/index.ts';
import { installOtelSdk, startTracedObsApp } from '../../helpers/otel-sdk.ts';
import { type RunningObsApp, startObsApp } from '../helpers.ts';

const eventSeries = async (obs: RunningObsApp) =>
  (await obs.registry.metrics())
    .split('\n')
    .filter((l) => l.startsWith('obs_events_total{'))
    .sort();

const eventLines = (obs: RunningObsApp) =>
  obs.logger.lines.filter((l) => typeof (l.object as { event?: unknown }).event === 'string');

test('events – obs.event in a real request writes a span event, counts obs_events_total{event} and logs one masked line', async (t) => {
  const sdk = installOtelSdk(t);
  const obs = await startTracedObsApp(t, sdk, {}, (app) => {
    app.post('/orders', async () => {
      await new Promise((resolve) => setImmediate(resolve)); // an async hop: the span stays active across it
      app.obs.event('order.placed', { items: 3, vip: true, customer: 'jane@example.com', total: 12.5 });
      return 'ok';
    });
  });
  for (let i = 0; i < 2; i++)
    assert.equal((await fetch(`${obs.url}/orders`, { method: 'POST' })).status, 200);

  const expected = { items: 3, vip: true, customer: MASKS.email, total: 12.5 };
  const spans = await obs.serverSpans();
  assert.equal(spans.length, 2, 'one server span per request');
  assert.deepEqual(
    spans[0]?.events.map(({ name, attributes }) => ({ name, attributes })),
    [{ name: 'order.placed', attributes: expected }],
    'on the active span',
  );
  assert.deepEqual(await eventSeries(obs), ['obs_events_total{event="order.placed"} 2']);
  const lines = eventLines(obs);
  assert.equal(lines.length, 2, 'one line per event');
  assert.equal(lines[0]?.message, 'event order.placed');
  assert.deepEqual(lines[0]?.object, { event: 'order.placed', attributes: expected });
  assert.ok(!JSON.stringify(obs.logger.lines).includes('jane@example.com'));
});

test('events – attributes are bounded in count and value length; names pass the cardinality firewall', async (t) => {
  const obs = await startObsApp(
    {
      config: {
        'wide-events': { 'max-attributes': 3, 'max-attribute-length': 16 },
        cardinality: { 'max-tag-values-per-meter': 2 },
      },
    },
    (app) => {
      app.get('/emit/:name', async (request) => {
        const attributes: Record<string, string | number> = { long: 'x'.repeat(1000) };
        for (let i = 0; i < 50; i++) attributes[`a${i}`] = i;
        app.obs.event((request.params as { name: string }).name, attributes);
        return 'ok';
      });
    },
  );
  t.after(() => obs.close());
  for (const name of ['one', 'two', 'three', 'four']) await fetch(`${obs.url}/emit/${name}`);
  const line = eventLines(obs)[0]?.object as { attributes: Record<string, unknown> };
  assert.deepEqual(line.attributes, { long: `${'x'.repeat(16)}…`, a0: 0, a1: 1 });
  assert.deepEqual(await eventSeries(obs), [
    'obs_events_total{event="OVERFLOW"} 2',
    'obs_events_total{event="one"} 1',
    'obs_events_total{event="two"} 1',
  ]);
  const snapshot = (await (await fetch(`${obs.url}/actuator/obs`)).json()) as {
    features: Record<string, { enabled: boolean; config: Record<string, unknown> }>;
  };
  assert.equal(snapshot.features['wide-events']?.enabled, true);
  assert.equal(snapshot.features['wide-events']?.config['max-attributes'], 3);
  assert.equal(snapshot.features['wide-events']?.config['max-attribute-length'], 16);
});

test('events – a no-op until called, and nothing at all with enabled=false', async (t) => {
  const quiet = await startObsApp({}, (app) => {
    app.get('/', async () => 'ok');
  });
  t.after(() => quiet.close());
  await fetch(`${quiet.url}/`);
  assert.deepEqual(await eventSeries(quiet), [], 'no series until an event');
  assert.equal(eventLines(quiet).length, 0);

  const off = await startObsApp({ env: { OBS_WIDE_EVENTS_ENABLED: 'false' } }, (app) => {
    app.get('/', async () => {
      app.obs.event('ignored', { a: 1 });
      return 'ok';
    });
  });
  t.after(() => off.close());
  await fetch(`${off.url}/`);
  assert.deepEqual(await eventSeries(off), []);
  assert.equal(eventLines(off).length, 0);
  const snapshot = (await (await fetch(`${off.url}/actuator/obs`)).json()) as {
    features: Record<string, { enabled: boolean }>;
  };
  assert.equal(snapshot.features['wide-events']?.enabled, false);
});

test('events – never throws: a throwing logger, hostile attributes and names', () => {
  const registry = new Registry();
  const config = {
    'wide-events': {
      enabled: true,
      'counter-enabled': true,
      'log-enabled': true,
      'max-attributes': 32,
      'max-attribute-length': 64,
    },
    logging: { enabled: true, 'pii-masking-enabled': true },
  };
  const events = createWideEvents({
    config,
    firewall: new CardinalityFirewall(),
    registry,
    logger: {
      info() {
        throw new Error('logger down');
      },
    },
  });
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const hostile = {
    cyclic,
    big: 10n,
    sym: Symbol('s'),
    fn: () => 1,
    nan: Number.NaN,
    nothing: undefined,
  } as unknown as Record<string, string>;
  assert.doesNotThrow(() => events.emit('x', hostile));
  assert.doesNotThrow(() => events.emit(undefined as unknown as string));
  assert.equal(events.emitted, 2);
  assert.deepEqual(boundEventAttributes(hostile, { maxAttributes: 10, maxValueChars: 64, mask: true }), {
    cyclic: '[unserializable]',
    big: '10',
    nan: 'NaN',
  });
  assert.deepEqual(boundEventAttributes(null, { maxAttributes: 10, maxValueChars: 64, mask: true }), {});
});

test('wide events – with masking, the value of a secret-named attribute is replaced whole', () => {
  const limits = { maxAttributes: 10, maxValueChars: 100, mask: true };
  const bounded = boundEventAttributes(
    { password: 'hunter22', apiToken: 12345, user: 'a@example.com', n: 3 },
    limits,
  );
  assert.equal(bounded['password'], '[MASKED]');
  assert.equal(bounded['apiToken'], '[MASKED]', 'a secret-named number too');
  assert.notEqual(bounded['user'], 'a@example.com', 'values are masked by content as before');
  assert.equal(bounded['n'], 3);
  const unmasked = boundEventAttributes({ password: 'hunter22' }, { ...limits, mask: false });
  assert.equal(unmasked['password'], 'hunter22', 'pii-masking-enabled=false keeps it');
});
