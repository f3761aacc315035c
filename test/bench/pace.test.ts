import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dueCount, Http1Reader, type PaceDeps, runPaced, scheduledAt, targetOf } from '../../bench/pace.ts';

/**
 * The paced client's schedule and bookkeeping (bench/pace.ts) on a fake clock: `sleep` moves the
 * clock (plus `oversleep`, as a busy machine's timers do) and answers the requests whose fake
 * latency has passed, in time order; no real time is waited and no socket is opened. And its
 * HTTP/1.1 reader on answers split every way.
 */
/** A request's fake answer: success after some ms, a non-success answer after 1 ms, an error, or none. */
type Answer = number | 'not ok' | 'error' | 'never';

function fakeClock(answer: (i: number) => Answer, oversleep = 0) {
  let now = 0;
  const pending: { at: number; resolve: (ok: boolean) => void; ok: boolean }[] = [];
  const sends: { i: number; target: number; at: number }[] = [];
  const deps: PaceDeps = {
    now: () => now,
    async sleep(ms) {
      const until = now + ms + oversleep;
      for (;;) {
        pending.sort((a, b) => a.at - b.at);
        const next = pending[0];
        if (next === undefined || next.at > until) break;
        pending.shift();
        now = next.at;
        next.resolve(next.ok);
        await new Promise((r) => setImmediate(r));
      }
      now = until;
    },
    send(i, target) {
      sends.push({ i, target, at: now });
      const a = answer(i);
      return new Promise<boolean>((resolve, reject) => {
        if (a === 'error') reject(new Error('ECONNRESET'));
        else if (a === 'not ok') pending.push({ at: now + 1, resolve, ok: false });
        else if (a !== 'never') pending.push({ at: now + a, resolve, ok: true });
      });
    },
  };
  return { deps, sends };
}

test('the schedule: request i at i / rate; how many are due; whose turn it is', () => {
  assert.equal(scheduledAt(0, 1000), 0);
  assert.equal(scheduledAt(5, 1000), 5);
  assert.equal(dueCount(-1, 1000, 10), 0);
  assert.equal(dueCount(0, 1000, 10), 1);
  assert.equal(dueCount(4.99, 1000, 10), 5);
  assert.equal(dueCount(5, 1000, 10), 6);
  assert.equal(dueCount(1e6, 1000, 10), 10);
  // 1 / 3 s is not exact in floating point: request 1 is still due at its own time.
  assert.equal(dueCount(scheduledAt(1, 3), 3, 10), 2);
  assert.deepEqual(
    Array.from({ length: 12 }, (_, i) => targetOf(i, 1000, 3, 2)),
    [0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2],
  );
  assert.equal(targetOf(7, 1000, 1, 2), 0);
});

test('on time: every request sent at its time, latency from hand-over, none late', async () => {
  const { deps, sends } = fakeClock(() => 2);
  const r = await runPaced({ rate: 1000, durationMs: 20, graceMs: 100 }, deps);
  assert.equal(r.scheduled, 20);
  const [t] = r.targets;
  assert.ok(t);
  assert.equal(t.sent, 20);
  assert.equal(t.ok, 20);
  assert.equal(t.failed + t.unfinished, 0);
  assert.deepEqual(
    sends.map((s) => s.at),
    Array.from({ length: 20 }, (_, i) => i),
  );
  assert.ok(t.latenciesMs.every((ms) => ms === 2));
  assert.ok(t.lateMs.every((ms) => ms === 0));
  assert.equal(r.elapsedMs, 21); // the last sent at 19, answered at 21
});

test('a late client sends what is due together and says how late; the count does not change', async () => {
  const { deps, sends } = fakeClock(() => 1, 3);
  const r = await runPaced({ rate: 1000, durationMs: 20, graceMs: 100 }, deps);
  const [t] = r.targets;
  assert.ok(t);
  assert.equal(t.sent, 20);
  assert.equal(t.ok, 20);
  // Woken 3 ms late every time: requests go in bursts of four, the first of each 3 ms late.
  assert.deepEqual(
    sends.slice(0, 5).map((s) => s.at),
    [0, 4, 4, 4, 4],
  );
  assert.equal(Math.max(...t.lateMs), 3);
  assert.deepEqual(t.lateMs.slice(0, 5), [0, 3, 2, 1, 0]);
  assert.ok(t.latenciesMs.every((ms) => ms === 1));
});

