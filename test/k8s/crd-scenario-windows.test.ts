import assert from 'node:assert/strict';
import { test } from 'node:test';
import { echoScenarioSchema } from '../../scripts/gen-crd.ts';
import type { EchoScenario } from '../../src/operator/echo-scenario.ts';
import { specProblems } from '../../src/operator/scenario-spec.ts';
import { compileEchoScenarioValidator } from './crd-schema.ts';

/**
 * The EchoScenario CRD carries `order`, `weight`, `activeFor` and `times` (#31 items 3, 4): what
 * it refuses, the operator refuses too, and what it cannot express (a window of 0, a weight beside
 * `order: cycle`) the operator names; each field has a description for `kubectl explain`.
 */

const validate = compileEchoScenarioValidator();
const resource = (spec: Record<string, unknown>): EchoScenario => ({
  apiVersion: 'echo-chaos.dev/v1alpha1',
  kind: 'EchoScenario',
  metadata: { name: 's' },
  spec: { target: { service: 'echo', port: 'http' }, path: '/x', responses: [{ status: 503 }], ...spec },
});

const SPECS: Array<Record<string, unknown>> = [
  { order: 'cycle' },
  { order: 'random' },
  { order: 'RANDOM' },
  { order: 'shuffle' },
  { order: 1 },
  { activeFor: '30s' },
  { activeFor: '1.5h' },
  { activeFor: '366d' },
  { activeFor: '367d' },
  { activeFor: '0s' },
  { activeFor: 'soon' },
  { activeFor: 30 },
  { times: 1 },
  { times: 1_000_000_000 },
  { times: 0 },
  { times: 1_000_000_001 },
  { times: 1.5 },
  {
    order: 'random',
    responses: [
      { status: 200, weight: 0 },
      { status: 503, weight: 1_000_000 },
    ],
  },
  { order: 'random', responses: [{ status: 200, weight: -1 }] },
  { order: 'random', responses: [{ status: 200, weight: 1_000_001 }] },
  { order: 'random', responses: [{ status: 200, weight: 0 }] },
  { order: 'random', cycle: false },
  { responses: [{ status: 200, weight: 2 }] },
];

test('crd scenario windows – what the CRD refuses the operator refuses; the operator also names what the CRD cannot express', () => {
  const refusedByOperatorAlone: string[] = [];
  for (const spec of SPECS) {
    const crd = validate(resource(spec));
    const operator = specProblems(resource(spec));
    if (crd.length > 0) assert.ok(operator !== undefined, `${JSON.stringify(spec)}: CRD ${crd.join('; ')}`);
    if (crd.length === 0 && operator !== undefined) refusedByOperatorAlone.push(JSON.stringify(spec));
  }
  assert.deepEqual(refusedByOperatorAlone, [
    '{"activeFor":"367d"}',
    '{"activeFor":"0s"}',
    '{"order":"random","responses":[{"status":200,"weight":0}]}',
    '{"order":"random","cycle":false}',
    '{"responses":[{"status":200,"weight":2}]}',
  ]);
});

test('crd scenario windows – order, activeFor, times and weight carry descriptions for kubectl explain', () => {
  const spec = (
    echoScenarioSchema() as {
      properties: {
        spec: {
          properties: Record<
            string,
            {
              description?: string;
              enum?: string[];
              items?: { properties: Record<string, { description?: string }> };
            }
          >;
        };
      };
    }
  ).properties.spec.properties;
  assert.match(spec['order']?.description ?? '', /random .*weight.*X-Echo-Seed/s);
  assert.deepEqual(spec['order']?.enum, ['cycle', 'random']);
  assert.match(spec['activeFor']?.description ?? '', /from when the set was stored.*spec\.duration/s);
  assert.match(spec['times']?.description ?? '', /X-Echo-Session/);
  assert.match(spec['responses']?.items?.properties['weight']?.description ?? '', /order: random/);
});
