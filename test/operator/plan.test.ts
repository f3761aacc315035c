import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { type EchoScenario, planNamespace, resolvePort } from '../../src/operator/plan.ts';

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

test('plan – merges every EchoScenario of a ready pod, oldest first; not-ready pods get nothing', () => {
  const plan = planNamespace(
    [es('b', '/b', '2026-01-01T00:00:02Z'), es('a', '/a', '2026-01-01T00:00:01Z')],
    [pod('p', { app: 'echo' }), pod('q', { app: 'echo' }, false), pod('r', { app: 'other' })],
    services,
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

test('plan – a port is resolved by container port name or taken as a number', () => {
  const p = pod('p', {});
  assert.equal(resolvePort(p, 'http'), 8080);
  assert.equal(resolvePort(p, 9000), 9000);
  assert.equal(resolvePort(p, 'metrics'), undefined);
});
