import assert from 'node:assert/strict';
import { test } from 'node:test';
import { echoScenarioSchema } from '../../scripts/gen-crd.ts';
import { blastRadiusProblems } from '../../src/operator/blast-radius.ts';
import { endpointStatuses, MAX_STATUS_ENDPOINTS } from '../../src/operator/endpoint-status.ts';
import { PushLedger } from '../../src/operator/push-ledger.ts';
import { compileEchoScenarioValidator } from './crd-schema.ts';

const validate = compileEchoScenarioValidator();
const scenario = { path: '/x', responses: [{ status: 503 }] };
const resource = (target: object, status?: object) => ({
  apiVersion: 'echo-chaos.dev/v1alpha1',
  kind: 'EchoScenario',
  metadata: { name: 's' },
  spec: { target: { service: 'echo', port: 'http', ...target }, ...scenario },
  ...(status === undefined ? {} : { status }),
});

const TARGETS: object[] = [
  {},
  { mode: 'all' },
  { mode: 'one' },
  { mode: 'fixed', value: 1 },
  { mode: 'fixed', value: 10_000 },
  { mode: 'fixed-percent', value: 1 },
  { mode: 'fixed-percent', value: 100 },
  { mode: 'fixed' },
  { mode: 'fixed-percent' },
  { mode: 'fixed', value: 0 },
  { mode: 'fixed', value: 10_001 },
  { mode: 'fixed-percent', value: 101 },
  { mode: 'fixed-percent', value: 12.5 },
  { mode: 'one', value: 1 },
  { mode: 'all', value: 3 },
  { value: 3 },
  { mode: 'some' },
  { mode: 'fixed', value: '3' },
  { maxPods: 1 },
  { mode: 'all', maxPods: 10_000 },
  { mode: 'fixed-percent', value: 10, minPods: 2, maxPods: 3 },
  { mode: 'fixed-percent', value: 10, minPods: 2 },
  { mode: 'one', maxPods: 1 },
  { mode: 'fixed', value: 2, maxPods: 1 },
  { mode: 'fixed', value: 2, minPods: 1 },
  { minPods: 1 },
  { mode: 'fixed-percent', value: 10, maxPods: 0 },
  { mode: 'fixed-percent', value: 10, minPods: 10_001 },
];

test('crd blast radius – the CRD admits exactly the mode and value the operator accepts', () => {
  for (const target of TARGETS) {
    const crd = validate(resource(target));
    const operator = blastRadiusProblems(target);
    assert.equal(
      crd.length === 0,
      operator.length === 0,
      `${JSON.stringify(target)}: CRD ${crd.join('; ')}; operator ${operator.join('; ')}`,
    );
  }
});

test('crd blast radius – mode, value and status.endpoints carry descriptions for kubectl explain', () => {
  const schema = echoScenarioSchema() as {
    properties: {
      spec: { properties: { target: { properties: Record<string, { description?: string }> } } };
      status: {
        properties: Record<
          string,
          {
            description?: string;
            maxItems?: number;
            items?: { properties: Record<string, { description?: string }> };
          }
        >;
      };
    };
  };
  const target = schema.properties.spec.properties.target.properties;
  assert.match(target['mode']?.description ?? '', /fixed-percent.*same pods stay chosen/s);
  assert.match(target['value']?.description ?? '', /percentage/);
  const endpoints = schema.properties.status.properties['endpoints']!;
  assert.match(endpoints.description ?? '', /chose/);
  assert.equal(endpoints.maxItems, MAX_STATUS_ENDPOINTS);
  for (const field of ['pod', 'ip', 'synced', 'hash', 'lastSyncTime', 'lastError']) {
    assert.ok((endpoints.items?.properties[field]?.description ?? '').length > 10, field);
  }
});

test('crd blast radius – the status the operator writes for its endpoints passes the CRD', () => {
  const ledger = new PushLedger();
  const list = Array.from({ length: MAX_STATUS_ENDPOINTS + 5 }, (_, i) => ({
    key: `u${i}:8080`,
    podName: `pod-${i}`,
    podUid: `u${i}`,
    ip: `10.0.${Math.floor(i / 250)}.${i % 250}`,
    port: 8080,
  }));
  const desired = new Map(list.map((e) => [e.key, { endpoint: e, scenarios: [], owners: ['s'] }]));
  for (const e of list.slice(0, 50)) {
    ledger.succeeded(e, 'ns', '[]', ['s'], { hash: `sha256-${'0'.repeat(64)}`, at: new Date() });
  }
  ledger.pushFailed(list[60]!, 'ns', ['s'], `POST http://x/scenario: ${'e'.repeat(5000)}`);
  const endpoints = endpointStatuses(list, desired, ledger);
  assert.equal(endpoints.length, MAX_STATUS_ENDPOINTS);
  assert.equal(endpoints[0]?.synced, false);
  const blastRadius = {
    readyPods: 3,
    chosenPods: 1,
    reason: 'fixed-percent 10% of 3 ready pods is 0.3, rounded up to 1',
  };
  const status = { syncedEndpoints: 50, totalEndpoints: list.length, endpoints, blastRadius };
  assert.deepEqual(validate(resource({}, status)), []);
  assert.notDeepEqual(validate(resource({}, { blastRadius: { readyPods: 3 } })), []);
  assert.notDeepEqual(validate(resource({}, { endpoints: [{ pod: 'p', synced: true }] })), []);
});
