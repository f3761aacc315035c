import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import {
  blastRadiusOf,
  blastRadiusProblems,
  chooseTargets,
  chosenCount,
  MAX_FIXED_PODS,
} from '../../src/operator/blast-radius.ts';
import type { EchoScenario } from '../../src/operator/echo-scenario.ts';
import type { Plan } from '../../src/operator/plan.ts';
import { planChanges } from '../../src/operator/plan-diff.ts';
import { specProblems } from '../../src/operator/scenario-spec.ts';
import { planNamespace } from './plan-namespace.ts';

const endpoints = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ key: `pod-${i}:8080`, podUid: `pod-${i}` }));
const uids = (list: ReadonlyArray<{ podUid: string }>) => list.map((e) => e.podUid).sort();

test('blast radius – how many pods each mode chooses', () => {
  assert.equal(chosenCount({}, 7), 7);
  assert.equal(chosenCount({ mode: 'all' }, 7), 7);
  assert.equal(chosenCount({ mode: 'one' }, 7), 1);
  assert.equal(chosenCount({ mode: 'one' }, 0), 0);
  assert.equal(chosenCount({ mode: 'fixed', value: 3 }, 7), 3);
  assert.equal(chosenCount({ mode: 'fixed', value: 30 }, 7), 7);
  assert.equal(chosenCount({ mode: 'fixed-percent', value: 50 }, 4), 2);
  // Rounded up: any percentage of a non-empty target is at least one pod.
  assert.equal(chosenCount({ mode: 'fixed-percent', value: 10 }, 3), 1);
  assert.equal(chosenCount({ mode: 'fixed-percent', value: 50 }, 5), 3);
  assert.equal(chosenCount({ mode: 'fixed-percent', value: 100 }, 5), 5);
  assert.equal(chosenCount({ mode: 'fixed-percent', value: 50 }, 0), 0);
});

test('blast radius – fixed-percent rounds up as ADR 0017 says, exactly, for every pod count and percentage', () => {
  for (let pods = 0; pods <= 200; pods++) {
    for (let percent = 1; percent <= 100; percent++) {
      const count = chosenCount({ mode: 'fixed-percent', value: percent }, pods);
      // The smallest whole count whose share is at least the percentage asked for.
      assert.ok(count * 100 >= pods * percent, `${percent}% of ${pods}: ${count} is too few`);
      assert.ok((count - 1) * 100 < pods * percent, `${percent}% of ${pods}: ${count} is too many`);
      if (pods > 0) assert.ok(count >= 1, `${percent}% of ${pods} chooses at least one pod`);
    }
  }
  // A fraction first would choose 8 here: 100 x 0.07 is 7.000000000000001 in floating point.
  assert.equal(chosenCount({ mode: 'fixed-percent', value: 7 }, 100), 7);
  assert.equal(chosenCount({ mode: 'fixed-percent', value: 29 }, 100), 29);
});

test('blast radius – the choice says how many and why, in words kubectl describe shows', () => {
  assert.deepEqual(blastRadiusOf({ mode: 'fixed-percent', value: 10 }, 3), {
    readyPods: 3,
    chosenPods: 1,
    reason: 'fixed-percent 10% of 3 ready pods is 0.3, rounded up to 1',
  });
  assert.equal(
    blastRadiusOf({ mode: 'fixed-percent', value: 50 }, 4).reason,
    'fixed-percent 50% of 4 ready pods is 2',
  );
  assert.equal(blastRadiusOf({ mode: 'one' }, 5).reason, 'one of 5 ready pods');
  assert.equal(
    blastRadiusOf({ mode: 'fixed', value: 2 }, 1).reason,
    'fixed 2 pods, more than the 1 ready pod: all 1',
  );
  assert.equal(blastRadiusOf({}, 4).reason, 'all 4 ready pods');
});

