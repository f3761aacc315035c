import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  echoedMetadata,
  GRPC_STATUS_NAMES,
  parseGrpcStatus,
  peerOf,
  requestIdOf,
} from '../../../src/echo/grpc/metadata.ts';

test('grpc metadata – parseGrpcStatus takes a code 0-16 or its name in any case', () => {
  assert.equal(parseGrpcStatus('0'), 0);
  assert.equal(parseGrpcStatus('14'), 14);
  assert.equal(parseGrpcStatus(' 16 '), 16);
  assert.equal(parseGrpcStatus('UNAVAILABLE'), 14);
  assert.equal(parseGrpcStatus('deadline_exceeded'), 4);
  for (const bad of ['17', '-1', '', '1.5', 'UNAVAILABLEX', '014'])
    assert.equal(parseGrpcStatus(bad), undefined, bad);
  assert.equal(GRPC_STATUS_NAMES.length, 17);
});

test('grpc metadata – the request id is x-request-id when acceptable, else a new UUID', () => {
  assert.equal(requestIdOf({ 'x-request-id': ['abc-123'] }), 'abc-123');
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  assert.match(requestIdOf({}), uuid);
  assert.match(requestIdOf({ 'x-request-id': ['has space'] }), uuid);
  assert.match(requestIdOf({ 'x-request-id': ['x'.repeat(129)] }), uuid);
  assert.match(requestIdOf({ 'x-request-id': ['a', 'b'] }), uuid);
});

test('grpc metadata – the echoed map joins repeated keys and shows binary values in base64', () => {
  assert.deepEqual(
    echoedMetadata({
      'x-a': ['1', '2'],
      'x-b-bin': [Buffer.from([0xff, 0]), Buffer.from('hi')],
      'x-c': ['c'],
    }),
    { 'x-a': '1, 2', 'x-b-bin': '/wA=, aGk=', 'x-c': 'c' },
  );
});

test('grpc metadata – peerOf splits grpc-js peers, IPv6 in brackets too, and keeps anything else whole', () => {
  assert.deepEqual(peerOf('127.0.0.1:51234'), { address: '127.0.0.1', port: 51234 });
  assert.deepEqual(peerOf('[::1]:443'), { address: '::1', port: 443 });
  assert.deepEqual(peerOf('unix:/tmp/s'), { address: 'unix:/tmp/s' });
});
