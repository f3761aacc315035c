/**
 * The experiment lifecycle end to end, against the API double (or the KUBECONFIG cluster): a short
 * `spec.duration` expires and clears the pods, `spec.suspend` clears and restores them, and each
 * transition leaves one Event on the EchoScenario (core v1, as `kubectl describe` lists them).
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { GROUP, PLURAL, VERSION } from '../../src/operator/echo-scenario.ts';
import type { Operator } from '../../src/operator/operator.ts';
import type { KubeObject } from '../helpers/kube-api.ts';
import { quietFor } from '../helpers/runtime.ts';
import { CLUSTER, deadPort, type Fixture, spec, startFixture, until } from './fixture.ts';

/** Generous: a loaded 2-core machine, or a real cluster. */
const WITHIN_MS = 20_000;
const PODS = ['echo-0', 'echo-1'];

async function paths(f: Fixture, pod: string): Promise<string> {
  return ((await f.scenariosOf(pod)) as Array<{ path: string }>).map((s) => s.path).join(',');
}

async function everyPodHolds(f: Fixture, expected: string): Promise<boolean> {
  for (const pod of PODS) if ((await paths(f, pod)) !== expected) return false;
  return true;
}

/** The reasons of the Events on an EchoScenario, oldest first. */
async function eventReasons(f: Fixture, name: string): Promise<string[]> {
  const list = await f.core.listNamespacedEvent({ namespace: f.namespace });
  return list.items
    .filter((e) => e.involvedObject.name === name && e.involvedObject.kind === 'EchoScenario')
    .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))
    .map((e) => e.reason ?? '');
}

interface RunStatus {
  startTime?: string;
  expiresAt?: string;
}

