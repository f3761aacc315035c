/**
 * Issue #32, "the operator test pushes to a proxying pod": EchoScenarios apply to an echo-chaos
 * running as a reverse proxy (`ECHO_UPSTREAM`) exactly as to an echo pod, with the operator's read-back
 * proof, against the API double or the `KUBECONFIG` cluster (fixture.ts). Two real upstreams (node:http)
 * count what reaches them: `ECHO_UPSTREAM`'s, and the one an EchoScenario's own `upstream` names.
 * Everything (upstreams, the proxying echo pod, the operator) is started once for the file.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { scenarioOf } from '../../src/operator/scenario-spec.ts';
import { scenarioSetHash } from '../../src/scenario/index.ts';
import type { RunningEcho } from '../helpers/echo-server.ts';
import { CLUSTER, type Fixture, POD_IP, startFixture, until } from './fixture.ts';

/** A real service behind the proxy: answers `200 {"from": name, "path": url}` and records each path. */
interface Upstream {
  readonly name: string;
  readonly url: string;
  /** The request URLs that reached it, in order. */
  readonly hits: string[];
  close(): Promise<void>;
}

async function startUpstream(name: string): Promise<Upstream> {
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    hits.push(req.url ?? '');
    req.resume();
    req.on('end', () => {
      const body = JSON.stringify({ from: name, path: req.url });
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        'x-upstream': name,
      });
      res.end(body);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    name,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** How many requests for `path` (query included) reached `upstream`. */
function hitsOf(upstream: Upstream, path: string): number {
  return upstream.hits.filter((h) => h === path).length;
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

const TARGET = { service: 'echo', port: 'http' };
const POD = 'proxy-0';
/** Delay of the forwarding scenario's response: asserted only as a lower bound. */
const DELAY_MS = 300;

describe(`operator – EchoScenarios on a proxying pod (ECHO_UPSTREAM), against ${CLUSTER ? 'the KUBECONFIG cluster' : 'the API double'}`, () => {
  const closers: Array<() => Promise<void>> = [];
  /** `ECHO_UPSTREAM` of the pod: what no scenario answers goes here. */
  let fallback: Upstream;
  /** The upstream the `relay` EchoScenario names. */
  let own: Upstream;
  let f: Fixture;
  let proxy: RunningEcho;
  let specs: Record<'mocked' | 'relay', Record<string, unknown>>;
  /** The content hash of the array the pod should hold: both scenarios, as the operator makes them. */
  let expected: string;

  before(async () => {
    fallback = await startUpstream('fallback');
    closers.push(() => fallback.close());
    own = await startUpstream('own');
    closers.push(() => own.close());
    f = await startFixture(0);
    closers.push(() => f.close());
    // Selected by the fixture's Service `echo` (app: echo), like every echo pod.
    proxy = await f.addEchoPod(POD, { app: 'echo' }, { ECHO_UPSTREAM: fallback.url });
    specs = {
      mocked: {
        target: TARGET,
        path: '/mocked',
        responses: [{ status: 503, body: 'mocked by the operator' }],
      },
      relay: {
        target: TARGET,
        path: '/relay',
        upstream: own.url,
        // No body: a forwarding response gives the faults and the status, the upstream the body.
        responses: [{ status: 502, delay: `${DELAY_MS}ms`, headers: { 'X-Chaos': 'relayed' } }],
      },
    };
    await f.startOperator();
    // Oldest first on the pod: `mocked` is created first (and sorts first by name within a second).
    await f.createScenario('mocked', specs.mocked);
    await f.createScenario('relay', specs.relay);
    expected = scenarioSetHash(
      (['mocked', 'relay'] as const).map((name) => scenarioOf({ metadata: { name }, spec: specs[name] })),
    );
    // Every test starts once the operator has proved the whole array on the pod (asserted in the first).
    await until('both Synced with the proof of the whole array', async () => {
      for (const name of ['mocked', 'relay']) {
        if ((await f.readiness(name)).ready?.reason !== 'Synced') return false;
        if ((await endpointsOf(f, name)).find((e) => e.pod === POD)?.hash !== expected) return false;
      }
      return true;
    });
  });

  after(async () => {
    // Operator and pods first (they need the API server), the upstreams last.
    for (const close of closers.splice(0).reverse()) await close();
  });

  test('operator – both EchoScenarios are Synced on the proxying pod, proved by the read-back hash', async () => {
    for (const name of ['mocked', 'relay']) {
      const r = await f.readiness(name);
      assert.equal(r.ready?.status, 'True', name);
      assert.equal(r.observedGeneration, 1, name);
      assert.equal(r.syncedEndpoints, 1, name);
      assert.equal(r.totalEndpoints, 1, name);
      const [entry, ...others] = await endpointsOf(f, name);
      assert.deepEqual(others, [], `${name} targets the one pod`);
      assert.equal(entry?.pod, POD);
      assert.equal(entry?.ip, POD_IP);
      assert.equal(entry?.synced, true);
      assert.equal(entry?.lastError, '');
      assert.ok(entry?.lastSyncTime !== undefined, `${name}: lastSyncTime`);
      assert.equal(entry?.hash, expected, `${name}: the hash read back is the one of both scenarios`);
    }
    // The pod itself holds that array, `upstream` included.
    const res = await fetch(`${proxy.url}/scenario`);
    assert.equal(res.headers.get('etag'), `"${expected}"`);
    const held = (await res.json()) as Array<{ name?: string; path?: string; upstream?: string }>;
    assert.deepEqual(
      held.map((s) => [s.name, s.path, s.upstream]),
      [
        ['mocked', '/mocked', undefined],
        ['relay', '/relay', own.url],
      ],
    );
    // Pushes and read-backs are service routes of the pod: none of them was forwarded.
    for (const upstream of [fallback, own]) {
      assert.deepEqual(
        upstream.hits.filter((h) => h.startsWith('/scenario')),
        [],
        `${upstream.name} saw no /scenario`,
      );
    }
  });

  test('proxying pod – /mocked gets the scripted answer and no upstream is called', async () => {
    const before = [fallback.hits.length, own.hits.length];
    const res = await fetch(`${proxy.url}/mocked`);
    assert.equal(res.status, 503);
    assert.equal(await res.text(), 'mocked by the operator');
    assert.equal(res.headers.get('x-upstream'), null);
    assert.deepEqual([fallback.hits.length, own.hits.length], before, 'neither upstream was called');
    assert.equal(hitsOf(fallback, '/mocked'), 0);
    assert.equal(hitsOf(own, '/mocked'), 0);
  });

  test("proxying pod – /relay reaches the scenario's upstream, with the scenario's status, header and delay", async () => {
    const before = { own: hitsOf(own, '/relay?n=1'), fallback: fallback.hits.length };
    const started = performance.now();
    const res = await fetch(`${proxy.url}/relay?n=1`);
    const body = await res.text();
    const took = performance.now() - started;
    assert.equal(res.status, 502, "the scenario's status replaces the upstream's 200");
    assert.equal(res.headers.get('x-chaos'), 'relayed', "the scenario's header is added");
    assert.equal(res.headers.get('x-upstream'), 'own', "the upstream's own header passes");
    assert.deepEqual(JSON.parse(body), { from: 'own', path: '/relay?n=1' }, "the upstream's body");
    assert.ok(took >= DELAY_MS - 50, `answered after ${Math.round(took)} ms, delay ${DELAY_MS} ms`);
    assert.equal(hitsOf(own, '/relay?n=1'), before.own + 1, 'the scenario upstream got it, once');
    assert.equal(fallback.hits.length, before.fallback, 'ECHO_UPSTREAM did not');
  });

  test('proxying pod – a path no scenario matches is forwarded to ECHO_UPSTREAM', async () => {
    const before = { fallback: hitsOf(fallback, '/unmatched?x=1'), own: own.hits.length };
    const res = await fetch(`${proxy.url}/unmatched?x=1`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-upstream'), 'fallback');
    assert.equal(res.headers.get('x-chaos'), null);
    assert.deepEqual(await res.json(), { from: 'fallback', path: '/unmatched?x=1' });
    assert.equal(hitsOf(fallback, '/unmatched?x=1'), before.fallback + 1, 'ECHO_UPSTREAM got it, once');
    assert.equal(own.hits.length, before.own, "the scenario's upstream did not");
  });
});
