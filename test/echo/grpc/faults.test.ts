import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../../src/echo/config.ts';
import {
  drawGrpcPlan,
  faultKindOf,
  type GrpcFaultSpec,
  grpcEnvDefaults,
  grpcErrorOfHttp,
  grpcStatusOfHttp,
  readGrpcMetadata,
} from '../../../src/echo/grpc/faults.ts';
import type { MetadataValues } from '../../../src/echo/grpc/metadata.ts';
import { seededRandom } from '../../../src/echo/random.ts';

const LIMITS = { maxDelayMs: 10_000, maxResponseBytes: 1024 };
const half = () => 0.5;

/** Reads `metadata` and draws its plan with `random` and the environment `env`. */
function plan(metadata: Record<string, string>, random: () => number = half, env: GrpcFaultSpec = {}) {
  const values: MetadataValues = Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, [v]]));
  const read = readGrpcMetadata(values, LIMITS);
  assert.ok(read.ok, read.ok ? '' : read.problem);
  return drawGrpcPlan({ random, metadata: read, env, maxDelayMs: LIMITS.maxDelayMs });
}

function problemOf(metadata: Record<string, string | string[]>): string {
  const values: MetadataValues = Object.fromEntries(
    Object.entries(metadata).map(([k, v]) => [k, Array.isArray(v) ? v : [v]]),
  );
  const read = readGrpcMetadata(values, LIMITS);
  assert.equal(read.ok, false, JSON.stringify(metadata).slice(0, 100));
  return read.ok ? '' : read.problem;
}

test('grpc faults – every delay key is read by its header parser; the first by precedence wins', () => {
  assert.deepEqual(plan({ 'x-echo-delay': '250ms' }).delay, {
    ms: 250,
    control: 'x-echo-delay',
    source: 'metadata',
  });
  // A weighted list: 0.75 falls in the second half, the 1s entry.
  assert.equal(plan({ 'x-echo-delay': '100ms:50,1s:50' }, () => 0.75).delay?.ms, 1000);
  assert.deepEqual(plan({ 'x-echo-jitter': '200,50' }, () => 1).delay, {
    ms: 250,
    control: 'x-echo-jitter',
    source: 'metadata',
  });
  assert.equal(plan({ 'x-echo-random-delay': '100,300' }, () => 0.5).delay?.ms, 200);
  assert.equal(plan({ 'x-echo-exponential': '100,3' }, () => 0.5).delay?.ms, 400);
  assert.equal(plan({ 'x-echo-latency': '300ms-300ms' }).delay?.ms, 300);
  // x-echo-delay comes before x-echo-jitter.
  assert.equal(plan({ 'x-echo-jitter': '900,0', 'x-echo-delay': '5ms' }).delay?.control, 'x-echo-delay');
  assert.equal(plan({ 'x-echo-delay': '0ms' }).delay, undefined);
});

test('grpc faults – x-echo-status takes a code, a name or a weighted list; OK asks for nothing', () => {
  assert.deepEqual(plan({ 'x-echo-status': 'UNAVAILABLE' }).end, {
    kind: 'status',
    fault: 'status',
    code: 14,
    message: 'UNAVAILABLE asked for by x-echo-status: UNAVAILABLE',
    control: 'x-echo-status',
    source: 'metadata',
  });
  const given = plan({ 'x-echo-status': '5', 'x-echo-status-message': 'gone' }).end;
  assert.equal(given?.kind === 'status' ? given.message : '', 'gone');
  assert.equal(plan({ 'x-echo-status': 'ok' }).end, undefined);
  assert.equal(plan({ 'x-echo-status': 'UNAVAILABLE:30,OK:70' }, () => 0.29).end?.kind, 'status');
  assert.equal(plan({ 'x-echo-status': 'UNAVAILABLE:30,OK:70' }, () => 0.31).end, undefined);
  assert.equal(plan({ 'x-echo-status': 'INTERNAL:30' }, () => 0.5).end, undefined, 'the rest draws nothing');
});

