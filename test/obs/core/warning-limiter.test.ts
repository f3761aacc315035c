import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WarningLimiter } from '../../../src/obs/core/warning-limiter.ts';

/** The one rate limit of obs's repeated warnings (retry amplification, fan-out, N+1, slow queries). */

test('warning limiter – one warning per key per interval, the next one says how many were suppressed', () => {
  let now = 1_000;
  const limiter = new WarningLimiter(60_000, 2);
  assert.deepEqual(limiter.admit('/a', now), { suppressed: 0 });
  assert.equal(limiter.admit('/a', now), undefined);
  now += 59_999;
  assert.equal(limiter.admit('/a', now), undefined);
  assert.deepEqual(limiter.admit('/b', now), { suppressed: 0 }, 'another key has its own window');
  now += 1;
  assert.deepEqual(limiter.admit('/a', now), { suppressed: 2 });
  assert.equal(limiter.admit('/a', now), undefined);
  assert.deepEqual([limiter.logged, limiter.suppressed], [3, 3]);
});

test('warning limiter – the keys remembered are capped; the one warned longest ago is forgotten', () => {
  const limiter = new WarningLimiter(60_000, 3);
  for (let i = 0; i < 100; i += 1) limiter.admit(`/route-${i}`, 0);
  assert.equal(limiter.size, 3);
  assert.equal(limiter.admit('/route-99', 0), undefined, 'a recent key is still remembered');
  assert.deepEqual(limiter.admit('/route-0', 0), { suppressed: 0 }, 'a forgotten key warns again');
  assert.equal(limiter.size, 3);
});

test('warning limiter – a key forgotten beyond the bound loses its pending count; the others keep theirs', () => {
  const limiter = new WarningLimiter(1000, 2);
  assert.deepEqual(limiter.admit('a', 0), { suppressed: 0 });
  assert.equal(limiter.admit('a', 999), undefined);
  assert.deepEqual(limiter.admit('b', 0), { suppressed: 0 });
  assert.deepEqual(limiter.admit('c', 0), { suppressed: 0 });
  assert.equal(limiter.size, 2);
  // 'a' was forgotten with its suppressed count: it warns again at once
  assert.deepEqual(limiter.admit('a', 10), { suppressed: 0 });
  assert.equal(limiter.admit('c', 10), undefined);
  assert.deepEqual(limiter.admit('c', 1000), { suppressed: 1 });
});
