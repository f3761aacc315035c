import assert from 'node:assert/strict';
import { connect } from 'node:http2';
import { after, before, test } from 'node:test';
import { type Client, type ClientDuplexStream, type ServiceError, status } from '@grpc/grpc-js';
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

// One service for the file: small ceilings, and a short ECHO_REQUEST_TIMEOUT for `drop` without a deadline.
let echo: RunningEcho;
let port: number;
let client: Client;
const Echo = methodOf(EchoServiceClient, 'Echo');
const ServerStream = methodOf(EchoServiceClient, 'ServerStream');
const BidiStream = methodOf(EchoServiceClient, 'BidiStream');

before(async () => {
  port = await freePort();
  echo = await startEcho({
    ECHO_GRPC_PORT: String(port),
    ECHO_MAX_RESPONSE_SIZE: '65536',
    ECHO_MAX_DELAY: '10s',
    ECHO_REQUEST_TIMEOUT: '700ms',
  });
  client = clientOf(EchoServiceClient, port);
});

after(async () => {
  client.close();
  await echo.close();
});

const call = (pairs: ReadonlyArray<readonly [string, string]>, options: { deadlineMs?: number } = {}) =>
  unary<EchoResponse>(client, Echo, { message: 'hi' }, metadataOf(pairs), options);

async function injected(kind: string): Promise<number> {
  const text = await (await fetch(`${echo.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`echo_faults_injected_total{kind="${kind}"}`));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

test('grpc faults – x-echo-chaos: 100 ends every call in a failure status, said in the message and the trailer', async () => {
  const codes: number[] = [
    status.UNAVAILABLE,
    status.INTERNAL,
    status.DEADLINE_EXCEEDED,
    status.RESOURCE_EXHAUSTED,
    status.ABORTED,
    status.UNKNOWN,
  ];
  const before = await injected('chaos');
  for (let i = 0; i < 5; i++) {
    const result = await call([['x-echo-chaos', '100']]);
    assert.ok(codes.includes(result.error?.code ?? -1), String(result.error?.code));
    assert.match(result.error?.details ?? '', /^chaos: [A-Z_]+ drawn by x-echo-chaos \(100%\)$/);
    assert.deepEqual(result.error?.metadata.get('x-echo-fault'), ['chaos']);
  }
  assert.equal(await injected('chaos'), before + 5);
  const none = await call([['x-echo-chaos', '0']]);
  assert.equal(none.error, undefined);
});

/** The completed history entry of `requestId`. */
async function entryOf(
  requestId: string,
): Promise<{ status: number | null; grpc?: { code: number; status: string } }> {
  for (let i = 0; i < 100; i++) {
    const entries = (await (await fetch(`${echo.url}/history?limit=20`)).json()) as Array<{
      request_id: string;
      status: number | null;
      grpc?: { code: number; status: string };
    }>;
    const entry = entries.find((e) => e.request_id === requestId);
    if (entry?.status !== undefined && entry.status !== null) return entry;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no completed entry for ${requestId}`);
}

test('grpc faults – x-echo-error: reset resets the stream (RST_STREAM); the connection serves on', async () => {
  const before = await injected('reset');
  const result = await call([
    ['x-echo-error', 'reset'],
    ['x-request-id', 'reset-1'],
  ]);
  assert.equal(result.error?.code, status.INTERNAL, result.error?.message);
  assert.match(result.error?.details ?? '', /RST_STREAM with code 2/);
  assert.equal(await injected('reset'), before + 1);
  // Recorded as the client saw it, not as a client that left.
  const entry = await entryOf('reset-1');
  assert.deepEqual([entry.status, entry.grpc], [200, { code: 13, status: 'INTERNAL' }]);
  assert.equal((await call([])).value?.message, 'hi');
});

test('grpc faults – x-echo-error: goaway closes the connection; the client connects again', async () => {
  const result = await call([
    ['x-echo-error', 'goaway'],
    ['x-request-id', 'goaway-1'],
  ]);
  assert.equal(result.error?.code, status.UNAVAILABLE, result.error?.message);
  assert.deepEqual((await entryOf('goaway-1')).grpc, { code: 14, status: 'UNAVAILABLE' });
  assert.equal((await call([])).value?.message, 'hi', 'the next call goes on a new connection');
});

test('grpc faults – x-echo-error: drop answers nothing until the deadline, or ECHO_REQUEST_TIMEOUT without one', async () => {
  const timed = await call([['x-echo-error', 'drop']], { deadlineMs: 400 });
  assert.equal(timed.error?.code, status.DEADLINE_EXCEEDED, timed.error?.message);
  assert.ok(timed.elapsedMs >= 350, `held ${timed.elapsedMs} ms`);
  assert.equal(timed.head, undefined, 'no metadata was sent');
  const before = await injected('blackhole');
  const untimed = await call([['x-echo-error', 'drop']]);
  assert.equal(untimed.error?.code, status.CANCELLED, untimed.error?.message);
  assert.ok(untimed.elapsedMs >= 600, `held ${untimed.elapsedMs} ms (ECHO_REQUEST_TIMEOUT 700ms)`);
  assert.equal(await injected('blackhole'), before + 1);
});

/** One raw HTTP/2 gRPC call of Echo: the response's header blocks and data bytes, as the wire has them. */
function rawEcho(
  metadata: Record<string, string>,
): Promise<{ headers: Array<Record<string, unknown>>; data: number; trailers?: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const session = connect(`http://127.0.0.1:${port}`);
    session.on('error', reject);
    // An empty EchoRequest: the 5-byte frame header of a zero-length message.
    const stream = session.request({
      ':method': 'POST',
      ':path': '/echochaos.v1.EchoService/Echo',
      'content-type': 'application/grpc',
      te: 'trailers',
      ...metadata,
    });
    const headers: Array<Record<string, unknown>> = [];
    let data = 0;
    let trailers: Record<string, unknown> | undefined;
    stream.on('response', (h) => headers.push({ ...h }));
    stream.on('trailers', (t) => {
      trailers = { ...t };
    });
    stream.on('data', (chunk: Buffer) => {
      data += chunk.length;
    });
    stream.on('close', () => {
      session.close();
      resolve({ headers, data, ...(trailers === undefined ? {} : { trailers }) });
    });
    stream.end(Buffer.alloc(5));
  });
}

