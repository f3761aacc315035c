/**
 * The operator against the API double, or against the `KUBECONFIG` cluster (see fixture.ts); tests that
 * need control over the API server itself are skipped in cluster mode.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { createOperatorServer } from '../../src/operator/server.ts';
import { quietFor } from '../helpers/runtime.ts';
import {
  CLUSTER,
  deadPort,
  type Fixture,
  NEEDS_API_CONTROL,
  spec,
  startFixture,
  TIMEOUT_MS,
  until,
} from './fixture.ts';

const PODS = ['echo-0', 'echo-1', 'echo-2', 'echo-3', 'echo-4'];

/**
 * The paths each pod holds, as one sorted string per pod. (Their order on a pod is by creation
 * time, which the API keeps to the second, then by name; these tests create several in a second.)
 */
async function pathsOnAll(f: Fixture, pods = PODS): Promise<string[]> {
  return Promise.all(
    pods.map(async (p) =>
      ((await f.scenariosOf(p)) as Array<{ path: string }>)
        .map((s) => s.path)
        .sort()
        .join(','),
    ),
  );
}

async function allHold(f: Fixture, paths: string, pods = PODS): Promise<boolean> {
  return (await pathsOnAll(f, pods)).every((p) => p === paths);
}

function counter(text: string, line: string): number {
  const found = text.split('\n').find((l) => l.startsWith(line));
  return found === undefined ? 0 : Number(found.slice(line.length).trim());
}