test('blast radius – minPods raises a percentage, maxPods caps it: "never more than one"', () => {
  // 50% of 3 is 1.5, rounded up to 2; never more than one.
  assert.deepEqual(blastRadiusOf({ mode: 'fixed-percent', value: 50, maxPods: 1 }, 3), {
    readyPods: 3,
    chosenPods: 1,
    reason: 'fixed-percent 50% of 3 ready pods is 1.5, rounded up to 2, capped at maxPods 1',
  });
  assert.deepEqual(blastRadiusOf({ maxPods: 1 }, 40), {
    readyPods: 40,
    chosenPods: 1,
    reason: 'all 40 ready pods, capped at maxPods 1',
  });
  assert.equal(chosenCount({ maxPods: 5 }, 3), 3, 'a cap above what is ready changes nothing');
  assert.deepEqual(blastRadiusOf({ mode: 'fixed-percent', value: 10, minPods: 3 }, 20), {
    readyPods: 20,
    chosenPods: 3,
    reason: 'fixed-percent 10% of 20 ready pods is 2, raised to minPods 3',
  });
  assert.deepEqual(blastRadiusOf({ mode: 'fixed-percent', value: 10, minPods: 3 }, 2), {
    readyPods: 2,
    chosenPods: 2,
    reason: 'fixed-percent 10% of 2 ready pods is 0.2, rounded up to 1, raised to minPods 3: only 2 ready',
  });
  assert.equal(chosenCount({ mode: 'fixed-percent', value: 90, minPods: 2, maxPods: 4 }, 10), 4);
  assert.equal(chosenCount({ mode: 'fixed-percent', value: 90, minPods: 2, maxPods: 4 }, 0), 0);
  // chooseTargets takes the bounded count, from the same ranking.
  const all = endpoints(10);
  const capped = uids(chooseTargets(all, 'es-1', { mode: 'fixed-percent', value: 50, maxPods: 2 }));
  const five = uids(chooseTargets(all, 'es-1', { mode: 'fixed-percent', value: 50 }));
  assert.equal(capped.length, 2);
  assert.ok(capped.every((uid) => five.includes(uid)));
  assert.equal(uids(chooseTargets(all, 'es-1', { maxPods: 1 })).length, 1);
});

test('blast radius – minPods and maxPods are checked: pod counts, only where they mean something, min not above max', () => {
  assert.deepEqual(blastRadiusProblems({ maxPods: 1 }), []);
  assert.deepEqual(blastRadiusProblems({ mode: 'all', maxPods: MAX_FIXED_PODS }), []);
  assert.deepEqual(blastRadiusProblems({ mode: 'fixed-percent', value: 10, minPods: 2, maxPods: 2 }), []);
  const cases: Array<[object, RegExp]> = [
    [{ mode: 'one', maxPods: 1 }, /spec\.target\.maxPods: only with mode all or fixed-percent, not one/],
    [
      { mode: 'fixed', value: 2, maxPods: 1 },
      /spec\.target\.maxPods: only with mode all or fixed-percent, not fixed/,
    ],
    [{ minPods: 1 }, /spec\.target\.minPods: only with mode fixed-percent, not all/],
    [
      { mode: 'fixed-percent', value: 10, maxPods: 0 },
      /spec\.target\.maxPods: a pod count, an integer from 1 to 10000, got 0/,
    ],
    [{ mode: 'fixed-percent', value: 10, minPods: 1.5 }, /spec\.target\.minPods: a pod count.*got 1\.5/],
    [
      { mode: 'fixed-percent', value: 10, minPods: 3, maxPods: 2 },
      /spec\.target\.minPods: must not be above maxPods, got minPods 3 and maxPods 2/,
    ],
  ];
  for (const [target, message] of cases) {
    const problems = blastRadiusProblems(target);
    assert.equal(problems.length, 1, `${JSON.stringify(target)}: ${problems.join('; ')}`);
    assert.match(problems[0]!, message);
  }
});

test('blast radius – the choice depends on the pods and the resource only, not on their order', () => {
  const all = endpoints(10);
  const chosen = uids(chooseTargets(all, 'es-1', { mode: 'fixed', value: 3 }));
  assert.equal(chosen.length, 3);
  assert.deepEqual(uids(chooseTargets([...all].reverse(), 'es-1', { mode: 'fixed', value: 3 })), chosen);
  // Another EchoScenario ranks the pods otherwise: over 20 of them, not all choose the same 3.
  const choices = new Set(
    Array.from({ length: 20 }, (_, i) =>
      uids(chooseTargets(all, `es-${i}`, { mode: 'fixed', value: 3 })).join(),
    ),
  );
  assert.ok(choices.size > 1);
});

test('blast radius – a pod that comes or goes moves at most one pod in or out of the choice', () => {
  const all = endpoints(10);
  const chosen = uids(chooseTargets(all, 'es-1', { mode: 'fixed', value: 4 }));
  const grown = uids(
    chooseTargets([...all, { key: 'new:8080', podUid: 'new' }], 'es-1', { mode: 'fixed', value: 4 }),
  );
  assert.ok(chosen.filter((uid) => grown.includes(uid)).length >= 3);
  // An unchosen pod going away changes nothing.
  const unchosen = all.find((e) => !chosen.includes(e.podUid))!;
  const shrunk = all.filter((e) => e !== unchosen);
  assert.deepEqual(uids(chooseTargets(shrunk, 'es-1', { mode: 'fixed', value: 4 })), chosen);
  // A chosen pod going away is replaced by one; the other three stay.
  const gone = all.filter((e) => e.podUid !== chosen[0]);
  const after = uids(chooseTargets(gone, 'es-1', { mode: 'fixed', value: 4 }));
  assert.equal(after.length, 4);
  assert.deepEqual(
    chosen.slice(1).filter((uid) => after.includes(uid)),
    chosen.slice(1),
  );
});

