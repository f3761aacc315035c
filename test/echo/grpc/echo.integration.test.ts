import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Client, Metadata, status } from '@grpc/grpc-js';
import { type RunningEcho, startEcho } from '../../helpers/echo-server.ts';
import {
  clientOf,
  type EchoResponse,
  EchoServiceClient,
  freePort,
  HealthClient,
  metadataOf,
  methodOf,
  ReflectionV1AlphaClient,
  ReflectionV1Client,
  serverStream,
  unary,
} from './grpc-client.ts';

// One service for the file: cleartext gRPC beside HTTP, with small ceilings to go over.
let echo: RunningEcho;
let port: number;
let client: Client;
const Echo = methodOf(EchoServiceClient, 'Echo');
const ServerStream = methodOf(EchoServiceClient, 'ServerStream');
const ClientStream = methodOf(EchoServiceClient, 'ClientStream');
const BidiStream = methodOf(EchoServiceClient, 'BidiStream');

before(async () => {
  port = await freePort();
  echo = await startEcho({
    ECHO_GRPC_PORT: String(port),
    MAX_BODY_SIZE: '4096',
    ECHO_MAX_RESPONSE_SIZE: '65536',
    ECHO_MAX_DELAY: '10s',
  });
  client = clientOf(EchoServiceClient, port);
});

after(async () => {
  client.close();
  await echo.close();
});

test('grpc Echo – answers the message, the payload, the metadata and the request id', async () => {
  const payload = Buffer.from([0, 1, 2, 255]);
  const result = await unary<EchoResponse>(
    client,
    Echo,
    { message: 'hello', payload },
    metadataOf([
      ['x-team', 'a'],
      ['x-team', 'b'],
      ['trace-bin', Buffer.from([1, 2, 3])],
      ['x-request-id', 'req-42'],
    ]),
  );
  assert.equal(result.error, undefined);
  const value = result.value as EchoResponse;
  assert.equal(value.message, 'hello');
  assert.deepEqual(value.payload, payload);
  assert.equal(value.metadata['x-team'], 'a, b');
  assert.equal(value.metadata['trace-bin'], Buffer.from([1, 2, 3]).toString('base64'));
  assert.equal(value.request_id, 'req-42');
  assert.equal(value.sequence, 0);
  assert.deepEqual(result.head?.get('x-request-id'), ['req-42']);
});

test('grpc Echo – without an acceptable x-request-id the answer carries a new one', async () => {
  const plain = await unary<EchoResponse>(client, Echo, { message: 'x' });
  assert.match(plain.value?.request_id ?? '', /^[0-9a-f-]{36}$/);
  const tooLong = await unary<EchoResponse>(
    client,
    Echo,
    { message: 'x' },
    metadataOf([['x-request-id', 'a'.repeat(200)]]),
  );
  assert.match(tooLong.value?.request_id ?? '', /^[0-9a-f-]{36}$/);
  assert.deepEqual(tooLong.head?.get('x-request-id'), [tooLong.value?.request_id]);
});

test('grpc ServerStream – sends count answers, interval apart, with payloads of response_size', async () => {
  const startedMs = performance.now();
  const result = await serverStream<EchoResponse>(client, ServerStream, {
    count: 3,
    interval: '50ms',
    response_size: 10,
  });
  const elapsedMs = performance.now() - startedMs;
  assert.equal(result.error, undefined);
  assert.deepEqual(
    result.messages.map((m) => [m.sequence, m.message, m.payload.length]),
    [
      [1, '1 of 3', 10],
      [2, '2 of 3', 10],
      [3, '3 of 3', 10],
    ],
  );
  assert.ok(elapsedMs >= 99, `two intervals of 50 ms took ${elapsedMs} ms`);
});

test('grpc ServerStream – bad fields are INVALID_ARGUMENT naming the field', async () => {
  for (const [request, field] of [
    [{ count: 0 }, 'count'],
    [{ count: 1001 }, 'count'],
    [{ count: 1, interval: 'soon' }, 'interval'],
    [{ count: 1, interval: '61s' }, 'interval'],
    [{ count: 1, response_size: 65537 }, 'response_size'],
    [{ count: 1, response_size: -1 }, 'response_size'],
  ] as const) {
    const result = await serverStream(client, ServerStream, request);
    assert.equal(result.error?.code, status.INVALID_ARGUMENT, JSON.stringify(request));
    assert.match(result.error?.details ?? '', new RegExp(`^${field}: `), JSON.stringify(request));
    assert.equal(result.messages.length, 0);
  }
});