test('grpc faults – x-echo-error: trailers-only answers one HEADERS frame with the status: no message, no trailers after', async () => {
  const wire = await rawEcho({ 'x-echo-error': 'trailers-only', 'x-echo-status': 'PERMISSION_DENIED' });
  assert.equal(wire.headers.length, 1);
  assert.equal(wire.headers[0]?.[':status'], 200);
  assert.equal(wire.headers[0]?.['grpc-status'], '7');
  assert.equal(wire.data, 0);
  assert.equal(wire.trailers, undefined);
  // A normal answer, for contrast: headers, a message, then trailers with the status.
  const normal = await rawEcho({});
  assert.equal(normal.headers[0]?.['grpc-status'], undefined);
  assert.ok(normal.data > 5);
  assert.equal(normal.trailers?.['grpc-status'], '0');
  const result = await call([['x-echo-error', 'trailers-only']]);
  assert.equal(result.error?.code, status.UNAVAILABLE);
  assert.equal(result.error?.details, 'UNAVAILABLE: a Trailers-Only answer asked for by x-echo-error');
});

test('grpc faults – x-echo-response-size sets the payload of each answer', async () => {
  const result = await call([['x-echo-response-size', '1000']]);
  assert.equal(result.value?.payload.length, 1000);
  const streamed = await serverStream<EchoResponse>(
    client,
    ServerStream,
    { count: 2, response_size: 3 },
    metadataOf([['x-echo-response-size', '20']]),
  );
  assert.deepEqual(
    streamed.messages.map((m) => m.payload.length),
    [20, 20],
  );
  const over = await call([['x-echo-response-size', '65537']]);
  assert.equal(over.error?.code, status.INVALID_ARGUMENT);
  assert.match(
    over.error?.details ?? '',
    /^x-echo-response-size="65537": .*ECHO_MAX_RESPONSE_SIZE \(65536 bytes\)/,
  );
});

test('grpc faults – x-echo-stream-fail-after: a server stream fails after N messages with the status asked for', async () => {
  const failed = await serverStream<EchoResponse>(
    client,
    ServerStream,
    { count: 5 },
    metadataOf([
      ['x-echo-stream-fail-after', '2'],
      ['x-echo-status', 'ABORTED'],
    ]),
  );
  assert.deepEqual(
    failed.messages.map((m) => m.sequence),
    [1, 2],
  );
  assert.equal(failed.error?.code, status.ABORTED);
  // Fewer messages than N: the failure takes OK's place at the end. Without a status: UNAVAILABLE.
  const short = await serverStream<EchoResponse>(
    client,
    ServerStream,
    { count: 2 },
    metadataOf([['x-echo-stream-fail-after', '9']]),
  );
  assert.equal(short.messages.length, 2);
  assert.equal(short.error?.code, status.UNAVAILABLE);
  assert.equal(short.error?.details, 'UNAVAILABLE asked for by x-echo-stream-fail-after: 9');
  const unaryCall = await call([['x-echo-stream-fail-after', '1']]);
  assert.equal(unaryCall.error?.code, status.INVALID_ARGUMENT);
  assert.match(unaryCall.error?.details ?? '', /^x-echo-stream-fail-after: only for the methods that stream/);
});

