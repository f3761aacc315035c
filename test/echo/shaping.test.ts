import assert from 'node:assert/strict';
import { Readable, Writable } from 'node:stream';
import { test } from 'node:test';
import {
  DEFAULT_CHUNK_BYTES,
  parseRate,
  pieceBytes,
  type ShapingClock,
  type ShapingPlan,
  ShapingStream,
  TokenBucket,
} from '../../src/echo/shaping.ts';

/**
 * The shaping stream under injected time: the token bucket, the chunk delay, the body delay, the
 * ceiling on waiting, and what it holds in memory.
 */

/** A clock the test moves by hand; timers run in order as it passes them. */
class ManualClock implements ShapingClock {
  t = 0;
  readonly timers = new Map<number, { at: number; fn: () => void }>();
  #id = 0;

  now(): number {
    return this.t;
  }

  setTimer(fn: () => void, ms: number): unknown {
    const id = ++this.#id;
    this.timers.set(id, { at: this.t + ms, fn });
    return id;
  }

  clearTimer(timer: unknown): void {
    this.timers.delete(timer as number);
  }

  /** Lets the streams move (they work on ticks), then fires the earliest timer; false when none. */
  async step(): Promise<boolean> {
    await settle();
    let next: [number, { at: number; fn: () => void }] | undefined;
    for (const entry of this.timers) if (next === undefined || entry[1].at < next[1].at) next = entry;
    if (next === undefined) return false;
    this.timers.delete(next[0]);
    this.t = Math.max(this.t, next[1].at);
    next[1].fn();
    await settle();
    return true;
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** A sink that records when (clock time) each piece arrived. */
function recorder(clock: ManualClock) {
  const arrivals: Array<{ at: number; bytes: number }> = [];
  const chunks: Buffer[] = [];
  let finished = false;
  const sink = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _enc, cb) {
      arrivals.push({ at: clock.t, bytes: chunk.length });
      chunks.push(chunk);
      cb();
    },
    final(cb) {
      finished = true;
      cb();
    },
  });
  return {
    sink,
    arrivals,
    body: () => Buffer.concat(chunks),
    get finished() {
      return finished;
    },
  };
}

async function runToEnd(clock: ManualClock, done: () => boolean, maxSteps = 100_000): Promise<void> {
  for (let i = 0; i < maxSteps && !done(); i++) {
    if (!(await clock.step()) && !done()) await settle();
  }
  assert.ok(done(), 'the stream finished');
}

const body = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => i % 251));

test('parseRate – B, KB, MB (1000) and KiB, MiB (1024) per second; below 1 B/s or malformed is refused', () => {
  assert.equal(parseRate('200KB/s'), 200_000);
  assert.equal(parseRate('1MB/s'), 1_000_000);
  assert.equal(parseRate('10kb/s'), 10_000);
  assert.equal(parseRate('500B/s'), 500);
  assert.equal(parseRate(' 1.5 KiB/s '), 1536);
  assert.equal(parseRate('2MiB/s'), 2 * 1024 * 1024);
  assert.equal(parseRate('1GB/s'), 1e9);
  for (const bad of ['0B/s', '0.5B/s', '10KB', '10 KB/min', 'fast', '-1KB/s', '1e3B/s', '', '10Kb/sec']) {
    assert.equal(parseRate(bad), undefined, bad);
  }
});

test('pieceBytes – a tenth of a second of the rate (1 byte to 16 KiB), or the asked chunk size', () => {
  assert.equal(pieceBytes({ maxShapingMs: 1, bytesPerSecond: 10_000 }), 1000);
  assert.equal(pieceBytes({ maxShapingMs: 1, bytesPerSecond: 5 }), 1);
  assert.equal(pieceBytes({ maxShapingMs: 1, bytesPerSecond: 1e9 }), DEFAULT_CHUNK_BYTES);
  assert.equal(pieceBytes({ maxShapingMs: 1, chunkDelayMs: 10 }), DEFAULT_CHUNK_BYTES);
  assert.equal(pieceBytes({ maxShapingMs: 1, chunkDelayMs: 10, chunkBytes: 7 }), 7);
});

test('TokenBucket – starts empty, fills at the rate, keeps at most its capacity', () => {
  const bucket = new TokenBucket(1000, 500, 0);
  assert.equal(bucket.waitMs(500, 0), 500);
  assert.equal(bucket.waitMs(500, 200), 300);
  assert.equal(bucket.waitMs(500, 500), 0);
  bucket.take(500, 500);
  assert.equal(bucket.waitMs(100, 500), 100);
  // Idle for a long time: the bucket holds its capacity, no more (no burst beyond one piece).
  assert.equal(bucket.waitMs(500, 100_000), 0);
  bucket.take(500, 100_000);
  assert.equal(bucket.waitMs(500, 100_000), 500);
});

test('ShapingStream – a throttle never lets more than rate × t bytes through, and the body arrives whole', async () => {
  const clock = new ManualClock();
  const plan: ShapingPlan = { bytesPerSecond: 10_000, maxShapingMs: 300_000 };
  const shaper = new ShapingStream(plan, clock);
  const sink = recorder(clock);
  const data = body(100_000);
  Readable.from([data.subarray(0, 64 * 1024), data.subarray(64 * 1024)])
    .pipe(shaper)
    .pipe(sink.sink);
  await runToEnd(clock, () => sink.finished);
  assert.deepEqual(sink.body(), data);
  let total = 0;
  for (const a of sink.arrivals) {
    total += a.bytes;
    assert.ok(a.bytes <= 1000, `pieces of a tenth of a second (${a.bytes})`);
    assert.ok(total <= (10_000 * a.at) / 1000 + 1e-6, `${total} bytes by ${a.at} ms is over the rate`);
  }
  // 10 s, give or take the whole milliseconds a short piece (at a chunk's end) rounds up to.
  const last = sink.arrivals.at(-1)?.at ?? 0;
  assert.ok(last >= 10_000 && last <= 10_005, `100 kB at 10 kB/s takes 10 s, took ${last} ms`);
  assert.equal(clock.timers.size, 0, 'no timer left behind');
});

