/**
 * The operator's workers hand the event loop back between two keys (issue #16). Reconciles that
 * write nothing make no I/O, and a key waiting in the queue is handed out on a resolved promise, so
 * without a yield the workers drained a whole backlog in one microtask chain: at 200 pods x 300
 * EchoScenarios for minutes, with no watch event read, no lease renewed, no push answer read (its
 * 5 s timeout fired first), no probe answered.
 */
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Counter } from 'prom-client';
import { type Fixture, spec, startFixture, until } from './fixture.ts';

const SCENARIOS = 30;
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

let f: Fixture;
afterEach(() => f?.close());

test('operator – a backlog of reconciles that write nothing lets the event loop turn between keys', async () => {
  f = await startFixture(3);
  const operator = await f.startOperator();
  const reconciles = operator.registry.getSingleMetric('echo_operator_reconciles_total') as Counter;
  const total = async () => (await reconciles.get()).values.reduce((n, v) => n + v.value, 0);
  for (let i = 0; i < SCENARIOS; i++) await f.createScenario(`s${i}`, spec(`/s${i}`));
  await until(
    'every EchoScenario Synced',
    async () => {
      for (let i = 0; i < SCENARIOS; i++)
        if ((await f.readiness(`s${i}`)).ready?.reason !== 'Synced') return false;
      return true;
    },
    30_000,
  );
  // Settled: no reconcile for a while.
  let last = -1;
  await until(
    'no more reconciles',
    async () => {
      const now = await total();
      const quiet = now === last;
      last = now;
      return quiet;
    },
    30_000,
  );

  // How many reconciles ran between two turns of the event loop, at every turn.
  const perTurn: number[] = [];
  let sampling = true;
  let previous = await total();
  const sample = async () => {
    const now = await total();
    if (now > previous) perTurn.push(now - previous);
    previous = now;
    if (sampling) setImmediate(() => void sample());
  };
  setImmediate(() => void sample());
  try {
    // A Service change enqueues every EchoScenario that targets it; none needs a write.
    await f.core.patchNamespacedService(
      { name: 'echo', namespace: f.namespace, body: { metadata: { annotations: { touched: 'yes' } } } },
      merge,
    );
    await until('the backlog reconciled', () => perTurn.reduce((n, k) => n + k, 0) >= SCENARIOS, 30_000);
  } finally {
    // Also when the wait fails: a sampling loop left running keeps the file from ever ending.
    sampling = false;
  }
  const most = Math.max(...perTurn);
  assert.ok(
    most <= 8,
    `at most a few reconciles (one per worker) between two turns, got ${most}: ${perTurn.join(' ')}`,
  );
});
