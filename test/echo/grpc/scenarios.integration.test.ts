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
  unary,
} from './grpc-client.ts';

// One service for the file; each test posts its own set through the real admin route.
let echo: RunningEcho;
let client: Client;
const Echo = methodOf(EchoServiceClient, 'Echo');

before(async () => {
  const port = await freePort();
  echo = await startEcho({ ECHO_GRPC_PORT: String(port), ECHO_MAX_DELAY: '10s' });
  client = clientOf(EchoServiceClient, port);
});

after(async () => {
  client.close();
  await echo.close();
});

async function postSet(set: unknown): Promise<void> {
  const res = await fetch(`${echo.url}/scenario`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(set),
  });
  assert.equal(res.status, 200, await res.text());
}

const call = (pairs: ReadonlyArray<readonly [string, string]> = [], message = 'hi') =>
  unary<EchoResponse>(client, Echo, { message }, metadataOf(pairs));

test('grpc scenarios – a scenario on the method path scripts UNAVAILABLE twice, then the echo answers', async () => {
  await postSet([
    {
      name: 'flaky-echo',
      path: '/echochaos.v1.EchoService/Echo',
      responses: [
        {
          grpcStatus: 'UNAVAILABLE',
          grpcMessage: 'try again',
          repeat: 2,
          grpcMetadata: { 'x-scripted': 'yes' },
          grpcTrailers: { 'x-trailer': 'bye', 'x-blob-bin': Buffer.from([1, 2]).toString('base64') },
        },
        { grpcStatus: 'OK', delay: '40ms' },
      ],
    },
  ]);
  const first = await call();
  assert.equal(first.error?.code, status.UNAVAILABLE);
  assert.equal(first.error?.details, 'try again');
  assert.deepEqual(first.head?.get('x-scripted'), ['yes']);
  assert.deepEqual(first.error?.metadata.get('x-trailer'), ['bye']);
  assert.deepEqual(first.error?.metadata.get('x-blob-bin'), [Buffer.from([1, 2])]);
  const second = await call();
  assert.equal(second.error?.code, status.UNAVAILABLE);
  const third = await call();
  assert.equal(third.error, undefined);
  assert.equal(third.value?.message, 'hi');
  assert.ok(third.elapsedMs >= 35, `the scenario's delay held it ${third.elapsedMs} ms`);
  assert.deepEqual(third.trailers?.get('x-echo-fault'), ['scenario,delay']);
  // History says which scenario answered.
  const entries = (await (
    await fetch(`${echo.url}/history?path=/echochaos.v1.EchoService/Echo&limit=3`)
  ).json()) as Array<{
    faults: Array<{ kind: string; control: string; source: string }>;
  }>;
  assert.ok(
    entries.some((e) =>
      e.faults.some(
        (f) => f.kind === 'scenario' && f.control === 'scenario flaky-echo' && f.source === 'scenario',
      ),
    ),
  );
});

test('grpc scenarios – the metadata wins over the scenario; x-echo-session keeps its own position', async () => {
  await postSet([
    {
      path: '/echochaos.v1.EchoService/Echo',
      responses: [{ grpcStatus: 'NOT_FOUND' }, { grpcStatus: 'ABORTED' }],
    },
  ]);
  const own = await call([['x-echo-status', 'OK']]);
  assert.equal(own.error, undefined, 'x-echo-status: OK wins over the scenario');
  // That call took the first response: the next one gets the second.
  assert.equal((await call()).error?.code, status.ABORTED);
  // A session starts at the first response, apart from the calls without one.
  assert.equal((await call([['x-echo-session', 'run-a']])).error?.code, status.NOT_FOUND);
  assert.equal((await call([['x-echo-session', 'run-a']])).error?.code, status.ABORTED);
  assert.equal((await call([['x-echo-session', 'run-b']])).error?.code, status.NOT_FOUND);
});

test('grpc scenarios – a pattern and a body matcher on the request as JSON; an HTTP status is mapped', async () => {
  await postSet([
    {
      pathPattern: '/echochaos.v1.EchoService/*',
      body: { contains: 'please fail' },
      responses: [{ status: 503 }],
    },
  ]);
  const matched = await call([], 'please fail now');
  assert.equal(matched.error?.code, status.UNAVAILABLE, 'HTTP 503 is UNAVAILABLE');
  const other = await call([], 'all good');
  assert.equal(other.error, undefined);
  await postSet([]);
});
