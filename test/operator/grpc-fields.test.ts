/**
 * The EchoScenario CRD and the operator on a response's gRPC fields (issue #36 item 4): what the CRD
 * refuses, the operator refuses too; what the CRD cannot express (one field beside another, map
 * keys, base64) the operator names; and each field has a description for `kubectl explain`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { echoScenarioSchema } from '../../scripts/gen-crd.ts';
import type { EchoScenario } from '../../src/operator/echo-scenario.ts';
import { specProblems } from '../../src/operator/scenario-spec.ts';
import { compileEchoScenarioValidator } from '../k8s/crd-schema.ts';

const validate = compileEchoScenarioValidator();
const resource = (response: Record<string, unknown>): EchoScenario => ({
  apiVersion: 'echo-chaos.dev/v1alpha1',
  kind: 'EchoScenario',
  metadata: { name: 's' },
  spec: {
    target: { service: 'echo', port: 'http' },
    path: '/echochaos.v1.EchoService/Echo',
    responses: [response],
  },
});

const RESPONSES: Array<Record<string, unknown>> = [
  { grpcStatus: 14 },
  { grpcStatus: 0 },
  { grpcStatus: 16 },
  { grpcStatus: 'UNAVAILABLE' },
  { grpcStatus: 'unavailable' },
  { grpcStatus: '14' },
  { grpcStatus: 17 },
  { grpcStatus: -1 },
  { grpcStatus: 1.5 },
  { grpcStatus: '17' },
  { grpcStatus: 'NOPE' },
  { grpcStatus: '' },
  { grpcStatus: true },
  { grpcStatus: 13, grpcMessage: 'why' },
  { grpcStatus: 13, grpcMessage: 'x'.repeat(1025) },
  { grpcMessage: 'alone' },
  { grpcStatus: 'OK', grpcMessage: 'fine' },
  { grpcMetadata: { 'x-a': 'b', 'x-bin': 'AAEC' } },
  { grpcMetadata: { 'x-a': 'é' } },
  { grpcMetadata: { 'x-a': 'v'.repeat(8193) } },
  { grpcMetadata: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) },
  { grpcMetadata: { 'X-A': 'b' } },
  { grpcTrailers: { 'grpc-status': '1' } },
  { grpcTrailers: { 'content-type': 'text/plain' } },
  { grpcTrailers: { 'x-bin': 'not base64' } },
];

test('grpc fields – what the CRD refuses the operator refuses; the operator also names what the CRD cannot express', () => {
  const refusedByOperatorAlone: string[] = [];
  for (const response of RESPONSES) {
    const crd = validate(resource(response));
    const operator = specProblems(resource(response));
    const shown = JSON.stringify(response).slice(0, 60);
    if (crd.length > 0) assert.ok(operator !== undefined, `${shown}: CRD ${crd.join('; ')}`);
    if (crd.length === 0 && operator !== undefined) refusedByOperatorAlone.push(shown);
  }
  assert.deepEqual(refusedByOperatorAlone, [
    '{"grpcMessage":"alone"}',
    '{"grpcStatus":"OK","grpcMessage":"fine"}',
    '{"grpcMetadata":{"X-A":"b"}}',
    '{"grpcTrailers":{"grpc-status":"1"}}',
    '{"grpcTrailers":{"content-type":"text/plain"}}',
    '{"grpcTrailers":{"x-bin":"not base64"}}',
  ]);
  // And the valid ones pass both.
  for (const response of RESPONSES.slice(0, 6)) {
    assert.deepEqual(validate(resource(response)), [], JSON.stringify(response));
    assert.equal(specProblems(resource(response)), undefined, JSON.stringify(response));
  }
});

test('grpc fields – each carries a description for kubectl explain; grpcStatus is an int-or-string', () => {
  const response = (
    echoScenarioSchema() as {
      properties: {
        spec: {
          properties: {
            responses: { items: { properties: Record<string, Record<string, unknown>> } };
          };
        };
      };
    }
  ).properties.spec.properties.responses.items.properties;
  for (const field of ['grpcStatus', 'grpcMessage', 'grpcMetadata', 'grpcTrailers']) {
    assert.ok(String(response[field]?.['description'] ?? '').length > 40, field);
  }
  assert.equal(response['grpcStatus']?.['x-kubernetes-int-or-string'], true);
  assert.deepEqual(response['grpcStatus']?.['anyOf'], [{ type: 'integer' }, { type: 'string' }]);
});
