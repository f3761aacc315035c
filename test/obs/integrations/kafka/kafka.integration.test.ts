import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { context, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { type Consumer, type IHeaders, Kafka, type KafkaMessage, logLevel, type Producer } from 'kafkajs';
import { Registry } from 'prom-client';
import {
  currentRequestContext,
  currentTimeoutBudget,
  type OutboundBudgetPolicy,
  runInRequestContext,
  type TimeoutBudget,
} from '../../../../src/obs/features/request-context/request-context.ts';
import {
  DEADLINE_BAGGAGE_KEY,
  TIMEOUT_BUDGET_METRICS,
} from '../../../../src/obs/features/timeout-budget/timeout-budget-hook.ts';
import { createObs, currentObsContext, type ObsConfigInput } from '../../../../src/obs/index.ts';
import { instrumentKafka, KAFKA_METRICS } from '../../../../src/obs/integrations/kafka/kafka.ts';
import type {
  KafkaMessageLike,
  KafkaProducerBatchLike,
  KafkaProducerRecordLike,
  KafkaRunConfigLike,
} from '../../../../src/obs/integrations/kafka/kafka-records.ts';
import {
  collector,
  type KafkaMock,
  MOCK_CONSUMER_SETTINGS,
  requireKcat,
  startKafkaMock,
} from '../../../helpers/kafka-mock.ts';
import { until, within } from '../../../helpers/runtime.ts';
import { capturingLogger, injectableObsApp, type RunningObsApp, startObsApp } from '../../helpers.ts';

/** A policy for contexts made by hand: counts nothing. */
const policy: OutboundBudgetPolicy = {
  outboundHeader: 'Obs-Timeout-Ms',
  minimumBudgetMs: 100,
  abortOnExhaustion: false,
  applyClientTimeout: false,
  exhausted() {},
  failed() {},
};

// ---------------------------------------------------------------------------------------------
// The switches and failures, on a client of kafkajs's shape (no broker)

/** A kafkajs-shaped client that keeps what its producer sends and what its consumer runs. */
function fakeKafka() {
  const sent: KafkaProducerRecordLike[] = [];
  const runs: KafkaRunConfigLike[] = [];
  const kafka = {
    producer: () => ({
      send: async (record: KafkaProducerRecordLike) => {
        sent.push(record);
      },
      sendBatch: async (batch: KafkaProducerBatchLike) => {
        sent.push(...(batch.topicMessages ?? []));
      },
    }),
    consumer: (_config: { groupId: string }) => ({
      run: async (config?: KafkaRunConfigLike) => {
        if (config !== undefined) runs.push(config);
      },
    }),
  };
  return { kafka, sent, runs };
}

function fakeObs(t: { after(fn: () => void): void }, kafka: NonNullable<ObsConfigInput['kafka']> = {}) {
  const logger = capturingLogger();
  const registry = new Registry();
  const obs = createObs({ env: {}, registry, logger, config: { kafka } });
  t.after(() => obs.close());
  return { obs, logger, registry };
}

/** Runs `fn` in a request context with a budget of `remaining` ms, under `budgetPolicy`. */
function inRequest<T>(remaining: number, fn: () => T, budgetPolicy: OutboundBudgetPolicy = policy): T {
  return runInRequestContext(
    {
      requestId: 'req-1',
      budget: { deadlineEpochMs: Date.now() + remaining, source: 'default', policy: budgetPolicy },
    },
    fn,
  );
}

test('kafka – obs.kafka.enabled=false leaves the client as it was', (t) => {
  const { kafka } = fakeKafka();
  const { producer, consumer } = kafka;
  const { obs, registry } = fakeObs(t, { enabled: false });
  assert.equal(instrumentKafka(kafka, obs), kafka);
  assert.equal(kafka.producer, producer);
  assert.equal(kafka.consumer, consumer);
  assert.equal(registry.getSingleMetric(KAFKA_METRICS.consumerTimeLag), undefined);
});

test('kafka – propagation-enabled=false stamps nothing; sendBatch stamps every record once and counts once', async (t) => {
  const off = fakeKafka();
  instrumentKafka(off.kafka, fakeObs(t, { 'propagation-enabled': false }).obs);
  await inRequest(5000, () => off.kafka.producer().send({ topic: 'a', messages: [{ headers: {} }] }));
  assert.deepEqual(off.sent[0]?.messages[0]?.headers, {});

  const on = fakeKafka();
  const { obs } = fakeObs(t);
  assert.equal(instrumentKafka(instrumentKafka(on.kafka, obs), obs), on.kafka, 'once is enough');
  const caller = { 'x-request-id': 'mine' };
  const exhausted: string[] = [];
  const counting = { ...policy, exhausted: (transport: string) => exhausted.push(transport) };
  await inRequest(
    50,
    () =>
      on.kafka.producer().sendBatch({
        topicMessages: [
          { topic: 'a', messages: [{}, { headers: caller }] },
          { topic: 'b', messages: [{}] },
        ],
      }),
    counting,
  );
  assert.deepEqual(exhausted, ['kafka'], 'one sendBatch, one exhausted call');
  const stamped = on.sent.flatMap((r) => r.messages.map((m) => m.headers ?? {}));
  assert.equal(stamped.length, 3);
  for (const headers of stamped) assert.ok(headers['Obs-Timeout-Deadline-Ms'], JSON.stringify(headers));
  assert.deepEqual(
    stamped.map((h) => h['X-Request-ID'] ?? h['x-request-id']),
    ['req-1', 'mine', 'req-1'],
  );
  assert.deepEqual(caller, { 'x-request-id': 'mine' }, 'the caller’s record is not changed');
  const section = obs.snapshot().sections['kafka'] as Record<string, unknown>;
  assert.deepEqual(
    { stamped: section['stamped'], consumed: section['consumed'], skipped: section['skipped'] },
    { stamped: 3, consumed: 0, skipped: 0 },
    'the snapshot counts them',
  );
});

test('kafka – consumer-time-lag-enabled=false records no lag; the record is still handed over', async (t) => {
  const { kafka, runs } = fakeKafka();
  const { obs, registry } = fakeObs(t, { 'consumer-time-lag-enabled': false });
  instrumentKafka(kafka, obs);
  const handled: string[] = [];
  await kafka.consumer({ groupId: 'g' }).run({
    eachMessage: async ({ topic }) => {
      handled.push(topic);
    },
  });
  await runs[0]!.eachMessage!({
    topic: 't',
    partition: 0,
    message: { timestamp: String(Date.now() - 5000) },
  });
  assert.deepEqual(handled, ['t']);
  const lag = await registry.getSingleMetric(KAFKA_METRICS.consumerTimeLag)?.get();
  assert.deepEqual(lag?.values, []);
});

test('kafka – a failure of the instrumentation is logged; the produce and the consume go on', async (t) => {
  const { kafka, sent, runs } = fakeKafka();
  const { obs, logger } = fakeObs(t);
  instrumentKafka(kafka, obs);
  const hostile = {
    get headers(): never {
      throw new Error('no headers today');
    },
    get timestamp(): never {
      throw new Error('no timestamp today');
    },
  };
  await inRequest(5000, () => kafka.producer().send({ topic: 'a', messages: [hostile] }));
  assert.equal(sent[0]?.messages[0], hostile, 'sent as the caller gave it');
  const handled: unknown[] = [];
  await kafka.consumer({ groupId: 'g' }).run({
    eachMessage: async ({ message }) => {
      handled.push(message);
    },
  });
  await runs[0]!.eachMessage!({ topic: 't', partition: 0, message: hostile });
  assert.deepEqual(handled, [hostile]);
  assert.deepEqual(
    logger.lines.map((l) => [l.level, (l.object as { where?: string }).where]),
    [
      ['warn', 'produce'],
      ['warn', 'consume'],
    ],
  );
});

test('kafka – eachBatch runs in the context of its record with the earliest deadline', async (t) => {
  const { kafka, runs } = fakeKafka();
  const app = await injectableObsApp(t);
  instrumentKafka(kafka, app.obs);
  const contexts: Array<[number | undefined, string | undefined]> = [];
  await kafka.consumer({ groupId: 'g' }).run({
    eachBatch: async () => {
      contexts.push([currentTimeoutBudget()?.deadlineEpochMs, currentRequestContext()?.requestId]);
    },
  });
  const now = Date.now();
  const batch = (messages: KafkaMessageLike[]) => ({
    batch: { topic: 't', partition: 0, messages, lastOffset: () => '9' },
    resolveOffset() {},
  });
  await runs[0]!.eachBatch!(
    batch([
      { headers: { 'x-request-id': 'none' } },
      { headers: { 'Obs-Timeout-Deadline-Ms': String(now + 5000), 'x-request-id': 'later' } },
      { headers: { 'Obs-Timeout-Deadline-Ms': String(now + 1000), 'x-request-id': 'earliest' } },
      { headers: { 'Obs-Timeout-Deadline-Ms': String(now + 3000), 'x-request-id': 'between' } },
    ]),
  );
  await runs[0]!.eachBatch!(
    batch([{ headers: { 'x-request-id': 'first' } }, { headers: { 'x-request-id': 'second' } }]),
  );
  assert.deepEqual(contexts, [
    [now + 1000, 'earliest'],
    [undefined, 'first'],
  ]);
});

test('kafka – the listener’s OpenTelemetry baggage carries the record’s deadline (real AsyncLocalStorage context manager)', async (t) => {
  const manager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(manager);
  t.after(() => {
    context.disable();
    manager.disable();
  });
  const { kafka, runs } = fakeKafka();
  const app = await injectableObsApp(t);
  instrumentKafka(kafka, app.obs);
  const entries: Array<string | undefined> = [];
  await kafka.consumer({ groupId: 'g' }).run({
    eachMessage: async () => {
      await new Promise((resolve) => setImmediate(resolve)); // an async hop: the baggage crosses it
      entries.push(propagation.getBaggage(context.active())?.getEntry(DEADLINE_BAGGAGE_KEY)?.value);
    },
  });
  const deadline = Date.now() + 7000;
  await runs[0]!.eachMessage!({
    topic: 't',
    partition: 0,
    message: { headers: { 'Obs-Timeout-Deadline-Ms': String(deadline) } },
  });
  await runs[0]!.eachMessage!({ topic: 't', partition: 0, message: {} });
  assert.deepEqual(entries, [String(deadline), undefined]);
});

test('kafka – a record carries the retry depth, priority and tenant of the request that produced it to its listener', async (t) => {
  const manager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(manager);
  t.after(() => {
    context.disable();
    manager.disable();
  });
  const { kafka, sent, runs } = fakeKafka();
  const running = await startObsApp(
    { config: { priority: { enabled: true }, tenant: { enabled: true } } },
    (app) => {
      instrumentKafka(kafka, app.obs);
      // Produce from a real request of the app: its context holds what the headers said.
      app.post('/produce', async () => {
        await kafka.producer().send({ topic: 't', messages: [{}] });
        return 'sent';
      });
    },
  );
  t.after(() => running.close());
  const app = running.app;
  const response = await app.inject({
    method: 'POST',
    url: '/produce',
    headers: { 'obs-retry-depth': '2', 'obs-priority': 'low', 'obs-tenant-id': 'acme' },
  });
  assert.equal(response.body, 'sent');
  const headers = sent[0]?.messages[0]?.headers ?? {};
  assert.deepEqual(
    [headers['Obs-Retry-Depth'], headers['Obs-Priority'], headers['Obs-Tenant-Id']],
    ['2', 'low', 'acme'],
  );
  const seen: unknown[] = [];
  await kafka.consumer({ groupId: 'g' }).run({
    eachMessage: async () => {
      await new Promise((resolve) => setImmediate(resolve)); // an async hop: the context crosses it
      const ctx = currentObsContext();
      const baggage = propagation.getBaggage(context.active());
      seen.push({
        depth: ctx?.retryDepth,
        priority: ctx?.priority,
        tenant: ctx?.tenant,
        baggage: ['obs.retry.depth', 'obs.priority', 'obs.tenant.id'].map((k) => baggage?.getEntry(k)?.value),
      });
    },
  });
  await runs[0]!.eachMessage!({ topic: 't', partition: 0, message: { headers } });
  // A record without them: depth 0, the default priority, no tenant; a bad tenant is dropped.
  await runs[0]!.eachMessage!({ topic: 't', partition: 0, message: { headers: { 'Obs-Tenant-Id': 'a b' } } });
  assert.deepEqual(seen, [
    { depth: 2, priority: 'low', tenant: 'acme', baggage: ['2', 'low', 'acme'] },
    { depth: 0, priority: 'normal', tenant: undefined, baggage: ['0', 'normal', undefined] },
  ]);
});

test('kafka – eachBatch: a batch of stale records only is not handed over; its last offset is resolved', async (t) => {
  const { kafka, runs } = fakeKafka();
  const { obs, registry } = fakeObs(t, { 'skip-stale-records': true, 'skip-stale-max-age': '1m' });
  instrumentKafka(kafka, obs);
  const handed: number[] = [];
  await kafka.consumer({ groupId: 'g' }).run({
    eachBatch: async ({ batch }) => {
      handed.push(batch.messages.length);
    },
  });
  const resolved: string[] = [];
  const old = String(Date.now() - 120_000);
  await runs[0]!.eachBatch!({
    batch: {
      topic: 't',
      partition: 0,
      messages: [{ timestamp: old }, { timestamp: old }],
      lastOffset: () => '41',
    },
    resolveOffset: (offset) => resolved.push(offset),
  });
  assert.deepEqual(handed, []);
  assert.deepEqual(resolved, ['41']);
  const skipped = await registry.getSingleMetric(KAFKA_METRICS.recordsSkipped)?.get();
  assert.deepEqual(
    skipped?.values.map((v) => [v.labels.topic, v.value]),
    [['t', 2]],
  );
});

test('kafka – the lag and skip labels pass the cardinality firewall', async (t) => {
  const { kafka, runs } = fakeKafka();
  const app = await injectableObsApp(t, {
    config: {
      cardinality: { 'max-tag-values-per-meter': 2 },
      kafka: { 'skip-stale-records': true, 'skip-stale-max-age': '1m' },
    },
  });
  instrumentKafka(kafka, app.obs);
  await kafka.consumer({ groupId: 'g' }).run({ eachMessage: async () => {} });
  const old = String(Date.now() - 120_000);
  for (const topic of ['a', 'b', 'c', 'd']) {
    await runs[0]!.eachMessage!({ topic, partition: 0, message: { timestamp: old } });
  }
  const topics = async (name: string) =>
    ((await app.obs.registry.getSingleMetric(name)?.get())?.values ?? []).map((v) => v.labels.topic);
  assert.deepEqual(await topics(KAFKA_METRICS.consumerTimeLag), ['a', 'b', 'OVERFLOW']);
  assert.deepEqual(await topics(KAFKA_METRICS.recordsSkipped), ['a', 'b', 'OVERFLOW']);
});

test('kafka – a transaction’s sends are stamped too', async (t) => {
  const sent: KafkaProducerRecordLike[] = [];
  const sender = {
    send: async (record: KafkaProducerRecordLike) => {
      sent.push(record);
    },
    sendBatch: async () => {},
  };
  const kafka = {
    producer: () => ({ ...sender, transaction: async () => ({ ...sender }) }),
    consumer: () => ({ run: async () => {} }),
  };
  instrumentKafka(kafka, fakeObs(t).obs);
  const transaction = await kafka.producer().transaction();
  await inRequest(5000, () => transaction.send({ topic: 'a', messages: [{}] }));
  assert.equal(sent[0]?.messages[0]?.headers?.['X-Request-ID'], 'req-1');
  assert.ok(sent[0]?.messages[0]?.headers?.['Obs-Timeout-Deadline-Ms']);
});

// ---------------------------------------------------------------------------------------------
// Against librdkafka's mock cluster

/** Every wait is bounded generously: the first group join alone takes 3 s on the mock. */
const WAIT_MS = 30_000;

function client(mock: KafkaMock): Kafka {
  return new Kafka({
    clientId: 'obs-kafka-test',
    brokers: mock.brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3_000,
    requestTimeout: 15_000,
    retry: { retries: 3, initialRetryTime: 100 },
  });
}

const unique = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;

function text(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) out[name.toLowerCase()] = String(value);
  return out;
}

