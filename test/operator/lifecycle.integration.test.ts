/**
 * The EchoScenario lifecycle as a user of the API sees it: Services resolved through their
 * EndpointSlices (hand-made ones included), and the `echo-chaos.dev/cleanup` finalizer that clears
 * pods of a deleted EchoScenario, even one deleted while no operator ran. Everything goes through
 * client-node (`f.kc`) and the pods' own `GET /scenario`, never the double's internals.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import {
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1Endpoint,
} from '@kubernetes/client-node';
import { FINALIZER, GROUP, PLURAL, VERSION } from '../../src/operator/echo-scenario.ts';
import { quietFor } from '../helpers/runtime.ts';
import { CLUSTER, type Fixture, NEEDS_API_CONTROL, NS, spec, startFixture, until } from './fixture.ts';

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

interface EchoScenarioObject {
  metadata: { name: string; finalizers?: string[]; deletionTimestamp?: string };
  status?: {
    syncedEndpoints?: number;
    totalEndpoints?: number;
    conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
  };
}

/** client-node clients of the fixture's cluster, and what a user reads through them. */
function user(f: Fixture) {
  // The fixture's namespace where it names one (a fresh one against a real cluster), else NS.
  const namespace = (f as { namespace?: string }).namespace ?? NS;
  const custom = f.kc.makeApiClient(CustomObjectsApi);
  const core = f.kc.makeApiClient(CoreV1Api);
  const discovery = f.kc.makeApiClient(DiscoveryV1Api);
  const base = { group: GROUP, version: VERSION, namespace, plural: PLURAL };
  return {
    namespace,
    core,
    discovery,
    /** The EchoScenario as the API holds it, `undefined` once it is gone (404). */
    async get(name: string): Promise<EchoScenarioObject | undefined> {
      try {
        return (await custom.getNamespacedCustomObject({ ...base, name })) as EchoScenarioObject;
      } catch (error) {
        if ((error as { code?: number }).code === 404) return undefined;
        throw error;
      }
    },
    async remove(name: string): Promise<void> {
      await custom.deleteNamespacedCustomObject({ ...base, name });
    },
    /** The Ready reason and endpoint counts, e.g. `Synced 2/2`. */
    async readiness(name: string): Promise<string> {
      const status = (await this.get(name))?.status;
      const reason = status?.conditions?.find((c) => c.type === 'Ready')?.reason;
      return `${reason} ${status?.syncedEndpoints}/${status?.totalEndpoints}`;
    },
  };
}

/** The paths a pod holds, sorted, comma-separated ('' when it holds nothing). */
async function paths(f: Fixture, pod: string): Promise<string> {
  return ((await f.scenariosOf(pod)) as Array<{ path: string }>)
    .map((s) => s.path)
    .sort()
    .join(',');
}

async function pathsOf(f: Fixture, pods: string[]): Promise<Record<string, string>> {
  return Object.fromEntries(await Promise.all(pods.map(async (p) => [p, await paths(f, p)])));
}

async function hold(f: Fixture, expected: Record<string, string>): Promise<boolean> {
  const actual = await pathsOf(f, Object.keys(expected));
  return Object.entries(expected).every(([pod, p]) => actual[pod] === p);
}

const ECHO_PODS = ['echo-0', 'echo-1', 'echo-2', 'echo-3', 'echo-4'];

