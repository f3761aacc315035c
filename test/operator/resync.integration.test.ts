/**
 * Pods are re-checked, not only watched (issue #38 item 2), against the API double with real echo
 * servers as pods: a container restarted inside the same pod (same uid, same IP and port) comes
 * back with no scenarios, and no watch event says so. The resync period reads each pod's hash back
 * and re-pushes; a restart count that changes in the pod's status re-checks it at once.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { startEcho } from '../helpers/echo-server.ts';
import { quietFor } from '../helpers/runtime.ts';
import { CLUSTER, type Fixture, NEEDS_API_CONTROL, POD_IP, spec, startFixture, until } from './fixture.ts';

/** Generous: a loaded 2-core machine must not miss it. */
const REPUSH_BOUND_MS = 15_000;

function counter(text: string, line: string): number {
  const found = text.split('\n').find((l) => l.startsWith(line));
  return found === undefined ? 0 : Number(found.slice(line.length).trim());
}

/** The echo behind pod `name` restarted: the same port, a new process state, no scenarios. */
async function restartContainer(f: Fixture, name: string): Promise<void> {
  const old = f.echoes.get(name)!;
  await old.close();
  const echo = await startEcho({ HOST: POD_IP }, { port: old.port });
  f.echoes.set(name, echo);
  assert.deepEqual(await f.scenariosOf(name), [], 'a restarted container starts empty');
}

const holds = async (f: Fixture, name: string) => ((await f.scenariosOf(name)) as unknown[]).length === 1;

describe('operator resync', { skip: CLUSTER ? NEEDS_API_CONTROL : false }, () => {
  let f: Fixture;
  afterEach(() => f?.close());

  test('resync – a container restarted behind the same pod is re-pushed within the resync period', async () => {
    f = await startFixture(1);
    const operator = await f.startOperator({ resyncPeriodMs: 500 });
    await f.createScenario('flaky', spec('/flaky', 503));
    await until('echo-0 holds the scenario', () => holds(f, 'echo-0'));
    const successes = async () =>
      counter(await operator.registry.metrics(), 'echo_operator_pushes_total{result="success"}');
    const before = await successes();
    await restartContainer(f, 'echo-0');
    await until('echo-0 re-pushed by the resync', () => holds(f, 'echo-0'), REPUSH_BOUND_MS);
    await until('the re-push counted', async () => (await successes()) === before + 1);
    assert.equal((await fetch(`${f.echoes.get('echo-0')!.url}/flaky`)).status, 503);
  });

  test('resync – with a long period, a restart count that changes in the pod status re-pushes at once', async () => {
    f = await startFixture(1);
    await f.startOperator({ resyncPeriodMs: 3_600_000 });
    await f.createScenario('flaky', spec('/flaky', 503));
    await until('echo-0 holds the scenario', () => holds(f, 'echo-0'));
    await restartContainer(f, 'echo-0');
    // Nothing tells the operator yet: the pod stays empty (the resync is an hour away).
    await quietFor(500, 'no event, no re-push');
    assert.deepEqual(await f.scenariosOf('echo-0'), []);
    const pod = await f.core.readNamespacedPodStatus({ name: 'echo-0', namespace: f.namespace });
    const statuses = pod.status!.containerStatuses!.map((c) => ({ ...c, restartCount: c.restartCount + 1 }));
    await f.core.patchNamespacedPodStatus(
      { name: 'echo-0', namespace: f.namespace, body: { status: { containerStatuses: statuses } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await until('echo-0 re-pushed on its restart count', () => holds(f, 'echo-0'), REPUSH_BOUND_MS);
  });
});
