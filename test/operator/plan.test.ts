import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Endpoint, V1EndpointSlice, V1Pod, V1Service } from '@kubernetes/client-node';
import type { EchoScenario } from '../../src/operator/echo-scenario.ts';
import { resolvePort } from '../../src/operator/endpoints.ts';
import { planNamespace } from './plan-namespace.ts';

function pod(name: string, labels: Record<string, string>, ready = true): V1Pod {
  return {
    metadata: { name, uid: `uid-${name}`, labels },
    spec: { containers: [{ name: 'echo', ports: [{ name: 'http', containerPort: 8080 }] }] },
    status: {
      phase: 'Running',
      podIP: `10.0.0.${name.length}`,
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
    },
  };
}

function es(
  name: string,
  path: string,
  createdAt: string,
  target: object = { service: 'echo', port: 'http' },
): EchoScenario {
  return {
    metadata: { name, creationTimestamp: createdAt as unknown as Date },
    spec: { target, path, responses: [{ status: 503 }] },
  };
}

const services: V1Service[] = [{ metadata: { name: 'echo' }, spec: { selector: { app: 'echo' } } }];

/** A slice endpoint for `pod`, ready unless told otherwise. */
function endpoint(p: V1Pod, conditions: V1Endpoint['conditions'] = { ready: true }): V1Endpoint {
  return {
    addresses: [p.status!.podIP!],
    conditions,
    targetRef: { kind: 'Pod', name: p.metadata!.name!, uid: p.metadata!.uid! },
  };
}

function slice(
  name: string,
  service: string,
  endpoints: V1Endpoint[],
  ports: V1EndpointSlice['ports'] = [{ name: 'http', port: 8080 }],
): V1EndpointSlice {
  return {
    metadata: { name, labels: { 'kubernetes.io/service-name': service } },
    addressType: 'IPv4',
    endpoints,
    ports,
  };
}

/** What the EndpointSlice controller would make of `services` and the ready pods it selects. */
function controllerSlices(pods: V1Pod[]): V1EndpointSlice[] {
  return [
    slice(
      'echo-auto',
      'echo',
      pods.filter((p) => p.metadata?.labels?.['app'] === 'echo').map((p) => endpoint(p)),
    ),
  ];
}

test('plan – merges every EchoScenario of a ready pod, oldest first; not-ready pods get nothing', () => {
  const plan = planNamespace(
    [es('b', '/b', '2026-01-01T00:00:02Z'), es('a', '/a', '2026-01-01T00:00:01Z')],
    [pod('p', { app: 'echo' }), pod('q', { app: 'echo' }, false), pod('r', { app: 'other' })],
    services,
    [
      slice('echo-auto', 'echo', [
        endpoint(pod('p', { app: 'echo' })),
        endpoint(pod('q', { app: 'echo' }, false), { ready: false }),
      ]),
    ],
  );
  assert.deepEqual([...plan.desired.keys()], ['uid-p:8080']);
  assert.deepEqual(
    plan.desired.get('uid-p:8080')!.scenarios.map((s) => s.path),
    ['/a', '/b'],
  );
});

test('plan – same path: the oldest wins, the newer is Conflict; invalid and missing targets are reported', () => {
  const plan = planNamespace(
    [
      es('new', '/x', '2026-01-01T00:00:02Z'),
      es('old', '/x', '2026-01-01T00:00:01Z'),
      {
        metadata: { name: 'bad' },
        spec: { target: { service: 'echo', port: 'http' }, path: 'x', responses: [] },
      },
      es('gone', '/y', '2026-01-01T00:00:01Z', { service: 'missing', port: 'http' }),
    ],
    [pod('p', { app: 'echo' })],
    services,
    controllerSlices([pod('p', { app: 'echo' })]),
  );
  assert.equal(plan.scenarios.get('old')?.kind, 'Active');
  assert.equal(plan.scenarios.get('new')?.kind, 'Conflict');
  assert.equal(plan.scenarios.get('bad')?.kind, 'Invalid');
  assert.equal(plan.scenarios.get('gone')?.kind, 'TargetNotFound');
  assert.deepEqual(
    plan.desired.get('uid-p:8080')!.scenarios.map((s) => s.path),
    ['/x'],
  );
});