describe(`operator against ${CLUSTER ? 'the KUBECONFIG cluster' : 'the API double'}`, () => {
  let f: Fixture;
  afterEach(() => f?.close());

  test('operator – create, update and delete converge on all five pods', async () => {
    f = await startFixture();
    await f.startOperator();
    await f.createScenario('slow', spec('/slow'));
    await until('/slow on every pod', () => allHold(f, '/slow'));
    await until('Synced 5/5', async () => (await f.readiness('slow')).ready?.reason === 'Synced');
    const synced = await f.readiness('slow');
    assert.equal(synced.ready?.status, 'True');
    assert.equal(synced.observedGeneration, 1);
    assert.equal(synced.syncedEndpoints, 5);
    assert.equal(synced.totalEndpoints, 5);
    assert.ok(synced.lastSyncTime !== undefined);

    await f.createScenario('broken', spec('/broken', 500));
    await until('both on every pod', () => allHold(f, '/broken,/slow'));

    await f.patchScenario('slow', { spec: { responses: [{ status: 429 }] } });
    await until('the update on every pod', async () =>
      (
        await Promise.all(
          PODS.map(
            async (p) =>
              (await f.scenariosOf(p)) as Array<{ path: string; responses: Array<{ status: number }> }>,
          ),
        )
      ).every((s) => s.find((one) => one.path === '/slow')?.responses[0]?.status === 429),
    );
    await until('observedGeneration 2', async () => (await f.readiness('slow')).observedGeneration === 2);

    await f.deleteScenario('slow');
    await until('/slow gone from every pod', () => allHold(f, '/broken'));
    await f.deleteScenario('broken');
    await until('every pod cleared', () => allHold(f, ''));
  });

  test('operator – a restarted pod (new uid, empty echo server) gets its scenarios back', async () => {
    f = await startFixture();
    await f.startOperator();
    await f.createScenario('slow', spec('/slow'));
    await until('/slow on every pod', () => allHold(f, '/slow'));
    await f.deletePod('echo-2');
    await f.echoes.get('echo-2')!.close();
    const restarted = await f.addEchoPod('echo-2');
    assert.deepEqual(await (await fetch(`${restarted.url}/scenario`)).json(), []);
    await until('/slow back on the restarted pod', () => allHold(f, '/slow'));
    // A pod that joins the target later gets the array too.
    await f.addEchoPod('echo-5');
    await until('/slow on the new pod', () => allHold(f, '/slow', [...PODS, 'echo-5']));
    await until('Synced 6/6', async () => (await f.readiness('slow')).syncedEndpoints === 6);
  });

  test('operator – a dropped watch and a 410 Gone recover', async (t) => {
    if (CLUSTER) return t.skip(`${NEEDS_API_CONTROL}: dropping watch connections and forcing 410 Gone`);
    f = await startFixture();
    const operator = await f.startOperator();
    await f.createScenario('one', spec('/one'));
    await until('/one on every pod', () => allHold(f, '/one'));

    assert.ok(f.api.dropWatches() >= 3, 'the operator watches scenarios, pods and services');
    await f.createScenario('two', spec('/two'));
    await until('/two after a dropped watch', () => allHold(f, '/one,/two'));

    const before = f.api.requests.get('LIST echoscenarios') ?? 0;
    f.api.expireHistory();
    await f.createScenario('three', spec('/three'));
    await until('/three after a 410', () => allHold(f, '/one,/three,/two'));
    assert.ok(
      (f.api.requests.get('LIST echoscenarios') ?? 0) > before,
      'a 410 makes the informer list again',
    );

    // Both at once, while the operator is not watching: a drop, then compaction before it resumes.
    f.api.dropWatches();
    f.api.expireHistory();
    await f.deleteScenario('one');
    await until('deletion seen after drop and 410', () => allHold(f, '/three,/two'), 2 * TIMEOUT_MS);
    const metrics = await operator.registry.metrics();
    assert.ok(counter(metrics, 'echo_operator_watch_restarts_total{resource="echoscenarios"}') >= 1);
  });

  test('operator – its watches take bookmarks: a dropped watch resumes past a compaction without a new list', async (t) => {
    if (CLUSTER) return t.skip(`${NEEDS_API_CONTROL}: compacting history and dropping watch connections`);
    f = await startFixture();
    await f.startOperator();
    await f.createScenario('one', spec('/one'));
    await until('Synced', async () => (await f.readiness('one')).ready?.reason === 'Synced');
    // EchoScenarios are quiet now while the resourceVersion moves on (the leader renews its Lease
    // every 100 ms): only bookmarks (every 200 ms) tell the operator's watch about the newer versions.
    const newestScenario = () =>
      Math.max(...f.api.list('echoscenarios').map((es) => Number(es.metadata.resourceVersion)));
    const last = newestScenario();
    await until(
      'the resourceVersion moves past the EchoScenarios',
      () => Number(f.api.resourceVersion) > last,
    );
    const at = f.api.resourceVersion;
    // Two: the operator has read the first by the time the second is written.
    await until(
      'two bookmarks at or past it on the EchoScenario watch',
      () => f.api.bookmarksSince('echoscenarios', at) >= 2,
    );
    assert.ok(
      newestScenario() < Number(at),
      'no EchoScenario changed since: only bookmarks moved the watch on',
    );
    f.api.compactHistory(at);
    const lists = f.api.requests.get('LIST echoscenarios') ?? 0;
    assert.ok(f.api.dropWatches() >= 4);
    await f.createScenario('two', spec('/two'));
    await until('/two after the drop', () => allHold(f, '/one,/two'));
    assert.equal(
      f.api.requests.get('LIST echoscenarios') ?? 0,
      lists,
      'resumed from a bookmark: no 410, no new list',
    );
  });

  test('operator – invalid and conflicting EchoScenarios get their condition while the others sync', async () => {
    f = await startFixture();
    await f.startOperator();
    await f.createScenario('first', spec('/same', 503));
    await until('first synced', async () => (await f.readiness('first')).ready?.reason === 'Synced');
    await f.createScenario('second', spec('/same', 500));
    // Accepted by the schema, refused by validateScenarios: a reserved header.
    await f.createScenario('invalid', {
      target: { service: 'echo', port: 'http' },
      path: '/invalid',
      responses: [{ status: 200, headers: { 'Content-Length': '3' } }],
    });
    await f.createScenario('missing', spec('/missing', 503, { service: 'nope', port: 'http' }));
    await f.createScenario('other', spec('/other'));
    await until('other synced', async () => (await f.readiness('other')).ready?.reason === 'Synced');
    await until('conditions written', async () =>
      (await Promise.all(['second', 'invalid', 'missing'].map((n) => f.readiness(n)))).every(
        (r) => r.ready !== undefined,
      ),
    );
    const second = (await f.readiness('second')).ready!;
    assert.equal(second.reason, 'Conflict');
    assert.equal(second.status, 'False');
    assert.match(second.message, /older EchoScenario first/);
    const invalid = (await f.readiness('invalid')).ready!;
    assert.equal(invalid.reason, 'Invalid');
    assert.match(invalid.message, /content-length/i);
    assert.equal((await f.readiness('missing')).ready?.reason, 'TargetNotFound');
    assert.deepEqual(
      await pathsOnAll(f),
      PODS.map(() => '/other,/same'),
    );
    const served = (await f.scenariosOf('echo-0')) as Array<{
      path: string;
      responses: Array<{ status: number }>;
    }>;
    assert.equal(served.find((s) => s.path === '/same')?.responses[0]?.status, 503, 'the oldest wins');

    // The API itself refuses what the CRD schema refuses.
    await assert.rejects(
      f.createScenario('rejected', spec('no-slash')),
      (err: { code?: number }) => err.code === 422,
    );

    // Once the older one goes, the newer one takes the path.
    await f.deleteScenario('first');
    await until('second synced', async () => (await f.readiness('second')).ready?.reason === 'Synced');
    const now = (await f.scenariosOf('echo-0')) as Array<{
      path: string;
      responses: Array<{ status: number }>;
    }>;
    assert.equal(now.find((s) => s.path === '/same')?.responses[0]?.status, 500);
  });

  test('operator – a failing pod is retried with backoff and reported PushFailed', async () => {
    f = await startFixture();
    const operator = await f.startOperator({ retryBaseDelayMs: 100, retryMaxDelayMs: 5000 });
    await f.addPod('echo-dead', await deadPort());
    await f.createScenario('slow', spec('/slow'));
    await until('/slow on the live pods', () => allHold(f, '/slow'));
    await until('PushFailed, 5 of 6', async () => {
      const r = await f.readiness('slow');
      return r.ready?.reason === 'PushFailed' && r.syncedEndpoints === 5;
    });
    const status = await f.readiness('slow');
    assert.equal(status.ready?.status, 'False');
    assert.equal(status.syncedEndpoints, 5);
    assert.equal(status.totalEndpoints, 6);
    assert.match(status.ready!.message, /echo-dead/);
    // Backoff: the waits double from 100 ms (100, 200, 400, 800 ms...), so of the three attempts after
    // the ones seen, the last two come at least 200 and 400 ms after the one before; retries without
    // backoff would take a few ms, at a fixed 100 ms 300 ms.
    const failures = async () =>
      counter(await operator.registry.metrics(), 'echo_operator_pushes_total{result="failure"}');
    const since = Date.now();
    const seen = await failures();
    assert.ok(seen >= 1, `failures: ${seen}`);
    await until('three more attempts', async () => (await failures()) >= seen + 3, 10 * TIMEOUT_MS);
    const took = Date.now() - since;
    assert.ok(took >= 550, `three more attempts after ${seen} took ${took} ms: no backoff`);

    // When the pod goes away the scenario is Synced again.
    await f.deletePod('echo-dead');
    await until(
      'Synced after the dead pod left',
      async () => (await f.readiness('slow')).ready?.reason === 'Synced',
    );
    assert.equal((await f.readiness('slow')).totalEndpoints, 5);
  });

  test('operator – a selector target reaches the pods it selects, on a numeric port', async () => {
    f = await startFixture(2);
    await f.startOperator();
    const sidecar = await f.addEchoPod('app-0', { app: 'shop' });
    await f.createScenario(
      'sidecar',
      spec('/pay', 502, { selector: { matchLabels: { app: 'shop' } }, port: sidecar.port }),
    );
    await until('/pay on the selected pod', () => allHold(f, '/pay', ['app-0']));
    assert.deepEqual(await pathsOnAll(f, ['echo-0', 'echo-1']), ['', '']);
    await until('Synced 1/1', async () => (await f.readiness('sidecar')).syncedEndpoints === 1);
  });

  test('operator – of two instances only the leader pushes; the other takes over when it stops', async () => {
    f = await startFixture();
    const a = await f.startOperator();
    await until('a leads', () => a.isLeader);
    const b = await f.startOperator();
    await f.createScenario('one', spec('/one'));
    await until('/one on every pod', () => allHold(f, '/one'));
    await quietFor(300, 'the standby neither leads nor pushes while a leads');
    assert.equal(b.isLeader, false);
    const pushesOf = async (o: typeof a) =>
      counter(await o.registry.metrics(), 'echo_operator_pushes_total{result="success"}');
    assert.ok((await pushesOf(a)) >= 5);
    assert.equal(await pushesOf(b), 0, 'the standby pushes nothing');

    await a.stop();
    await until('b leads after a stops', () => b.isLeader);
    await f.createScenario('two', spec('/two'));
    await until('/two on every pod, pushed by b', () => allHold(f, '/one,/two'));
    assert.ok((await pushesOf(b)) >= 5);

    // A leader that dies without releasing the lease is replaced once the lease expires.
    const c = await f.startOperator();
    await b.stop({ crash: true });
    await until('c leads after b crashed', () => c.isLeader, 2 * TIMEOUT_MS);
    await f.createScenario('three', spec('/three'));
    await until('/three on every pod, pushed by c', () => allHold(f, '/one,/three,/two'));
  });

  test('operator – serves /healthz, /readyz and /metrics', async () => {
    f = await startFixture(1);
    const operator = await f.startOperator();
    const server = createOperatorServer({ registry: operator.registry, ready: () => operator.ready });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      assert.equal((await fetch(`${base}/healthz`)).status, 200);
      assert.equal((await fetch(`${base}/readyz`)).status, 200);
      const metrics = await (await fetch(`${base}/metrics`)).text();
      assert.match(metrics, /echo_operator_leader 1/);
      assert.match(metrics, /# TYPE echo_operator_pushes_total counter/);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