/** What a listener saw: the record, and the context it ran in. */
interface Seen {
  readonly value: string;
  readonly headers: Record<string, string>;
  readonly budget: TimeoutBudget | undefined;
  readonly requestId: string | undefined;
}

function seen(message: KafkaMessage): Seen {
  return {
    value: String(message.value),
    headers: text(message.headers),
    budget: currentTimeoutBudget(),
    requestId: currentRequestContext()?.requestId,
  };
}

async function metricValue(
  app: RunningObsApp,
  name: string,
  labels: Record<string, string>,
): Promise<number | undefined> {
  const metric = await app.registry.getSingleMetric(name)?.get();
  return metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;
}

test('kafka – against the mock cluster', { concurrency: true }, async (t) => {
  if (!requireKcat(t)) return;
  const mock = await startKafkaMock();
  const clients: Array<Producer | Consumer> = [];
  const apps: RunningObsApp[] = [];
  // Clients first, then the apps, the mock last.
  t.after(async () => {
    await Promise.allSettled(clients.map((c) => within(c.disconnect(), 'disconnect', 10_000)));
    await Promise.allSettled(apps.map((a) => a.close()));
    await mock.stop();
  });

  /** An obs app whose route `/produce?topic=&value=[&keep=]` produces a record through `kafka`. */
  const obsApp = async (config: Parameters<typeof startObsApp>[0]) => {
    const kafka = client(mock);
    let producer!: Producer;
    const app = await startObsApp(config, (app) => {
      instrumentKafka(kafka, app.obs);
      producer = kafka.producer({ allowAutoTopicCreation: true });
      clients.push(producer);
      app.get<{ Querystring: { topic: string; value: string; keep?: string } }>(
        '/produce',
        async (request) => {
          const { topic, value, keep } = request.query;
          const headers: IHeaders =
            keep === undefined ? {} : { 'obs-timeout-ms': keep, 'X-Request-ID': keep };
          await producer.send({ topic, messages: [{ key: 'k', value, headers }] });
          return { requestId: request.id };
        },
      );
    });
    apps.push(app);
    await within(producer.connect(), 'producer connect');
    const consumer = (groupId: string): Consumer => {
      const c = kafka.consumer({ groupId, ...MOCK_CONSUMER_SETTINGS });
      clients.push(c);
      return c;
    };
    const produce = async (query: Record<string, string>, headers: Record<string, string> = {}) => {
      const response = await fetch(`${app.url}/produce?${new URLSearchParams(query)}`, { headers });
      assert.equal(response.status, 200, await response.clone().text());
      return (await response.json()) as { requestId: string };
    };
    return { app, kafka, producer, consumer, produce };
  };

  const propagating = await obsApp({ config: { 'timeout-budget': { 'abort-on-exhaustion': true } } });
  const skipping = await obsApp({
    config: { kafka: { 'skip-stale-records': true, 'skip-stale-max-age': '1m' } },
  });

  const subscribe = async (c: Consumer, topic: string, run: Parameters<Consumer['run']>[0]) => {
    await within(c.connect(), 'consumer connect');
    await within(c.subscribe({ topics: [topic], fromBeginning: true }), 'subscribe');
    await within(c.run(run), 'run');
  };

  const deadline = t.test(
    'a record produced in a request carries its deadline and request id; the listener runs in them',
    async () => {
      const { consumer, produce, producer } = propagating;
      const topic = unique('deadline');
      const got = collector<Seen>(3);
      await subscribe(consumer(unique('group')), topic, {
        eachMessage: async ({ message }) => got.push(seen(message)),
      });
      const deadlineMs = Date.now() + 20_000;
      const { requestId } = await produce(
        { topic, value: 'in-request' },
        { 'Obs-Timeout-Deadline-Ms': String(deadlineMs) },
      );
      const kept = await produce({ topic, value: 'kept', keep: '42' }, { 'Obs-Timeout-Ms': '9000' });
      await within(producer.send({ topic, messages: [{ key: 'k', value: 'outside' }] }), 'send');
      const [inRequest, keptHeaders, outside] = await within(got.done, 'three records');

      assert.equal(inRequest!.value, 'in-request');
      assert.equal(inRequest!.headers['obs-timeout-deadline-ms'], String(deadlineMs));
      const stamped = Number(inRequest!.headers['obs-timeout-ms']);
      assert.ok(stamped > 0 && stamped <= 20_000, `remaining stamped: ${stamped}`);
      assert.equal(inRequest!.headers['x-request-id'], requestId);
      assert.equal(
        inRequest!.budget?.deadlineEpochMs,
        deadlineMs,
        'the listener sees the producer’s deadline',
      );
      assert.equal(inRequest!.budget?.source, 'deadline-header');
      assert.equal(inRequest!.requestId, requestId);

      assert.equal(keptHeaders!.headers['obs-timeout-ms'], '42', 'a header the caller set is kept');
      assert.equal(keptHeaders!.headers['x-request-id'], '42');
      assert.ok(keptHeaders!.headers['obs-timeout-deadline-ms'], 'the others are stamped');
      assert.notEqual(kept.requestId, '42');

      assert.equal(outside!.value, 'outside');
      assert.deepEqual(outside!.headers, {}, 'outside a request nothing is stamped');
      assert.equal(outside!.budget, undefined);
      assert.match(outside!.requestId ?? '', /^[0-9a-f-]{36}$/, 'a new request id');
    },
  );

  const exhausted = t.test(
    'an exhausted budget is counted as kafka and the record still goes, even with abort-on-exhaustion',
    async () => {
      const { app, consumer, produce } = propagating;
      const topic = unique('exhausted');
      const got = collector<Seen>(1);
      await subscribe(consumer(unique('group')), topic, {
        eachMessage: async ({ message }) => got.push(seen(message)),
      });
      const before = (await metricValue(app, TIMEOUT_BUDGET_METRICS.exhausted, { transport: 'kafka' })) ?? 0;
      await produce({ topic, value: 'late' }, { 'Obs-Timeout-Ms': '0' });
      const after = await metricValue(app, TIMEOUT_BUDGET_METRICS.exhausted, { transport: 'kafka' });
      assert.equal(after, before + 1);
      const [late] = await within(got.done, 'the exhausted record');
      assert.equal(late!.headers['obs-timeout-ms'], '0', 'the remaining 0 is stamped');
      assert.equal(late!.budget?.remainingMs, 0, 'the listener runs although the deadline passed');
    },
  );

  const lag = t.test('the consumer time lag is how old the last consumed record was', async () => {
    const { app, consumer, producer } = propagating;
    const topic = unique('lag');
    const group = unique('group');
    const got = collector<Seen>(1);
    let next = got;
    await subscribe(consumer(group), topic, {
      eachMessage: async ({ message }) => next.push(seen(message)),
    });
    const labels = { group, topic, partition: '0' };
    const send = (timestamp: number) =>
      within(
        producer.send({ topic, messages: [{ partition: 0, value: 'v', timestamp: String(timestamp) }] }),
        'send',
      );
    await send(Date.now() - 120_000);
    await within(got.done, 'the old record');
    const old = (await metricValue(app, KAFKA_METRICS.consumerTimeLag, labels)) ?? -1;
    assert.ok(old >= 120 && old < 120 + WAIT_MS / 1000, `lag after an old record: ${old} s`);
    next = collector<Seen>(1);
    await send(Date.now());
    await within(next.done, 'the fresh record');
    const fresh = (await metricValue(app, KAFKA_METRICS.consumerTimeLag, labels)) ?? -1;
    assert.ok(fresh >= 0 && fresh < WAIT_MS / 1000, `lag after a fresh record: ${fresh} s`);
  });

  const staleMessages = t.test(
    'eachMessage: records older than skip-stale-max-age are skipped and counted',
    async () => {
      const { app, consumer, producer } = skipping;
      const topic = unique('stale');
      const got = collector<Seen>(2);
      await subscribe(consumer(unique('group')), topic, {
        eachMessage: async ({ message }) => got.push(seen(message)),
      });
      const old = String(Date.now() - 10 * 60_000);
      await within(
        producer.send({
          topic,
          messages: ['stale-1', 'fresh-1', 'stale-2', 'fresh-2'].map((value) => ({
            key: 'k',
            value,
            timestamp: value.startsWith('stale') ? old : String(Date.now()),
          })),
        }),
        'send',
      );
      const records = await within(got.done, 'the fresh records');
      assert.deepEqual(
        records.map((r) => r.value),
        ['fresh-1', 'fresh-2'],
      );
      assert.equal(await metricValue(app, KAFKA_METRICS.recordsSkipped, { topic }), 2);
    },
  );

  const staleBatch = t.test('eachBatch: stale records are taken out of the batch and counted', async () => {
    const { app, consumer, producer } = skipping;
    const topic = unique('stale-batch');
    const got = collector<string>(2);
    await subscribe(consumer(unique('group')), topic, {
      eachBatch: async ({ batch }) => {
        for (const message of batch.messages) got.push(String(message.value));
      },
    });
    const old = String(Date.now() - 10 * 60_000);
    await within(
      producer.send({
        topic,
        messages: ['stale-1', 'fresh-1', 'stale-2', 'fresh-2', 'stale-3'].map((value) => ({
          partition: 1,
          value,
          timestamp: value.startsWith('stale') ? old : String(Date.now()),
        })),
      }),
      'send',
    );
    await within(got.done, 'the fresh records');
    // The trailing stale record may come in a batch of its own: wait for its count.
    await until(
      'three stale records counted',
      async () => ((await metricValue(app, KAFKA_METRICS.recordsSkipped, { topic })) ?? 0) >= 3,
      WAIT_MS,
      50,
    );
    assert.equal(await metricValue(app, KAFKA_METRICS.recordsSkipped, { topic }), 3);
    assert.deepEqual(got.items, ['fresh-1', 'fresh-2'], 'no stale record reached the handler');
  });

  await Promise.all([deadline, exhausted, lag, staleMessages, staleBatch]);
});
