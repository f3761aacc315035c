/**
 * The operator enqueues what an event touched, not the whole namespace (issue #16): counted through
 * its own metrics (reconciles by kind, pushes) and what the echo pods hold.
 */
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Counter, Histogram } from 'prom-client';
import type { Operator } from '../../src/operator/operator.ts';
import { until as waitUntil } from '../helpers/runtime.ts';
import { type Fixture, spec, startFixture, TIMEOUT_MS, until } from './fixture.ts';

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const a = { selector: { matchLabels: { app: 'a' } }, port: 'http' };
const b = { selector: { matchLabels: { app: 'b' } }, port: 'http' };

let f: Fixture;
afterEach(() => f?.close());

/** Reconciles by kind (the reconcile histogram's count) and pushes, as the operator counts them. */
async function counts(operator: Operator) {
  const histogram = operator.registry.getSingleMetric(
    'echo_operator_reconcile_duration_seconds',
  ) as Histogram;
  const pushes = operator.registry.getSingleMetric('echo_operator_pushes_total') as Counter;
  const count = (kind: string) =>
    histogram
      .get()
      .then(
        (m) =>
          m.values.find((v) => v.metricName?.endsWith('_count') && v.labels['kind'] === kind)?.value ?? 0,
      );
  return {
    pod: await count('pod'),
    echoscenario: await count('echoscenario'),
    pushes: (await pushes.get()).values.reduce((n, v) => n + v.value, 0),
  };
}

async function paths(pod: string): Promise<string> {
  return ((await f.scenariosOf(pod)) as Array<{ path: string }>).map((s) => s.path).join(',');
}

/** Waits until the counts stay the same for a while (two reads 150 ms apart agree): the operator is idle. */
async function settled(operator: Operator) {
  let last = '';
  await waitUntil(
    'no more reconciles',
    async () => {
      const now = JSON.stringify(await counts(operator));
      const quiet = now === last;
      last = now;
      return quiet;
    },
    TIMEOUT_MS * 5,
    150,
  );
  return counts(operator);
}

async function twoTargets() {
  f = await startFixture(0);
  for (const name of ['a-0', 'a-1']) await f.addEchoPod(name, { app: 'a' });
  for (const name of ['b-0', 'b-1']) await f.addEchoPod(name, { app: 'b' });
  const operator = await f.startOperator();
  await f.createScenario('sa', spec('/a', 503, a));
  await f.createScenario('sb', spec('/b', 503, b));
  for (const [name, total] of [
    ['sa', 2],
    ['sb', 2],
  ] as const)
    await until(`${name} Synced ${total}/${total}`, async () => {
      const r = await f.readiness(name);
      return r.ready?.reason === 'Synced' && r.totalEndpoints === total;
    });
  return operator;
}

test('operator – a pod event that changes nothing planned reconciles that pod only: no EchoScenario, no push', async () => {
  const operator = await twoTargets();
  const before = await settled(operator);
  await f.core.patchNamespacedPod(
    { name: 'b-0', namespace: f.namespace, body: { metadata: { labels: { app: 'b', extra: 'yes' } } } },
    merge,
  );
  await until('b-0 reconciled', async () => (await counts(operator)).pod > before.pod);
  const after = await settled(operator);
  assert.equal(after.pod - before.pod, 1, 'one pod reconcile: b-0');
  assert.equal(after.echoscenario, before.echoscenario, 'no EchoScenario reconciled');
  assert.equal(after.pushes, before.pushes, 'nothing pushed');
});

test('operator – an EchoScenario event that changes no spec (a label) reconciles it only, no pod', async () => {
  const operator = await twoTargets();
  const before = await settled(operator);
  await f.custom.patchNamespacedCustomObject(
    {
      group: 'echo-chaos.dev',
      version: 'v1alpha1',
      namespace: f.namespace,
      plural: 'echoscenarios',
      name: 'sa',
      body: { metadata: { labels: { touched: 'yes' } } },
    },
    merge,
  );
  await until('sa reconciled', async () => (await counts(operator)).echoscenario > before.echoscenario);
  const after = await settled(operator);
  assert.equal(after.echoscenario - before.echoscenario, 1, 'one EchoScenario reconcile: sa');
  assert.equal(after.pod, before.pod, 'no pod reconciled');
});

test('operator – a label change moving a pod out of a selector clears it; the other target is not pushed to', async () => {
  const operator = await twoTargets();
  assert.equal(await paths('a-1'), '/a');
  const before = await settled(operator);
  await f.core.patchNamespacedPod(
    { name: 'a-1', namespace: f.namespace, body: { metadata: { labels: { app: 'elsewhere' } } } },
    merge,
  );
  await until('a-1 cleared', async () => (await paths('a-1')) === '');
  await until('sa Synced 1/1', async () => {
    const r = await f.readiness('sa');
    return r.ready?.reason === 'Synced' && r.totalEndpoints === 1;
  });
  const after = await settled(operator);
  assert.equal(after.pushes - before.pushes, 1, 'one push: the clearing of a-1');
  assert.equal(await paths('a-0'), '/a');
  for (const pod of ['b-0', 'b-1']) assert.equal(await paths(pod), '/b', pod);
  assert.equal((await f.readiness('sb')).totalEndpoints, 2);
  // Back into the selector: it gets the array again.
  await f.core.patchNamespacedPod(
    { name: 'a-1', namespace: f.namespace, body: { metadata: { labels: { app: 'a' } } } },
    merge,
  );
  await until('a-1 holds /a again', async () => (await paths('a-1')) === '/a');
});

for (const [quietMs, most] of [
  [300, 3],
  [0, undefined],
] as const)
  test(`operator – a burst of updates to many EchoScenarios is pushed ${most === undefined ? 'more than once per pod without a quiet period' : 'once per pod'} (pushQuietMs ${quietMs})`, async () => {
    f = await startFixture(3);
    // 300 ms: far more than the gaps between the chunks of watch events of the burst here.
    const operator = await f.startOperator({ pushQuietMs: quietMs });
    const names = Array.from({ length: 20 }, (_, i) => `burst-${i}`);
    for (const name of names) await f.createScenario(name, spec(`/${name}`, 503));
    const holdAll = (status: number) => async () => {
      for (const pod of ['echo-0', 'echo-1', 'echo-2']) {
        const held = (await f.scenariosOf(pod)) as Array<{ responses: Array<{ status: number }> }>;
        if (held.length !== names.length || held.some((s) => s.responses[0]?.status !== status)) return false;
      }
      return true;
    };
    await until('every pod holds all 20', holdAll(503), TIMEOUT_MS * 5);
    const before = await settled(operator);
    await Promise.all(names.map((name) => f.patchScenario(name, { spec: spec(`/${name}`, 500) })));
    await until('every pod holds all 20 updated', holdAll(500), TIMEOUT_MS * 5);
    const after = await settled(operator);
    if (most !== undefined) assert.equal(after.pushes - before.pushes, most, 'one push per pod');
    // Without it, the pods pushed between two chunks of the burst are pushed again (what the test above
    // would catch without the quiet period).
    else assert.ok(after.pushes - before.pushes > 3, `${after.pushes - before.pushes} pushes`);
  });
