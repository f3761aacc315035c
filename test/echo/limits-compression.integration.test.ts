import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CompressionSlots } from '../../src/echo/bodies.ts';
import { startEcho } from '../helpers/echo-server.ts';

// ECHO_MAX_CONCURRENT_COMPRESSION (docs/adr/0016-connection-limits.md): compression work is bounded,
// compressed responses wait their turn chunk by chunk, and every one is still complete.

test('compression slots – at most max run at once; the others wait in arrival order and get the slot handed on', () => {
  const slots = new CompressionSlots(2);
  const order: string[] = [];
  const releases = new Map<string, () => void>();
  for (const name of ['a', 'b', 'c', 'd']) {
    slots.run((release) => {
      order.push(name);
      releases.set(name, release);
    });
  }
  assert.deepEqual(order, ['a', 'b'], 'two run, two wait');
  assert.equal(slots.busy, 2);
  assert.equal(slots.waiting, 2);
  releases.get('b')!();
  assert.deepEqual(order, ['a', 'b', 'c'], 'the first waiting takes the freed slot');
  releases.get('b')!();
  assert.deepEqual(order, ['a', 'b', 'c'], 'releasing twice frees nothing more');
  releases.get('a')!();
  releases.get('c')!();
  releases.get('d')!();
  assert.deepEqual(order, ['a', 'b', 'c', 'd']);
  assert.equal(slots.busy, 0);
  assert.equal(slots.waiting, 0);
});

test('compression – with ECHO_MAX_CONCURRENT_COMPRESSION=1, concurrent gzip, br and deflate bodies are all complete; a plain request is not held', {
  timeout: 60_000,
}, async (t) => {
  const echo = await startEcho({ ECHO_MAX_CONCURRENT_COMPRESSION: '1' });
  t.after(() => echo.close());
  const size = 512 * 1024;
  const compressed = ['gzip', 'br', 'deflate', 'gzip', 'br', 'deflate'].map(async (kind) => {
    const response = await fetch(`${echo.url}/bytes`, {
      headers: { 'X-Echo-Compress': kind, 'X-Echo-Response-Size': String(size) },
    });
    assert.equal(response.headers.get('content-encoding'), kind);
    // fetch decodes the body: every byte asked for arrives, whatever the turn-taking.
    return (await response.arrayBuffer()).byteLength;
  });
  // Echoed bodies larger than one slot's chunk are compressed in turns too.
  const echoed = fetch(`${echo.url}/echo`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', 'X-Echo-Compress': 'gzip' },
    body: 'x'.repeat(300_000),
  }).then(async (response) => (await response.text()).length);
  const start = Date.now();
  assert.equal((await fetch(`${echo.url}/info`)).status, 200);
  assert.ok(Date.now() - start < 2000, 'a request without compression does not wait for the slots');
  assert.deepEqual(await Promise.all(compressed), Array(6).fill(size));
  assert.equal(await echoed, 300_000);
});