test('blast radius – mode and value are checked: value required, in range, and only where it means something', () => {
  assert.deepEqual(blastRadiusProblems({}), []);
  assert.deepEqual(blastRadiusProblems({ mode: 'one' }), []);
  assert.deepEqual(blastRadiusProblems({ mode: 'fixed', value: MAX_FIXED_PODS }), []);
  assert.deepEqual(blastRadiusProblems({ mode: 'fixed-percent', value: 100 }), []);
  const cases: Array<[object, RegExp]> = [
    [{ mode: 'some' }, /spec\.target\.mode: must be one of all, one, fixed, fixed-percent, got "some"/],
    [{ mode: 'fixed' }, /spec\.target\.value: required with mode fixed/],
    [{ mode: 'fixed-percent' }, /spec\.target\.value: required with mode fixed-percent/],
    [{ mode: 'fixed', value: 0 }, /a pod count, an integer from 1 to 10000, got 0/],
    [{ mode: 'fixed', value: MAX_FIXED_PODS + 1 }, /got 10001/],
    [{ mode: 'fixed-percent', value: 101 }, /a percentage, an integer from 1 to 100, got 101/],
    [{ mode: 'fixed-percent', value: 2.5 }, /got 2\.5/],
    [{ mode: 'fixed', value: '3' }, /got "3"/],
    [{ mode: 'one', value: 1 }, /spec\.target\.value: only with mode fixed or fixed-percent/],
    [{ value: 1 }, /only with mode fixed or fixed-percent/],
  ];
  for (const [target, message] of cases) {
    const problems = blastRadiusProblems(target);
    assert.equal(problems.length, 1, JSON.stringify(target));
    assert.match(problems[0]!, message);
  }
});

function pod(i: number): V1Pod {
  return {
    metadata: { name: `p${i}`, uid: `uid-${i}`, labels: { app: 'echo' } },
    spec: { containers: [{ name: 'echo', ports: [{ name: 'http', containerPort: 8080 }] }] },
    status: { phase: 'Running', podIP: `10.0.0.${i}`, conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

function es(name: string, target: object): EchoScenario {
  return {
    metadata: { name, uid: `es-${name}`, creationTimestamp: '2026-01-01T00:00:00Z' as unknown as Date },
    spec: { target, path: `/${name}`, responses: [{ status: 503 }] },
  };
}

test('blast radius – the plan pushes a fixed-percent EchoScenario to its chosen pods only; an invalid mode is Invalid', () => {
  const pods = [0, 1, 2, 3].map(pod);
  const selector = { selector: { matchLabels: { app: 'echo' } }, port: 'http' };
  const plan = planNamespace(
    [
      es('half', { ...selector, mode: 'fixed-percent', value: 50 }),
      es('bad', { ...selector, mode: 'fixed' }),
    ],
    pods,
    [],
    [],
  );
  const half = plan.scenarios.get('half');
  assert.equal(half?.kind, 'Active');
  const targeted = half.kind === 'Active' ? half.endpoints.map((e) => e.podUid).sort() : [];
  assert.equal(targeted.length, 2);
  assert.deepEqual([...plan.desired.values()].map((d) => d.endpoint.podUid).sort(), targeted);
  assert.deepEqual(
    uids(
      chooseTargets(
        pods.map((p) => ({ podUid: p.metadata!.uid! })),
        'es-half',
        { mode: 'fixed-percent', value: 50 },
      ),
    ),
    targeted,
  );
  const bad = plan.scenarios.get('bad');
  assert.equal(bad?.kind, 'Invalid');
  assert.match(bad.kind === 'Invalid' ? bad.message : '', /spec\.target\.value: required with mode fixed/);
  assert.match(specProblems(es('x', { ...selector, mode: 'all', value: 3 })) ?? '', /only with mode fixed/);
});

test('blast radius – a new count of ready pods is a change of the plan, though the same pod stays chosen', () => {
  const endpoint = { key: 'u0:8080', podName: 'p0', podUid: 'u0', ip: '10.0.0.1', port: 8080 };
  const planOf = (readyPods: number): Plan => ({
    scenarios: new Map([
      [
        'tenth',
        {
          kind: 'Active',
          endpoints: [endpoint],
          blastRadius: blastRadiusOf({ mode: 'fixed-percent', value: 10 }, readyPods),
        },
      ],
    ]),
    desired: new Map(),
    byPod: new Map(),
    stops: new Map([['tenth', '']]),
  });
  assert.deepEqual(planChanges(planOf(3), planOf(3)).scenarios, []);
  assert.deepEqual(planChanges(planOf(3), planOf(4)).scenarios, ['tenth']);
});
