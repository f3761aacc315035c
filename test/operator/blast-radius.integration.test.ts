/**
 * Percentages say what they do (issue #38), against the API double (or the KUBECONFIG cluster) with
 * real echo pods: `fixed-percent` 10 of 3 pods pushes to 1 pod (rounded up, ADR 0017), and the status
 * (`status.blastRadius`, the Ready message) and the `Pushed` Event say how many and why; `maxPods: 1`
 * caps a larger percentage at one pod; back to every pod, `status.blastRadius` is removed; `minPods`
 * above `maxPods` never gets in (the CRD's CEL rule; the operator's own check is blast-radius.test.ts).
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { KubeObject } from '../helpers/kube-api.ts';
import { type Fixture, spec, startFixture, until } from './fixture.ts';

const PODS = ['echo-0', 'echo-1', 'echo-2'];

interface BlastRadiusStatus {
  readyPods: number;
  chosenPods: number;
  reason: string;
}

async function blastRadius(f: Fixture, name: string): Promise<BlastRadiusStatus | undefined> {
  const obj = (await f.custom.getNamespacedCustomObject({
    group: 'echo-chaos.dev',
    version: 'v1alpha1',
    namespace: f.namespace,
    plural: 'echoscenarios',
    name,
  })) as KubeObject & { status?: { blastRadius?: BlastRadiusStatus } };
  return obj.status?.blastRadius;
}

async function holding(f: Fixture, path: string): Promise<string[]> {
  const held: string[] = [];
  for (const pod of PODS) {
    const list = (await f.scenariosOf(pod)) as Array<{ path: string }>;
    if (list.some((s) => s.path === path)) held.push(pod);
  }
  return held;
}

async function pushedEvents(f: Fixture, name: string): Promise<string[]> {
  const list = await f.core.listNamespacedEvent({ namespace: f.namespace });
  return list.items
    .filter((e) => e.involvedObject.name === name && e.reason === 'Pushed')
    .map((e) => e.message ?? '');
}

describe('operator blast radius says what it chose', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  test('blast radius – fixed-percent 10 of 3 pods is 1 pod, maxPods caps 50% at one, and status and Event say why', async () => {
    f = await startFixture(PODS.length);
    await f.startOperator();
    const target = { service: 'echo', port: 'http', mode: 'fixed-percent', value: 10 };
    await f.createScenario('tenth', spec('/tenth', 503, target));
    await until('Synced 1/1', async () => {
      const r = await f!.readiness('tenth');
      return r.ready?.reason === 'Synced' && r.totalEndpoints === 1;
    });
    assert.equal((await holding(f, '/tenth')).length, 1, 'one pod of three holds it');
    const reason = 'fixed-percent 10% of 3 ready pods is 0.3, rounded up to 1';
    assert.deepEqual(await blastRadius(f, 'tenth'), { readyPods: 3, chosenPods: 1, reason });
    const ready = (await f.readiness('tenth')).ready!;
    assert.equal(ready.message, `scenario pushed to 1 of 1 endpoints; blast radius: ${reason}`);
    await until('a Pushed Event naming the choice', async () =>
      (await pushedEvents(f!, 'tenth')).some((m) => m.endsWith(`blast radius: ${reason}`)),
    );

    // A fourth pod: still one pod chosen (10% of 4 is 0.4), and the status says of how many.
    await f.addEchoPod('echo-3');
    await until(
      'status.blastRadius counts 4 ready pods',
      async () => (await blastRadius(f!, 'tenth'))?.readyPods === 4,
    );
    assert.deepEqual(await blastRadius(f, 'tenth'), {
      readyPods: 4,
      chosenPods: 1,
      reason: 'fixed-percent 10% of 4 ready pods is 0.4, rounded up to 1',
    });
    await f.deletePod('echo-3');
    await until('back to 3 ready pods', async () => (await blastRadius(f!, 'tenth'))?.readyPods === 3);

    // 50% of 3 rounds up to 2; "never more than one".
    await f.patchScenario('tenth', { spec: { target: { ...target, value: 50, maxPods: 1 } } });
    await until('generation 2 Synced', async () => {
      const r = await f!.readiness('tenth');
      return r.observedGeneration === 2 && r.ready?.reason === 'Synced';
    });
    assert.equal((await f.readiness('tenth')).totalEndpoints, 1);
    await until('one pod holds it', async () => (await holding(f!, '/tenth')).length === 1);
    assert.deepEqual(await blastRadius(f, 'tenth'), {
      readyPods: 3,
      chosenPods: 1,
      reason: 'fixed-percent 50% of 3 ready pods is 1.5, rounded up to 2, capped at maxPods 1',
    });

    // Every pod again: nothing to explain, and the field is gone (not left from the last run).
    await f.patchScenario('tenth', {
      spec: { target: { service: 'echo', port: 'http', mode: null, value: null, maxPods: null } },
    });
    await until('generation 3 Synced 3/3', async () => {
      const r = await f!.readiness('tenth');
      return r.observedGeneration === 3 && r.ready?.reason === 'Synced' && r.totalEndpoints === 3;
    });
    assert.equal(await blastRadius(f, 'tenth'), undefined);
    assert.deepEqual(await holding(f, '/tenth'), PODS);
    assert.equal((await f.readiness('tenth')).ready?.message, 'scenario pushed to 3 of 3 endpoints');
  });

  test('blast radius – minPods above maxPods is refused at admission by the CRD’s CEL rule, with its message', async () => {
    f = await startFixture(1);
    const bounds = { mode: 'fixed-percent', value: 10, minPods: 3, maxPods: 2 };
    await assert.rejects(
      f.createScenario('bounded', spec('/bounded', 503, { service: 'echo', port: 'http', ...bounds })),
      (error: { code?: number; body?: unknown }) => {
        assert.equal(error.code, 422);
        assert.match(String(error.body), /spec\.target: .*minPods must not be above maxPods/);
        return true;
      },
    );
  });
});
