import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readStreamRequest } from '../../../src/echo/grpc/request.ts';

test('grpc StreamRequest – count 1-1000, interval a duration of at most 60s, response_size within the ceiling', () => {
  assert.deepEqual(readStreamRequest({ count: 3, interval: '100ms', response_size: 10 }, 100), {
    ok: true,
    plan: { count: 3, intervalMs: 100, responseBytes: 10 },
  });
  assert.deepEqual(readStreamRequest({ count: 1000, interval: '60s', response_size: 100 }, 100), {
    ok: true,
    plan: { count: 1000, intervalMs: 60_000, responseBytes: 100 },
  });
  assert.deepEqual(readStreamRequest({ count: 1 }, 100), {
    ok: true,
    plan: { count: 1, intervalMs: 0, responseBytes: 0 },
  });
  const problems: Array<[object, string]> = [
    [{}, 'count: expected 1-1000, got 0'],
    [{ count: -1 }, 'count: expected 1-1000, got -1'],
    [{ count: 1001 }, 'count: expected 1-1000, got 1001'],
    [{ count: 1, interval: '1 fortnight' }, 'interval: expected a duration'],
    [{ count: 1, interval: '60001ms' }, 'interval: expected at most 60s, got "60001ms"'],
    [
      { count: 1, response_size: 101 },
      'response_size: expected 0-100 bytes (ECHO_MAX_RESPONSE_SIZE), got 101',
    ],
    [{ count: 1, response_size: -5 }, 'response_size: expected 0-100 bytes'],
  ];
  for (const [request, problem] of problems) {
    const read = readStreamRequest(request, 100);
    assert.equal(read.ok, false, JSON.stringify(request));
    assert.ok(!read.ok && read.problem.startsWith(problem), `${!read.ok ? read.problem : ''} / ${problem}`);
  }
});
