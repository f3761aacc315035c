import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Client, status } from '@grpc/grpc-js';
import { type RunningEcho, startEcho } from '../../helpers/echo-server.ts';
import {
  clientOf,
  type EchoResponse,
  EchoServiceClient,
  freePort,
  metadataOf,
  methodOf,
  serverStream,
  unary,
} from './grpc-client.ts';

// One service for the file: gRPC beside HTTP, history on (the default).
let echo: RunningEcho;
let client: Client;
const Echo = methodOf(EchoServiceClient, 'Echo');
const ServerStream = methodOf(EchoServiceClient, 'ServerStream');

before(async () => {
  const port = await freePort();
  echo = await startEcho({ ECHO_GRPC_PORT: String(port), ECHO_MAX_DELAY: '10s' });
  client = clientOf(EchoServiceClient, port);
});

after(async () => {
  client.close();
  await echo.close();
});

interface Entry {
  id: string;
  request_id: string;
  method: string;
  url: string;
  path: string;
  headers: Record<string, string | string[]>;
  body: string;
  protocol: string;
  remote_addr: string;
  status: number | null;
  duration_ms: number | null;
  faults: Array<{ kind: string; control: string; source: string; value: string | number }>;
  grpc?: { code: number; status: string };
}

/** The entry of `requestId`, once its call has ended (the interceptor completes it just after the status goes). */
async function entryOf(requestId: string): Promise<Entry> {
  for (let i = 0; i < 100; i++) {
    const entries = (await (await fetch(`${echo.url}/history?limit=50`)).json()) as Entry[];
    const entry = entries.find((e) => e.request_id === requestId);
    if (entry !== undefined && entry.status !== null) return entry;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no completed entry for ${requestId}`);
}

test('grpc history – a unary call is an entry: method path, metadata, the request as JSON, gRPC status, duration, faults', async () => {
  const result = await unary<EchoResponse>(
    client,
    Echo,
    { message: 'remember me', payload: Buffer.from([1, 2, 3]) },
    metadataOf([
      ['x-request-id', 'grpc-hist-a'],
      ['x-team', 'blue'],
      ['x-echo-delay', '30ms'],
      ['x-echo-status', 'UNAVAILABLE'],
      ['authorization', 'Bearer secret-token'],
    ]),
  );
  assert.equal(result.error?.code, status.UNAVAILABLE);
  const entry = await entryOf('grpc-hist-a');
  assert.equal(entry.protocol, 'gRPC');
  assert.equal(entry.method, 'POST');
  assert.equal(entry.url, '/echochaos.v1.EchoService/Echo');
  assert.equal(entry.path, '/echochaos.v1.EchoService/Echo');
  assert.equal(entry.headers['x-team'], 'blue');
  assert.equal(entry.headers['authorization'], '[MASKED]', 'metadata is masked like headers');
  assert.deepEqual(JSON.parse(entry.body), {
    message: 'remember me',
    payload: Buffer.from([1, 2, 3]).toString('base64'),
  });
  assert.equal(entry.remote_addr, '127.0.0.1');
  assert.equal(entry.status, 200);
  assert.deepEqual(entry.grpc, { code: 14, status: 'UNAVAILABLE' });
  assert.ok((entry.duration_ms ?? 0) >= 25, String(entry.duration_ms));
  assert.deepEqual(
    entry.faults.map((f) => [f.kind, f.control, f.source, f.value]),
    [
      ['delay', 'x-echo-delay', 'header', 30],
      ['status', 'x-echo-status', 'header', 'UNAVAILABLE'],
    ],
  );
});

test('grpc history – a call past its deadline is DEADLINE_EXCEEDED; a server stream keeps its request; /history filters by path', async () => {
  const late = await unary<EchoResponse>(
    client,
    Echo,
    { message: 'late' },
    metadataOf([
      ['x-request-id', 'grpc-hist-late'],
      ['x-echo-delay', '2s'],
    ]),
    { deadlineMs: 200 },
  );
  assert.equal(late.error?.code, status.DEADLINE_EXCEEDED);
  assert.deepEqual((await entryOf('grpc-hist-late')).grpc, { code: 4, status: 'DEADLINE_EXCEEDED' });

  const streamed = await serverStream<EchoResponse>(
    client,
    ServerStream,
    { count: 2, interval: '1ms' },
    metadataOf([['x-request-id', 'grpc-hist-stream']]),
  );
  assert.equal(streamed.messages.length, 2);
  const entry = await entryOf('grpc-hist-stream');
  assert.deepEqual(JSON.parse(entry.body), { count: 2, interval: '1ms', response_size: 0 });
  assert.deepEqual(entry.grpc, { code: 0, status: 'OK' });

  const byPath = (await (
    await fetch(`${echo.url}/history?path=/echochaos.v1.EchoService/ServerStream`)
  ).json()) as Entry[];
  assert.ok(byPath.length >= 1);
  assert.ok(byPath.every((e) => e.url === '/echochaos.v1.EchoService/ServerStream'));
});

const replay = async (body: object) => {
  const res = await fetch(`${echo.url}/replay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    replayOf: res.headers.get('x-echo-replay-of'),
    // biome-ignore lint/suspicious/noExplicitAny: the answer's shape is what the test checks
    json: (await res.json()) as Record<string, any>,
  };
};

