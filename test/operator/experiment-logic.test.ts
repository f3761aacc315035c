/**
 * The experiment lifecycle's pure logic with an injected clock: `spec.duration`, `suspend` and an
 * abort (lifecycle.ts), their place in the plan and the status, the Event a status write tells,
 * abortWhen's comparison, and the work queue's requeue-after timer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CoreV1Api, KubeConfig, type V1Pod, type V1Service } from '@kubernetes/client-node';
import { evaluate } from '../../src/operator/abort.ts';
import type { EchoScenario } from '../../src/operator/echo-scenario.ts';
import { EventRecorder, transitionOf } from '../../src/operator/events.ts';
import { lifecycleOf, lifecycleProblems } from '../../src/operator/lifecycle.ts';
import { specProblems } from '../../src/operator/scenario-spec.ts';
import { buildStatus } from '../../src/operator/status.ts';
import { WorkQueue } from '../../src/operator/work-queue.ts';
import { startKubeApi } from '../helpers/kube-api.ts';
import { planNamespace } from './plan-namespace.ts';

const T0 = new Date('2026-11-24T12:00:00Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

function es(
  spec: Record<string, unknown> = {},
  status?: EchoScenario['status'],
  generation = 1,
): EchoScenario {
  return {
    metadata: { name: 'exp', namespace: 'default', generation, creationTimestamp: T0 },
    spec: { target: { service: 'echo', port: 'http' }, path: '/x', responses: [{ status: 503 }], ...spec },
    ...(status === undefined ? {} : { status }),
  };
}

test('lifecycle – no duration: runs, started now, no expiry', () => {
  const l = lifecycleOf(es(), at(5));
  assert.equal(l.stopped, undefined);
  assert.equal(l.startTime, '2026-11-24T12:00:05Z');
  assert.equal(l.expiresAt, undefined);
  assert.equal(l.expiresInMs, undefined);
});

test('lifecycle – duration counts from the startTime of this generation and expires after it', () => {
  const running = es({ duration: '10m' }, { observedGeneration: 1, startTime: '2026-11-24T12:00:00Z' });
  const before = lifecycleOf(running, at(599));
  assert.equal(before.stopped, undefined);
  assert.equal(before.expiresAt, '2026-11-24T12:10:00Z');
  assert.equal(before.expiresInMs, 1000);
  const after = lifecycleOf(running, at(600));
  assert.equal(after.stopped, 'Expired');
  assert.equal(after.startTime, '2026-11-24T12:00:00Z');
  assert.match(after.message, /10m ran out at 2026-11-24T12:10:00Z/);
});

test('lifecycle – a spec change (new generation) starts a new run with a fresh clock', () => {
  const changed = es({ duration: '10m' }, { observedGeneration: 1, startTime: '2026-11-24T12:00:00Z' }, 2);
  const l = lifecycleOf(changed, at(900));
  assert.equal(l.stopped, undefined);
  assert.equal(l.startTime, '2026-11-24T12:15:00Z');
  assert.equal(l.expiresAt, '2026-11-24T12:25:00Z');
});

test('lifecycle – suspend stops it and has no clock; un-suspending (a new generation) starts afresh', () => {
  const suspended = lifecycleOf(
    es({ suspend: true, duration: '1m' }, { observedGeneration: 1, startTime: '2026-11-24T12:00:00Z' }, 2),
    at(30),
  );
  assert.equal(suspended.stopped, 'Suspended');
  assert.equal(suspended.startTime, undefined);
  assert.equal(suspended.expiresAt, undefined);
  const resumed = lifecycleOf(es({ suspend: false, duration: '1m' }, { observedGeneration: 2 }, 3), at(120));
  assert.equal(resumed.stopped, undefined);
  assert.equal(resumed.expiresAt, '2026-11-24T12:03:00Z');
});

test('lifecycle – an Aborted condition holds for its generation only; a fresh abort is taken as given', () => {
  const condition = {
    type: 'Ready',
    status: 'False' as const,
    reason: 'Aborted',
    message: 'held',
    observedGeneration: 1,
  };
  const status = { observedGeneration: 1, startTime: '2026-11-24T12:00:00Z', conditions: [condition] };
  assert.equal(lifecycleOf(es({}, status), at(1)).stopped, 'Aborted');
  assert.equal(lifecycleOf(es({}, status, 2), at(1)).stopped, undefined);
  const fresh = lifecycleOf(es(), at(1), { message: 'query held' });
  assert.equal(fresh.stopped, 'Aborted');
  assert.equal(fresh.message, 'query held');
});

test('lifecycle – invalid duration, suspend and abortWhen are named one by one', () => {
  assert.deepEqual(lifecycleProblems({ duration: '10m', suspend: false }), []);
  const problems = lifecycleProblems({
    duration: 'soon',
    suspend: 'yes',
    abortWhen: { query: '', threshold: 'x', comparison: '!=', for: '2d' },
  });
  assert.equal(problems.length, 6, problems.join('\n'));
  assert.match(problems[0]!, /^spec\.duration: .*"soon"/);
  assert.match(lifecycleProblems({ duration: '0s' })[0]!, /above 0/);
  assert.match(specProblems(es({ duration: 'soon' })) ?? '', /spec\.duration/);
  // A scenario's own window is checked by the scenario schema, named where it is.
  assert.match(specProblems(es({ activeFor: '0s' })) ?? '', /spec\.activeFor: activeFor must be/);
  assert.match(specProblems(es({ times: 0 })) ?? '', /spec\.times: times must be an integer/);
  assert.match(specProblems(es({ order: 'shuffle' })) ?? '', /spec\.order: order must be/);
});

const pod: V1Pod = {
  metadata: { name: 'p', uid: 'uid-p', labels: { app: 'echo' } },
  spec: { containers: [{ name: 'echo', ports: [{ name: 'http', containerPort: 8080 }] }] },
  status: { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] },
};
const selector = { selector: { matchLabels: { app: 'echo' } }, port: 'http' };
const services: V1Service[] = [];

test('plan – a stopped EchoScenario is left out of every array, and its endpoints are pushed theirs without it', () => {
  const stopped = es({ target: selector });
  const plan = planNamespace([stopped], [pod], services, [], () => ({
    reason: 'Expired',
    message: 'ran out',
  }));
  const state = plan.scenarios.get('exp');
  assert.equal(state?.kind, 'Stopped');
  assert.deepEqual(
    [...plan.desired.values()].map((d) => [d.endpoint.podName, d.scenarios.length]),
    [['p', 0]],
  );
  const running = planNamespace([stopped], [pod], services, []);
  assert.equal(running.scenarios.get('exp')?.kind, 'Active');
  assert.equal([...running.desired.values()][0]?.scenarios.length, 1);
});

test('status – a stopped EchoScenario is Ready False with its reason, keeping startTime and expiresAt', () => {
  const e = es({ target: selector, duration: '1m' });
  const plan = planNamespace([e], [pod], services, [], () => ({ reason: 'Expired', message: 'ran out' }));
  const state = plan.scenarios.get('exp')!;
  assert.equal(state.kind, 'Stopped');
  if (state.kind !== 'Stopped') return;
  const status = buildStatus({
    echoScenario: e,
    state,
    desired: plan.desired,
    pushes: { holds: () => true, failure: () => undefined, proof: () => undefined },
    now: at(61),
    lifecycle: { startTime: '2026-11-24T12:00:00Z', expiresAt: '2026-11-24T12:01:00Z' },
  });
  assert.equal(status?.conditions?.[0]?.reason, 'Expired');
  assert.equal(status?.conditions?.[0]?.status, 'False');
  assert.equal(status?.startTime, '2026-11-24T12:00:00Z');
  assert.equal(status?.expiresAt, '2026-11-24T12:01:00Z');
  assert.equal(status?.syncedEndpoints, 0);
  assert.equal(status?.totalEndpoints, 1);
});

test('events – only a transition (a new reason, or a new generation) tells an Event', () => {
  const ready = (reason: string, generation = 1) => ({
    observedGeneration: generation,
    conditions: [{ type: 'Ready', status: 'True' as const, reason, message: `${reason}!` }],
  });
  assert.deepEqual(transitionOf(undefined, ready('Synced')), {
    reason: 'Pushed',
    type: 'Normal',
    message: 'Synced!',
  });
  assert.equal(transitionOf(ready('Synced'), { ...ready('Synced'), syncedEndpoints: 3 }), undefined);
  assert.equal(transitionOf(ready('Synced'), ready('Synced', 2))?.reason, 'Pushed');
  assert.equal(transitionOf(ready('Synced'), ready('Expired'))?.reason, 'Expired');
  assert.equal(transitionOf(ready('Synced'), ready('PushFailed'))?.type, 'Warning');
  assert.equal(transitionOf(ready('Synced'), ready('Aborted'))?.type, 'Warning');
});

test('abort – any sample of a vector (or the scalar) compared with the threshold', () => {
  const vector = (...values: string[]) => ({
    resultType: 'vector',
    result: values.map((v) => ({ metric: {}, value: [0, v] })),
  });
  assert.deepEqual(evaluate(vector('1', '7'), '>', 5), { holds: true, value: 7 });
  assert.deepEqual(evaluate(vector('1', '2'), '>', 5), { holds: false, value: 1 });
  assert.equal(evaluate(vector('5'), '>=', 5).holds, true);
  assert.equal(evaluate(vector('0.01'), '<', 0.99).holds, true);
  assert.equal(evaluate(vector('NaN'), '<=', 1).holds, false);
  assert.equal(evaluate(vector(), '>', 0).holds, false);
  assert.equal(evaluate({ resultType: 'scalar', result: [0, '3'] }, '>', 2).holds, true);
});

test('work queue – addAfter keeps one timer per key (the sooner), cancelAfter and shutDown clear it', async () => {
  const queue = new WorkQueue();
  queue.addAfter('a', 60_000);
  queue.addAfter('a', 10);
  queue.addAfter('a', 30_000);
  queue.addAfter('b', 60_000);
  assert.equal(queue.delayed, 2);
  queue.cancelAfter('b');
  assert.equal(queue.delayed, 1);
  assert.equal(await queue.get(), 'a');
  assert.equal(queue.delayed, 0);
  queue.addAfter('c', 60_000);
  queue.shutDown();
  assert.equal(queue.delayed, 0);
});

test('events – against the API double: one Event per transition, at most 10 a minute per object', async () => {
  const api = await startKubeApi();
  try {
    const kc = new KubeConfig();
    kc.loadFromOptions(api.kubeConfigOptions());
    const core = kc.makeApiClient(CoreV1Api);
    let clock = T0;
    const silent = { debug() {}, warn() {} };
    const recorder = new EventRecorder({ core, logger: silent, instance: 'operator-0', now: () => clock });
    const target = { ...es(), apiVersion: 'echo-chaos.dev/v1alpha1', kind: 'EchoScenario' };
    target.metadata = { ...target.metadata, uid: 'uid-exp' };
    const pushed = {
      type: 'Normal' as const,
      reason: 'Pushed',
      message: 'scenario pushed to 2 of 2 endpoints',
    };
    await recorder.recordTransition(target, 1, pushed);
    await recorder.recordTransition(target, 1, pushed);
    await recorder.recordTransition(target, 2, pushed);
    const reasons = async () =>
      (await core.listNamespacedEvent({ namespace: 'default' })).items.map((e) => e.reason);
    assert.deepEqual(await reasons(), ['Pushed', 'Pushed']);
    const [event] = (await core.listNamespacedEvent({ namespace: 'default' })).items;
    assert.equal(event?.involvedObject.uid, 'uid-exp');
    assert.equal(event?.type, 'Normal');
    assert.equal(event?.count, 1);
    for (let i = 0; i < 20; i++) await recorder.record(target, 'Warning', 'PushFailed', `try ${i}`);
    assert.equal((await reasons()).length, 10, 'capped at 10 a minute');
    clock = at(61);
    await recorder.record(target, 'Warning', 'PushFailed', 'a minute later');
    assert.equal((await reasons()).length, 11);
  } finally {
    await api.close();
  }
});
