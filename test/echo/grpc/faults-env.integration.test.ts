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

// One service for the file, with the environment's defaults: what a client that sends no metadata gets.
let echo: RunningEcho;
let client: Client;
const Echo = methodOf(EchoServiceClient, 'Echo');

before(async () => {
  const port = await freePort();
  echo = await startEcho({
    ECHO_GRPC_PORT: String(port),
    ECHO_STATUS: '503:50',
    ECHO_DELAY: '30ms',
    ECHO_RESPONSE_SIZE: '8',
    ECHO_SEED: '1234',
  });
  client = clientOf(EchoServiceClient, port);
});

after(async () => {
  client.close();
  await echo.close();
});

const call = (pairs: ReadonlyArray<readonly [string, string]> = []) =>
  unary<EchoResponse>(client, Echo, { message: 'env' }, metadataOf(pairs));

test('grpc env – ECHO_STATUS (503 as UNAVAILABLE), ECHO_DELAY and ECHO_RESPONSE_SIZE apply to a call without metadata', async () => {
  const outcomes: string[] = [];
  for (let i = 0; i < 16; i++) {
    const result = await call();
    assert.ok(result.elapsedMs >= 25, `held ${result.elapsedMs} ms by ECHO_DELAY`);
    assert.match(
      result.head?.get('x-echo-seed')[0]?.toString() ?? '',
      /^\d+$/,
      'ECHO_SEED gives every call a seed',
    );
    if (result.error === undefined) {
      assert.equal(result.value?.payload.length, 8);
      assert.deepEqual(result.trailers?.get('x-echo-fault'), ['delay']);
      outcomes.push('OK');
    } else {
      assert.equal(result.error.code, status.UNAVAILABLE);
      assert.equal(result.error.details, 'UNAVAILABLE asked for by ECHO_STATUS: UNAVAILABLE');
      assert.deepEqual(result.error.metadata.get('x-echo-fault'), ['delay,status']);
      outcomes.push('UNAVAILABLE');
    }
  }
  assert.ok(outcomes.includes('OK') && outcomes.includes('UNAVAILABLE'), outcomes.join(' '));
});

test('grpc env – the metadata wins field by field over the environment', async () => {
  const result = await call([
    ['x-echo-status', 'OK'],
    ['x-echo-delay', '0ms'],
    ['x-echo-response-size', '3'],
  ]);
  assert.equal(result.error, undefined);
  assert.equal(result.value?.payload.length, 3);
  assert.deepEqual(result.trailers?.get('x-echo-fault'), []);
});

test('grpc env – x-echo-seed replaces the seed of ECHO_SEED, and the same seed draws the same status', async () => {
  const seeded = async (seed: string) => {
    const result = await call([['x-echo-seed', seed]]);
    assert.deepEqual(result.head?.get('x-echo-seed'), [seed]);
    return result.error?.code ?? 0;
  };
  const seeds = ['1', '2', '3', '4', '5', '6', '7', '8'];
  const first = [];
  for (const s of seeds) first.push(await seeded(s));
  const again = [];
  for (const s of seeds) again.push(await seeded(s));
  assert.deepEqual(again, first);
});
