import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  echoedMetadata,
  GRPC_STATUS_NAMES,
  parseGrpcStatus,
  readGrpcFaults,
  requestIdOf,
} from '../../../src/echo/grpc/metadata.ts';

const LIMITS = { maxDelayMs: 10_000, maxResponseBytes: 1024 };
const half = () => 0.5;

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

test('grpc metadata – x-echo-delay is read by the X-Echo-Delay parser and drawn with the given randomness', () => {
  assert.deepEqual(readGrpcFaults({ 'x-echo-delay': ['250ms'] }, LIMITS, half), {
    ok: true,
    faults: { delayMs: 250 },
  });
  // A weighted list: 0.5 falls in the second half, the 1s entry.
  assert.deepEqual(
    readGrpcFaults({ 'x-echo-delay': ['100ms:50,1s:50'] }, LIMITS, () => 0.75),
    {
      ok: true,
      faults: { delayMs: 1000 },
    },
  );
  const over = readGrpcFaults({ 'x-echo-delay': ['11s'] }, LIMITS, half);
  assert.equal(over.ok, false);
  assert.match(
    !over.ok ? over.problem : '',
    /^x-echo-delay="11s": delay of 11000 ms is above ECHO_MAX_DELAY/,
  );
});

test('grpc metadata – x-echo-status and its message; OK asks for nothing; each bad value names its key', () => {
  assert.deepEqual(readGrpcFaults({ 'x-echo-status': ['UNAVAILABLE'] }, LIMITS, half), {
    ok: true,
    faults: { status: 14, statusMessage: 'UNAVAILABLE asked for by x-echo-status: UNAVAILABLE' },
  });
  assert.deepEqual(
    readGrpcFaults({ 'x-echo-status': ['5'], 'x-echo-status-message': ['gone'] }, LIMITS, half),
    { ok: true, faults: { status: 5, statusMessage: 'gone' } },
  );
  assert.deepEqual(readGrpcFaults({ 'x-echo-status': ['ok'] }, LIMITS, half), { ok: true, faults: {} });
  const cases: Array<[Record<string, Array<string | Buffer>>, RegExp]> = [
    [{ 'x-echo-status': ['99'] }, /^x-echo-status="99": expected a status code 0-16 or its name/],
    [{ 'x-echo-status-message': ['alone'] }, /^x-echo-status-message: given without x-echo-status/],
    [
      { 'x-echo-status': ['1'], 'x-echo-status-message': ['m'.repeat(1025)] },
      /^x-echo-status-message: expected at most 1024/,
    ],
    [{ 'x-echo-delay': ['1s', '2s'] }, /^x-echo-delay: expected one value, got 2/],
    [{ 'x-echo-delay': ['never'] }, /^x-echo-delay="never": expected a duration/],
  ];
  for (const [metadata, message] of cases) {
    const read = readGrpcFaults(metadata, LIMITS, half);
    assert.equal(read.ok, false, JSON.stringify(metadata).slice(0, 80));
    assert.match(!read.ok ? read.problem : '', message);
  }
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
