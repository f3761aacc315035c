/**
 * Proof per pod and blast radius, against the API double or the `KUBECONFIG` cluster (fixture.ts):
 * a pod that answers a push with 200 but keeps its old scenarios is reported unsynced and retried;
 * `fixed-percent` chooses the same pods after the operator is replaced.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterEach, describe, test } from 'node:test';
import { startEcho } from '../helpers/echo-server.ts';
import { CLUSTER, type Fixture, POD_IP, spec, startFixture, until } from './fixture.ts';

/**
 * A stand-in pod: a proxy in front of a real echo server that, while `dropping`, answers every
 * `POST /scenario` with the echo's own 200 and throws the body away; everything else goes through.
 */
interface DroppingPod {
  readonly port: number;
  dropping: boolean;
  /** POSTs to /scenario it dropped. */
  dropped: number;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function startDroppingPod(echoUrl: string): Promise<DroppingPod> {
  const pod: DroppingPod = { port: 0, dropping: true, dropped: 0, close: async () => {} };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      if (pod.dropping && req.method === 'POST' && req.url === '/scenario') {
        pod.dropped++;
        const count = (JSON.parse(body.toString('utf8')) as unknown[]).length;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: 'scenarios updated', count }));
        return;
      }
      const headers: Record<string, string> = {};
      for (const name of ['content-type', 'if-none-match', 'authorization']) {
        const value = req.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      const answer = await fetch(`${echoUrl}${req.url}`, {
        method: req.method ?? 'GET',
        headers,
        ...(body.length > 0 ? { body } : {}),
      });
      const out: Record<string, string> = {};
      for (const name of ['content-type', 'etag']) {
        const value = answer.headers.get(name);
        if (value !== null) out[name] = value;
      }
      res.writeHead(answer.status, out);
      res.end(Buffer.from(await answer.arrayBuffer()));
    })().catch((error: unknown) => {
      res.writeHead(502);
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, POD_IP, resolve));
  return Object.assign(pod, {
    port: (server.address() as { port: number }).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

interface EndpointEntry {
  pod: string;
  ip: string;
  synced: boolean;
  hash: string;
  lastSyncTime?: string;
  lastError: string;
}

async function endpointsOf(f: Fixture, name: string): Promise<EndpointEntry[]> {
  return ((await f.readiness(name)) as unknown as { endpoints?: EndpointEntry[] }).endpoints ?? [];
}

async function etagOf(url: string): Promise<string> {
  return ((await fetch(`${url}/scenario`)).headers.get('etag') ?? '').replaceAll('"', '');
}

describe(`proof per pod and blast radius against ${CLUSTER ? 'the KUBECONFIG cluster' : 'the API double'}`, () => {
  let f: Fixture;
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    await f?.close();
    for (const close of closers.splice(0)) await close();
  });

  test('proof – a pod that answers 200 but keeps its old scenarios is synced: false, retried, and synced once it takes the push', async () => {
    f = await startFixture(1);
    const echo = await startEcho({ HOST: POD_IP });
    closers.push(() => echo.close());
    // What the stand-in held before: an old scenario it will keep.
    const old = await fetch(`${echo.url}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ path: '/old', responses: [{ status: 418 }] }]),
    });
    assert.equal(old.status, 200);
    const oldHash = await etagOf(echo.url);
    const dropping = await startDroppingPod(echo.url);
    closers.push(() => dropping.close());
    await f.addPod('echo-drop', dropping.port);
    await f.startOperator();
    await f.createScenario('slow', spec('/slow'));

    await until('echo-drop reported unsynced', async () =>
      (await endpointsOf(f, 'slow')).some((e) => e.pod === 'echo-drop' && e.lastError !== ''),
    );
    const failing = await f.readiness('slow');
    assert.equal(failing.ready?.status, 'False');
    assert.equal(failing.ready?.reason, 'PushFailed');
    assert.match(failing.ready?.message ?? '', /echo-drop: GET http:.*\/scenario: the pod holds sha256-/);
    assert.equal(failing.totalEndpoints, 2);
    assert.equal(failing.syncedEndpoints, 1);
    const entries = await endpointsOf(f, 'slow');
    const drop = entries.find((e) => e.pod === 'echo-drop')!;
    assert.equal(drop.synced, false);
    assert.equal(drop.hash, oldHash);
    assert.equal(drop.ip, POD_IP);
    assert.equal(drop.lastSyncTime, undefined);
    assert.match(drop.lastError, new RegExp(`holds ${oldHash}, not the sha256-[0-9a-f]{64} pushed`));
    const good = entries.find((e) => e.pod === 'echo-0')!;
    assert.equal(good.synced, true);
    assert.equal(good.lastError, '');
    assert.equal(good.hash, await etagOf(f.echoes.get('echo-0')!.url));
    assert.ok(good.lastSyncTime !== undefined);
    // The stand-in still holds its old scenario; the operator keeps pushing (with backoff).
    assert.deepEqual(
      ((await (await fetch(`${echo.url}/scenario`)).json()) as Array<{ path: string }>).map((s) => s.path),
      ['/old'],
    );
    const before = dropping.dropped;
    await until('the push retried', () => dropping.dropped >= before + 2);

    dropping.dropping = false;
    await until('Synced 2/2', async () => (await f.readiness('slow')).ready?.reason === 'Synced');
    const synced = await f.readiness('slow');
    assert.equal(synced.syncedEndpoints, 2);
    const fixed = (await endpointsOf(f, 'slow')).find((e) => e.pod === 'echo-drop')!;
    assert.equal(fixed.synced, true);
    assert.equal(fixed.lastError, '');
    assert.equal(fixed.hash, good.hash);
    assert.deepEqual(
      ((await (await fetch(`${echo.url}/scenario`)).json()) as Array<{ path: string }>).map((s) => s.path),
      ['/slow'],
    );
  });

  test('blast radius – fixed-percent 50 of 4 pods targets 2, and the same 2 after the operator is replaced', async () => {
    f = await startFixture(4);
    const pods = ['echo-0', 'echo-1', 'echo-2', 'echo-3'];
    const holding = async (path: string) => {
      const held: string[] = [];
      for (const pod of pods) {
        const list = (await f.scenariosOf(pod)) as Array<{ path: string }>;
        if (list.some((s) => s.path === path)) held.push(pod);
      }
      return held;
    };
    const first = await f.startOperator();
    const target = { service: 'echo', port: 'http', mode: 'fixed-percent', value: 50 };
    await f.createScenario('half', spec('/half', 503, target));
    await until('Synced', async () => (await f.readiness('half')).ready?.reason === 'Synced');
    const status = await f.readiness('half');
    assert.equal(status.totalEndpoints, 2);
    assert.equal(status.syncedEndpoints, 2);
    const chosen = (await endpointsOf(f, 'half')).map((e) => e.pod).sort();
    assert.equal(chosen.length, 2);
    assert.deepEqual(await holding('/half'), chosen);
    // The others hold nothing.
    for (const pod of pods.filter((p) => !chosen.includes(p))) assert.deepEqual(await f.scenariosOf(pod), []);

    await first.stop();
    await f.startOperator();
    // A new spec makes the new operator push again (it starts knowing nothing and pushes all it plans).
    await f.patchScenario('half', { spec: { responses: [{ status: 502, body: 'half 502' }] } });
    await until('generation 2 Synced', async () => {
      const r = await f.readiness('half');
      return r.observedGeneration === 2 && r.ready?.reason === 'Synced';
    });
    assert.deepEqual((await endpointsOf(f, 'half')).map((e) => e.pod).sort(), chosen);
    assert.deepEqual(await holding('/half'), chosen);
    for (const pod of chosen) {
      const [scenario] = (await f.scenariosOf(pod)) as Array<{ responses: Array<{ status: number }> }>;
      assert.equal(scenario?.responses[0]?.status, 502);
    }
    for (const pod of pods.filter((p) => !chosen.includes(p))) assert.deepEqual(await f.scenariosOf(pod), []);

    // Narrowed to one: the first of the same ranking, so one of the two; the other is cleared.
    await f.patchScenario('half', { spec: { target: { ...target, mode: 'one', value: null } } });
    await until('one pod holds /half', async () => (await holding('/half')).length === 1);
    const [one] = await holding('/half');
    assert.ok(chosen.includes(one!), `${one} is one of ${chosen.join(', ')}`);
    await until('Synced 1/1', async () => {
      const r = await f.readiness('half');
      return r.observedGeneration === 3 && r.ready?.reason === 'Synced' && r.totalEndpoints === 1;
    });
    assert.deepEqual(
      (await endpointsOf(f, 'half')).map((e) => e.pod),
      [one],
    );
  });
});