test('plan – a fault field the echo would refuse makes the EchoScenario Invalid, naming the field', () => {
  const spec = (response: object) => ({
    target: { service: 'echo', port: 'http' },
    path: '/f',
    responses: [{ status: 200, ...response }],
  });
  const plan = planNamespace(
    [
      {
        metadata: { name: 'bad-error', creationTimestamp: '2026-01-01T00:00:01Z' },
        spec: spec({ error: 'explode' }),
      },
      {
        metadata: { name: 'bad-throttle', creationTimestamp: '2026-01-01T00:00:02Z' },
        spec: { ...spec({ throttle: 'fast' }), path: '/g' },
      },
      {
        metadata: { name: 'good', creationTimestamp: '2026-01-01T00:00:03Z' },
        spec: { ...spec({ error: 'reset', repeat: 2 }), path: '/h' },
      },
    ] as never,
    [pod('p', { app: 'echo' })],
    services,
    controllerSlices([pod('p', { app: 'echo' })]),
  );
  const bad = plan.scenarios.get('bad-error');
  assert.equal(bad?.kind, 'Invalid');
  assert.match(JSON.stringify(bad), /spec\.responses\.0\.error: error \\"explode\\": expected a status/);
  assert.equal(plan.scenarios.get('bad-throttle')?.kind, 'Invalid');
  assert.equal(plan.scenarios.get('good')?.kind, 'Active');
  assert.deepEqual(
    plan.desired.get('uid-p:8080')!.scenarios.map((s) => s.path),
    ['/h'],
  );
});

test('plan – a port is resolved by container port name or taken as a number', () => {
  const p = pod('p', {});
  assert.equal(resolvePort(p, 'http'), 8080);
  assert.equal(resolvePort(p, 9000), 9000);
  assert.equal(resolvePort(p, 'metrics'), undefined);
});

test('plan – a Service target reaches the ready, not terminating endpoints of its EndpointSlices only', () => {
  const pods = ['a', 'bb', 'ccc', 'dddd', 'eeeee'].map((n) => pod(n, { app: 'echo' }));
  const [a, b, c, d, e] = pods as [V1Pod, V1Pod, V1Pod, V1Pod, V1Pod];
  const plan = planNamespace([es('s', '/s', '2026-01-01T00:00:01Z')], pods, services, [
    slice('echo-1', 'echo', [
      endpoint(a),
      endpoint(b, { ready: false }),
      endpoint(c, { ready: true, terminating: true }),
      // No conditions at all: ready is unknown, so it counts (as kube-proxy takes it).
      { ...endpoint(d), conditions: {} },
    ]),
    // Another Service's slice does not count, even for a pod the selector would match.
    slice('other-1', 'other', [endpoint(e)]),
  ]);
  const state = plan.scenarios.get('s');
  assert.equal(state?.kind, 'Active');
  assert.deepEqual(
    state.kind === 'Active' ? state.endpoints.map((x) => `${x.podName} ${x.ip}:${x.port}`) : [],
    ['a 10.0.0.1:8080', 'dddd 10.0.0.4:8080'],
  );
  assert.deepEqual([...plan.desired.keys()], ['uid-a:8080', 'uid-dddd:8080']);
});

test('plan – a Service that exists but has no slices, or none ready, is TargetNotFound', () => {
  const p = pod('p', { app: 'echo' });
  const none = planNamespace([es('s', '/s', '2026-01-01T00:00:01Z')], [p], services, []);
  assert.deepEqual(none.scenarios.get('s'), {
    kind: 'TargetNotFound',
    message: 'no ready pod behind Service echo has port http',
  });
  const notReady = planNamespace([es('s', '/s', '2026-01-01T00:00:01Z')], [p], services, [
    slice('echo-1', 'echo', [endpoint(p, { ready: false })]),
  ]);
  assert.equal(notReady.scenarios.get('s')?.kind, 'TargetNotFound');
  assert.equal(notReady.desired.size, 0);
  const missing = planNamespace(
    [es('s', '/s', '2026-01-01T00:00:01Z', { service: 'nope', port: 'http' })],
    [p],
    services,
    [slice('nope-1', 'nope', [endpoint(p)])],
  );
  assert.deepEqual(missing.scenarios.get('s'), { kind: 'TargetNotFound', message: 'Service nope not found' });
});

