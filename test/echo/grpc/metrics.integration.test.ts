/**
 * The gRPC calls' meters through the real ports (issue #36 item 6): calls on the gRPC port, then
 * `/metrics` read over HTTP. `echo_grpc_requests_total{method,code}` counts every call once, at its
 * end, whatever the end (answered, a status fault, a bad value, the deadline, the client gone);
 * `echo_grpc_request_duration_seconds{method}` times them; `echo_faults_injected_total{kind}`
 * counts gRPC's delay and status faults as it does HTTP's.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { type Client, Metadata, status } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { ECHO_PROTO_PATH, servedMethods } from '../../../src/echo/grpc/server.ts';
import { type RunningEcho, startEcho } from '../../helpers/echo-server.ts';
import { seriesValue } from '../../helpers/metrics.ts';
import {
  clientOf,
  type EchoResponse,
  EchoServiceClient,
  freePort,
  HealthClient,
  metadataOf,
  methodOf,
  ReflectionV1Client,
  serverStream,
  unary,
} from './grpc-client.ts';

const Echo = methodOf(EchoServiceClient, 'Echo');
const ServerStream = methodOf(EchoServiceClient, 'ServerStream');
const ClientStream = methodOf(EchoServiceClient, 'ClientStream');
const BidiStream = methodOf(EchoServiceClient, 'BidiStream');

const calls = (method: string, code: string) => `echo_grpc_requests_total{method="${method}",code="${code}"}`;
const fault = (kind: string) => `echo_faults_injected_total{kind="${kind}"}`;

async function scrape(echo: RunningEcho): Promise<string> {
  return (await fetch(`${echo.url}/metrics`)).text();
}

/** Scrapes until `series` is `value` (a call is counted when the server sees it end), at most 5 s. */
async function scrapeUntil(echo: RunningEcho, series: string, value: number): Promise<string> {
  const until = Date.now() + 5_000;
  for (;;) {
    const text = await scrape(echo);
    if (seriesValue(text, series) === value || Date.now() > until) return text;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Every `echo_grpc_requests_total` sample of a scrape, as `series value` lines. */
function grpcSamples(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('echo_grpc_requests_total{'))
    .sort();
}

/** An echo with its gRPC port, and a client of it; both closed after the test. */
async function withGrpc(t: {
  after(fn: () => unknown): void;
}): Promise<{ echo: RunningEcho; client: Client; port: number }> {
  const port = await freePort();
  const echo = await startEcho({ ECHO_GRPC_PORT: String(port), ECHO_MAX_DELAY: '10s' });
  const client = clientOf(EchoServiceClient, port);
  t.after(async () => {
    client.close();
    await echo.close();
  });
  return { echo, client, port };
}

/** Writes `messages` on a client or bidi stream and waits for its end. */
function stream(client: Client, method: typeof ClientStream, messages: string[]): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const done = (error: unknown, value?: unknown) => (error ? reject(error) : resolve(value));
    const call =
      method.path === ClientStream.path
        ? client.makeClientStreamRequest(
            method.path,
            method.requestSerialize,
            method.responseDeserialize,
            new Metadata(),
            done,
          )
        : client.makeBidiStreamRequest(method.path, method.requestSerialize, method.responseDeserialize);
    if (method.path !== ClientStream.path) {
      call.on('data', () => {});
      call.on('end', () => resolve(undefined));
      call.on('error', reject);
    }
    for (const message of messages) call.write({ message, payload: Buffer.alloc(0) });
    call.end();
  });
}

test('grpc metrics – the method label is a fixed set: the echo service, health and reflection', () => {
  const definition = loadSync([ECHO_PROTO_PATH, healthProtoPath], { keepCase: true });
  assert.deepEqual([...servedMethods(definition)].sort(), [
    '/echochaos.v1.EchoService/BidiStream',
    '/echochaos.v1.EchoService/ClientStream',
    '/echochaos.v1.EchoService/Echo',
    '/echochaos.v1.EchoService/ServerStream',
    '/grpc.health.v1.Health/Check',
    '/grpc.health.v1.Health/List',
    '/grpc.health.v1.Health/Watch',
    '/grpc.reflection.v1.ServerReflection/ServerReflectionInfo',
    '/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo',
  ]);
});