test('grpc ClientStream – answers once with the messages and payloads concatenated, bounded by MAX_BODY_SIZE', async () => {
  const send = (parts: ReadonlyArray<{ message: string; payload: Buffer }>) =>
    new Promise<{ value?: EchoResponse; error?: { code: number; details: string } }>((resolve) => {
      const call = client.makeClientStreamRequest(
        ClientStream.path,
        ClientStream.requestSerialize,
        ClientStream.responseDeserialize,
        new Metadata(),
        {},
        (error, value) => resolve(error === null ? { value: value as EchoResponse } : { error }),
      );
      for (const part of parts) call.write(part);
      call.end();
    });
  const ok = await send([
    { message: 'ab', payload: Buffer.from([1]) },
    { message: 'cd', payload: Buffer.from([2, 3]) },
  ]);
  assert.equal(ok.value?.message, 'abcd');
  assert.deepEqual(ok.value?.payload, Buffer.from([1, 2, 3]));
  const big = await send(
    Array.from({ length: 3 }, () => ({ message: 'x'.repeat(2000), payload: Buffer.alloc(0) })),
  );
  assert.equal(big.error?.code, status.RESOURCE_EXHAUSTED);
  assert.match(big.error?.details ?? '', /MAX_BODY_SIZE \(4096 bytes\)/);
});

test('grpc BidiStream – echoes each message as it comes', async () => {
  const call = client.makeBidiStreamRequest(
    BidiStream.path,
    BidiStream.requestSerialize,
    BidiStream.responseDeserialize,
    metadataOf([['x-request-id', 'bidi-1']]),
  );
  const next = () => new Promise<EchoResponse>((resolve) => call.once('data', resolve));
  // Each answer comes before the next message is sent: echoed as it comes, not at the end.
  for (const [i, text] of ['one', 'two', 'three'].entries()) {
    const answer = next();
    call.write({ message: text, payload: Buffer.from(text) });
    const got = await answer;
    assert.equal(got.message, text);
    assert.deepEqual(got.payload, Buffer.from(text));
    assert.equal(got.sequence, i + 1);
    assert.equal(got.request_id, 'bidi-1');
  }
  const ended = new Promise<void>((resolve, reject) => {
    call.on('end', resolve);
    call.on('error', reject);
  });
  call.end();
  await ended;
});

test('grpc faults – x-echo-status by code and by name, with x-echo-status-message', async () => {
  const byCode = await unary(client, Echo, { message: 'x' }, metadataOf([['x-echo-status', '14']]));
  assert.equal(byCode.error?.code, status.UNAVAILABLE);
  assert.match(byCode.error?.details ?? '', /UNAVAILABLE asked for by x-echo-status: 14/);
  const byName = await unary(
    client,
    Echo,
    { message: 'x' },
    metadataOf([
      ['x-echo-status', 'not_found'],
      ['x-echo-status-message', 'no such thing, on purpose'],
    ]),
  );
  assert.equal(byName.error?.code, status.NOT_FOUND);
  assert.equal(byName.error?.details, 'no such thing, on purpose');
  const ok = await unary<EchoResponse>(client, Echo, { message: 'x' }, metadataOf([['x-echo-status', 'OK']]));
  assert.equal(ok.value?.message, 'x');
  // The streams end with it too, before anything is sent.
  const stream = await serverStream(
    client,
    ServerStream,
    { count: 3 },
    metadataOf([['x-echo-status', 'RESOURCE_EXHAUSTED']]),
  );
  assert.equal(stream.error?.code, status.RESOURCE_EXHAUSTED);
  assert.equal(stream.messages.length, 0);
});