test('grpc replay – a unary call replays through the gRPC port: its request and metadata again, or modified', async () => {
  const first = await unary<EchoResponse>(
    client,
    Echo,
    { message: 'again', payload: Buffer.from('xyz') },
    metadataOf([
      ['x-request-id', 'grpc-replay-a'],
      ['x-team', 'red'],
    ]),
  );
  assert.equal(first.error, undefined);
  await entryOf('grpc-replay-a');
  const same = await replay({ id: 'grpc-replay-a' });
  assert.equal(same.status, 200, JSON.stringify(same.json));
  assert.equal(same.replayOf, 'grpc-replay-a');
  assert.equal(same.json['grpc'].code, 0);
  assert.equal(same.json['grpc'].status, 'OK');
  assert.equal(same.json['response'].message, 'again');
  assert.equal(same.json['response'].payload, Buffer.from('xyz').toString('base64'));
  assert.equal(same.json['response'].metadata['x-team'], 'red');
  assert.equal(same.json['response'].metadata['x-echo-replay-of'], 'grpc-replay-a');

  const modified = await replay({
    id: 'grpc-replay-a',
    modify_headers: { 'x-echo-status': 'NOT_FOUND', 'x-team': 'green' },
    modify_body: JSON.stringify({ message: 'changed' }),
  });
  assert.equal(modified.status, 200);
  assert.equal(modified.json['grpc'].code, status.NOT_FOUND);
  assert.equal(modified.json['grpc'].status, 'NOT_FOUND');
  assert.equal(modified.json['response'], undefined);
  assert.deepEqual(modified.json['trailers']['x-echo-fault'], ['status']);
});

test('grpc replay – a streaming call, a target or a body that is no EchoRequest is a 400 naming why; nothing is sent', async () => {
  await serverStream<EchoResponse>(
    client,
    ServerStream,
    { count: 1 },
    metadataOf([['x-request-id', 'grpc-replay-s']]),
  );
  await entryOf('grpc-replay-s');
  const streaming = await replay({ id: 'grpc-replay-s' });
  assert.equal(streaming.status, 400);
  assert.equal(streaming.json['error'].code, 'ECHO_ERR_REPLAY_GRPC');
  assert.match(
    streaming.json['error'].message,
    /only unary calls of \/echochaos\.v1\.EchoService\/Echo replay/,
  );
  await unary(client, Echo, { message: 'x' }, metadataOf([['x-request-id', 'grpc-replay-b']]));
  await entryOf('grpc-replay-b');
  const before = ((await (await fetch(`${echo.url}/history?limit=200`)).json()) as Entry[]).length;
  const targeted = await replay({ id: 'grpc-replay-b', target: 'http://127.0.0.1:1' });
  assert.equal(targeted.status, 400);
  assert.match(targeted.json['error'].message, /leave out target/);
  const badBody = await replay({ id: 'grpc-replay-b', modify_body: '{"message": 5}' });
  assert.equal(badBody.status, 400);
  assert.match(badBody.json['error'].message, /modify_body: expected an EchoRequest as JSON/);
  const after = ((await (await fetch(`${echo.url}/history?limit=200`)).json()) as Entry[]).length;
  assert.equal(after, before, 'no call was made');
});
