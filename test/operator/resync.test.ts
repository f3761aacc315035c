import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import {
  Rechecks,
  RestartCounts,
  ResyncTimer,
  restartCountOf,
  resyncDelayMs,
  type SetTimer,
} from '../../src/operator/resync.ts';

/** A timer the test fires by hand: what is scheduled, and when. */
function manualTimer() {
  const pending: Array<{ fn: () => void; ms: number; cancelled: boolean }> = [];
  const setTimer: SetTimer = (fn, ms) => {
    const entry = { fn, ms, cancelled: false };
    pending.push(entry);
    return () => {
      entry.cancelled = true;
    };
  };
  const fire = () => {
    const next = pending.find((e) => !e.cancelled);
    assert.ok(next, 'a resync is scheduled');
    next.cancelled = true;
    next.fn();
  };
  const live = () => pending.filter((e) => !e.cancelled).map((e) => e.ms);
  return { setTimer, fire, live };
}

const pod = (uid: string, ...restarts: number[]): V1Pod => ({
  metadata: { uid },
  status: {
    containerStatuses: restarts.map((restartCount, i) => ({ name: `c${i}`, restartCount }) as never),
  },
});

test('resync – each wait is the period plus up to 10%, never less than the period', () => {
  assert.equal(
    resyncDelayMs(300_000, () => 0),
    300_000,
  );
  assert.equal(
    resyncDelayMs(300_000, () => 0.5),
    315_000,
  );
  assert.equal(
    resyncDelayMs(300_000, () => 0.999_999),
    330_000,
  );
  assert.equal(
    resyncDelayMs(1000, () => 0.25),
    1025,
  );
});

test('resync – the timer resyncs every jittered period, each wait drawn anew, until stopped', () => {
  const timer = manualTimer();
  const draws = [0, 0.5, 1 - 1e-9];
  let resyncs = 0;
  const resync = new ResyncTimer({
    periodMs: 10_000,
    random: () => draws.shift() ?? 0,
    setTimer: timer.setTimer,
    onResync: () => {
      resyncs++;
    },
  });
  assert.deepEqual(timer.live(), [], 'nothing before start');
  resync.start();
  resync.start(); // once only
  assert.deepEqual(timer.live(), [10_000]);
  timer.fire();
  assert.equal(resyncs, 1);
  assert.deepEqual(timer.live(), [10_500]);
  timer.fire();
  assert.equal(resyncs, 2);
  assert.deepEqual(timer.live(), [11_000]);
  resync.stop();
  assert.equal(resync.running, false);
  assert.deepEqual(timer.live(), [], 'stopped: nothing scheduled');
  resync.start();
  assert.deepEqual(timer.live(), [10_000]);
});

test('resync – a restart count that changes in an update is seen once; the first sight of a pod is not a restart', () => {
  const counts = new RestartCounts();
  assert.equal(restartCountOf(pod('a', 1, 2)), 3);
  assert.equal(restartCountOf({ metadata: { uid: 'x' } }), 0);
  assert.equal(counts.changed(pod('a', 0, 0)), false, 'first sight');
  assert.equal(counts.changed(pod('a', 0, 0)), false, 'an update that restarted nothing');
  assert.equal(counts.changed(pod('a', 0, 1)), true, 'the second container restarted');
  assert.equal(counts.changed(pod('a', 0, 1)), false, 'seen already');
  assert.equal(counts.changed(pod('b', 4)), false, 'another pod: first sight');
  counts.forget('a');
  assert.equal(counts.changed(pod('a', 0, 5)), false, 'forgotten (deleted): a new first sight');
  assert.equal(counts.changed({ metadata: {} }), false, 'no uid');
});

test('resync – a re-check is taken once', () => {
  const rechecks = new Rechecks();
  rechecks.add('pod:default/a');
  assert.equal(rechecks.take('pod:default/a'), true);
  assert.equal(rechecks.take('pod:default/a'), false);
  assert.equal(rechecks.take('pod:default/b'), false);
});