test('grpc faults – x-echo-delay holds the answer at least that long, a duration or a weighted list', async () => {
  const fixed = await unary<EchoResponse>(
    client,
    Echo,
    { message: 'x' },
    metadataOf([['x-echo-delay', '300ms']]),
  );
  assert.equal(fixed.value?.message, 'x');
  assert.ok(fixed.elapsedMs >= 299, `${fixed.elapsedMs} ms`);
  assert.ok(fixed.elapsedMs < 3000, `${fixed.elapsedMs} ms`);
  const range = await unary(
    client,
    Echo,
    { message: 'x' },
    metadataOf([['x-echo-delay', '200ms:60,250-300ms:40']]),
  );
  assert.equal(range.error, undefined);
  assert.ok(range.elapsedMs >= 199, `${range.elapsedMs} ms`);
  // A delay and a status: the status comes after the delay.
  const both = await unary(
    client,
    Echo,
    { message: 'x' },
    metadataOf([
      ['x-echo-delay', '200'],
      ['x-echo-status', 'ABORTED'],
    ]),
  );
  assert.equal(both.error?.code, status.ABORTED);
  assert.ok(both.elapsedMs >= 199, `${both.elapsedMs} ms`);
});

test("grpc faults – a delay past the client's deadline ends in DEADLINE_EXCEEDED", async () => {
  const result = await unary(client, Echo, { message: 'x' }, metadataOf([['x-echo-delay', '5s']]), {
    deadlineMs: 300,
  });
  assert.equal(result.error?.code, status.DEADLINE_EXCEEDED);
  assert.ok(result.elapsedMs < 4000, `${result.elapsedMs} ms: the deadline, not the delay`);
  // The service goes on answering: the held call left nothing behind.
  const next = await unary<EchoResponse>(client, Echo, { message: 'after' });
  assert.equal(next.value?.message, 'after');
});

test('grpc faults – a bad metadata value is INVALID_ARGUMENT naming the key', async () => {
  for (const [pairs, key] of [
    [[['x-echo-delay', 'soon']], 'x-echo-delay'],
    [[['x-echo-delay', '11s']], 'x-echo-delay'],
    [[['x-echo-status', '17']], 'x-echo-status'],
    [[['x-echo-status', 'BROKEN']], 'x-echo-status'],
    [[['x-echo-status-message', 'alone']], 'x-echo-status-message'],
    [
      [
        ['x-echo-status', '2'],
        ['x-echo-status', '3'],
      ],
      'x-echo-status',
    ],
  ] as const) {
    const result = await unary(client, Echo, { message: 'x' }, metadataOf(pairs));
    assert.equal(result.error?.code, status.INVALID_ARGUMENT, JSON.stringify(pairs));
    assert.ok(result.error?.details.startsWith(key), `${result.error?.details} names ${key}`);
  }
});

test('grpc health – "" and echochaos.v1.EchoService are SERVING; an unknown service is NOT_FOUND', async () => {
  const health = clientOf(HealthClient, port);
  const Check = methodOf(HealthClient, 'Check');
  try {
    for (const service of ['', 'echochaos.v1.EchoService']) {
      const result = await unary<{ status: string }>(health, Check, { service });
      assert.equal(result.value?.status, 'SERVING', service);
    }
    const unknown = await unary(health, Check, { service: 'no.such.Service' });
    assert.equal(unknown.error?.code, status.NOT_FOUND);
  } finally {
    health.close();
  }
});

test('grpc health – follows PUT /control/readiness: NOT_SERVING while readiness is off, SERVING again after', async () => {
  const health = clientOf(HealthClient, port);
  const Check = methodOf(HealthClient, 'Check');
  const statusOf = async (service: string) =>
    (await unary<{ status: string }>(health, Check, { service })).value?.status;
  const put = (ready: boolean) =>
    fetch(`${echo.url}/control/readiness`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ready }),
    });
  try {
    assert.equal((await put(false)).status, 200);
    assert.equal((await fetch(`${echo.url}/ready`)).status, 503);
    for (const service of ['', 'echochaos.v1.EchoService'])
      assert.equal(await statusOf(service), 'NOT_SERVING');
    assert.equal((await put(true)).status, 200);
    for (const service of ['', 'echochaos.v1.EchoService']) assert.equal(await statusOf(service), 'SERVING');
  } finally {
    await put(true);
    health.close();
  }
});

