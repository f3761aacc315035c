import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { DrainState, ObsError, type ObsPluginOptions } from '../../../src/obs/index.ts';
import { quietFor, within } from '../../helpers/runtime.ts';
import { startObsApp } from '../helpers.ts';

/** A route `/slow` held until `release()`; `arrived` resolves once `count` requests are inside. */
function holder(count = 1) {
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let inside = 0;
  let arrivedNow = () => {};
  const arrived = new Promise<void>((resolve) => {
    arrivedNow = resolve;
  });
  const setup = (app: FastifyInstance) => {
    app.get('/slow', async () => {
      if (++inside === count) arrivedNow();
      await held;
      return 'done';
    });
    app.get('/metrics', async (_request, reply) =>
      reply.type(app.obs.registry.contentType).send(await app.obs.registry.metrics()),
    );
  };
  return { setup, arrived, release: () => release() };
}

async function startHeld(options: ObsPluginOptions = {}, count = 1) {
  const hold = holder(count);
  const obs = await startObsApp(options, hold.setup);
  return { obs, hold };
}

const health = async (url: string) => {
  const response = await fetch(`${url}/actuator/health`);
  return {
    status: response.status,
    body: (await response.json()) as { status: string; components: Record<string, unknown> },
  };
};

test('drain – requests in flight finish during the drain: it ends when the last one does, nothing dropped', async (t) => {
  const { obs, hold } = await startHeld({}, 2);
  t.after(() => obs.close());
  const slow = [fetch(`${obs.url}/slow`), fetch(`${obs.url}/slow`)];
  await hold.arrived;
  const phases: string[] = [];
  obs.app.obs.drainState.onChange((phase) => phases.push(phase));

  const started = Date.now();
  let ended = false;
  const drained = obs.app.obs.drain({ timeoutMs: 10_000 }).then((result) => {
    ended = true;
    return result;
  });
  assert.equal(obs.app.obs.drainState.phase, 'draining');
  await quietFor(50, 'requests in flight: the drain does not end');
  assert.equal(ended, false, 'it waits for the requests in flight');

  hold.release();
  for (const response of await Promise.all(slow)) assert.equal(await response.text(), 'done');
  const result = await drained;
  assert.equal(result.completed, true);
  assert.equal(result.dropped, 0);
  assert.ok(
    result.durationMs >= 40 && result.durationMs < Date.now() - started + 5,
    `${result.durationMs}ms`,
  );
  assert.deepEqual(phases, ['draining', 'drained']);

  const text = await (await fetch(`${obs.url}/metrics`)).text();
  const duration = Number(/^obs_drain_duration_seconds (\S+)$/m.exec(text)?.[1]);
  assert.ok(Math.abs(duration - result.durationMs / 1000) < 0.001, `gauge ${duration}`);
  assert.match(text, /^obs_drain_dropped_total 0$/m);
  assert.equal(
    obs.logger.lines.filter((l) => /obs drain ended/.test(l.message ?? '')).length,
    1,
    'one log line says how it ended',
  );
});

test('drain – the timeout ends the wait and counts the requests still in flight as dropped', async (t) => {
  const { obs, hold } = await startHeld({}, 3);
  t.after(async () => {
    hold.release();
    await obs.close();
  });
  const slow = [1, 2, 3].map(() => fetch(`${obs.url}/slow`));
  await hold.arrived;
  const started = Date.now();
  const result = await obs.app.obs.drain({ timeoutMs: 120 });
  const waited = Date.now() - started;
  assert.ok(waited >= 110 && waited < 2000, `waited ${waited}ms`);
  assert.deepEqual(
    { completed: result.completed, dropped: result.dropped },
    { completed: false, dropped: 3 },
  );
  assert.equal(obs.app.obs.drainState.phase, 'drained');

  const text = await (await fetch(`${obs.url}/metrics`)).text();
  assert.match(text, /^obs_drain_dropped_total 3$/m);
  assert.ok(
    obs.logger.lines.some(
      (l) => l.level === 'warn' && /timed out with 3 requests in flight/.test(l.message ?? ''),
    ),
  );
  assert.deepEqual(await obs.app.obs.drain(), result, 'a later call answers the same at once');
  hold.release();
  await Promise.all(slow);
});

