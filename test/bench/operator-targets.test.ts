/** bench/operator-targets.ts: issue #16's verdicts from measured phases. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type MeasuredPhase, operatorTargets } from '../../bench/operator-targets.ts';

function phases(
  pods: number,
  scenarios: number,
  seconds: Array<number | undefined>,
  rss: number,
): MeasuredPhase[] {
  return ['create', 'update', 'delete'].map((phase, i) => ({
    pods,
    scenarios,
    phase,
    convergedS: seconds[i],
    pushes: pods,
    statusWrites: phase === 'delete' ? 0 : scenarios,
    peakRssMb: rss,
  }));
}

const verdicts = (all: MeasuredPhase[]) =>
  Object.fromEntries(operatorTargets(all).map((t) => [t.target, t.verdict]));

test('operator targets – every one met', () => {
  const all = [...phases(200, 300, [1.2, 0.8, 0.5], 120), ...phases(500, 1000, [3.4, 4.8, 3.4], 140)];
  const v = verdicts(all);
  assert.deepEqual(Object.values(v), ['met', 'met', 'met', 'met', 'met', 'met']);
  const growth = operatorTargets(all).find((t) => t.target.startsWith('time grows'))!;
  assert.equal(
    growth.measured,
    '200 x 300 → 500 x 1,000: 8.3× the work, create 2.8×, update 6.0×, delete 6.8× the time',
  );
});

test('operator targets – slow, unconverged, superlinear, heavy and chatty runs are named', () => {
  const all = [...phases(200, 300, [1, 6, 0.5], 160), ...phases(500, 1000, [undefined, 12, 9], 259)];
  all[1] = { ...all[1]!, pushes: 201 };
  all[4] = { ...all[4]!, statusWrites: 1001 };
  const v = verdicts(all);
  assert.equal(v['200 x 300: create, update and delete each converge within 5 s'], 'not met: 1.00 s over');
  assert.equal(
    v['500 x 1,000: create, update and delete each converge within 15 s'],
    'not met: create did not converge',
  );
  assert.equal(v['time grows no faster than linearly in pods x EchoScenarios'], 'not met: 18.0× the time');
  assert.equal(
    v['operator RSS under 150 MB at 500 x 1,000'],
    'not met: 109 MB over; the smallest size already peaks at 160 MB (see below)',
  );
  assert.equal(v['at most one push per pod per phase'], 'not met: 200 x 300 update 201 for 200');
  assert.equal(
    v['at most one status write per EchoScenario per phase'],
    'not met: 500 x 1,000 update 1001 for 1000',
  );
});

test('operator targets – sizes not run are not measured', () => {
  const v = verdicts(phases(10, 10, [0.2, 0.1, 0.1], 160));
  assert.equal(v['200 x 300: create, update and delete each converge within 5 s'], 'not measured');
  assert.equal(v['operator RSS under 150 MB at 500 x 1,000'], 'not measured');
  assert.equal(v['time grows no faster than linearly in pods x EchoScenarios'], 'not measured (one size)');
  assert.equal(v['at most one push per pod per phase'], 'met');
});
