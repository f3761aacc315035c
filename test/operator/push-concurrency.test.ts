/**
 * Pushes run at once, up to `workers` (issue #16: bounded concurrency of pushes with a per-pod
 * timeout, so one slow pod never holds the rest back).
 */
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { afterEach, test } from 'node:test';
import { type Fixture, POD_IP, spec, startFixture, TIMEOUT_MS, until } from './fixture.ts';

let f: Fixture;
afterEach(() => f?.close());

test('operator – a pod that never answers holds one worker until its push times out, never the pods beside it', async () => {
  f = await startFixture(0);
  // A pod whose echo takes the connection and the request and never answers.
  const held = new Set<Socket>();
  let requests = 0;
  const stuck = createServer((socket) => {
    held.add(socket);
    socket.once('data', () => requests++);
  });
  await new Promise<void>((resolve) => stuck.listen(0, POD_IP, resolve));
  try {
    const target = { selector: { matchLabels: { app: 'x' } }, port: 'http' };
    await f.addPod('x-stuck', (stuck.address() as { port: number }).port, { app: 'x' });
    const others = ['x-0', 'x-1', 'x-2'];
    for (const name of others) await f.addEchoPod(name, { app: 'x' });
    // Two workers, and a push timeout far beyond the test: if one stuck push held every push, the
    // others would wait for it.
    await f.startOperator({ workers: 2, pushTimeoutMs: 10 * 60_000 });
    await f.createScenario('slow-neighbour', spec('/slow', 503, target));
    for (const name of others) {
      await until(
        `${name} holds /slow`,
        async () => {
          const held = (await f.scenariosOf(name)) as Array<{ path: string }>;
          return held.length === 1 && held[0]?.path === '/slow';
        },
        TIMEOUT_MS * 5,
      );
    }
    assert.ok(requests >= 1, 'the stuck pod was pushed to, and is still waiting for its answer');
    const ready = (await f.readiness('slow-neighbour')).ready;
    assert.notEqual(ready?.reason, 'Synced', 'a pod that never answered does not count as synced');
  } finally {
    for (const socket of held) socket.destroy();
    stuck.close();
  }
});
