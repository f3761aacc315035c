import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createDiagnostics } from '../../../src/obs/features/diagnostics.ts';
import { CardinalityFirewall, DrainState, type RuntimeSnapshot } from '../../../src/obs/index.ts';
import { until } from '../../helpers/runtime.ts';
import { startObsApp } from '../helpers.ts';

const V2_LIMITED = fileURLToPath(new URL('../fixtures/cgroup/v2-limited', import.meta.url));

/** Keeps the event loop busy for `ms` milliseconds. */
function block(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

test('diagnostics – /actuator/obs/runtime: lag, process and container memory, in-flight, drain, offenders', async (t) => {
  const obs = await startObsApp(
    {
      config: {
        cardinality: { 'max-tag-values-per-meter': 2 },
        diagnostics: { 'top-offenders': 2 },
        'container-memory': { 'cgroup-root': V2_LIMITED },
      },
    },
    (app) => {
      app.get('/block', async () => {
        block(80);
        return 'blocked';
      });
      app.get<{ Params: { meter: string; v: string } }>('/label/:meter/:v', async (request) =>
        app.obs.firewall.admit(request.params.meter, 'v', request.params.v),
      );
    },
  );
  t.after(() => obs.close());
  for (const [meter, count] of [
    ['a_total', 5],
    ['b_total', 4],
    ['c_total', 3],
  ] as const) {
    for (let i = 0; i < count; i++) await fetch(`${obs.url}/label/${meter}/${i}`);
  }
  // The monitor records a delay from its second tick on: a block before then would not show.
  const lag = () => obs.app.obs.runtime().event_loop_lag_ms;
  await until('the event-loop monitor has a sample', () => (lag().mean ?? 0) > 0);
  await fetch(`${obs.url}/block`);
  // The block shows once the monitor's next tick, late by the block, has run.
  await until('the 80 ms block shows in the lag', () => (lag().max ?? 0) >= 60);

  const runtime = (await (await fetch(`${obs.url}/actuator/obs/runtime`)).json()) as RuntimeSnapshot;
  assert.equal(runtime.enabled, true);
  assert.ok(
    runtime.event_loop_lag_ms.max !== null && runtime.event_loop_lag_ms.max >= 60,
    `max ${runtime.event_loop_lag_ms.max}`,
  );
  assert.ok(runtime.event_loop_lag_ms.mean !== null && runtime.event_loop_lag_ms.mean > 0);
  assert.ok(runtime.memory.rss_bytes > 0);
  assert.ok(runtime.memory.heap_limit_bytes >= runtime.memory.heap_total_bytes);
  assert.equal(runtime.memory.container?.cgroup, 'v2');
  assert.equal(runtime.memory.container?.headroom_ratio, 0.25);
  assert.equal(runtime.in_flight_requests, 1, 'the request asking');
  assert.deepEqual(runtime.drain.state, 'idle');
  assert.ok(runtime.uptime_seconds > 0);
  assert.deepEqual(
    runtime.cardinality.top_offenders,
    [
      { meter: 'a_total', tagKey: 'v', values: 2, overflowed: 3 },
      { meter: 'b_total', tagKey: 'v', values: 2, overflowed: 2 },
    ],
    'the worst first, as many as top-offenders',
  );

  const snapshot = (await (await fetch(`${obs.url}/actuator/obs`)).json()) as {
    runtime: RuntimeSnapshot;
    sections: Record<string, unknown>;
  };
  assert.equal(snapshot.runtime.enabled, true, 'the snapshot carries the same section');
  assert.deepEqual(snapshot.sections.diagnostics, {
    enabled: true,
    config: { enabled: true, 'top-offenders': 2, 'event-loop-resolution': '10ms' },
  });
});

test('diagnostics – the drain state and in-flight requests are live in the runtime', async (t) => {
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const obs = await startObsApp({}, (app) => {
    app.get('/slow', async () => {
      await held;
      return 'ok';
    });
  });
  t.after(() => obs.close());
  const slow = fetch(`${obs.url}/slow`);
  await until('the slow request is in flight', () => obs.app.obs.runtime().in_flight_requests === 1);
  const drained = obs.app.obs.drain({ timeoutMs: 5000 });
  const runtime = (await (await fetch(`${obs.url}/actuator/obs/runtime`)).json()) as RuntimeSnapshot;
  assert.equal(runtime.in_flight_requests, 2);
  assert.equal(runtime.drain.state, 'draining');
  release();
  await slow;
  await drained;
  assert.equal(obs.app.obs.runtime().drain.state, 'drained');
  assert.equal(obs.app.obs.runtime().in_flight_requests, 0);
});

test('diagnostics – obs.diagnostics.enabled=false keeps the shape with the live figures empty', async (t) => {
  const obs = await startObsApp(
    { config: { diagnostics: { enabled: false }, cardinality: { 'max-tag-values-per-meter': 1 } } },
    (app) => {
      app.get('/label/:v', async (request) =>
        app.obs.firewall.admit('m_total', 'v', (request.params as { v: string }).v),
      );
    },
  );
  t.after(() => obs.close());
  await fetch(`${obs.url}/label/a`);
  await fetch(`${obs.url}/label/b`);
  const runtime = (await (await fetch(`${obs.url}/actuator/obs/runtime`)).json()) as RuntimeSnapshot;
  assert.equal(runtime.enabled, false);
  assert.deepEqual(runtime.event_loop_lag_ms, { mean: null, p50: null, p99: null, max: null });
  assert.deepEqual(runtime.cardinality.top_offenders, []);
  assert.equal(runtime.memory.container, null);
  assert.ok(runtime.memory.rss_bytes > 0, 'cheap figures stay');
  assert.equal(runtime.drain.state, 'idle');
  const page = await fetch(`${obs.url}/actuator/obsui`);
  assert.equal(page.status, 200, 'the page renders the empty figures');
  assert.match(await page.text(), /event-loop lag/);
});

test('diagnostics – the event-loop monitor stops on close', async () => {
  const diagnostics = createDiagnostics({
    enabled: true,
    eventLoopResolutionMs: 5,
    firewall: new CardinalityFirewall(),
    drain: new DrainState(),
  });
  const closed = createDiagnostics({
    enabled: true,
    eventLoopResolutionMs: 5,
    firewall: new CardinalityFirewall(),
    drain: new DrainState(),
  });
  // A monitor records a delay from its second tick on: both have samples before the block.
  const hasSample = (d: typeof diagnostics) => (d.runtime().event_loop_lag_ms.mean ?? 0) > 0;
  await until('both monitors have a sample', () => hasSample(diagnostics) && hasSample(closed));
  closed.close();
  closed.close();
  // A closed monitor records nothing more: its figures stay as they were across a block. The open one,
  // on the same resolution, shows the block once its late tick has run; the closed one's tick would have
  // run in the same pass of the timers. No bound on a loaded machine's lag.
  const atClose = closed.runtime().event_loop_lag_ms;
  block(60);
  const open = () => diagnostics.runtime().event_loop_lag_ms.max ?? 0;
  await until('a block while monitored shows (>= 40 ms)', () => open() >= 40);
  assert.deepEqual(closed.runtime().event_loop_lag_ms, atClose, 'a block after close does not show');
  diagnostics.close();
});

test('diagnostics – event-loop lag is what the monitor records above its sampling interval', async () => {
  const { lagAboveResolutionMs } = await import('../../../src/obs/features/diagnostics.ts');
  assert.equal(lagAboveResolutionMs(10_300_000, 10), 0.3, 'an idle loop at 10ms resolution lags 0.3ms');
  assert.equal(lagAboveResolutionMs(50_300_000, 50), 0.3);
  assert.equal(lagAboveResolutionMs(9_000_000, 10), 0, 'never below zero');
  assert.equal(lagAboveResolutionMs(Number.NaN, 10), 0, 'before the first sample');
  assert.equal(lagAboveResolutionMs(9.2e18, 10), 0, 'the empty histogram holds a huge minimum');
});
