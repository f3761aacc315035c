/**
 * `spec.abortWhen` fails closed (issue #38): a check that cannot be made (no PROMETHEUS_URL,
 * Prometheus down, an answer that is no query result) counts as failed; after `failureThreshold`
 * failures in a row the check is unhealthy and `onError` (`Suspend` by default) takes the
 * experiment off its pods until a check succeeds. Pure logic with an injected clock; the queries go
 * to real local HTTP servers (and a closed port).
 */
import assert from 'node:assert/strict';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { AbortWatcher, queryPrometheus } from '../../src/operator/abort.ts';
import type { EchoScenario } from '../../src/operator/echo-scenario.ts';
import { transitionOf } from '../../src/operator/events.ts';
import {
  type AbortCheck,
  abortCheckOf,
  lifecycleOf,
  lifecycleProblems,
} from '../../src/operator/lifecycle.ts';
import { createOperatorMetrics } from '../../src/operator/metrics.ts';
import { buildStatus } from '../../src/operator/status.ts';
import { deadPort } from './fixture.ts';
import { planNamespace } from './plan-namespace.ts';

const T0 = new Date('2026-11-24T12:00:00Z');
const QUERY = 'sum(rate(errors[1m]))';

function es(abortWhen: Record<string, unknown> | undefined, status?: EchoScenario['status'], generation = 1) {
  return {
    metadata: { name: 'exp', namespace: 'default', uid: 'u-1', generation, creationTimestamp: T0 },
    spec: {
      target: { service: 'echo', port: 'http' },
      path: '/x',
      responses: [{ status: 503 }],
      ...(abortWhen === undefined ? {} : { abortWhen }),
    },
    ...(status === undefined ? {} : { status }),
  } as unknown as EchoScenario;
}

const failing: AbortCheck = {
  healthy: false,
  reason: 'QueryFailed',
  message:
    'abortWhen could not be evaluated 3 times in a row: Prometheus query GET http://p/api/v1/query failed: ECONNREFUSED',
};

async function serve(t: { after(fn: () => unknown): void }, handler: RequestListener): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const vector = (value: string) =>
  JSON.stringify({
    status: 'success',
    data: { resultType: 'vector', result: [{ metric: {}, value: [1, value] }] },
  });

function watcher(
  t: { after(fn: () => unknown): void },
  prometheusUrl: string | undefined,
  scenario: EchoScenario,
) {
  const seen = { errors: [] as string[], checks: [] as AbortCheck[], aborts: [] as string[] };
  const metrics = createOperatorMetrics(new Registry(), () => 0);
  const w = new AbortWatcher({
    prometheusUrl,
    intervalMs: 60_000,
    queryTimeoutMs: 2000,
    logger: { warn() {} },
    now: () => T0,
    candidates: () => [scenario],
    onAbort: (_es, message) => seen.aborts.push(message),
    onError: (_es, message) => seen.errors.push(message),
    onCheck: (_es, check) => seen.checks.push(check),
    checks: metrics.abortChecks,
  });
  // Started for its ticks (its own timer is a minute away and never keeps the process up).
  w.start();
  t.after(() => w.stop());
  return { w, seen, metrics };
}

test('abort check – onError and failureThreshold: defaults, and one line per bad value', () => {
  assert.deepEqual(
    lifecycleProblems({
      abortWhen: { query: QUERY, threshold: 1, onError: 'Continue', failureThreshold: 5 },
    }),
    [],
  );
  const problems = lifecycleProblems({
    abortWhen: { query: QUERY, threshold: 1, onError: 'suspend', failureThreshold: 0 },
  });
  assert.deepEqual(problems, [
    'spec.abortWhen.onError: must be one of Suspend, Continue, got "suspend"',
    'spec.abortWhen.failureThreshold: must be an integer from 1 to 100, got 0',
  ]);
});