test('grpc faults – x-echo-chaos draws a failure status at its percentage, before error and status', () => {
  const draws = [0.1, 0.0];
  const chaos = plan({ 'x-echo-chaos': '50', 'x-echo-status': 'NOT_FOUND' }, () => draws.shift() ?? 0.5).end;
  assert.equal(chaos?.kind, 'status');
  assert.deepEqual(chaos?.kind === 'status' ? [chaos.fault, chaos.code, chaos.message] : [], [
    'chaos',
    14,
    'chaos: UNAVAILABLE drawn by x-echo-chaos (50%)',
  ]);
  // Above the percentage: no chaos, the status applies.
  const missed = plan({ 'x-echo-chaos': '50', 'x-echo-status': 'NOT_FOUND' }, () => 0.9).end;
  assert.deepEqual(missed?.kind === 'status' ? [missed.fault, missed.code] : [], ['status', 5]);
  assert.equal(plan({ 'x-echo-chaos': '0' }, () => 0).end, undefined);
});

test('grpc faults – x-echo-error: reset, goaway, drop and trailers-only (with the status asked for, else UNAVAILABLE)', () => {
  for (const kind of ['reset', 'goaway', 'drop'] as const)
    assert.deepEqual(plan({ 'x-echo-error': kind.toUpperCase() }).end, {
      kind,
      control: 'x-echo-error',
      source: 'metadata',
    });
  assert.deepEqual(plan({ 'x-echo-error': 'trailers-only' }).end, {
    kind: 'trailers-only',
    code: 14,
    message: 'UNAVAILABLE: a Trailers-Only answer asked for by x-echo-error',
    control: 'x-echo-error',
    source: 'metadata',
  });
  const withStatus = plan({ 'x-echo-error': 'trailers-only', 'x-echo-status': 'PERMISSION_DENIED' }).end;
  assert.deepEqual(withStatus?.kind === 'trailers-only' ? [withStatus.code] : [], [7]);
  const ok = plan({ 'x-echo-error': 'trailers-only', 'x-echo-status': 'OK' }).end;
  assert.deepEqual(ok?.kind === 'trailers-only' ? [ok.code, ok.message] : [], [0, '']);
  assert.equal(plan({ 'x-echo-error': 'reset:50,drop:50' }, () => 0.6).end?.kind, 'drop');
  assert.deepEqual(
    ['reset', 'goaway', 'drop', 'trailers-only'].map((k) => faultKindOf(plan({ 'x-echo-error': k }).end!)),
    ['reset', 'close', 'blackhole', 'empty'],
  );
});

test('grpc faults – response size, fail-after, seed and session are read; fail-after alone ends in UNAVAILABLE', () => {
  assert.deepEqual(plan({ 'x-echo-response-size': '1024' }).responseBytes, {
    bytes: 1024,
    control: 'x-echo-response-size',
    source: 'metadata',
  });
  const failing = plan({ 'x-echo-stream-fail-after': '3' });
  assert.equal(failing.failAfter, 3);
  assert.deepEqual(failing.end?.kind === 'status' ? [failing.end.code, failing.end.control] : [], [
    14,
    'x-echo-stream-fail-after',
  ]);
  const withStatus = plan({ 'x-echo-stream-fail-after': '0', 'x-echo-status': 'ABORTED' });
  assert.deepEqual(
    withStatus.end?.kind === 'status' ? [withStatus.failAfter, withStatus.end.code] : [],
    [0, 10],
  );
  const read = readGrpcMetadata({ 'x-echo-seed': ['42'], 'x-echo-session': ['run-1'] }, LIMITS);
  assert.ok(read.ok);
  assert.deepEqual(read.ok ? [read.seed, read.session] : [], [42, 'run-1']);
});