test('grpc reflection – v1 and v1alpha list the echo service, health and reflection', async () => {
  for (const service of [ReflectionV1Client, ReflectionV1AlphaClient]) {
    const reflection = clientOf(service, port);
    const Info = methodOf(service, 'ServerReflectionInfo');
    try {
      const answer = await new Promise<{ list_services_response?: { service: Array<{ name: string }> } }>(
        (resolve, reject) => {
          const call = reflection.makeBidiStreamRequest(
            Info.path,
            Info.requestSerialize,
            Info.responseDeserialize,
            new Metadata(),
          );
          call.once('data', (data) => {
            resolve(data as { list_services_response?: { service: Array<{ name: string }> } });
            call.end();
          });
          call.on('error', reject);
          call.write({ list_services: '' });
        },
      );
      const names = answer.list_services_response?.service.map((s) => s.name) ?? [];
      assert.ok(names.includes('echochaos.v1.EchoService'), names.join(', '));
      assert.ok(names.includes('grpc.health.v1.Health'), names.join(', '));
    } finally {
      reflection.close();
    }
  }
});

test('grpc faults – the client and bidi streams take x-echo-delay and x-echo-status too, and refuse bad values', async () => {
  const clientStream = (pairs: ReadonlyArray<readonly [string, string]>) =>
    new Promise<{ value?: EchoResponse; error?: { code: number; details: string }; elapsedMs: number }>(
      (resolve) => {
        const startedMs = performance.now();
        const call = client.makeClientStreamRequest(
          ClientStream.path,
          ClientStream.requestSerialize,
          ClientStream.responseDeserialize,
          metadataOf(pairs),
          {},
          (error, value) =>
            resolve({
              ...(error === null ? { value: value as EchoResponse } : { error }),
              elapsedMs: performance.now() - startedMs,
            }),
        );
        call.write({ message: 'a', payload: Buffer.alloc(0) });
        call.end();
      },
    );
  const delayed = await clientStream([['x-echo-delay', '200ms']]);
  assert.equal(delayed.value?.message, 'a');
  assert.ok(delayed.elapsedMs >= 199, `${delayed.elapsedMs} ms`);
  assert.equal(
    (await clientStream([['x-echo-status', 'PERMISSION_DENIED']])).error?.code,
    status.PERMISSION_DENIED,
  );
  const bad = await clientStream([['x-echo-status', 'nope']]);
  assert.equal(bad.error?.code, status.INVALID_ARGUMENT);
  assert.match(bad.error?.details ?? '', /^x-echo-status=/);

  const bidi = (pairs: ReadonlyArray<readonly [string, string]>) =>
    new Promise<{ messages: EchoResponse[]; error?: { code: number; details: string }; elapsedMs: number }>(
      (resolve) => {
        const startedMs = performance.now();
        const messages: EchoResponse[] = [];
        const call = client.makeBidiStreamRequest(
          BidiStream.path,
          BidiStream.requestSerialize,
          BidiStream.responseDeserialize,
          metadataOf(pairs),
        );
        call.on('data', (m: EchoResponse) => messages.push(m));
        call.on('error', (error: { code: number; details: string }) =>
          resolve({ messages, error, elapsedMs: performance.now() - startedMs }),
        );
        call.on('end', () => resolve({ messages, elapsedMs: performance.now() - startedMs }));
        call.write({ message: 'first', payload: Buffer.alloc(0) });
        call.write({ message: 'second', payload: Buffer.alloc(0) });
        call.end();
      },
    );
  const held = await bidi([['x-echo-delay', '200ms']]);
  assert.deepEqual(
    held.messages.map((m) => m.message),
    ['first', 'second'],
  );
  assert.ok(held.elapsedMs >= 199, `${held.elapsedMs} ms`);
  const failed = await bidi([
    ['x-echo-status', 'UNAUTHENTICATED'],
    ['x-echo-status-message', 'who are you'],
  ]);
  assert.equal(failed.error?.code, status.UNAUTHENTICATED);
  assert.equal(failed.error?.details, 'who are you');
  assert.equal(failed.messages.length, 0);
  const refused = await bidi([['x-echo-delay', '-1s']]);
  assert.equal(refused.error?.code, status.INVALID_ARGUMENT);
  assert.match(refused.error?.details ?? '', /^x-echo-delay=/);
});