test('grpc metrics – each method, a status fault, a delay, a bad value, health and reflection: each call counted once, by method and code', async (t) => {
  const { echo, client, port } = await withGrpc(t);
  const before = await scrape(echo);
  // The meters are there from the start, with no call yet.
  assert.match(before, /^# TYPE echo_grpc_requests_total counter$/m);
  assert.match(before, /^# TYPE echo_grpc_request_duration_seconds histogram$/m);
  assert.deepEqual(grpcSamples(before), []);
  assert.equal(seriesValue(before, fault('delay')), 0);
  assert.equal(seriesValue(before, fault('status')), 0);

  assert.equal((await unary<EchoResponse>(client, Echo, { message: 'a' })).value?.message, 'a');
  const stream3 = await serverStream<EchoResponse>(client, ServerStream, { count: 3, interval: '0s' });
  assert.equal(stream3.messages.length, 3);
  await stream(client, ClientStream, ['x', 'y']);
  await stream(client, BidiStream, ['x', 'y']);
  const unavailable = await unary(
    client,
    Echo,
    { message: 'a' },
    metadataOf([['x-echo-status', 'UNAVAILABLE']]),
  );
  assert.equal(unavailable.error?.code, status.UNAVAILABLE);
  const delayed = await unary<EchoResponse>(
    client,
    Echo,
    { message: 'd' },
    metadataOf([['x-echo-delay', '20ms']]),
  );
  assert.equal(delayed.value?.message, 'd');
  const bad = await unary(client, Echo, { message: 'a' }, metadataOf([['x-echo-delay', 'soon']]));
  assert.equal(bad.error?.code, status.INVALID_ARGUMENT);
  const health = clientOf(HealthClient, port);
  const check = await unary<{ status: string }>(health, methodOf(HealthClient, 'Check'), { service: '' });
  health.close();
  assert.equal(check.value?.status, 'SERVING');
  const reflection = clientOf(ReflectionV1Client, port);
  await stream(reflection, methodOf(ReflectionV1Client, 'ServerReflectionInfo'), []);
  reflection.close();

  const reflectionPath = '/grpc.reflection.v1.ServerReflection/ServerReflectionInfo';
  const text = await scrapeUntil(echo, calls(reflectionPath, 'OK'), 1);
  assert.deepEqual(grpcSamples(text), [
    `${calls('/echochaos.v1.EchoService/BidiStream', 'OK')} 1`,
    `${calls('/echochaos.v1.EchoService/ClientStream', 'OK')} 1`,
    `${calls('/echochaos.v1.EchoService/Echo', 'INVALID_ARGUMENT')} 1`,
    `${calls('/echochaos.v1.EchoService/Echo', 'OK')} 2`,
    `${calls('/echochaos.v1.EchoService/Echo', 'UNAVAILABLE')} 1`,
    `${calls('/echochaos.v1.EchoService/ServerStream', 'OK')} 1`,
    `${calls('/grpc.health.v1.Health/Check', 'OK')} 1`,
    `${calls(reflectionPath, 'OK')} 1`,
  ]);
  // One duration per call, by method; the delayed call is in the 25 ms bucket or above.
  const count = (method: string) =>
    seriesValue(text, `echo_grpc_request_duration_seconds_count{method="${method}"}`);
  assert.equal(count('/echochaos.v1.EchoService/Echo'), 4);
  assert.equal(count('/echochaos.v1.EchoService/ServerStream'), 1);
  assert.equal(count('/grpc.health.v1.Health/Check'), 1);
  assert.equal(
    seriesValue(
      text,
      'echo_grpc_request_duration_seconds_bucket{le="0.01",method="/echochaos.v1.EchoService/Echo"}',
    ) <= 3,
    true,
  );
  // The faults, counted as HTTP's are: one delay, one status; the bad value is no fault.
  assert.equal(seriesValue(text, fault('delay')), 1);
  assert.equal(seriesValue(text, fault('status')), 1);
  // No HTTP request was counted for any of it: the only ones are the scrapes.
  assert.doesNotMatch(text, /^echo_requests_total\{(?![^}]*path="\/metrics")/m);

  const probe = spawnSync('promtool', ['--version'], { encoding: 'utf8', timeout: 10_000 });
  if (probe.error !== undefined) {
    const why = 'promtool not found on PATH (Debian package prometheus); .ci/run installs it';
    if (process.env['CI']) assert.fail(`${why}: required in CI`);
    t.diagnostic(why);
    return;
  }
  const checked = spawnSync('promtool', ['check', 'metrics'], {
    input: text,
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(checked.status, 0, `promtool check metrics:\n${checked.stdout}${checked.stderr}`);
});

test("grpc metrics – a delay past the client's deadline is counted DEADLINE_EXCEEDED, and its delay once", async (t) => {
  const { echo, client } = await withGrpc(t);
  const result = await unary(client, Echo, { message: 'x' }, metadataOf([['x-echo-delay', '5s']]), {
    deadlineMs: 200,
  });
  assert.equal(result.error?.code, status.DEADLINE_EXCEEDED);
  const text = await scrapeUntil(echo, calls('/echochaos.v1.EchoService/Echo', 'DEADLINE_EXCEEDED'), 1);
  assert.deepEqual(grpcSamples(text), [`${calls('/echochaos.v1.EchoService/Echo', 'DEADLINE_EXCEEDED')} 1`]);
  assert.equal(seriesValue(text, fault('delay')), 1);
  assert.equal(seriesValue(text, fault('status')), 0);
  const seconds = seriesValue(
    text,
    'echo_grpc_request_duration_seconds_sum{method="/echochaos.v1.EchoService/Echo"}',
  );
  assert.ok(seconds >= 0.15 && seconds < 2, `${seconds} s: the deadline, not the delay`);

  // A stream whose answer began (its head and first message sent) before the deadline passed.
  const call = client.makeServerStreamRequest(
    ServerStream.path,
    ServerStream.requestSerialize,
    ServerStream.responseDeserialize,
    { count: 10, interval: '1s' },
    new Metadata(),
    { deadline: Date.now() + 300 },
  );
  call.on('data', () => {});
  const code = await new Promise<number>((resolve) =>
    call.on('error', (e: { code: number }) => resolve(e.code)),
  );
  assert.equal(code, status.DEADLINE_EXCEEDED);
  const streamed = await scrapeUntil(
    echo,
    calls('/echochaos.v1.EchoService/ServerStream', 'DEADLINE_EXCEEDED'),
    1,
  );
  assert.deepEqual(grpcSamples(streamed), [
    `${calls('/echochaos.v1.EchoService/Echo', 'DEADLINE_EXCEEDED')} 1`,
    `${calls('/echochaos.v1.EchoService/ServerStream', 'DEADLINE_EXCEEDED')} 1`,
  ]);
});

test('grpc metrics – a stream the client cancels is counted CANCELLED, once', async (t) => {
  const { echo, client } = await withGrpc(t);
  // A server stream cancelled after its first message.
  const server = client.makeServerStreamRequest(
    ServerStream.path,
    ServerStream.requestSerialize,
    ServerStream.responseDeserialize,
    { count: 50, interval: '100ms' },
    new Metadata(),
  );
  const ended = new Promise<number>((resolve) =>
    server.on('error', (e: { code: number }) => resolve(e.code)),
  );
  await new Promise((resolve) => server.once('data', resolve));
  server.cancel();
  assert.equal(await ended, status.CANCELLED);
  // A bidi stream cancelled after one echo.
  const bidi = client.makeBidiStreamRequest(
    BidiStream.path,
    BidiStream.requestSerialize,
    BidiStream.responseDeserialize,
  );
  bidi.on('error', () => {});
  const echoed = new Promise((resolve) => bidi.once('data', resolve));
  bidi.write({ message: 'one', payload: Buffer.alloc(0) });
  await echoed;
  bidi.cancel();

  const text = await scrapeUntil(echo, calls('/echochaos.v1.EchoService/BidiStream', 'CANCELLED'), 1);
  const settled = await scrapeUntil(echo, calls('/echochaos.v1.EchoService/ServerStream', 'CANCELLED'), 1);
  assert.ok(text.length > 0);
  // Later calls and ends change nothing: each call was counted once.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const later = await scrape(echo);
  for (const scraped of [settled, later])
    assert.deepEqual(grpcSamples(scraped), [
      `${calls('/echochaos.v1.EchoService/BidiStream', 'CANCELLED')} 1`,
      `${calls('/echochaos.v1.EchoService/ServerStream', 'CANCELLED')} 1`,
    ]);
});

test('grpc metrics – a status fault on a server stream is counted with its code and as a status fault', async (t) => {
  const { echo, client } = await withGrpc(t);
  const result = await serverStream(
    client,
    ServerStream,
    { count: 2, interval: '0s' },
    metadataOf([
      ['x-echo-status', 'RESOURCE_EXHAUSTED'],
      ['x-echo-delay', '10ms'],
    ]),
  );
  assert.equal(result.error?.code, status.RESOURCE_EXHAUSTED);
  const text = await scrapeUntil(
    echo,
    calls('/echochaos.v1.EchoService/ServerStream', 'RESOURCE_EXHAUSTED'),
    1,
  );
  assert.deepEqual(grpcSamples(text), [
    `${calls('/echochaos.v1.EchoService/ServerStream', 'RESOURCE_EXHAUSTED')} 1`,
  ]);
  assert.equal(seriesValue(text, fault('status')), 1);
  assert.equal(seriesValue(text, fault('delay')), 1);
});
