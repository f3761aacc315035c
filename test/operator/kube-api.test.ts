import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  Watch,
} from '@kubernetes/client-node';
import { type KubeApi, startKubeApi } from '../helpers/kube-api.ts';
import { until } from '../helpers/runtime.ts';

const GROUP = 'echo-chaos.dev';
const VERSION = 'v1alpha1';
const PLURAL = 'echoscenarios';
const CRUD = { group: GROUP, version: VERSION, namespace: 'crud', plural: PLURAL };

function scenario(name: string, path = '/a'): object {
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'EchoScenario',
    metadata: { name },
    spec: { target: { service: 'echo', port: 'http' }, path, responses: [{ status: 503 }] },
  };
}

interface Event {
  type: string;
  object: { metadata?: { name?: string; resourceVersion?: string }; code?: number };
}

/** Opens a watch with the real client-node `Watch`; resolves its events and end as they come. */
async function openWatch(kc: KubeConfig, path: string, query: Record<string, string>) {
  const events: Event[] = [];
  let ended: (err: unknown) => void = () => {};
  const done = new Promise<unknown>((resolve) => {
    ended = resolve;
  });
  await new Watch(kc).watch(
    path,
    query,
    (type, object) => events.push({ type, object }),
    (err) => ended(err),
  );
  return { events, done };
}