test('plan – a named port is the container port of that name, else the slice port of that name', () => {
  const named = pod('named', {});
  const bare: V1Pod = {
    ...pod('bare', {}),
    spec: { containers: [{ name: 'echo', ports: [{ containerPort: 9090 }] }] },
  };
  const plan = planNamespace([es('s', '/s', '2026-01-01T00:00:01Z')], [named, bare], services, [
    // The slice says 7000 for `http`: the pod's own `http` container port (8080) wins where it has one.
    slice('echo-1', 'echo', [endpoint(named), endpoint(bare)], [{ name: 'http', port: 7000 }]),
  ]);
  assert.deepEqual(
    [...plan.desired.values()].map((d) => `${d.endpoint.podName}:${d.endpoint.port}`),
    ['named:8080', 'bare:7000'],
  );
  const numeric = planNamespace(
    [es('s', '/s', '2026-01-01T00:00:01Z', { service: 'echo', port: 9999 })],
    [named],
    services,
    [slice('echo-1', 'echo', [endpoint(named)])],
  );
  assert.deepEqual([...numeric.desired.keys()], ['uid-named:9999']);
  const unknown = planNamespace(
    [es('s', '/s', '2026-01-01T00:00:01Z', { service: 'echo', port: 'grpc' })],
    [named],
    services,
    [slice('echo-1', 'echo', [endpoint(named)])],
  );
  assert.equal(unknown.scenarios.get('s')?.kind, 'TargetNotFound');
});

test('plan – a Service without a selector is reached through its hand-made EndpointSlices', () => {
  const pods = [pod('p', { app: 'echo' }), pod('q', { app: 'echo' }), pod('r', { role: 'x' })];
  const manual: V1Service[] = [
    { metadata: { name: 'manual' }, spec: { ports: [{ name: 'http', port: 80 }] } },
  ];
  const target = { service: 'manual', port: 'http' };
  const plan = planNamespace([es('s', '/s', '2026-01-01T00:00:01Z', target)], pods, manual, [
    slice('manual-1', 'manual', [
      endpoint(pods[0]!),
      endpoint(pods[2]!),
      // Not a pod, a pod the cache does not hold, a replaced pod (old uid): none counts.
      { addresses: ['10.9.9.9'], targetRef: { kind: 'Node', name: 'q' } },
      { addresses: ['10.9.9.8'], targetRef: { kind: 'Pod', name: 'ghost', uid: 'uid-ghost' } },
      { addresses: ['10.9.9.7'], targetRef: { kind: 'Pod', name: 'q', uid: 'uid-old-q' } },
      // No targetRef uid: the pod cache's uid of that name.
      { addresses: ['10.0.0.1'], conditions: { ready: true }, targetRef: { kind: 'Pod', name: 'q' } },
      // No address: skipped.
      { addresses: [], targetRef: { kind: 'Pod', name: 'p', uid: 'uid-p' } },
    ]),
  ]);
  assert.deepEqual(
    [...plan.desired.values()].map((d) => `${d.endpoint.key} ${d.endpoint.ip}`),
    ['uid-p:8080 10.0.0.1', 'uid-r:8080 10.0.0.1', 'uid-q:8080 10.0.0.1'],
  );
  assert.deepEqual(plan.desired.get('uid-q:8080')?.owners, ['s']);
});

