import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type QueueClock, WorkQueue } from '../../src/operator/work-queue.ts';

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

/** A clock that moves only when told: timers fire, in due order, as `advance` passes them. */
class FakeClock implements QueueClock {
  #now = 0;
  #next = 0;
  readonly #timers = new Map<number, { due: number; fn: () => void }>();
  now(): number {
    return this.#now;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const handle = this.#next++;
    this.#timers.set(handle, { due: this.#now + ms, fn });
    return handle;
  }
  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }
  get pending(): number {
    return this.#timers.size;
  }
  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      const next = [...this.#timers].sort(([, a], [, b]) => a.due - b.due)[0];
      if (next === undefined || next[1].due > until) break;
      this.#timers.delete(next[0]);
      this.#now = next[1].due;
      next[1].fn();
    }
    this.#now = until;
  }
}

test('work queue – a rate-limited key comes back after its delay, not before', () => {
  const clock = new FakeClock();
  const queue = new WorkQueue({ baseDelayMs: 20, clock });
  assert.equal(queue.addRateLimited('a'), 20);
  clock.advance(19);
  assert.equal(queue.length, 0, 'not before its delay');
  clock.advance(1);
  assert.equal(queue.length, 1, 'at its delay');
  queue.shutDown();
});

test('work queue – a requeue-after keeps the sooner timer; cancelAfter and shutDown clear it', () => {
  const clock = new FakeClock();
  const queue = new WorkQueue({ clock });
  queue.addAfter('a', 100);
  queue.addAfter('a', 300);
  assert.equal(clock.pending, 1, 'one timer a key');
  queue.addAfter('a', 50);
  assert.equal(clock.pending, 1, 'the sooner replaces it');
  clock.advance(50);
  assert.equal(queue.length, 1);
  queue.addAfter('b', 10);
  queue.cancelAfter('b');
  clock.advance(1000);
  assert.equal(queue.length, 1, 'a cancelled key is not added');
  queue.addAfter('c', 10);
  queue.addRateLimited('d');
  queue.shutDown();
  assert.equal(clock.pending, 0, 'shutDown clears every timer');
});

interface Key {
  readonly kind: 'pod' | 'echoscenario';
  readonly name: string;
  readonly id: string;
}
const key = (kind: Key['kind'], name: string): Key => ({ kind, name, id: `${kind}:${name}` });

test('work queue – typed keys: two keys with one id are one key, and the key handed out is typed', async () => {
  const queue = new WorkQueue<Key>({ idOf: (k) => k.id });
  queue.add(key('pod', 'a'));
  queue.add(key('pod', 'a'));
  queue.add(key('echoscenario', 'a'));
  assert.equal(queue.length, 2, 'the same name of another kind is another key');
  const first = await queue.get();
  assert.deepEqual(first, key('pod', 'a'));
  queue.add(key('pod', 'a'));
  assert.equal(queue.length, 1, 'not to two workers at once');
  queue.done(first!);
  assert.equal(queue.length, 2, 'queued again after done');
  queue.shutDown();
});

test('work queue – it holds on to a key only while it is queued, processed, failing or timed', async () => {
  const clock = new FakeClock();
  const queue = new WorkQueue<Key>({ idOf: (k) => k.id, clock });
  for (let i = 0; i < 100; i++) queue.add(key('pod', `p${i}`));
  for (let i = 0; i < 100; i++) {
    const k = (await queue.get())!;
    if (i % 10 === 0) queue.addRateLimited(k);
    queue.done(k);
  }
  assert.equal(queue.known, 10, 'the failing ones');
  clock.advance(1000);
  for (let i = 0; i < 10; i++) {
    const k = (await queue.get())!;
    queue.forget(k);
    queue.done(k);
  }
  assert.equal(queue.known, 0, 'nothing left once all succeeded');
  queue.shutDown();
});