test('drain – without a timeout it waits obs.shutdown.drain-timeout; concurrent waits share the end', async (t) => {
  const { obs, hold } = await startHeld({ env: { OBS_SHUTDOWN_DRAIN_TIMEOUT: '150ms' } });
  t.after(async () => {
    hold.release();
    await obs.close();
  });
  const slow = fetch(`${obs.url}/slow`);
  await hold.arrived;
  assert.equal(obs.app.obs.drainState.drainTimeoutMs, 150);
  const started = Date.now();
  const [first, second] = await Promise.all([obs.app.obs.drain(), obs.app.obs.drain({ timeoutMs: 60_000 })]);
  const waited = Date.now() - started;
  assert.ok(waited >= 140 && waited < 2000, `waited ${waited}ms`);
  assert.equal(first, second, 'both calls got the one result');
  assert.equal(first.dropped, 1);
  hold.release();
  await slow;
});

test('drain – readiness fails from the moment draining begins, and stays failed once drained', async (t) => {
  const { obs, hold } = await startHeld();
  t.after(async () => {
    hold.release();
    await obs.close();
  });
  const before = await health(obs.url);
  assert.equal(before.status, 200);
  assert.deepEqual(before.body.components.drain, { status: 'UP', details: 'idle' });

  const slow = fetch(`${obs.url}/slow`);
  await hold.arrived;
  const drained = obs.app.obs.drain({ timeoutMs: 10_000 });
  const during = await health(obs.url);
  assert.equal(during.status, 503);
  // A draining instance is out of service, not down (the health model of issue #11).
  assert.equal(during.body.status, 'OUT_OF_SERVICE');
  assert.deepEqual(during.body.components.drain, { status: 'OUT_OF_SERVICE', details: 'draining' });
  const runtime = (await (await fetch(`${obs.url}/actuator/obs/runtime`)).json()) as {
    drain: { state: string };
    in_flight_requests: number;
  };
  assert.equal(runtime.drain.state, 'draining');
  assert.equal(runtime.in_flight_requests, 2, 'the held request and the one asking');

  hold.release();
  await slow;
  assert.equal((await drained).completed, true);
  const after = await health(obs.url);
  assert.equal(after.status, 503);
  assert.deepEqual(after.body.components.drain, { status: 'OUT_OF_SERVICE', details: 'drained' });
});

test('drain – flush hooks run when the app closes, each bounded by the flush timeout', async () => {
  const { obs } = await startHeld({ env: { OBS_SHUTDOWN_FLUSH_TIMEOUT: '100ms' } });
  const calls: string[] = [];
  let hungSignal: AbortSignal | undefined;
  obs.app.obs.addFlushHook('metrics', async () => {
    await setImmediate(); // an asynchronous hook
    calls.push('metrics');
  });
  obs.app.obs.addFlushHook('traces', () => {
    calls.push('traces');
  });
  obs.app.obs.addFlushHook('broken', () => {
    throw new Error('exporter down');
  });
  obs.app.obs.addFlushHook('hung', (signal) => {
    hungSignal = signal;
    return new Promise(() => {});
  });
  assert.throws(
    () => obs.app.obs.addFlushHook('metrics', () => {}),
    (e: unknown) => e instanceof ObsError && e.code === 'OBS_ERR_DUPLICATE_NAME',
  );

  const started = Date.now();
  await obs.close();
  const took = Date.now() - started;
  assert.ok(took < 2000, `close took ${took}ms despite a hung hook`);
  assert.deepEqual(calls.sort(), ['metrics', 'traces']);
  assert.equal(hungSignal?.aborted, true, 'the hung hook was told to stop');

  const report = obs.app.obs.drainState.lastFlush;
  assert.ok(report);
  assert.equal(report.ok, false);
  assert.ok(report.durationMs >= 90, `${report.durationMs}ms`);
  assert.deepEqual(
    Object.fromEntries(Object.entries(report.hooks).map(([name, r]) => [name, [r.ok, r.error]])),
    {
      metrics: [true, undefined],
      traces: [true, undefined],
      broken: [false, 'exporter down'],
      hung: [false, 'no answer within 100ms'],
    },
  );
  assert.ok(obs.logger.lines.some((l) => l.level === 'warn' && /flush incomplete/.test(l.message ?? '')));
});