test('abort check – an unhealthy check stops the run (AbortCheckFailed) by default; Continue keeps it running', () => {
  const guarded = es({ query: QUERY, threshold: 1 });
  assert.equal(lifecycleOf(guarded, T0).stopped, undefined, 'nothing known yet: it runs');
  const run = lifecycleOf(guarded, T0, undefined, failing);
  assert.equal(run.stopped, 'AbortCheckFailed');
  assert.match(run.message, /ECONNREFUSED; spec\.abortWhen\.onError is Suspend: removed from its pods/);
  assert.equal(run.startTime, '2026-11-24T12:00:00Z', 'the run keeps its clock');
  assert.equal(
    lifecycleOf(es({ query: QUERY, threshold: 1, onError: 'Continue' }), T0, undefined, failing).stopped,
    undefined,
  );
  assert.equal(
    lifecycleOf(guarded, T0, undefined, { healthy: true, reason: 'QuerySucceeded', message: 'ok' }).stopped,
    undefined,
  );
});

test('abort check – the status of this generation is the memory a new leader starts from; another generation’s is not', () => {
  const condition = {
    type: 'AbortCheckHealthy',
    status: 'False' as const,
    reason: 'PrometheusUnset',
    message:
      'abortWhen could not be evaluated 3 times in a row: the operator setting PROMETHEUS_URL is not set',
    observedGeneration: 2,
    lastTransitionTime: '2026-11-24T11:00:00Z',
  };
  const same = es({ query: QUERY, threshold: 1 }, { observedGeneration: 2, conditions: [condition] }, 2);
  assert.equal(abortCheckOf(same, undefined)?.healthy, false);
  assert.equal(lifecycleOf(same, T0).stopped, 'AbortCheckFailed');
  // This leader's own word is newer than the status.
  const healthy = { healthy: true, reason: 'QuerySucceeded', message: 'ok' };
  assert.equal(lifecycleOf(same, T0, undefined, healthy).stopped, undefined);
  // A new generation starts without a verdict.
  const edited = es({ query: QUERY, threshold: 1 }, { observedGeneration: 2, conditions: [condition] }, 3);
  assert.equal(abortCheckOf(edited, undefined), undefined);
  assert.equal(lifecycleOf(edited, T0).stopped, undefined);
});

test('abort check – status: Ready False with reason AbortCheckFailed, and AbortCheckHealthy False naming the URL; a Warning Event', () => {
  const guarded = es({ query: QUERY, threshold: 1 });
  const plan = planNamespace([guarded], [], [], [], (e) => {
    const run = lifecycleOf(e, T0, undefined, failing);
    return run.stopped === undefined ? undefined : { reason: run.stopped, message: run.message };
  });
  const state = plan.scenarios.get('exp')!;
  assert.equal(state.kind, 'Stopped');
  if (state.kind !== 'Stopped') return;
  const status = buildStatus({
    echoScenario: guarded,
    state,
    desired: plan.desired,
    pushes: { holds: () => false, failure: () => undefined, proof: () => undefined },
    now: T0,
    abortCheck: failing,
  })!;
  const [ready, check] = status.conditions!;
  assert.equal(ready?.reason, 'AbortCheckFailed');
  assert.equal(ready?.status, 'False');
  assert.equal(check?.type, 'AbortCheckHealthy');
  assert.equal(check?.status, 'False');
  assert.equal(check?.reason, 'QueryFailed');
  assert.match(check?.message ?? '', /http:\/\/p\/api\/v1\/query failed: ECONNREFUSED/);
  assert.equal(check?.observedGeneration, 1);
  assert.deepEqual(
    { ...transitionOf(undefined, status), message: '' },
    { reason: 'AbortCheckFailed', type: 'Warning', message: '' },
  );
  // Without abortWhen there is no such condition.
  const plain = es(undefined);
  const plainPlan = planNamespace([plain], [], [], []);
  const plainState = plainPlan.scenarios.get('exp')!;
  if (plainState.kind === 'Deleting') return;
  const plainStatus = buildStatus({
    echoScenario: plain,
    state: plainState,
    desired: plainPlan.desired,
    pushes: { holds: () => false, failure: () => undefined, proof: () => undefined },
    now: T0,
    abortCheck: failing,
  })!;
  assert.deepEqual(
    plainStatus.conditions?.map((c) => c.type),
    ['Ready'],
  );
});

