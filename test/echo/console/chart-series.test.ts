/**
 * The console's charts at their source (issue #37): a point a second of the requests that finished
 * in it, made only while a console is subscribed, kept for a fixed window.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AppliedFault } from '../../../src/echo/applied.ts';
import type { ChartPoint } from '../../../src/echo/console/chart-point.ts';
import { bucketValue, ChartSeries, latencyBucket } from '../../../src/echo/console/chart-series.ts';
import { completeEntry, History } from '../../../src/echo/history.ts';

function finish(history: History, status: number, ms: number, faults: readonly AppliedFault[] = []): void {
  const entry = history.record({
    requestId: `r-${history.nextSeq}`,
    method: 'GET',
    url: '/x',
    headers: {},
    body: undefined,
    remoteAddr: '127.0.0.1',
    protocol: 'HTTP/1.1',
  });
  assert.ok(entry);
  entry.faults = faults;
  completeEntry(entry, status, ms);
}

/** A series on a fake clock whose ticks the test makes. */
function series(history: History, windowSeconds = 300) {
  let now = 1_000_000_000;
  let ticking = 0;
  const charts = new ChartSeries(history, {
    now: () => now,
    every: () => {
      ticking++;
      return () => ticking--;
    },
    windowSeconds,
  });
  return {
    charts,
    ticking: () => ticking,
    advance(ms: number) {
      now += ms;
      charts.tick();
    },
  };
}

test('chart series – watches history and ticks only from the first console to the last: none open costs nothing', () => {
  const history = new History(10, 1024);
  const { charts, ticking } = series(history);
  assert.equal(history.completionWatchers.size, 0);
  assert.equal(charts.active, false);
  const leaveA = charts.subscribe(() => {});
  const leaveB = charts.subscribe(() => {});
  assert.equal(history.completionWatchers.size, 1);
  assert.equal(ticking(), 1, 'one clock for every console');
  leaveA();
  leaveA();
  assert.equal(history.completionWatchers.size, 1);
  leaveB();
  assert.equal(history.completionWatchers.size, 0);
  assert.equal(ticking(), 0);
  assert.equal(charts.active, false);
});

test('chart series – a point says the second’s rate, p50 and p99, status classes and faulted requests', () => {
  const history = new History(1000, 1024);
  const { charts, advance } = series(history);
  const got: ChartPoint[] = [];
  charts.subscribe((p) => got.push(p));
  const fault: AppliedFault = { kind: 'error', control: 'X-Echo-Error', source: 'header', value: 503 };
  for (let i = 1; i <= 98; i++) finish(history, 200, i % 10);
  finish(history, 503, 40, [fault]);
  finish(history, 404, 1000);
  advance(1000);
  assert.equal(got.length, 1);
  const [point] = got;
  assert.equal(point?.requests, 100);
  assert.equal(point?.rps, 100);
  assert.equal(point?.p50, 5);
  assert.equal(point?.p99, 40);
  assert.deepEqual(point?.status, [0, 98, 0, 1, 1]);
  assert.equal(point?.faulted, 1);
  advance(2000);
  assert.deepEqual(
    { ...got[1], t: 0 },
    { t: 0, requests: 0, rps: 0, p50: null, p99: null, status: [0, 0, 0, 0, 0], faulted: 0 },
  );
  assert.deepEqual(charts.points(), got);
});

test('chart series – keeps a fixed window of points; a console opened later gets them', () => {
  const history = new History(10, 1024);
  const { charts, advance } = series(history, 5);
  const leave = charts.subscribe(() => {});
  for (let i = 0; i < 20; i++) advance(1000);
  assert.equal(charts.points().length, 5);
  leave();
  assert.equal(charts.points().length, 5, 'kept while nobody watches');
  finish(history, 200, 1);
  charts.subscribe(() => {});
  advance(1000);
  const points = charts.points();
  assert.equal(points.length, 5);
  assert.equal(points.at(-1)?.requests, 0, 'a request while nobody watched is not counted');
});

test('chart series – latency buckets: exact below 64 ms, within 3% above, bounded for any duration', () => {
  for (let ms = 0; ms < 64; ms++) assert.equal(bucketValue(latencyBucket(ms)), ms);
  for (const ms of [64, 65, 100, 999, 1000, 12_345, 60_000, 3_600_000, 2 ** 31 - 1]) {
    const value = bucketValue(latencyBucket(ms));
    assert.ok(Math.abs(value - ms) / ms <= 0.032, `${ms} → ${value}`);
  }
  assert.ok(latencyBucket(Number.MAX_SAFE_INTEGER) < 864);
  assert.equal(latencyBucket(-5), 0);
});