test('ShapingStream – a chunk delay waits between chunks of the asked size, not before the first', async () => {
  const clock = new ManualClock();
  const shaper = new ShapingStream({ chunkDelayMs: 100, chunkBytes: 10, maxShapingMs: 300_000 }, clock);
  const sink = recorder(clock);
  shaper.pipe(sink.sink);
  shaper.end(body(45));
  await runToEnd(clock, () => sink.finished);
  assert.deepEqual(
    sink.arrivals.map((a) => [a.at, a.bytes]),
    [
      [0, 10],
      [100, 10],
      [200, 10],
      [300, 10],
      [400, 5],
    ],
  );
});

test('ShapingStream – a body delay holds the first byte, then the body flows', async () => {
  const clock = new ManualClock();
  const shaper = new ShapingStream({ bodyDelayMs: 750, maxShapingMs: 300_000 }, clock);
  const sink = recorder(clock);
  shaper.pipe(sink.sink);
  shaper.end(body(40_000));
  await runToEnd(clock, () => sink.finished);
  assert.equal(sink.arrivals[0]?.at, 750);
  assert.equal(sink.arrivals.at(-1)?.at, 750, 'no other wait');
  assert.equal(sink.body().length, 40_000);

  const emptyClock = new ManualClock();
  const empty = new ShapingStream({ bodyDelayMs: 300, maxShapingMs: 300_000 }, emptyClock);
  let endedAt = -1;
  empty.on('end', () => {
    endedAt = emptyClock.t;
  });
  empty.resume();
  empty.end();
  await runToEnd(emptyClock, () => endedAt >= 0);
  assert.equal(endedAt, 300, 'an empty body ends after the delay too');
});

test('ShapingStream – waiting stops at maxShapingMs (ECHO_MAX_DELAY); the rest goes at once', async () => {
  const clock = new ManualClock();
  const shaper = new ShapingStream({ bytesPerSecond: 10, maxShapingMs: 2_000 }, clock);
  const sink = recorder(clock);
  shaper.pipe(sink.sink);
  shaper.end(body(1_000));
  await runToEnd(clock, () => sink.finished);
  assert.equal(sink.body().length, 1_000);
  assert.equal(sink.arrivals.at(-1)?.at, 2_000, 'not the 100 s the rate alone would take');
  assert.equal(sink.arrivals.filter((a) => a.at < 2_000).length, 19, 'one byte a tenth of a second before');
});

test('ShapingStream – an abort (the drain deadline) ends the waiting', async () => {
  const clock = new ManualClock();
  const drain = new AbortController();
  const shaper = new ShapingStream({ bytesPerSecond: 100, maxShapingMs: 300_000 }, clock, drain.signal);
  const sink = recorder(clock);
  shaper.pipe(sink.sink);
  shaper.end(body(1_000));
  for (let i = 0; i < 5; i++) await clock.step();
  assert.ok(sink.arrivals.length > 0 && sink.body().length < 1_000);
  drain.abort();
  await settle();
  assert.equal(sink.finished, true);
  assert.equal(sink.body().length, 1_000);
  assert.equal(clock.timers.size, 0);
});

test('ShapingStream – holds one chunk: the source is pulled only as the reader takes pieces', async () => {
  const clock = new ManualClock();
  const CHUNK = 64 * 1024;
  let produced = 0;
  const source = new Readable({
    highWaterMark: CHUNK,
    read() {
      if (produced >= 1_000_000) return void this.push(null);
      const n = Math.min(CHUNK, 1_000_000 - produced);
      produced += n;
      this.push(Buffer.alloc(n, 1));
    },
  });
  const shaper = new ShapingStream({ bytesPerSecond: 200_000, maxShapingMs: 300_000 }, clock);
  let received = 0;
  let maxAhead = 0;
  let maxHeld = 0;
  let reading = true;
  const sink = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _enc, cb) {
      received += chunk.length;
      maxAhead = Math.max(maxAhead, produced - received);
      maxHeld = Math.max(maxHeld, shaper.writableLength + shaper.readableLength);
      if (reading) cb();
      else setTimeout(cb, 0); // a client that stopped reading is modelled below
    },
  });
  source.pipe(shaper).pipe(sink);
  for (let i = 0; i < 20; i++) await clock.step();
  assert.ok(received > 0 && received < 1_000_000, `received ${received}`);
  // The shaper holds the chunk it is cutting (its pieces are views of it), and the source
  // buffers at most one more of its own.
  assert.ok(maxHeld <= CHUNK, `the shaper held ${maxHeld} bytes`);
  assert.ok(maxAhead <= 2 * CHUNK, `the source ran ${maxAhead} bytes ahead of the reader`);

  // A reader that stops: nothing more is pulled, however long the clock runs.
  reading = false;
  sink.cork();
  const producedWhenStopped = produced;
  for (let i = 0; i < 200; i++) await clock.step();
  assert.ok(produced - producedWhenStopped <= 2 * CHUNK, 'the source is not drained into memory');
  assert.ok(shaper.readableLength <= shaper.pieceBytes, 'at most one piece waits for the reader');
  shaper.destroy();
  assert.equal(clock.timers.size, 0, 'destroyed (the client left): no timer left behind');
});
