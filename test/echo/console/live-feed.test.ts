/**
 * The console's live feed (issue #37): it watches history only while a console is connected, makes
 * each row once, and bounds what a slow console holds (dropped and counted, for it alone).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LiveFeed } from '../../../src/echo/console/live-feed.ts';
import { completeEntry, History } from '../../../src/echo/history.ts';
import { maskedEntry, maskedPath } from '../../../src/echo/history-secrets.ts';

function request(history: History, path: string, headers: Record<string, string> = {}) {
  const entry = history.record({
    requestId: `r-${path}-${history.nextSeq}`,
    method: 'GET',
    url: path,
    headers,
    body: undefined,
    remoteAddr: '127.0.0.1',
    protocol: 'HTTP/1.1',
  });
  assert.ok(entry);
  return entry;
}

test('live feed – watches history only from the first console to the last: none open costs nothing', () => {
  const history = new History(10, 1024);
  const feed = new LiveFeed(history);
  assert.equal(history.completionWatchers.size, 0);
  const a = feed.subscribe(() => {});
  const b = feed.subscribe(() => {});
  assert.equal(history.completionWatchers.size, 1, 'one watcher for every console');
  a.close();
  assert.equal(history.completionWatchers.size, 1);
  b.close();
  b.close();
  assert.equal(history.completionWatchers.size, 0);
  assert.equal(feed.subscribers, 0);
});

test('live feed – a finished request is one row for each console, with its method, path, status, duration, faults and session', () => {
  const history = new History(10, 1024);
  const feed = new LiveFeed(history);
  let told = 0;
  const a = feed.subscribe(() => told++);
  const b = feed.subscribe(() => {});
  const entry = request(history, '/pay?x=1', { 'x-echo-session': 'alice' });
  assert.equal(a.queued, 0, 'a request in flight is not a row yet');
  entry.faults = [{ kind: 'error', control: 'X-Echo-Error', source: 'header', value: 503 }];
  completeEntry(entry, 503, 12.4);
  const [row] = a.take(10);
  assert.deepEqual(b.take(10), [row]);
  assert.equal(told, 1);
  assert.deepEqual(
    { ...row, timeMs: 0 },
    {
      id: entry.id,
      seq: 0,
      timeMs: 0,
      method: 'GET',
      path: '/pay',
      status: 503,
      durationMs: 12,
      faults: [{ kind: 'error', control: 'X-Echo-Error', source: 'header', value: 503 }],
      session: 'alice',
      protocol: 'HTTP/1.1',
    },
  );
});

test('live feed – a row shows the path as history shows it (masked)', () => {
  const history = new History(10, 1024, { view: maskedEntry, pathView: maskedPath });
  const feed = new LiveFeed(history);
  const sub = feed.subscribe(() => {});
  completeEntry(request(history, '/users/ann@example.com'), 200, 1);
  const [row] = sub.take(1);
  assert.ok(row);
  assert.doesNotMatch(row.path, /ann@example\.com/);
});

test('live feed – a console that does not keep up holds at most its bound: the rest are dropped and counted, for it alone', () => {
  const history = new History(100, 1024);
  const feed = new LiveFeed(history, 5);
  const slow = feed.subscribe(() => {});
  const fast = feed.subscribe(() => {});
  for (let n = 0; n < 8; n++) {
    completeEntry(request(history, `/n${n}`), 200, 1);
    fast.take(100);
  }
  assert.equal(slow.queued, 5);
  assert.equal(slow.dropped, 3);
  assert.deepEqual(
    slow.take(100).map((r) => r.path),
    ['/n0', '/n1', '/n2', '/n3', '/n4'],
  );
  assert.equal(fast.dropped, 0);
  completeEntry(request(history, '/later'), 200, 1);
  assert.deepEqual(
    slow.take(1).map((r) => r.path),
    ['/later'],
    'room again once taken',
  );
});

test('live feed – recent() gives the latest finished requests history holds, oldest first, none in flight', () => {
  const history = new History(4, 1024);
  const feed = new LiveFeed(history);
  for (let n = 0; n < 6; n++) completeEntry(request(history, `/n${n}`), 200, 1);
  request(history, '/in-flight');
  assert.deepEqual(
    feed.recent(10).map((r) => r.path),
    ['/n3', '/n4', '/n5'],
  );
  assert.deepEqual(
    feed.recent(2).map((r) => r.path),
    ['/n5'],
  );
});