test('plan – a deleting EchoScenario is left out; its endpoints are planned without it, [] when empty', () => {
  const pods = [pod('p', { app: 'echo' }), pod('q', { app: 'shop' })];
  const deleting = (e: EchoScenario): EchoScenario => ({
    ...e,
    metadata: { ...e.metadata, deletionTimestamp: '2026-01-01T00:01:00Z' as unknown as Date },
  });
  const plan = planNamespace(
    [
      deleting(es('gone', '/x', '2026-01-01T00:00:01Z')),
      es('kept', '/y', '2026-01-01T00:00:02Z'),
      // Newer on the same path as the deleting one: no Conflict, since that one is treated as gone.
      es('heir', '/x', '2026-01-01T00:00:03Z'),
      deleting(
        es('sidecar', '/z', '2026-01-01T00:00:04Z', {
          selector: { matchLabels: { app: 'shop' } },
          port: 'http',
        }),
      ),
      deleting(es('lost', '/w', '2026-01-01T00:00:05Z', { service: 'nope', port: 'http' })),
    ],
    pods,
    services,
    controllerSlices(pods),
  );
  assert.deepEqual(plan.scenarios.get('gone'), {
    kind: 'Deleting',
    endpoints: [{ key: 'uid-p:8080', podName: 'p', podUid: 'uid-p', ip: '10.0.0.1', port: 8080 }],
  });
  assert.equal(plan.scenarios.get('heir')?.kind, 'Active');
  assert.deepEqual(plan.scenarios.get('lost'), { kind: 'Deleting', endpoints: [] });
  assert.deepEqual(plan.desired.get('uid-p:8080')?.owners, ['kept', 'heir']);
  assert.deepEqual(
    plan.desired.get('uid-p:8080')?.scenarios.map((s) => s.path),
    ['/y', '/x'],
  );
  assert.deepEqual(plan.desired.get('uid-q:8080'), {
    endpoint: { key: 'uid-q:8080', podName: 'q', podUid: 'uid-q', ip: '10.0.0.1', port: 8080 },
    scenarios: [],
    owners: [],
  });
});

test('plan – the new scenario fields pass through, named after the EchoScenario', () => {
  const spec = {
    target: { service: 'echo', port: 'http' },
    pathPattern: '/orders/*',
    method: ['POST'],
    headers: { 'X-Tenant': 'acme' },
    query: { dry: 'true' },
    body: { contains: 'urgent' },
    cycle: false,
    responses: [{ status: 503, repeat: 2 }, { status: 201 }],
  };
  const plan = planNamespace(
    [{ metadata: { name: 'orders', creationTimestamp: '2026-01-01T00:00:01Z' as unknown as Date }, spec }],
    [pod('p', { app: 'echo' })],
    services,
    controllerSlices([pod('p', { app: 'echo' })]),
  );
  assert.equal(plan.scenarios.get('orders')?.kind, 'Active');
  const { target: _, ...scenario } = spec;
  assert.deepEqual(plan.desired.get('uid-p:8080')!.scenarios, [{ name: 'orders', ...scenario }]);
});

test('plan – conflicts: the same path or pattern with the same conditions; other conditions coexist', () => {
  const at = (name: string, second: number, fields: object): EchoScenario => ({
    metadata: { name, creationTimestamp: `2026-01-01T00:00:0${second}Z` as unknown as Date },
    spec: { target: { service: 'echo', port: 'http' }, responses: [{ status: 503 }], ...fields },
  });
  const plan = planNamespace(
    [
      at('get', 1, { path: '/x', method: ['GET'] }),
      at('get-again', 2, { path: '/x', method: ['get'] }),
      at('post', 3, { path: '/x', method: ['POST'] }),
      at('plain', 4, { path: '/x' }),
      at('pattern', 5, { pathPattern: '/x' }),
      at('pattern-again', 6, { pathPattern: '/x' }),
      at('both', 7, { path: '/x', pathPattern: '/x' }),
    ],
    [pod('p', { app: 'echo' })],
    services,
    controllerSlices([pod('p', { app: 'echo' })]),
  );
  const kinds = Object.fromEntries([...plan.scenarios].map(([name, state]) => [name, state.kind]));
  assert.deepEqual(kinds, {
    get: 'Active',
    'get-again': 'Conflict',
    post: 'Active',
    plain: 'Active',
    pattern: 'Active',
    'pattern-again': 'Conflict',
    both: 'Invalid',
  });
  const conflict = plan.scenarios.get('get-again');
  assert.equal(
    conflict?.kind === 'Conflict' && conflict.message,
    'path /x with the same conditions is already served by older EchoScenario get',
  );
  assert.deepEqual(plan.desired.get('uid-p:8080')!.owners, ['get', 'post', 'plain', 'pattern']);
});