describe('kube-api double', () => {
  let api: KubeApi;
  let kc: KubeConfig;
  let custom: CustomObjectsApi;

  before(async () => {
    api = await startKubeApi({ bookmarkIntervalMs: 50 });
    kc = new KubeConfig();
    kc.loadFromOptions(api.kubeConfigOptions());
    custom = kc.makeApiClient(CustomObjectsApi);
  });
  after(() => api.close());

  test('kube-api double – create, get, list with resourceVersion, 409 on a second create', async () => {
    const created = await custom.createNamespacedCustomObject({ ...CRUD, body: scenario('one') });
    assert.equal(created.metadata.generation, 1);
    assert.match(created.metadata.uid, /^[0-9a-f-]{36}$/);
    const got = await custom.getNamespacedCustomObject({ ...CRUD, name: 'one' });
    assert.equal(got.metadata.resourceVersion, created.metadata.resourceVersion);
    const list = await custom.listNamespacedCustomObject({ ...CRUD });
    assert.equal(list.kind, 'EchoScenarioList');
    assert.equal(list.items.length, 1);
    assert.ok(Number(list.metadata.resourceVersion) >= Number(created.metadata.resourceVersion));
    await assert.rejects(
      custom.createNamespacedCustomObject({ ...CRUD, body: scenario('one') }),
      (err: { code?: number }) => err.code === 409,
    );
  });

  test('kube-api double – an invalid EchoScenario is a 422 Status listing the causes', async () => {
    const bad = scenario('bad') as { spec: Record<string, unknown> };
    bad.spec['responses'] = [{ status: 700 }];
    bad.spec['path'] = 'no-slash';
    await assert.rejects(
      custom.createNamespacedCustomObject({ ...CRUD, body: bad }),
      (err: { code?: number; body?: string }) => {
        assert.equal(err.code, 422);
        const body = JSON.parse(String(err.body));
        assert.equal(body.kind, 'Status');
        assert.equal(body.reason, 'Invalid');
        const fields = body.details.causes.map((c: { field: string }) => c.field);
        assert.ok(fields.includes('spec.path'), fields.join());
        assert.ok(fields.includes('spec.responses.0.status'), fields.join());
        return true;
      },
    );
  });

  test('kube-api double – spec changes bump generation; the status subresource does not', async () => {
    const base = { group: GROUP, version: VERSION, namespace: 'gen', plural: PLURAL };
    await custom.createNamespacedCustomObject({ ...base, body: scenario('g') });
    const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const patched = await custom.patchNamespacedCustomObject(
      { ...base, name: 'g', body: { spec: { path: '/b' }, status: { observedGeneration: 99 } } },
      merge,
    );
    assert.equal(patched.metadata.generation, 2);
    assert.equal(patched.status, undefined, 'status is ignored on the main resource');
    const status = await custom.patchNamespacedCustomObjectStatus(
      { ...base, name: 'g', body: { status: { observedGeneration: 2 }, spec: { path: '/c' } } },
      merge,
    );
    assert.equal(status.metadata.generation, 2);
    assert.equal(status.spec.path, '/b', 'spec is ignored on /status');
    assert.deepEqual(status.status, { observedGeneration: 2 });
    // A stale resourceVersion on update is a 409.
    await assert.rejects(
      custom.replaceNamespacedCustomObject({
        ...base,
        name: 'g',
        body: { ...scenario('g'), metadata: { name: 'g', resourceVersion: '1' } },
      }),
      (err: { code?: number }) => err.code === 409,
    );
    // Only merge patches are understood; a JSON patch is a 415.
    const jsonPatch = await fetch(`${api.url}/apis/${GROUP}/${VERSION}/namespaces/gen/${PLURAL}/g/status`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json-patch+json' },
      body: '[]',
    });
    assert.equal(jsonPatch.status, 415);
    await custom.deleteNamespacedCustomObject({ ...base, name: 'g' });
    await assert.rejects(
      custom.getNamespacedCustomObject({ ...base, name: 'g' }),
      (err: { code?: number }) => err.code === 404,
    );
  });

  test('kube-api double – watch replays from a resourceVersion, sends bookmarks, and 410 when too old', async () => {
    const core = kc.makeApiClient(CoreV1Api);
    const pod = (name: string) => ({ metadata: { name, labels: { app: 'w' } }, spec: { containers: [] } });
    const first = await core.createNamespacedPod({ namespace: 'watch', body: pod('p1') });
    const watch = await openWatch(kc, '/api/v1/namespaces/watch/pods', {
      resourceVersion: first.metadata!.resourceVersion!,
      allowWatchBookmarks: 'true',
      labelSelector: 'app=w',
    });
    await core.createNamespacedPod({ namespace: 'watch', body: pod('p2') });
    await core.deleteNamespacedPod({ namespace: 'watch', name: 'p1' });
    await until(
      'a bookmark and two pod events',
      () => watch.events.some((e) => e.type === 'BOOKMARK') && watch.events.length >= 3,
    );
    const kinds = watch.events
      .filter((e) => e.type !== 'BOOKMARK')
      .map((e) => `${e.type} ${e.object.metadata?.name}`);
    assert.deepEqual(kinds, ['ADDED p2', 'DELETED p1']);

    assert.equal(api.expireHistory(), 1);
    const err = await watch.done;
    assert.equal(err, null, 'a 410 ends the stream cleanly');
    assert.equal(watch.events.at(-1)?.type, 'ERROR');
    assert.equal(watch.events.at(-1)?.object.code, 410);

    const stale = await openWatch(kc, '/api/v1/namespaces/watch/pods', {
      resourceVersion: first.metadata!.resourceVersion!,
    });
    await stale.done;
    assert.equal(stale.events[0]?.type, 'ERROR');
    assert.equal(stale.events[0]?.object.code, 410);

    const list = await core.listNamespacedPod({ namespace: 'watch' });
    const fresh = await openWatch(kc, '/api/v1/namespaces/watch/pods', {
      resourceVersion: list.metadata!.resourceVersion!,
    });
    await core.createNamespacedPod({ namespace: 'watch', body: pod('p3') });
    await until('one event on the fresh watch', () => fresh.events.length === 1);
    assert.equal(fresh.events[0]?.type, 'ADDED');
    assert.equal(api.dropWatches(), 1);
    const dropped = await fresh.done;
    assert.ok(dropped !== null, 'a dropped connection ends the watch with an error');
  });

  test('kube-api double – services, endpointslices and leases round-trip', async () => {
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedService({
      namespace: 'misc',
      body: { metadata: { name: 'echo' }, spec: { selector: { app: 'echo' }, ports: [{ port: 80 }] } },
    });
    const svc = await core.readNamespacedService({ namespace: 'misc', name: 'echo' });
    assert.deepEqual(svc.spec?.selector, { app: 'echo' });
    const leases = kc.makeApiClient(CoordinationV1Api);
    const lease = await leases.createNamespacedLease({
      namespace: 'misc',
      body: { metadata: { name: 'l' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 1 } },
    });
    lease.spec!.holderIdentity = 'b';
    const replaced = await leases.replaceNamespacedLease({ namespace: 'misc', name: 'l', body: lease });
    assert.equal(replaced.spec?.holderIdentity, 'b');
    await assert.rejects(
      leases.replaceNamespacedLease({ namespace: 'misc', name: 'l', body: lease }),
      (err: { code?: number }) => err.code === 409,
      'a stale lease update conflicts',
    );
    const res = await fetch(`${api.url}/apis/discovery.k8s.io/v1/namespaces/misc/endpointslices`);
    assert.equal(((await res.json()) as { kind: string }).kind, 'EndpointSliceList');
  });
});
