import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadSync, type MethodDefinition } from '@grpc/proto-loader';
import {
  encodeEchoRequest,
  grpcCallCounts,
  grpcFrame,
  grpcMessages,
  mergeSection,
  startArgs,
} from '../../bench/lib.ts';

/**
 * The pure parts of the bench's gRPC scenario (issue #36) and of a partial run's `--write`: the
 * request h2load sends (a hand-encoded `EchoRequest` in a gRPC frame), read back with proto-loader
 * from the service's own proto; echo-chaos's call counts from a scrape; one section of RESULTS.md
 * replaced, the rest kept; the node arguments of `npm start`.
 */

const PROTO = new URL('../../proto/echochaos/v1/echo.proto', import.meta.url).pathname;
const definition = loadSync(PROTO, {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});
const echo = (definition['echochaos.v1.EchoService'] as Record<string, MethodDefinition<object, object>>)[
  'Echo'
] as MethodDefinition<{ message: string; payload: Buffer }, { message: string; payload: Buffer }>;

test('an EchoRequest encoded by hand decodes with proto-loader, and is the bytes protobufjs writes', () => {
  assert.equal(encodeEchoRequest('', Buffer.alloc(0)).length, 0);
  // Lengths around the varint's byte boundaries (127/128, 16383/16384) and the bench's own request.
  const cases: [string, number][] = [
    ['bench', 128],
    ['', 0],
    ['x', 0],
    ['', 1],
    ['héllo ✓', 127],
    ['a'.repeat(200), 16_383],
    ['b', 16_384],
    ['c', 70_000],
  ];
  for (const [message, size] of cases) {
    const payload = Buffer.alloc(size, 'p');
    const encoded = encodeEchoRequest(message, payload);
    const decoded = echo.requestDeserialize(encoded);
    assert.equal(decoded.message, message, `message of ${JSON.stringify(message)}, ${size}`);
    assert.ok(Buffer.from(decoded.payload).equals(payload), `payload of ${size} bytes`);
    // protobufjs writes a field set to its default too; without one, the bytes are the same.
    if (message !== '' && size > 0)
      assert.ok(encoded.equals(echo.requestSerialize({ message, payload })), `bytes of ${size}`);
  }
});

test('a gRPC frame: flag 0, the length big-endian, the message; frames read back in order', () => {
  const message = encodeEchoRequest('bench', Buffer.alloc(128, 'p'));
  const frame = grpcFrame(message);
  assert.equal(frame.length, 5 + message.length);
  assert.equal(frame[0], 0);
  assert.equal(frame.readUInt32BE(1), message.length);
  assert.deepEqual(frame.subarray(0, 5), Buffer.from([0, 0, 0, 0, message.length]));
  const [one, two, three] = grpcMessages(Buffer.concat([frame, grpcFrame(Buffer.alloc(0)), frame]));
  assert.equal(echo.requestDeserialize(one as Buffer).message, 'bench');
  assert.equal(two?.length, 0);
  assert.ok(three?.equals(message));
  assert.deepEqual(grpcMessages(Buffer.alloc(0)), []);
});

test('a cut or compressed frame is an error, not a message', () => {
  const frame = grpcFrame(Buffer.from('abc'));
  assert.throws(() => grpcMessages(frame.subarray(0, 3)), /header cut/);
  assert.throws(() => grpcMessages(frame.subarray(0, 7)), /frame of 3 bytes cut at 2/);
  const compressed = Buffer.from(frame);
  compressed[0] = 1;
  assert.throws(() => grpcMessages(compressed), /compressed/);
});

test("echo-chaos's gRPC calls of one method, by status, from a scrape", () => {
  const scrape = [
    '# HELP echo_grpc_requests_total gRPC calls ended',
    '# TYPE echo_grpc_requests_total counter',
    'echo_grpc_requests_total{method="/echochaos.v1.EchoService/Echo",code="OK"} 21189',
    'echo_grpc_requests_total{code="CANCELLED",method="/echochaos.v1.EchoService/Echo"} 3',
    'echo_grpc_requests_total{method="/grpc.health.v1.Health/Check",code="OK"} 7',
    'echo_grpc_request_duration_seconds_count{method="/echochaos.v1.EchoService/Echo"} 21192',
    'echo_requests_total{method="GET",code="OK"} 5',
  ].join('\n');
  assert.deepEqual(
    [...grpcCallCounts(scrape, '/echochaos.v1.EchoService/Echo')],
    [
      ['OK', 21189],
      ['CANCELLED', 3],
    ],
  );
  assert.deepEqual([...grpcCallCounts(scrape, '/echochaos.v1.EchoService/BidiStream')], []);
});

const DOC = `# Benchmark results

Written by a full run.

## HTTP/2 (h2c, prior knowledge)

h2 text

| h2 table |

## obs on against obs off

obs text

## RSS after a million requests

million

<!-- bench:operator -->
## Operator at fleet scale (issue #16)
operator
<!-- /bench:operator -->

## Soak

soak
`;

test("a partial run's section replaces its own and keeps every other", () => {
  const section = '## obs on against obs off\n\nnew obs text\n\n| new |\n';
  const merged = mergeSection(DOC, '## obs on against obs off', section, ['## Soak']);
  assert.equal(merged, DOC.replace('obs text\n', 'new obs text\n\n| new |\n'));
  // Twice is the same as once.
  assert.equal(mergeSection(merged, '## obs on against obs off', section, ['## Soak']), merged);
  // The last section before a block ends at the block's marker.
  const million = mergeSection(
    DOC,
    '## RSS after a million requests',
    '## RSS after a million requests\n\n2\n',
    [],
  );
  assert.equal(million, DOC.replace('\nmillion\n', '\n2\n'));
  // The last section of the file.
  assert.equal(
    mergeSection(DOC, '## Soak', '## Soak\n\nnew soak\n', []),
    DOC.replace('\nsoak\n', '\nnew soak\n'),
  );
});

test('a section the file does not have yet goes before the first anchor it has, else at the end', () => {
  const section = '## gRPC unary Echo (issue #36)\n\ngrpc\n';
  const merged = mergeSection(DOC, '## gRPC unary Echo (issue #36)', section, [
    '## not in the file',
    '## obs on against obs off',
    '## Soak',
  ]);
  assert.equal(merged, DOC.replace('## obs on', `${section}\n## obs on`));
  assert.ok(
    merged.includes('| h2 table |\n\n## gRPC unary Echo (issue #36)\n\ngrpc\n\n## obs on against obs off'),
  );
  assert.equal(mergeSection('# R\n', '## New', '## New\n\nx', ['## Soak']), '# R\n\n## New\n\nx\n');
});

test("the node arguments of npm start's script, with or without exec", () => {
  const args = ['--max-semi-space-size=16', '--heap-growing-percent=30', 'src/echo/main.ts'];
  assert.deepEqual(startArgs(`exec node ${args.join(' ')}`), args);
  assert.deepEqual(startArgs(`node  ${args.join(' ')}`), args);
  assert.throws(() => startArgs('tsx src/echo/main.ts'), /does not run node/);
  assert.throws(() => startArgs('exec node'), /does not run node/);
});