test('abort check – the query’s failure names the URL queried and the error: closed port, garbage, no query result', async (t) => {
  const closed = `http://127.0.0.1:${await deadPort('127.0.0.1')}`;
  await assert.rejects(queryPrometheus(closed, QUERY, 2000), {
    code: 'OPERATOR_ERR_ABORT_QUERY',
    message: `Prometheus query GET ${closed}/api/v1/query failed: ECONNREFUSED`,
  });
  const garbage = await serve(t, (_req, res) => res.writeHead(200).end('<html>not prometheus</html>'));
  await assert.rejects(queryPrometheus(`${garbage}/`, QUERY, 2000), {
    code: 'OPERATOR_ERR_ABORT_QUERY',
    message: `Prometheus query GET ${garbage}/api/v1/query failed: HTTP 200, not JSON`,
  });
  // JSON that says success but holds no vector or scalar: not a check that passed.
  const odd = await serve(t, (_req, res) =>
    res.writeHead(200).end(JSON.stringify({ status: 'success', data: { resultType: 'matrix', result: [] } })),
  );
  await assert.rejects(queryPrometheus(odd, QUERY, 2000), {
    message: `Prometheus query GET ${odd}/api/v1/query failed: HTTP 200: an answer that is no vector or scalar`,
  });
  const nullBody = await serve(t, (_req, res) => res.writeHead(200).end('null'));
  await assert.rejects(queryPrometheus(nullBody, QUERY, 2000), { message: /HTTP 200: not a success$/ });
});

test('abort check – without PROMETHEUS_URL: one Warning at the first failure, unhealthy at the third, said once', async (t) => {
  const { w, seen, metrics } = watcher(t, undefined, es({ query: QUERY, threshold: 1 }));
  await w.tick();
  assert.equal(seen.errors.length, 1);
  assert.match(seen.errors[0]!, /PROMETHEUS_URL is not set \(after 3 in a row, onError Suspend removes it/);
  await w.tick();
  assert.deepEqual(seen.checks, [], 'two failures: not yet');
  await w.tick();
  assert.deepEqual(seen.checks, [
    {
      healthy: false,
      reason: 'PrometheusUnset',
      message:
        'abortWhen could not be evaluated 3 times in a row: the operator setting PROMETHEUS_URL is not set',
    },
  ]);
  await w.tick();
  assert.equal(seen.checks.length, 1, 'said once per streak');
  assert.equal(seen.errors.length, 1, 'one Warning per streak');
  assert.equal((await metrics.abortChecks.get()).values.find((v) => v.labels.result === 'failed')?.value, 4);
  assert.deepEqual(seen.aborts, []);
});

test('abort check – failureThreshold 1 and onError Continue: unhealthy at once, the Warning says it goes on', async (t) => {
  const { w, seen } = watcher(
    t,
    undefined,
    es({ query: QUERY, threshold: 1, failureThreshold: 1, onError: 'Continue' }),
  );
  await w.tick();
  assert.equal(seen.checks.length, 1);
  assert.equal(seen.checks[0]?.healthy, false);
  assert.match(seen.errors[0]!, /onError is Continue: it goes on without its steady-state check/);
});

test('abort check – a Prometheus that comes back: healthy again at the first answer, failures counted from zero', async (t) => {
  let answer = 'garbage';
  const url = await serve(t, (_req, res) => res.writeHead(200).end(answer));
  const { w, seen, metrics } = watcher(t, url, es({ query: QUERY, threshold: 5 }));
  for (let i = 0; i < 3; i++) await w.tick();
  assert.deepEqual(
    seen.checks.map((c) => [c.healthy, c.reason]),
    [[false, 'QueryFailed']],
  );
  assert.match(seen.checks[0]!.message, new RegExp(`${url}/api/v1/query failed: HTTP 200, not JSON`));
  answer = vector('1');
  await w.tick();
  assert.deepEqual(
    seen.checks.map((c) => [c.healthy, c.reason]),
    [
      [false, 'QueryFailed'],
      [true, 'QuerySucceeded'],
    ],
  );
  await w.tick();
  assert.equal(seen.checks.length, 2, 'healthy is said once');
  // Two failures after a success are below the threshold again.
  answer = 'garbage';
  await w.tick();
  await w.tick();
  assert.equal(seen.checks.length, 2);
  assert.equal((await metrics.abortChecks.get()).values.find((v) => v.labels.result === 'clear')?.value, 2);
});
