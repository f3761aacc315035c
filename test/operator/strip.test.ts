/** strip.ts: the informer caches keep what planning reads, and planning reads the same from it. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { isPodReady, resolvePort } from '../../src/operator/endpoints.ts';
import { stripPod, stripService } from '../../src/operator/strip.ts';

function realPod(): V1Pod {
  return {
    metadata: {
      name: 'echo-0',
      namespace: 'ns',
      uid: 'u-1',
      resourceVersion: '42',
      labels: { app: 'echo' },
      annotations: { note: 'kept', 'kubectl.kubernetes.io/last-applied-configuration': 'x'.repeat(5000) },
      managedFields: [{ manager: 'kubectl', operation: 'Apply', fieldsV1: { f: 'x'.repeat(5000) } }],
    },
    spec: {
      containers: [
        {
          name: 'echo',
          image: 'echo-chaos:1',
          env: Array.from({ length: 50 }, (_, i) => ({ name: `E${i}`, value: 'v'.repeat(100) })),
          ports: [{ name: 'http', containerPort: 3000 }],
        },
        { name: 'sidecar', image: 'proxy' },
      ],
      volumes: Array.from({ length: 20 }, (_, i) => ({ name: `v${i}`, emptyDir: {} })),
    },
    status: {
      phase: 'Running',
      podIP: '10.0.0.7',
      conditions: [
        { type: 'Initialized', status: 'True' },
        { type: 'Ready', status: 'True' },
      ],
      containerStatuses: [
        { name: 'echo', ready: true, restartCount: 0, image: 'echo-chaos:1', imageID: 'sha', started: true },
      ],
    },
  } as V1Pod;
}

test('strip – a pod keeps what planning reads and little else', () => {
  const pod = realPod();
  const before = JSON.stringify(pod).length;
  stripPod(pod);
  assert.ok(JSON.stringify(pod).length < before / 10, `${JSON.stringify(pod).length} of ${before} bytes`);
  assert.equal(isPodReady(pod), true);
  assert.equal(resolvePort(pod, 'http'), 3000);
  assert.deepEqual(pod.metadata?.labels, { app: 'echo' });
  assert.deepEqual(pod.metadata?.annotations, { note: 'kept' });
  assert.equal(pod.metadata?.managedFields, undefined);
  assert.equal(pod.metadata?.resourceVersion, '42', 'the cache compares versions');
  assert.deepEqual(pod.status?.conditions, [{ type: 'Ready', status: 'True' }]);
  // Restart counts (and names) only: a restart re-checks the pod's scenarios (resync.ts).
  assert.deepEqual(pod.status?.containerStatuses, [{ name: 'echo', restartCount: 0 }]);
  assert.deepEqual(
    pod.spec?.containers.map((c) => c.name),
    ['echo', 'sidecar'],
  );
  // Not ready stays not ready.
  const notReady = realPod();
  notReady.status!.conditions![1]!.status = 'False';
  stripPod(notReady);
  assert.equal(isPodReady(notReady), false);
});

test('strip – a Service keeps its metadata only', () => {
  const svc: V1Service = {
    metadata: { name: 'echo', namespace: 'ns', resourceVersion: '1' },
    spec: { selector: { app: 'echo' }, ports: [{ port: 80 }] },
  };
  stripService(svc);
  assert.deepEqual(svc, { metadata: { name: 'echo', namespace: 'ns', resourceVersion: '1' } });
});
