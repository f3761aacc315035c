import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import { currentObsContext, type ObsContext } from '../../../../src/obs/index.ts';
import { startObsApp } from '../../helpers.ts';

/**
 * Context propagation: every request runs in a context (request id, budget and what the other
 * features carry) that promises and timers keep, that `obs.bind` and `obs.wrap` carry into work run
 * later from elsewhere, and that `currentObsContext()` reads.
 */

/** A queue drained outside any request, the way a pool or a worker loop runs work. */
function outsideQueue() {
  const tasks: Array<() => void> = [];
  const runner = new EventEmitter();
  // Registered here, outside any request: its listener runs in no request's context.
  runner.on('drain', () => {
    for (const task of tasks.splice(0)) task();
  });
  return {
    push: (task: () => void) => {
      tasks.push(task);
    },
    drain: () => runner.emit('drain'),
  };
}

test('context – the handler, its timers and its promises see the request id, with or without a budget', async (t) => {
  for (const budgetEnabled of [true, false]) {
    const running = await startObsApp({ config: { 'timeout-budget': { enabled: budgetEnabled } } }, (app) => {
      app.get('/ctx', async () => {
        const now = currentObsContext();
        const later = await new Promise<ObsContext | undefined>((resolve) =>
          setTimeout(() => resolve(currentObsContext()), 5),
        );
        return { now: now ?? null, later: later ?? null };
      });
    });
    t.after(() => running.close());
    const response = await fetch(`${running.url}/ctx`, { headers: { 'x-request-id': 'req-42' } });
    const body = (await response.json()) as { now: ObsContext | null; later: ObsContext | null };
    assert.equal(body.now?.requestId, 'req-42', JSON.stringify(body));
    assert.equal(body.later?.requestId, 'req-42');
    assert.equal(body.now?.timeoutBudget !== undefined, budgetEnabled, JSON.stringify(body.now));
  }
  assert.equal(currentObsContext(), undefined, 'outside a request there is no context');
});

test('context – obs.bind carries the context into a queue drained elsewhere; without it the work has none', async (t) => {
  const queue = outsideQueue();
  const seen: Record<string, string | null> = {};
  const running = await startObsApp({}, (app) => {
    app.get('/bind', async () => {
      queue.push(app.obs.bind(() => (seen.bound = currentObsContext()?.requestId ?? null)));
      queue.push(() => (seen.unbound = currentObsContext()?.requestId ?? null));
      return 'queued';
    });
  });
  t.after(() => running.close());
  const response = await fetch(`${running.url}/bind`, { headers: { 'x-request-id': 'bound-1' } });
  assert.equal(await response.text(), 'queued');
  queue.drain();
  assert.deepEqual(seen, { bound: 'bound-1', unbound: null });
});

test('context – an inbound request id too long or with spaces is replaced by fastify’s', async (t) => {
  const running = await startObsApp({}, (app) => {
    app.get('/id', async () => currentObsContext()?.requestId ?? null);
  });
  t.after(() => running.close());
  const idOf = async (value: string) =>
    (await fetch(`${running.url}/id`, { headers: { 'x-request-id': value } })).text();
  assert.equal(await idOf('x'.repeat(128)), 'x'.repeat(128));
  for (const bad of ['x'.repeat(129), 'has space']) {
    const id = await idOf(bad);
    assert.notEqual(id, bad);
    assert.ok(id.length > 0 && id.length <= 128, id);
  }
});

test('context – obs.wrap binds each task to the context of the caller that submitted it', async (t) => {
  const queue = outsideQueue();
  const results: Array<[submittedBy: string, ranIn: string | null]> = [];
  let submit: ((task: () => void) => void) | undefined;
  const running = await startObsApp({}, (app) => {
    submit = app.obs.wrap(queue.push);
    app.get('/wrap/:name', async (request) => {
      const { name } = request.params as { name: string };
      submit!(() => results.push([name, currentObsContext()?.requestId ?? null]));
      return 'queued';
    });
  });
  t.after(() => running.close());
  for (const name of ['a', 'b']) {
    const response = await fetch(`${running.url}/wrap/${name}`, {
      headers: { 'x-request-id': `id-${name}` },
    });
    assert.equal(await response.text(), 'queued');
  }
  queue.drain();
  assert.deepEqual(results, [
    ['a', 'id-a'],
    ['b', 'id-b'],
  ]);
});

test('context – with obs.context.enabled=false, bind and wrap hand back what they are given', async (t) => {
  const running = await startObsApp({ config: { context: { enabled: false } } });
  t.after(() => running.close());
  const fn = () => 1;
  assert.equal(running.app.obs.bind(fn), fn);
  assert.equal(running.app.obs.wrap(fn), fn);
  const on = await startObsApp();
  t.after(() => on.close());
  assert.notEqual(on.app.obs.bind(fn), fn);
});

test('context – /actuator/obs shows the context section with the requests that entered one', async (t) => {
  const running = await startObsApp({}, (app) => {
    app.get('/ok', async () => 'ok');
  });
  t.after(() => running.close());
  const read = async () => {
    const snapshot = (await (await fetch(`${running.url}/actuator/obs`)).json()) as {
      sections: Record<string, { entered: number; contributors: string[]; request_id_header: string }>;
    };
    return snapshot.sections.context;
  };
  const before = await read();
  assert.ok(before !== undefined);
  assert.ok(before.contributors.includes('timeout-budget'), JSON.stringify(before));
  assert.equal(before.request_id_header, 'X-Request-ID');
  await fetch(`${running.url}/ok`);
  await fetch(`${running.url}/ok`);
  const after = await read();
  assert.ok(after !== undefined);
  // the two requests, and the first read itself
  assert.ok(after.entered >= before.entered + 3, `${before.entered} -> ${after.entered}`);
});