test('drain – flush() can be called directly; with no hook it is ok at once', async (t) => {
  const { obs } = await startHeld();
  t.after(() => obs.close());
  assert.deepEqual((await obs.app.obs.flush()).hooks, {});
  let flushed = 0;
  obs.app.obs.addFlushHook('counter', () => {
    flushed++;
  });
  const report = await obs.app.obs.flush({ timeoutMs: 50 });
  assert.equal(report.ok, true);
  assert.equal(flushed, 1);
  const section = (
    (await (await fetch(`${obs.url}/actuator/obs`)).json()) as {
      sections: Record<string, Record<string, unknown>>;
    }
  ).sections.shutdown;
  assert.equal(section?.enabled, true);
  assert.deepEqual(section?.config, { enabled: true, 'drain-timeout': '30s', 'flush-timeout': '10s' });
  assert.deepEqual(section?.flush_hooks, ['counter']);
  assert.equal((section?.last_flush as { ok: boolean } | undefined)?.ok, true);
  assert.equal(section?.state, 'idle');
});

test('drain – closing the app drains: fastify waits for the request, which ends its connection, then drained', async () => {
  const { obs, hold } = await startHeld();
  const slow = fetch(`${obs.url}/slow`);
  await hold.arrived;
  const started = Date.now();
  const phase = new Promise<string>((resolve) => obs.app.obs.drainState.onChange(resolve));
  const closing = obs.close();
  assert.equal(await within(phase, 'the close begins the drain', 5000), 'draining');
  assert.equal(obs.app.obs.drainState.phase, 'draining');
  hold.release();
  const response = await slow;
  assert.equal(await response.text(), 'done');
  assert.equal(response.headers.get('connection'), 'close', 'a drained keep-alive connection ends');
  await closing;
  assert.ok(Date.now() - started < 5000, 'close did not wait for the keep-alive timeout');
  assert.equal(obs.app.obs.drainState.phase, 'drained');
  assert.equal(obs.app.obs.drainState.result?.completed, true);
});

test('drain – obs.shutdown.enabled=false: no wait, no drain check, no drain meters, no flush on close', async () => {
  const { obs, hold } = await startHeld({ config: { shutdown: { enabled: false } } });
  let flushed = 0;
  obs.app.obs.addFlushHook('h', () => {
    flushed++;
  });
  const slow = fetch(`${obs.url}/slow`);
  await hold.arrived;
  const result = await obs.app.obs.drain({ timeoutMs: 10_000 });
  assert.deepEqual(result, { completed: false, durationMs: 0, dropped: 0 });
  assert.equal(obs.app.obs.drainState.phase, 'idle');
  const ready = await health(obs.url);
  assert.equal(ready.status, 200);
  assert.equal(ready.body.components.drain, undefined);
  assert.doesNotMatch(await (await fetch(`${obs.url}/metrics`)).text(), /obs_drain_/);
  hold.release();
  await slow;
  await obs.close();
  assert.equal(flushed, 0);
  assert.equal(obs.app.obs.drainState.phase, 'idle');
});

test('drain – DrainState alone: begin with nothing in flight drains at once; every wait ends', async () => {
  const state = new DrainState({ drainTimeoutMs: 20 });
  const phases: string[] = [];
  state.onChange((phase) => phases.push(phase));
  state.requestStarted();
  state.requestStarted();
  state.requestFinished();
  const waits = await Promise.all([state.drain(), state.drain({ timeoutMs: Number.NaN })]);
  assert.deepEqual(
    waits.map((r) => [r.completed, r.dropped]),
    [
      [false, 1],
      [false, 1],
    ],
  );
  assert.deepEqual(phases, ['draining', 'drained']);

  const idle = new DrainState();
  await idle.drain();
  assert.equal(idle.phase, 'drained');
  assert.equal(idle.result?.completed, true);
  assert.equal(idle.result?.dropped, 0);
});
