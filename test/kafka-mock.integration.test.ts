// The Kafka test harness (test/helpers/kafka-mock.ts): librdkafka's mock cluster, started by kcat,
// spoken to by kafkajs over the real wire protocol. It lives here, not beside the helper, because
// `test/**/*.test.ts` would run test/helpers/kafka-mock.test.ts too.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { type Consumer, type IHeaders, Kafka, type KafkaMessage, logLevel, type Producer } from 'kafkajs';
import {
  collector,
  type KafkaMock,
  MOCK_CONSUMER_SETTINGS,
  requireKcat,
  startKafkaMock,
} from './helpers/kafka-mock.ts';
import { within } from './helpers/runtime.ts';

/** Every wait is bounded: the first group join alone takes 3 s on the mock. */
const _WAIT_MS = 20_000;

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function client(mock: KafkaMock): Kafka {
  return new Kafka({
    clientId: 'echo-chaos-test',
    brokers: mock.brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3_000,
    requestTimeout: 15_000,
    retry: { retries: 3, initialRetryTime: 100 },
  });
}

const unique = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;

test('kafka mock – kcat starts a mock cluster and stop() leaves no process behind', async (t) => {
  if (!requireKcat(t)) return;
  const mock = await startKafkaMock();
  assert.match(mock.bootstrap, /^127\.0\.0\.1:\d+$/);
  assert.deepEqual(mock.brokers, [mock.bootstrap]);
  assert.ok(isRunning(mock.pid));
  await within(mock.stop(), 'stop');
  assert.ok(!isRunning(mock.pid), `kcat ${mock.pid} still runs after stop()`);
  await within(mock.stop(), 'a second stop'); // idempotent

  const three = await startKafkaMock({ brokers: 3 });
  try {
    assert.equal(three.brokers.length, 3, three.bootstrap);
  } finally {
    await three.stop();
  }
  assert.ok(!isRunning(three.pid));

  // No bootstrap line in time: rejected with what kcat said, and kcat is ended.
  await assert.rejects(
    startKafkaMock({ startTimeoutMs: 0 }),
    /no "bootstrap.servers=" line from kcat within 0 ms/,
  );
});