test('grpc faults – x-echo-stream-fail-after on a bidi stream, with x-echo-error: reset', async () => {
  const stream = client.makeBidiStreamRequest(
    BidiStream.path,
    BidiStream.requestSerialize,
    BidiStream.responseDeserialize,
    metadataOf([
      ['x-echo-stream-fail-after', '2'],
      ['x-echo-error', 'reset'],
    ]),
  ) as ClientDuplexStream<object, EchoResponse>;
  const messages: EchoResponse[] = [];
  const ended = new Promise<ServiceError | undefined>((resolve) => {
    stream.on('data', (m: EchoResponse) => messages.push(m));
    stream.on('error', (e: ServiceError) => resolve(e));
    stream.on('end', () => resolve(undefined));
  });
  for (const message of ['a', 'b', 'c']) stream.write({ message });
  const error = await ended;
  assert.deepEqual(
    messages.map((m) => m.message),
    ['a', 'b'],
  );
  assert.equal(error?.code, status.INTERNAL);
  assert.match(error?.details ?? '', /RST_STREAM/);
});

test('grpc faults – x-echo-seed: the same seed draws the same answer; the seed comes back in the metadata', async () => {
  const outcome = async (seed: number) => {
    const result = await call([
      ['x-echo-seed', String(seed)],
      ['x-echo-status', 'UNAVAILABLE:50,OK:50'],
      ['x-echo-response-size', '1:50,2:50'],
    ]);
    assert.deepEqual(result.head?.get('x-echo-seed'), [String(seed)]);
    return result.error === undefined ? `OK ${result.value?.payload.length}` : String(result.error.code);
  };
  const seeds = Array.from({ length: 12 }, (_, i) => i + 1);
  const first = [];
  for (const seed of seeds) first.push(await outcome(seed));
  const second = [];
  for (const seed of seeds) second.push(await outcome(seed));
  assert.deepEqual(second, first);
  assert.ok(new Set(first).size > 1, `seeds draw different answers: ${first.join(' ')}`);
});

test('grpc faults – the trailer x-echo-fault lists what was applied to a normal answer', async () => {
  const delayed = await call([['x-echo-delay', '20ms']]);
  assert.equal(delayed.value?.message, 'hi');
  assert.deepEqual(delayed.trailers?.get('x-echo-fault'), ['delay']);
  const plain = await call([]);
  assert.deepEqual(plain.trailers?.get('x-echo-fault'), []);
});

test('grpc faults – with faults switched off (PUT /control/faults) every call is answered plainly', async () => {
  const put = (enabled: boolean) =>
    fetch(`${echo.url}/control/faults`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ enabled }),
    });
  assert.equal((await put(false)).status, 200);
  try {
    const result = await call([['x-echo-error', 'reset']]);
    assert.equal(result.value?.message, 'hi');
    // A bad value is still refused, as a bad header is over HTTP.
    const bad = await call([['x-echo-status', '99']]);
    assert.equal(bad.error?.code, status.INVALID_ARGUMENT);
  } finally {
    await put(true);
  }
  assert.equal((await call([['x-echo-status', 'NOT_FOUND']])).error?.code, status.NOT_FOUND);
});

test('grpc faults – x-echo-stream-fail-after with reset or goaway: the N messages arrive first', async () => {
  for (const [error, code] of [
    ['reset', status.INTERNAL],
    ['goaway', status.UNAVAILABLE],
  ] as const) {
    for (let run = 0; run < 3; run++) {
      const streamed = await serverStream<EchoResponse>(
        client,
        ServerStream,
        { count: 5 },
        metadataOf([
          ['x-echo-stream-fail-after', '2'],
          ['x-echo-error', error],
        ]),
      );
      assert.deepEqual(
        streamed.messages.map((m) => m.sequence),
        [1, 2],
        `${error}, run ${run}: ${streamed.error?.message}`,
      );
      assert.equal(streamed.error?.code, code);
    }
  }
});
