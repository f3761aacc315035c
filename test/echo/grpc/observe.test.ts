/**
 * The metering interceptor on its own (src/echo/grpc/observe.ts), with a stand-in for grpc-js's
 * call: a path outside the known set is `other`, a code outside 0-16 is `UNKNOWN`, and a call is
 * counted once however many ends it is told of. The real port's counts: metrics.integration.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ServerInterceptingCallInterface, ServerMethodDefinition, status } from '@grpc/grpc-js';

import { meteringInterceptor, OTHER_METHOD, statusName } from '../../../src/echo/grpc/observe.ts';

/** What grpc-js hands a call's `start` (not exported by name). */
type InterceptingServerListener = Parameters<ServerInterceptingCallInterface['start']>[0];

function fakeCall(deadline: number): {
  call: ServerInterceptingCallInterface;
  listener: () => InterceptingServerListener;
} {
  let started: InterceptingServerListener | undefined;
  const call = {
    start(listener: InterceptingServerListener) {
      started = listener;
    },
    sendStatus() {},
    getDeadline: () => deadline,
  } as unknown as ServerInterceptingCallInterface;
  return { call, listener: () => started as InterceptingServerListener };
}

const descriptor = (path: string) => ({ path }) as ServerMethodDefinition<unknown, unknown>;

test('grpc metering – a path outside the set is other; a status, once, by its name', () => {
  const counted: string[] = [];
  const interceptor = meteringInterceptor(
    { grpcCallEnded: (method, code) => counted.push(`${method} ${code}`) },
    new Set(['/a.B/C']),
  );
  for (const [path, code] of [
    ['/a.B/C', 14],
    ['/x.Y/Z', 99],
  ] as const) {
    const fake = fakeCall(Number.POSITIVE_INFINITY);
    const intercepted = interceptor(descriptor(path), fake.call);
    intercepted.start({
      onReceiveMetadata() {},
      onReceiveMessage() {},
      onReceiveHalfClose() {},
      onCancel() {},
    });
    intercepted.sendStatus({ code: code as status, details: '' });
    fake.listener().onCancel();
    fake.listener().onCancel();
  }
  assert.deepEqual(counted, ['/a.B/C UNAVAILABLE', `${OTHER_METHOD} UNKNOWN`]);
  assert.equal(statusName(4), 'DEADLINE_EXCEEDED');
});

test('grpc metering – an end without a status is CANCELLED before the deadline, DEADLINE_EXCEEDED after', () => {
  const counted: string[] = [];
  const interceptor = meteringInterceptor(
    { grpcCallEnded: (method, code) => counted.push(`${method} ${code}`) },
    new Set(['/a.B/C']),
  );
  for (const deadline of [Date.now() + 60_000, Date.now() - 1]) {
    const fake = fakeCall(deadline);
    interceptor(descriptor('/a.B/C'), fake.call).start({
      onReceiveMetadata() {},
      onReceiveMessage() {},
      onReceiveHalfClose() {},
      onCancel() {},
    });
    fake.listener().onCancel();
  }
  assert.deepEqual(counted, ['/a.B/C CANCELLED', '/a.B/C DEADLINE_EXCEEDED']);
});
