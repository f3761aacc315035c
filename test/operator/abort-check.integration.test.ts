/**
 * `spec.abortWhen` fails closed (issue #38), end to end against the API double (or the KUBECONFIG
 * cluster) with real echo pods: with Prometheus absent (no PROMETHEUS_URL), down (a closed port) or
 * answering garbage, an experiment is taken off its pods after `failureThreshold` failed checks,
 * with `Ready` False (reason AbortCheckFailed), `AbortCheckHealthy` False naming the URL and the
 * error, and a Warning Event; a Prometheus that answers again puts it back. `onError: Continue`
 * keeps it running and says so.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, test } from 'node:test';
import type { Operator } from '../../src/operator/operator.ts';
import { deadPort, type Fixture, spec, startFixture, until } from './fixture.ts';

/** Generous: a loaded 2-core machine, or a real cluster. */
const WITHIN_MS = 20_000;
const QUERY = 'sum(echo_requests_total{status="500"})';
/** Short, so that three failed checks take well under a second. */
const POLL = { abortPollIntervalMs: 100, abortQueryTimeoutMs: 500 };

async function paths(f: Fixture, pod: string): Promise<string> {
  return ((await f.scenariosOf(pod)) as Array<{ path: string }>).map((s) => s.path).join(',');
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

async function condition(f: Fixture, name: string, type: string): Promise<Condition | undefined> {
  return (await f.readiness(name)).conditions?.find((c) => c.type === type);
}

async function eventsOf(
  f: Fixture,
  name: string,
): Promise<Array<{ reason: string; type: string; message: string }>> {
  const list = await f.core.listNamespacedEvent({ namespace: f.namespace });
  return list.items
    .filter((e) => e.involvedObject.name === name)
    .map((e) => ({ reason: e.reason ?? '', type: e.type ?? '', message: e.message ?? '' }));
}

/** A stand-in Prometheus whose answer the test sets: garbage first. */
async function fakePrometheus(): Promise<{ url: string; answer: string; close(): Promise<void> }> {
  const state = { answer: '<html>this is not Prometheus</html>' };
  const server = createServer((_req, res) => res.writeHead(200).end(state.answer));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get answer() {
      return state.answer;
    },
    set answer(text: string) {
      state.answer = text;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The value of the series `name{labels}` in the operator's registry; 0 when absent. */
async function sample(operator: Operator, name: string, labels: Record<string, string>): Promise<number> {
  const metric = await operator.registry.getSingleMetric(name)?.get();
  const found = metric?.values.find((v) =>
    Object.entries(labels).every(([k, value]) => String(v.labels[k]) === value),
  );
  return found?.value ?? 0;
}

/** Waits for the fail-closed state, and checks what the user sees of it (status, pods, Event, metrics). */
async function failedClosed(f: Fixture, operator: Operator, name: string, message: RegExp): Promise<void> {
  await until(
    'Ready False, reason AbortCheckFailed',
    async () => (await f.readiness(name)).ready?.reason === 'AbortCheckFailed',
    WITHIN_MS,
  );
  const ready = (await f.readiness(name)).ready!;
  assert.equal(ready.status, 'False');
  assert.match(ready.message, message);
  assert.match(ready.message, /onError is Suspend: removed from its pods until a check succeeds/);
  const check = await condition(f, name, 'AbortCheckHealthy');
  assert.equal(check?.status, 'False');
  assert.match(check?.message ?? '', /could not be evaluated 3 times in a row/);
  assert.match(check?.message ?? '', message);
  await until('the pod cleared', async () => (await paths(f, 'echo-0')) === '', WITHIN_MS);
  await until(
    'a Warning Event AbortCheckFailed naming the cause',
    async () =>
      (await eventsOf(f, name)).some(
        (e) => e.reason === 'AbortCheckFailed' && e.type === 'Warning' && message.test(e.message),
      ),
    WITHIN_MS,
  );
  assert.ok((await sample(operator, 'echo_operator_abort_checks_total', { result: 'failed' })) >= 3);
  await until(
    'echo_operator_echoscenarios counts it under AbortCheckHealthy False',
    async () =>
      (await sample(operator, 'echo_operator_echoscenarios', {
        condition: 'AbortCheckHealthy',
        status: 'False',
        reason: check?.reason ?? '',
      })) === 1,
    WITHIN_MS,
  );
}

describe('operator abortWhen fails closed', () => {
  let f: Fixture | undefined;
  const closing: Array<() => Promise<void>> = [];
  afterEach(async () => {
    await f?.close();
    f = undefined;
    for (const close of closing.splice(0)) await close();
  });

  test('abort check – Prometheus absent (no PROMETHEUS_URL): suspended, with the condition and the Event', async () => {
    f = await startFixture(1);
    const operator = await f.startOperator(POLL);
    await f.createScenario('guarded', { ...spec('/guarded'), abortWhen: { query: QUERY, threshold: 5 } });
    await failedClosed(f, operator, 'guarded', /PROMETHEUS_URL is not set/);
    assert.equal((await condition(f, 'guarded', 'AbortCheckHealthy'))?.reason, 'PrometheusUnset');
  });

  test('abort check – Prometheus down (a closed port): suspended, the message naming the URL and ECONNREFUSED', async () => {
    f = await startFixture(1);
    const url = `http://127.0.0.1:${await deadPort('127.0.0.1')}`;
    const operator = await f.startOperator({ ...POLL, prometheusUrl: url });
    await f.createScenario('guarded', { ...spec('/guarded'), abortWhen: { query: QUERY, threshold: 5 } });
    const escaped = `${url}/api/v1/query`.replace(/[.]/g, '\\.');
    await failedClosed(f, operator, 'guarded', new RegExp(`GET ${escaped} failed: ECONNREFUSED`));
    assert.equal((await condition(f, 'guarded', 'AbortCheckHealthy'))?.reason, 'QueryFailed');
  });

  test('abort check – Prometheus answering garbage: suspended; answering again puts the experiment back', async () => {
    f = await startFixture(1);
    const prometheus = await fakePrometheus();
    closing.push(() => prometheus.close());
    const operator = await f.startOperator({ ...POLL, prometheusUrl: prometheus.url });
    await f.createScenario('guarded', { ...spec('/guarded'), abortWhen: { query: QUERY, threshold: 5 } });
    await failedClosed(f, operator, 'guarded', /api\/v1\/query failed: HTTP 200, not JSON/);

    prometheus.answer = JSON.stringify({
      status: 'success',
      data: { resultType: 'vector', result: [{ metric: {}, value: [1, '0'] }] },
    });
    await until('pushed again', async () => (await paths(f!, 'echo-0')) === '/guarded', WITHIN_MS);
    await until(
      'Synced again',
      async () => (await f!.readiness('guarded')).ready?.reason === 'Synced',
      WITHIN_MS,
    );
    const check = await condition(f, 'guarded', 'AbortCheckHealthy');
    assert.equal(check?.status, 'True');
    assert.equal(check?.reason, 'QuerySucceeded');
  });

  test('abort check – onError Continue: it keeps running, AbortCheckHealthy False and a Warning say it is unguarded', async () => {
    f = await startFixture(1);
    await f.startOperator(POLL);
    await f.createScenario('unguarded', {
      ...spec('/unguarded'),
      abortWhen: { query: QUERY, threshold: 5, onError: 'Continue', failureThreshold: 2 },
    });
    await until(
      'AbortCheckHealthy False',
      async () => (await condition(f!, 'unguarded', 'AbortCheckHealthy'))?.status === 'False',
      WITHIN_MS,
    );
    assert.match(
      (await condition(f, 'unguarded', 'AbortCheckHealthy'))?.message ?? '',
      /could not be evaluated 2 times in a row: the operator setting PROMETHEUS_URL is not set/,
    );
    await until(
      'Synced',
      async () => (await f!.readiness('unguarded')).ready?.reason === 'Synced',
      WITHIN_MS,
    );
    assert.equal(await paths(f, 'echo-0'), '/unguarded');
    assert.ok(
      (await eventsOf(f, 'unguarded')).some(
        (e) => e.reason === 'AbortCheckFailed' && /onError is Continue/.test(e.message),
      ),
    );
  });
});