describe('operator experiment lifecycle', () => {
  let f: Fixture;
  afterEach(() => f?.close());

  test('experiment – a 2s duration expires within a few seconds, clears the pods and keeps the resource', async () => {
    f = await startFixture(2);
    await f.startOperator();
    await f.createScenario('short', { ...spec('/short'), duration: '2s' });
    await until(
      'Synced with startTime and expiresAt',
      async () => {
        const r = await f.readiness('short');
        return r.ready?.reason === 'Synced' && (r as RunStatus).expiresAt !== undefined;
      },
      WITHIN_MS,
    ).catch(async (error) => {
      // Already expired on a slow machine is fine too: the next wait says so.
      if ((await f.readiness('short')).ready?.reason !== 'Expired') throw error;
    });
    const started = (await f.readiness('short')) as RunStatus;
    assert.equal(
      new Date(started.expiresAt!).getTime() - new Date(started.startTime!).getTime(),
      2000,
      'expiresAt is startTime + 2s',
    );
    await until('Expired', async () => (await f.readiness('short')).ready?.reason === 'Expired', WITHIN_MS);
    const expired = await f.readiness('short');
    assert.equal(expired.ready?.status, 'False');
    assert.match(expired.ready?.message ?? '', /2s ran out/);
    await until('every pod cleared', () => everyPodHolds(f, ''), WITHIN_MS);
    // Expired stays expired (no new run without a spec change), and it settles: one status write
    // for the transition, then none (a stopped experiment's status once kept being rewritten).
    await until(
      'the status lists no pod as holding it',
      async () => unsynced(await objectOf(f, 'short')),
      WITHIN_MS,
    );
    const statusWrites = () => (CLUSTER ? 0 : (f.api.requests.get('PATCH echoscenarios/status') ?? 0));
    const settled = statusWrites();
    await quietFor(1500, 'expired: no new run, no status write');
    const later = await objectOf(f, 'short');
    assert.equal(statusWrites(), settled, 'no status write once expired (API double)');
    assert.equal((await f.readiness('short')).ready?.reason, 'Expired');
    assert.equal(await everyPodHolds(f, ''), true);
    assert.ok(unsynced(later), 'no pod is listed as holding an experiment that was taken off every pod');
    await until(
      'events Pushed then Expired',
      async () => (await eventReasons(f, 'short')).join(' ') === 'Pushed Expired',
      WITHIN_MS,
    );

    // A spec change starts a new run: pushed again, a fresh clock.
    await f.patchScenario('short', { spec: { duration: '1h' } });
    await until('pushed again', () => everyPodHolds(f, '/short'), WITHIN_MS);
    await until(
      'Synced again',
      async () => (await f.readiness('short')).ready?.reason === 'Synced',
      WITHIN_MS,
    );
    const again = (await f.readiness('short')) as RunStatus;
    assert.ok(new Date(again.startTime!).getTime() >= new Date(started.startTime!).getTime());
    assert.equal(new Date(again.expiresAt!).getTime() - new Date(again.startTime!).getTime(), 3_600_000);
  });

  test('experiment – suspend clears the pods and setting it back restores them; one Event per transition', async () => {
    f = await startFixture(2);
    await f.startOperator();
    await f.createScenario('pausable', spec('/pausable'));
    await until('pushed', () => everyPodHolds(f, '/pausable'), WITHIN_MS);
    await until('Synced', async () => (await f.readiness('pausable')).ready?.reason === 'Synced', WITHIN_MS);

    await f.patchScenario('pausable', { spec: { suspend: true } });
    await until('cleared', () => everyPodHolds(f, ''), WITHIN_MS);
    await until(
      'Suspended',
      async () => (await f.readiness('pausable')).ready?.reason === 'Suspended',
      WITHIN_MS,
    );
    const suspended = (await f.readiness('pausable')) as RunStatus;
    assert.equal(suspended.startTime, undefined, 'no run while suspended');

    await f.patchScenario('pausable', { spec: { suspend: false } });
    await until('restored', () => everyPodHolds(f, '/pausable'), WITHIN_MS);
    await until('Synced', async () => (await f.readiness('pausable')).ready?.reason === 'Synced', WITHIN_MS);

    // A new pod re-syncs (2/2 → 3/3) without a transition: no new Event.
    await f.addEchoPod('echo-9');
    await until('on the new pod', async () => (await paths(f, 'echo-9')) === '/pausable', WITHIN_MS);
    await until('Synced 3/3', async () => (await f.readiness('pausable')).syncedEndpoints === 3, WITHIN_MS);
    await until(
      'events',
      async () => (await eventReasons(f, 'pausable')).join(' ') === 'Pushed Suspended Pushed',
      WITHIN_MS,
    );
    const events = await f.core.listNamespacedEvent({ namespace: f.namespace });
    const suspendedEvent = events.items.find((e) => e.reason === 'Suspended');
    assert.equal(suspendedEvent?.type, 'Normal');
    assert.equal(suspendedEvent?.involvedObject.apiVersion, 'echo-chaos.dev/v1alpha1');
    assert.ok(
      suspendedEvent?.involvedObject.uid,
      'the event names the object uid (kubectl describe matches on it)',
    );
    assert.equal(suspendedEvent?.source?.component, 'echo-chaos-operator');
  });

  test('experiment – a missing Service is one TargetNotFound Event, however often it is reconciled', async () => {
    f = await startFixture(1);
    const operator = await f.startOperator();
    await f.createScenario('lost', spec('/lost', 503, { service: 'nowhere', port: 'http' }));
    await until(
      'TargetNotFound',
      async () => (await f.readiness('lost')).ready?.reason === 'TargetNotFound',
      WITHIN_MS,
    );
    // Reconciled again and again (a label, no spec change, reconciles it alone; so would a resync).
    for (const touched of ['1', '2', '3']) {
      const before = await reconciles(operator, 'echoscenario');
      await f.patchScenario('lost', { metadata: { labels: { touched } } });
      await until(
        `lost reconciled after label ${touched}`,
        async () => (await reconciles(operator, 'echoscenario')) > before,
        WITHIN_MS,
      );
    }
    assert.equal((await f.readiness('lost')).ready?.reason, 'TargetNotFound');
    assert.deepEqual(await eventReasons(f, 'lost'), ['TargetNotFound']);
  });

  test('experiment – a failing pod and a conflict each tell their Warning Event once', async () => {
    f = await startFixture(1);
    const operator = await f.startOperator({ retryBaseDelayMs: 100, retryMaxDelayMs: 1000 });
    await f.addPod('echo-dead', await deadPort());
    await f.createScenario('first', spec('/same'));
    await until(
      'PushFailed',
      async () => (await f.readiness('first')).ready?.reason === 'PushFailed',
      WITHIN_MS,
    );
    await f.createScenario('second', spec('/same', 500));
    await until(
      'Conflict',
      async () => (await f.readiness('second')).ready?.reason === 'Conflict',
      WITHIN_MS,
    );
    // Retries tell nothing new.
    const failed = await failures(operator);
    await until(
      'three retries of the dead pod',
      async () => (await failures(operator)) >= failed + 3,
      WITHIN_MS,
    );
    await f.deletePod('echo-dead');
    await until('Synced', async () => (await f.readiness('first')).ready?.reason === 'Synced', WITHIN_MS);
    await until(
      'events',
      async () =>
        // (a Pushed before the PushFailed when the cache had not seen the dead pod yet)
        /^(Pushed )?PushFailed Pushed$/.test((await eventReasons(f, 'first')).join(' ')) &&
        (await eventReasons(f, 'second')).join(' ') === 'Conflict',
      WITHIN_MS,
    );
    const events = await f.core.listNamespacedEvent({ namespace: f.namespace });
    assert.equal(events.items.find((e) => e.reason === 'PushFailed')?.type, 'Warning');
    assert.match(
      events.items.find((e) => e.reason === 'Conflict')?.message ?? '',
      /older EchoScenario first/,
    );
  });
});

/** Whether an EchoScenario's status lists no endpoint as holding it. */
function unsynced(es: KubeObject): boolean {
  const endpoints = (es.status as { endpoints?: Array<{ synced: boolean }> } | undefined)?.endpoints ?? [];
  return endpoints.every((e) => !e.synced);
}

/** The sum of a counter's samples whose labels include `labels` (e.g. `kind="pod"`). */
async function counted(operator: Operator, name: string, labels: string): Promise<number> {
  let sum = 0;
  for (const m of (await operator.registry.metrics()).matchAll(
    new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`, 'gm'),
  ))
    if (m[1]!.split(',').includes(labels)) sum += Number(m[2]);
  return sum;
}

/** Reconciles of a kind of work-queue key (`pod`, `echoscenario`), whatever their result. */
function reconciles(operator: Operator, kind: string): Promise<number> {
  return counted(operator, 'echo_operator_reconciles_total', `kind="${kind}"`);
}

/** Pushes that failed. */
function failures(operator: Operator): Promise<number> {
  return counted(operator, 'echo_operator_pushes_total', 'result="failure"');
}

/** The EchoScenario as the API server holds it. */
async function objectOf(fixture: Fixture, name: string): Promise<KubeObject> {
  return (await fixture.custom.getNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: fixture.namespace,
    plural: PLURAL,
    name,
  })) as KubeObject;
}
