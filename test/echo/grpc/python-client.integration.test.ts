import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { type RunningEcho, startEcho } from '../../helpers/echo-server.ts';
import { freePort } from './grpc-client.ts';

/**
 * A second, independent gRPC implementation: Debian's python3-grpcio (the C core). It has no code
 * generated from our proto: the script encodes and decodes the few protobuf fields by hand, so it
 * checks the wire format too. Missing, the test fails in CI (`.ci/run` installs it) and is skipped
 * elsewhere, saying why.
 */
const PYTHON = '/usr/bin/python3';
// Before the service starts: a synchronous probe blocks nothing then.
const probe = spawnSync(PYTHON, ['-c', 'import grpc'], { encoding: 'utf8' });
const missing =
  probe.status === 0 ? undefined : `python3-grpcio is not installed (apt-get install -y python3-grpcio)`;
if (missing !== undefined && process.env['CI'] === 'true') throw new Error(`${missing}: required in CI`);

const SCRIPT = String.raw`
import grpc, json, sys, time

def varint(n):
    out = b''
    while True:
        byte = n & 0x7f
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])

def read_varint(buf, i):
    shift = value = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7f) << shift
        shift += 7
        if not byte & 0x80:
            return value, i

def fields(buf):
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = read_varint(buf, i)
        elif wire == 2:
            size, i = read_varint(buf, i)
            value, i = buf[i:i + size], i + size
        else:
            raise ValueError('wire type %d' % wire)
        yield number, value

def echo_response(buf):
    out = {'message': '', 'payload': '', 'metadata': {}, 'request_id': '', 'sequence': 0}
    for number, value in fields(buf):
        if number == 1: out['message'] = value.decode()
        elif number == 2: out['payload'] = value.hex()
        elif number == 3:
            entry = dict(fields(value))
            out['metadata'][entry.get(1, b'').decode()] = entry.get(2, b'').decode()
        elif number == 4: out['request_id'] = value.decode()
        elif number == 5: out['sequence'] = value
    return out

def echo_request(message, payload=b''):
    text = message.encode()
    return b'\x0a' + varint(len(text)) + text + (b'\x12' + varint(len(payload)) + payload if payload else b'')

channel = grpc.insecure_channel('127.0.0.1:' + sys.argv[1])
echo = channel.unary_unary('/echochaos.v1.EchoService/Echo')
server_stream = channel.unary_stream('/echochaos.v1.EchoService/ServerStream')
out = {}
out['echo'] = echo_response(echo(echo_request('from python', b'\x01\x02'), metadata=[('x-request-id', 'py-1'), ('x-from', 'c-core')], timeout=10))
# StreamRequest { count: 3, response_size: 4 }
out['stream'] = [echo_response(m) for m in server_stream(b'\x08\x03\x18\x04', timeout=10)]
try:
    echo(echo_request('x'), metadata=[('x-echo-status', 'UNAVAILABLE'), ('x-echo-status-message', 'asked by python')], timeout=10)
except grpc.RpcError as e:
    out['status'] = [e.code().name, e.details()]
started = time.monotonic()
try:
    echo(echo_request('x'), metadata=[('x-echo-delay', '5s')], timeout=0.3)
except grpc.RpcError as e:
    out['deadline'] = [e.code().name, time.monotonic() - started]
print(json.dumps(out))
`;

let echo: RunningEcho;
let port: number;

before(async () => {
  if (missing !== undefined) return;
  port = await freePort();
  echo = await startEcho({ ECHO_GRPC_PORT: String(port) });
});

after(async () => {
  await echo?.close();
});

test('grpc python client (C core) – unary Echo, server streaming, a status from metadata and a deadline', {
  skip: missing,
}, async () => {
  // Not spawnSync: the service answers from this process.
  const run = await promisify(execFile)(PYTHON, ['-c', SCRIPT, String(port)], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  const out = JSON.parse(run.stdout) as {
    echo: { message: string; payload: string; metadata: Record<string, string>; request_id: string };
    stream: Array<{ message: string; payload: string; sequence: number }>;
    status: [string, string];
    deadline: [string, number];
  };
  assert.equal(out.echo.message, 'from python');
  assert.equal(out.echo.payload, '0102');
  assert.equal(out.echo.request_id, 'py-1');
  assert.equal(out.echo.metadata['x-from'], 'c-core');
  assert.match(out.echo.metadata['user-agent'] ?? '', /grpc-python/);
  assert.deepEqual(
    out.stream.map((m) => [m.sequence, m.message, m.payload]),
    [
      [1, '1 of 3', '78787878'],
      [2, '2 of 3', '78787878'],
      [3, '3 of 3', '78787878'],
    ],
  );
  assert.deepEqual(out.status, ['UNAVAILABLE', 'asked by python']);
  assert.equal(out.deadline[0], 'DEADLINE_EXCEEDED');
  assert.ok(out.deadline[1] < 4, `${out.deadline[1]} s: the deadline, not the delay`);
});
