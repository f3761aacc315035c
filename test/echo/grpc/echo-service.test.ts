import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ServerErrorResponse } from '@grpc/grpc-js';
import { guard, http2StreamOf } from '../../../src/echo/grpc/echo-service.ts';

test('grpc echo service – a handler that fails ends its call in UNAVAILABLE naming why, never an unhandled rejection', async () => {
  const sent: Array<Partial<ServerErrorResponse>> = [];
  guard(Promise.reject(new Error('the shared store is down')), (status) => sent.push(status));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(sent, [{ code: 14, details: 'echo-chaos could not answer: the shared store is down' }]);
  // A call that already ended cannot take a status: that is swallowed too.
  guard(Promise.reject(new Error('late')), () => {
    throw new Error('call ended');
  });
  await new Promise((resolve) => setImmediate(resolve));
  let settled = 0;
  guard(Promise.resolve(), () => settled++);
  guard(undefined, () => settled++);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(settled, 0, 'a handler that succeeds sends nothing more');
});

test('grpc echo service – http2StreamOf walks call, nextCall and stream, and gives up on other shapes', () => {
  const stream = { id: 3, close() {}, session: { goaway() {}, destroy() {} } };
  assert.equal(http2StreamOf({ call: { nextCall: { stream } } }), stream);
  assert.equal(
    http2StreamOf({ call: { nextCall: { stream: { close() {} } } } }),
    undefined,
    'no session: not a stream',
  );
  assert.equal(http2StreamOf({}), undefined);
  let deep: object = { stream };
  for (let i = 0; i < 10; i++) deep = { call: deep };
  assert.equal(http2StreamOf(deep), undefined, 'the walk is bounded');
});