describe('operator lifecycle', () => {
  let f: Fixture;
  afterEach(() => f?.close());

  test('lifecycle – a Service without a selector reaches the pods of its hand-made EndpointSlice', async () => {
    f = await startFixture();
    const u = user(f);
    await f.startOperator();
    await u.core.createNamespacedService({
      namespace: u.namespace,
      body: { metadata: { name: 'manual' }, spec: { ports: [{ name: 'http', port: 80 }] } },
    });
    const endpointOf = async (name: string): Promise<V1Endpoint> => {
      const pod = await u.core.readNamespacedPod({ name, namespace: u.namespace });
      return {
        addresses: [pod.status!.podIP!],
        conditions: { ready: true },
        targetRef: { kind: 'Pod', name, namespace: u.namespace, uid: pod.metadata!.uid! },
      };
    };
    const endpoints = [await endpointOf('echo-1'), await endpointOf('echo-3')];
    // Each echo server here listens on its own port, so the slice names none: the operator takes
    // the pods' `http` container port.
    await u.discovery.createNamespacedEndpointSlice({
      namespace: u.namespace,
      body: {
        metadata: { name: 'manual-1', labels: { 'kubernetes.io/service-name': 'manual' } },
        addressType: 'IPv4',
        endpoints,
        ports: [],
      },
    });
    await f.createScenario('manual', spec('/manual', 503, { service: 'manual', port: 'http' }));
    await until('/manual on echo-1 and echo-3 only', () =>
      hold(f, { 'echo-0': '', 'echo-1': '/manual', 'echo-2': '', 'echo-3': '/manual', 'echo-4': '' }),
    );
    await until('Synced 2/2', async () => (await u.readiness('manual')) === 'Synced 2/2');

    // echo-3 drops out of the slice's ready endpoints: it is cleared, and the status counts one.
    endpoints[1]!.conditions = { ready: false };
    await u.discovery.patchNamespacedEndpointSlice(
      { name: 'manual-1', namespace: u.namespace, body: { endpoints } },
      merge,
    );
    await until('Synced 1/1', async () => (await u.readiness('manual')) === 'Synced 1/1');
    await until('echo-3 cleared, echo-1 kept', () => hold(f, { 'echo-1': '/manual', 'echo-3': '' }));
    assert.deepEqual(await f.scenariosOf('echo-3'), []);
  });

  test('lifecycle – a finalizer is added; deleting the EchoScenario clears its pods, then it is gone', async () => {
    f = await startFixture();
    const u = user(f);
    await f.startOperator();
    await f.createScenario('slow', spec('/slow'));
    await until('/slow on every pod', () => hold(f, Object.fromEntries(ECHO_PODS.map((p) => [p, '/slow']))));
    await until('the finalizer', async () =>
      ((await u.get('slow'))?.metadata.finalizers ?? []).includes(FINALIZER),
    );
    assert.deepEqual((await u.get('slow'))?.metadata.finalizers, ['echo-chaos.dev/cleanup']);

    await u.remove('slow');
    await until('every pod cleared', () => hold(f, Object.fromEntries(ECHO_PODS.map((p) => [p, '']))));
    await until('the EchoScenario gone', async () => (await u.get('slow')) === undefined);
    for (const pod of ECHO_PODS) assert.deepEqual(await f.scenariosOf(pod), [], pod);
  });

  test('lifecycle – nothing is pushed before the EchoScenario carries the finalizer', async (t) => {
    if (CLUSTER) return t.skip(`${NEEDS_API_CONTROL}: refusing the operator's finalizer patch`);
    f = await startFixture();
    const u = user(f);
    f.api.refuse((request) => (request === 'PATCH echoscenarios' ? 403 : undefined));
    await f.startOperator();
    await f.createScenario('guarded', spec('/guarded'));
    // Retried with backoff (50, then 100 ms): by the third try, the pods' keys queued with the first
    // have long had their turn, and would have pushed had the refusal not held them.
    await until(
      'the refused finalizer patch tried three times',
      () => (f.api.requests.get('PATCH echoscenarios') ?? 0) >= 3,
    );
    assert.deepEqual(await pathsOf(f, ECHO_PODS), Object.fromEntries(ECHO_PODS.map((p) => [p, ''])));
    assert.equal((await u.get('guarded'))?.metadata.finalizers, undefined);

    f.api.refuse(undefined);
    await until('/guarded on every pod once the finalizer is on', () =>
      hold(f, Object.fromEntries(ECHO_PODS.map((p) => [p, '/guarded']))),
    );
    assert.deepEqual((await u.get('guarded'))?.metadata.finalizers, [FINALIZER]);
  });

  test('lifecycle – an EchoScenario deleted while no operator runs is cleared by the next one', async () => {
    f = await startFixture();
    const u = user(f);
    await f.addEchoPod('side-0', { app: 'side' });
    const first = await f.startOperator();
    await f.createScenario('keep', spec('/keep'));
    await f.createScenario('gone', spec('/gone'));
    await f.createScenario(
      'side',
      spec('/side', 503, { selector: { matchLabels: { app: 'side' } }, port: 'http' }),
    );
    const before = { ...Object.fromEntries(ECHO_PODS.map((p) => [p, '/gone,/keep'])), 'side-0': '/side' };
    await until('every pod holds its scenarios', () => hold(f, before));
    await until('every finalizer', async () =>
      (await Promise.all(['keep', 'gone', 'side'].map((n) => u.get(n)))).every((es) =>
        (es?.metadata.finalizers ?? []).includes(FINALIZER),
      ),
    );

    await first.stop();
    await u.remove('gone');
    await u.remove('side');
    // Nobody clears them now: both stay, marked for deletion, and the pods still hold them.
    for (const name of ['gone', 'side']) {
      const es = await u.get(name);
      assert.ok(es?.metadata.deletionTimestamp !== undefined, `${name} is marked for deletion`);
    }
    await quietFor(200, 'no operator runs: nothing clears the pods');
    assert.ok(await hold(f, before), 'no operator ran, so the pods still hold them');

    await f.startOperator();
    await until('the pods that held them cleared, /keep kept', () =>
      hold(f, { ...Object.fromEntries(ECHO_PODS.map((p) => [p, '/keep'])), 'side-0': '' }),
    );
    await until(
      'both EchoScenarios gone',
      async () => (await u.get('gone')) === undefined && (await u.get('side')) === undefined,
    );
    assert.deepEqual(await f.scenariosOf('side-0'), []);
    assert.equal(await u.readiness('keep'), 'Synced 5/5');
  });

  test('lifecycle – an EchoScenario whose target has no pods can be deleted', async () => {
    f = await startFixture(1);
    const u = user(f);
    await f.startOperator();
    await f.createScenario(
      'nobody',
      spec('/nobody', 503, { selector: { matchLabels: { app: 'nobody' } }, port: 'http' }),
    );
    await f.createScenario('lost', spec('/lost', 503, { service: 'missing', port: 'http' }));
    for (const name of ['nobody', 'lost']) {
      await until(`${name} TargetNotFound, with the finalizer`, async () => {
        const es = await u.get(name);
        return (
          (es?.metadata.finalizers ?? []).includes(FINALIZER) &&
          es?.status?.conditions?.[0]?.reason === 'TargetNotFound'
        );
      });
    }
    await u.remove('nobody');
    await u.remove('lost');
    await until(
      'both gone',
      async () => (await u.get('nobody')) === undefined && (await u.get('lost')) === undefined,
    );
    assert.deepEqual(await f.scenariosOf('echo-0'), []);
  });
});
