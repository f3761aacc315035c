/**
 * The operator's `/metrics` counts EchoScenarios by condition (`echo_operator_echoscenarios`),
 * read from its informer cache at each scrape: against the API double (or the KUBECONFIG cluster).
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { createOperatorMetrics } from '../../src/operator/metrics.ts';
import { createOperatorServer } from '../../src/operator/server.ts';
import { CLUSTER, type Fixture, spec, startFixture, until } from './fixture.ts';

/** The value of the series `name{labels}` in a Prometheus text exposition; 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string>): number {
  const want = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(',');
  for (const line of text.split('\n')) {
    const m = /^(\w+)\{(.*)\} (\S+)$/.exec(line);
    if (m?.[1] !== name) continue;
    if (m[2]!.split(',').sort().join(',') === want) return Number(m[3]);
  }
  return 0;
}

describe(`operator metrics against ${CLUSTER ? 'the KUBECONFIG cluster' : 'the API double'}`, () => {
  let f: Fixture;
  afterEach(() => f?.close());

  test('operator metrics – /metrics counts EchoScenarios by condition, status and reason', async () => {
    f = await startFixture(2);
    const operator = await f.startOperator();
    const server = createOperatorServer({ registry: operator.registry, ready: () => operator.ready });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const scrape = async () => (await fetch(`${base}/metrics`)).text();
    const count = (text: string, status: string, reason: string) =>
      sample(text, 'echo_operator_echoscenarios', { condition: 'Ready', status, reason });
    try {
      const empty = await scrape();
      assert.match(empty, /# TYPE echo_operator_echoscenarios gauge/);
      assert.equal(count(empty, 'True', ''), 0);
      await f.createScenario('first', spec('/same'));
      await until('first synced', async () => (await f.readiness('first')).ready?.reason === 'Synced');
      await f.createScenario('second', spec('/same'));
      await f.createScenario('third', spec('/third'));
      await until('the cache holds 2 Synced and 1 Conflict', async () => {
        const text = await scrape();
        return count(text, 'True', 'Synced') === 2 && count(text, 'False', 'Conflict') === 1;
      });
      await f.deleteScenario('second');
      await until('Conflict is gone from /metrics after the delete', async () => {
        const text = await scrape();
        return count(text, 'False', 'Conflict') === 0 && count(text, 'True', 'Synced') === 2;
      });
      // Every reconcile is timed, by kind (issue #16: reconcile duration histograms).
      const text = await scrape();
      assert.match(text, /# TYPE echo_operator_reconcile_duration_seconds histogram/);
      for (const kind of ['pod', 'echoscenario']) {
        const timed = sample(text, 'echo_operator_reconcile_duration_seconds_count', { kind });
        assert.ok(timed > 0, `${kind} reconciles timed: ${timed}`);
      }
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  test('operator metrics – an EchoScenario without conditions is counted as Ready Unknown', async () => {
    const registry = new Registry();
    createOperatorMetrics(
      registry,
      () => 0,
      () => [undefined, [], [{ type: 'Ready', status: 'False', reason: 'Invalid' }]],
    );
    const text = await registry.metrics();
    const count = (status: string, reason: string) =>
      sample(text, 'echo_operator_echoscenarios', { condition: 'Ready', status, reason });
    assert.equal(count('Unknown', ''), 2);
    assert.equal(count('False', 'Invalid'), 1);
    assert.equal(count('True', ''), 0);
  });

  test('operator metrics – echo_operator_queue_depth is the depth of the work queue at each scrape (issue #16)', async () => {
    const registry = new Registry();
    let depth = 7;
    createOperatorMetrics(registry, () => depth);
    const value = (text: string) => Number(/^echo_operator_queue_depth (\S+)$/m.exec(text)?.[1]);
    const first = await registry.metrics();
    assert.match(first, /# TYPE echo_operator_queue_depth gauge/);
    assert.equal(value(first), 7);
    depth = 0;
    assert.equal(value(await registry.metrics()), 0);
  });
});
