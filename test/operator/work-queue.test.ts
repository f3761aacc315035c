import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkQueue } from '../../src/operator/work-queue.ts';

test('work queue – a key waiting is queued once', async () => {
  const queue = new WorkQueue();
  queue.add('a');
  queue.add('b');
  queue.add('a');
  assert.equal(queue.length, 2);
  assert.equal(await queue.get(), 'a');
  assert.equal(await queue.get(), 'b');
  queue.shutDown();
  assert.equal(await queue.get(), undefined);
});

test('work queue – a key added while processed is handed out again only after done', async () => {
  const queue = new WorkQueue();
  queue.add('a');
  const key = await queue.get();
  queue.add('a');
  queue.add('a');
  assert.equal(queue.length, 0, 'never to two workers at once');
  queue.done(key!);
  assert.equal(queue.length, 1);
  assert.equal(await queue.get(), 'a');
  queue.done('a');
  assert.equal(queue.length, 0);
  queue.shutDown();
});

test('work queue – per-key exponential backoff, capped, reset by forget', () => {
  const queue = new WorkQueue({ baseDelayMs: 10, maxDelayMs: 50 });
  assert.deepEqual(
    [1, 2, 3, 4, 5].map(() => queue.addRateLimited('a')),
    [10, 20, 40, 50, 50],
  );
  assert.equal(queue.addRateLimited('b'), 10, 'each key has its own backoff');
  queue.forget('a');
  assert.equal(queue.addRateLimited('a'), 10);
  queue.shutDown();
});

test('work queue – a rate-limited key comes back after its delay', async () => {
  const queue = new WorkQueue({ baseDelayMs: 20 });
  const started = Date.now();
  queue.addRateLimited('a');
  assert.equal(await queue.get(), 'a');
  assert.ok(Date.now() - started >= 15);
  queue.shutDown();
});