test('plan – every endpoint holds the Active EchoScenarios whose endpoints name it, oldest first; endpoints with the same ones share one array (seeded, overlapping targets)', () => {
  // Built once per endpoint list rather than per endpoint (issue #16): checked here against the
  // per-endpoint walk it replaced, over random namespaces whose targets overlap.
  let seed = 7;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
  const targets: object[] = [
    { service: 'echo', port: 'http' },
    { selector: { matchLabels: { app: 'echo' } }, port: 'http' },
    { selector: { matchLabels: { tier: 'a' } }, port: 'http' },
    { selector: { matchLabels: { tier: 'b' } }, port: 8080 },
    { selector: { matchLabels: { app: 'echo', tier: 'b' } }, port: 'http', mode: 'fixed-percent', value: 50 },
    { service: 'echo', port: 'http', mode: 'one' },
    { service: 'echo', port: 'http', mode: 'fixed', value: 2 },
  ];
  let merged = 0;
  for (let round = 0; round < 40; round++) {
    const pods = Array.from({ length: 2 + Math.floor(random() * 6) }, (_, i) =>
      pod(`p${i}`, { app: pick(['echo', 'other']), tier: pick(['a', 'b']) }, random() > 0.15),
    );
    const scenarios = Array.from({ length: 1 + Math.floor(random() * 12) }, (_, i) => {
      const e = es(
        `s${i}`,
        pick(['/a', '/b', '/c', `/own-${i}`]),
        `2026-01-01T00:00:0${Math.floor(random() * 4)}Z`,
        pick(targets),
      );
      e.metadata.uid = `es-uid-${i}`;
      if (random() < 0.2) e.metadata.deletionTimestamp = '2026-01-01T00:01:00Z' as unknown as Date;
      return e;
    });
    const stopped = new Set(scenarios.filter(() => random() < 0.1).map((e) => e.metadata.name));
    const plan = planNamespace(scenarios, pods, services, controllerSlices(pods), (e) =>
      stopped.has(e.metadata.name) ? { reason: 'Suspended', message: 'suspended' } : undefined,
    );
    // The walk it replaced: EchoScenarios by age (then name), each one's endpoints in turn.
    const byAge = [...scenarios].sort(
      (a, b) =>
        Date.parse(String(a.metadata.creationTimestamp)) - Date.parse(String(b.metadata.creationTimestamp)) ||
        a.metadata.name!.localeCompare(b.metadata.name!),
    );
    const want = new Map<string, { key: string; owners: string[] }>();
    for (const e of byAge) {
      const state = plan.scenarios.get(e.metadata.name!)!;
      if (state.kind !== 'Active' && state.kind !== 'Deleting' && state.kind !== 'Stopped') continue;
      for (const endpoint of state.endpoints) {
        const entry = want.get(endpoint.key) ?? { key: endpoint.key, owners: [] };
        want.set(endpoint.key, entry);
        if (state.kind === 'Active') entry.owners.push(e.metadata.name!);
      }
    }
    assert.deepEqual([...plan.desired.keys()], [...want.keys()], `round ${round}: endpoints and their order`);
    for (const [key, entry] of plan.desired) {
      assert.deepEqual(entry.owners, want.get(key)!.owners, `round ${round}: ${key}`);
      assert.deepEqual(
        entry.scenarios.map((s) => s.name),
        entry.owners,
        `round ${round}: ${key}'s scenarios follow its owners`,
      );
      if (entry.owners.length > 1) merged++;
    }
  }
  assert.ok(merged > 40, `endpoints holding several EchoScenarios were met (${merged})`);
});

test('plan – the pods of one target share one array: 300 EchoScenarios on 200 pods are 200 entries of the same array', () => {
  const pods = Array.from({ length: 200 }, (_, i) => {
    const p = pod(`pod-${i}`, { app: 'echo' });
    p.status!.podIP = `10.1.${Math.floor(i / 250)}.${(i % 250) + 1}`;
    return p;
  });
  const scenarios = Array.from({ length: 300 }, (_, i) => es(`es-${i}`, `/p${i}`, '2026-01-01T00:00:01Z'));
  const plan = planNamespace(scenarios, pods, services, controllerSlices(pods));
  assert.equal(plan.desired.size, 200);
  const entries = [...plan.desired.values()];
  assert.equal(new Set(entries.map((e) => e.scenarios)).size, 1);
  assert.equal(new Set(entries.map((e) => e.owners)).size, 1);
  assert.equal(entries[0]!.owners.length, 300);
  assert.deepEqual(entries[0]!.owners.slice(0, 3), ['es-0', 'es-1', 'es-10']);
});