test('a slow server does not slow the schedule (open loop): its backlog shows in the latencies', async () => {
  // Each answer takes longer than the one before: a server falling behind.
  const { deps, sends } = fakeClock((i) => 1 + i * 2);
  const r = await runPaced({ rate: 1000, durationMs: 10, graceMs: 100 }, deps);
  const [t] = r.targets;
  assert.ok(t);
  assert.deepEqual(
    sends.map((s) => s.at),
    Array.from({ length: 10 }, (_, i) => i),
  );
  assert.equal(t.ok, 10);
  assert.equal(Math.max(...t.latenciesMs), 19);
});

test('failures, errors and requests never answered (left after the grace) are counted apart', async () => {
  const answers: Answer[] = [1, 'not ok', 'error', 'never', 1];
  const { deps } = fakeClock((i) => answers[i] ?? 1);
  const r = await runPaced({ rate: 1000, durationMs: 5, graceMs: 50 }, deps);
  const [t] = r.targets;
  assert.ok(t);
  assert.equal(t.sent, 5);
  assert.equal(t.ok, 2);
  assert.equal(t.failed, 2);
  assert.equal(t.unfinished, 1);
  assert.equal(r.elapsedMs, 4 + 50); // the grace, counted from the last send
});

test('targets take turns in slices, each getting the rate for its slice', async () => {
  const { deps, sends } = fakeClock((i) => (i % 5 === 0 ? 3 : 1));
  const r = await runPaced({ rate: 1000, durationMs: 30, graceMs: 100, targets: 3, sliceMs: 5 }, deps);
  assert.equal(r.scheduled, 30);
  assert.deepEqual(
    r.targets.map((t) => t.sent),
    [10, 10, 10],
  );
  assert.deepEqual(
    sends.filter((s) => s.target === 1).map((s) => s.i),
    [5, 6, 7, 8, 9, 20, 21, 22, 23, 24],
  );
  for (const t of r.targets) assert.deepEqual([...t.latenciesMs].sort(), [1, 1, 1, 1, 1, 1, 1, 1, 3, 3]);
});

test('a rate of zero is refused', async () => {
  const { deps } = fakeClock(() => 1);
  await assert.rejects(runPaced({ rate: 0, durationMs: 10, graceMs: 10 }, deps), /rate must be positive/);
});

const ANSWER = 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello';
const CHUNKED =
  'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n3\r\n, w\r\n0\r\nX-Trailer: 1\r\n\r\n';

test('HTTP/1.1 answers framed by Content-Length or chunked, however the bytes are split', () => {
  const stream = `${ANSWER}${CHUNKED}HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 503 Busy\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`;
  const expected = [
    { status: 200, close: false, bodyBytes: 5 },
    { status: 200, close: false, bodyBytes: 8 },
    { status: 204, close: false, bodyBytes: 0 },
    { status: 503, close: true, bodyBytes: 0 },
  ];
  // Whole, byte by byte, and in every two-piece split.
  assert.deepEqual(new Http1Reader().feed(Buffer.from(stream)), expected);
  const byByte = new Http1Reader();
  const got = [...Buffer.from(stream)].flatMap((b) => byByte.feed(Buffer.from([b])));
  assert.deepEqual(got, expected);
  for (let cut = 1; cut < stream.length; cut++) {
    const reader = new Http1Reader();
    const pieces = [
      ...reader.feed(Buffer.from(stream.slice(0, cut))),
      ...reader.feed(Buffer.from(stream.slice(cut))),
    ];
    assert.deepEqual(pieces, expected, `split at ${cut}`);
  }
});

test('an answer the reader cannot frame, or that is not HTTP, is an error', () => {
  assert.throws(
    () => new Http1Reader().feed(Buffer.from('HTTP/1.1 200 OK\r\n\r\nrest of the connection')),
    /neither/,
  );
  assert.throws(() => new Http1Reader().feed(Buffer.from('SSH-2.0-OpenSSH\r\n\r\n')), /not an HTTP/);
  assert.throws(
    () => new Http1Reader().feed(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')),
    /bad chunk size/,
  );
});
