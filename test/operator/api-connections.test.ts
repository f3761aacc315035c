/** api-connections.ts: the operator's API requests share connections (client-node opens one each). */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { reuseApiConnections } from '../../src/operator/api-connections.ts';

/** An API server stand-in answering every GET with an empty pod list; counts its TCP connections. */
async function apiServer(t: {
  after(fn: () => unknown): void;
}): Promise<{ url: string; connections: () => number }> {
  let connections = 0;
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ apiVersion: 'v1', kind: 'PodList', metadata: {}, items: [] }));
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
  };
}

function kubeConfig(server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    // Plain http needs skip-verify, and that setting is what makes client-node build a dispatcher.
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'test' }],
    contexts: [{ name: 'c', cluster: 'c', user: 'u', namespace: 'ns' }],
    currentContext: 'c',
  });
  return kc;
}

async function list(kc: KubeConfig, times: number): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  for (let i = 0; i < times; i++) await core.listNamespacedPod({ namespace: 'ns' });
}

test('api-connections – without it, client-node opens a connection per request (why it exists)', async (t) => {
  const api = await apiServer(t);
  await list(kubeConfig(api.url), 10);
  assert.equal(api.connections(), 10);
});

test('api-connections – with it, requests reuse one connection; idempotent', async (t) => {
  const api = await apiServer(t);
  const kc = kubeConfig(api.url);
  reuseApiConnections(kc);
  reuseApiConnections(kc);
  await list(kc, 10);
  // One, or two when a request is sent before the last one's connection is idle again (undici's pool).
  assert.ok(api.connections() <= 2, `${api.connections()} connections for 10 requests`);
});