test('grpc faults – each bad value is a problem naming its key and the value', () => {
  const cases: Array<[Record<string, string | string[]>, RegExp]> = [
    [{ 'x-echo-delay': '11s' }, /^x-echo-delay="11s": delay of 11000 ms is above ECHO_MAX_DELAY/],
    [{ 'x-echo-delay': 'never' }, /^x-echo-delay="never": expected a duration/],
    [{ 'x-echo-delay': ['1s', '2s'] }, /^x-echo-delay: expected one value, got 2/],
    [{ 'x-echo-jitter': 'x' }, /^x-echo-jitter="x": expected base,jitter/],
    [{ 'x-echo-status': '99' }, /^x-echo-status="99": expected a status code 0-16 or its name/],
    [
      { 'x-echo-status': 'UNAVAILABLE:70,OK:70' },
      /^x-echo-status="UNAVAILABLE:70,OK:70": the weights sum to 140/,
    ],
    [{ 'x-echo-status-message': 'alone' }, /^x-echo-status-message: given without x-echo-status/],
    [
      { 'x-echo-status': '1', 'x-echo-status-message': 'm'.repeat(1025) },
      /^x-echo-status-message: expected at most 1024/,
    ],
    [{ 'x-echo-chaos': '101' }, /^x-echo-chaos="101": expected an integer percentage 0-100/],
    [
      { 'x-echo-error': 'timeout' },
      /^x-echo-error="timeout": expected one of reset, goaway, drop, trailers-only/,
    ],
    [
      { 'x-echo-response-size': '1025' },
      /^x-echo-response-size="1025": expected a non-negative integer number of bytes, at most ECHO_MAX_RESPONSE_SIZE \(1024 bytes\)/,
    ],
    [
      { 'x-echo-stream-fail-after': '10001' },
      /^x-echo-stream-fail-after="10001": expected a number of messages 0-10000/,
    ],
    [{ 'x-echo-seed': '-1' }, /^x-echo-seed="-1": expected an integer 0-4294967295/],
    [{ 'x-echo-session': 'a b' }, /^x-echo-session="a b": expected a session id/],
  ];
  for (const [metadata, message] of cases) assert.match(problemOf(metadata), message);
  assert.match(
    problemOf({ 'x-echo-delay': 'x'.repeat(300) }),
    /^x-echo-delay="x{100}…": /,
    'a long value is cut',
  );
});

test('grpc faults – the environment fills what the metadata leaves unset, its HTTP values mapped', () => {
  const config = loadConfig({
    ECHO_DELAY: '40ms',
    ECHO_STATUS: '503',
    ECHO_RESPONSE_SIZE: '16',
    ECHO_CHAOS: '0',
  });
  const env = grpcEnvDefaults(config.faultDefaults, config.chaosPercent);
  const drawn = plan({}, half, env);
  assert.deepEqual(drawn.delay, { ms: 40, control: 'ECHO_DELAY', source: 'env' });
  assert.deepEqual(
    drawn.end?.kind === 'status' ? [drawn.end.code, drawn.end.control, drawn.end.source] : [],
    [14, 'ECHO_STATUS', 'env'],
  );
  assert.deepEqual(drawn.responseBytes, { bytes: 16, control: 'ECHO_RESPONSE_SIZE', source: 'env' });
  // The metadata's own value wins, field by field.
  const own = plan({ 'x-echo-delay': '5ms', 'x-echo-status': 'OK' }, half, env);
  assert.equal(own.delay?.ms, 5);
  assert.equal(own.end, undefined);
  const chaos = grpcEnvDefaults(undefined, 100);
  assert.equal(plan({}, () => 0, chaos).end?.control, 'ECHO_CHAOS');
});

test("grpc faults – HTTP statuses and errors map by gRPC's table", () => {
  assert.deepEqual(
    [200, 302, 400, 401, 403, 404, 429, 500, 502, 503, 504, 418].map(grpcStatusOfHttp),
    [0, 0, 13, 16, 7, 12, 14, 2, 14, 14, 14, 2],
  );
  assert.deepEqual(
    [
      '503',
      'internal',
      'reset',
      'close',
      'slow-close',
      'timeout',
      'blackhole',
      'empty',
      'truncate',
      'garbage',
    ].map((t) => grpcErrorOfHttp(t).kind),
    ['status', 'status', 'reset', 'goaway', 'goaway', 'drop', 'drop', 'trailers-only', 'status', 'status'],
  );
  assert.deepEqual(grpcErrorOfHttp('random'), { kind: 'random' });
});

test('grpc faults – a seed gives the same plan every time; the draws come in one order', () => {
  const metadata = {
    'x-echo-latency': '10ms-900ms',
    'x-echo-chaos': '50',
    'x-echo-response-size': '1:50,1000:50',
  };
  const a = plan(metadata, seededRandom(7));
  const b = plan(metadata, seededRandom(7));
  assert.deepEqual(a, b);
  const runs = new Set(Array.from({ length: 20 }, (_, i) => JSON.stringify(plan(metadata, seededRandom(i)))));
  assert.ok(runs.size > 10, 'other seeds draw other plans');
});