test('kafka mock – kafkajs produces and consumes with headers, groups and timestamps', {
  concurrency: true,
}, async (t) => {
  if (!requireKcat(t)) return;
  const mock = await startKafkaMock();
  const kafka = client(mock);
  const clients: Array<Producer | Consumer> = [];
  // Clients first: a consumer whose broker is gone retries (and restarts) on its own timers.
  t.after(async () => {
    await Promise.allSettled(clients.map((c) => within(c.disconnect(), 'disconnect', 10_000)));
    await mock.stop();
  });
  const producer = kafka.producer({ allowAutoTopicCreation: true });
  clients.push(producer);
  await within(producer.connect(), 'producer connect');
  const consumer = (groupId: string): Consumer => {
    const c = kafka.consumer({ groupId, ...MOCK_CONSUMER_SETTINGS });
    clients.push(c);
    return c;
  };

  // Concurrent: each group's first join waits 3 s on the mock.
  const eachMessage = t.test(
    'eachMessage in a consumer group gets values, keys, headers and timestamps intact',
    async () => {
      const topic = unique('headers');
      const group = unique('group');
      const c = consumer(group);
      const got = collector<KafkaMessage>(3);
      await within(c.connect(), 'consumer connect');
      // The mock creates a topic (4 partitions) on the first Metadata request naming it.
      await within(c.subscribe({ topics: [topic], fromBeginning: true }), 'subscribe');
      await within(
        c.run({
          eachMessage: async ({ message }) => {
            got.push(message);
          },
        }),
        'run',
      );

      const binary = Buffer.from([0, 1, 2, 0xfe, 0xff]);
      const before = Date.now();
      const headers: IHeaders = {
        'Obs-Timeout-Deadline-Ms': '1700000005000',
        'x-request-id': 'req-1',
        'x-multi': ['a', 'b'],
        'x-binary': binary,
      };
      // One key, so one partition, so arrival order is produce order.
      await within(
        producer.send({
          topic,
          messages: [
            { key: 'k', value: 'first', headers, timestamp: '1700000000123' },
            { key: 'k', value: binary, headers: { 'x-request-id': 'req-2' } },
            { key: 'k', value: null },
          ],
        }),
        'send',
      );
      const after = Date.now();
      const [first, second, third] = await within(got.done, 'three messages through eachMessage');

      assert.equal(first!.key?.toString(), 'k');
      assert.equal(first!.value?.toString(), 'first');
      assert.equal(first!.timestamp, '1700000000123');
      const h = first!.headers!;
      assert.ok(Buffer.isBuffer(h['Obs-Timeout-Deadline-Ms']), 'kafkajs hands header values over as Buffers');
      assert.equal(h['Obs-Timeout-Deadline-Ms']!.toString(), '1700000005000');
      assert.equal(h['x-request-id']!.toString(), 'req-1');
      assert.deepEqual(
        (h['x-multi'] as Buffer[]).map((b) => b.toString()),
        ['a', 'b'],
        'a repeated header arrives as an array',
      );
      assert.deepEqual(h['x-binary'], binary);

      assert.deepEqual(second!.value, binary);
      assert.equal(second!.headers!['x-request-id']!.toString(), 'req-2');
      const ts = Number(second!.timestamp);
      assert.ok(ts >= before && ts <= after, `default timestamp ${ts} within [${before}, ${after}]`);
      assert.equal(third!.value, null, 'a tombstone stays null');
      assert.deepEqual(
        [first!.offset, second!.offset, third!.offset].map(Number),
        [0, 1, 2],
        'offsets on the partition count from 0',
      );

      // Auto-commit (OffsetCommit) reaches the group coordinator: the offsets are readable (OffsetFetch).
      await within(c.disconnect(), 'consumer disconnect');
      const admin = kafka.admin();
      await within(admin.connect(), 'admin connect');
      try {
        const [offsets] = await within(
          admin.fetchOffsets({ groupId: group, topics: [topic] }),
          'fetchOffsets',
        );
        const committed = offsets!.partitions.filter((p) => p.offset !== '-1');
        assert.deepEqual(
          committed.map((p) => p.offset),
          ['3'],
          JSON.stringify(offsets),
        );
      } finally {
        await admin.disconnect();
      }
    },
  );

  const eachBatch = t.test('eachBatch gets the records of a partition in order', async () => {
    const topic = unique('batch');
    const c = consumer(unique('group'));
    const got = collector<{ partition: number; message: KafkaMessage }>(5);
    await within(c.connect(), 'consumer connect');
    await within(c.subscribe({ topics: [topic], fromBeginning: true }), 'subscribe');
    await within(
      c.run({
        eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
          for (const message of batch.messages) {
            got.push({ partition: batch.partition, message });
            resolveOffset(message.offset);
          }
          await heartbeat();
        },
      }),
      'run',
    );
    await within(
      producer.send({
        topic,
        messages: [0, 1, 2, 3, 4].map((i) => ({
          partition: 2,
          value: `v${i}`,
          headers: { 'x-request-id': `r${i}` },
          timestamp: String(1700000000000 + i),
        })),
      }),
      'send',
    );
    const records = await within(got.done, 'five messages through eachBatch');
    assert.deepEqual(
      records.map((r) => r.partition),
      [2, 2, 2, 2, 2],
    );
    assert.deepEqual(
      records.map((r) => r.message.value?.toString()),
      ['v0', 'v1', 'v2', 'v3', 'v4'],
    );
    assert.deepEqual(
      records.map((r) => r.message.headers?.['x-request-id']?.toString()),
      ['r0', 'r1', 'r2', 'r3', 'r4'],
    );
    assert.deepEqual(
      records.map((r) => r.message.timestamp),
      ['1700000000000', '1700000000001', '1700000000002', '1700000000003', '1700000000004'],
    );
  });

  const resume = t.test('a consumer group resumes after its committed offsets', async () => {
    const topic = unique('resume');
    const group = unique('group');
    const send = (values: string[]) =>
      within(producer.send({ topic, messages: values.map((value) => ({ key: 'k', value })) }), 'send');
    const consumeOnce = async (count: number): Promise<string[]> => {
      const c = consumer(group);
      const got = collector<string>(count);
      await within(c.connect(), 'consumer connect');
      await within(c.subscribe({ topics: [topic], fromBeginning: true }), 'subscribe');
      await within(c.run({ eachMessage: async ({ message }) => got.push(String(message.value)) }), 'run');
      const values = await within(got.done, `${count} messages`);
      await within(c.disconnect(), 'consumer disconnect');
      return values;
    };
    await send(['a', 'b']);
    assert.deepEqual(await consumeOnce(2), ['a', 'b']);
    await send(['c']);
    assert.deepEqual(await consumeOnce(1), ['c'], 'the second member of the group starts after the commits');
  });
  await Promise.all([eachMessage, eachBatch, resume]);
});
