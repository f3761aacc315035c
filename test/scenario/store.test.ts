import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Scenario, type ScenarioInvalidError, ScenarioStore } from '../../src/scenario/index.ts';

const orders: Scenario = {
  path: '/orders',
  responses: [
    { status: 200, body: 'first', headers: { 'Content-Type': 'text/plain', 'X-Step': 'one' } },
    { status: 503, delay: '100-500ms' },
    { status: 429, delay: '2s', headers: { 'Retry-After': '1' } },
  ],
};
const health: Scenario = { path: '/flaky', responses: [{ status: 500 }, { status: 200 }] };

function statuses(store: ScenarioStore, path: string, count: number): Array<number | undefined> {
  return Array.from({ length: count }, () => store.next(path)?.status);
}

test('ScenarioStore – starts empty: no scenario, no step', () => {
  const store = new ScenarioStore();
  assert.equal(store.size, 0);
  assert.deepEqual(store.list(), []);
  assert.equal(store.next('/orders'), undefined);
});

test('ScenarioStore – next cycles through the responses in order and wraps after the last', () => {
  const store = new ScenarioStore();
  store.replace([orders]);
  assert.deepEqual(statuses(store, '/orders', 7), [200, 503, 429, 200, 503, 429, 200]);
});

test('ScenarioStore – a step is ready to use: delay parsed, headers lowercased and frozen, index', () => {
  const store = new ScenarioStore();
  store.replace([orders]);
  const first = store.next('/orders');
  const second = store.next('/orders');
  const third = store.next('/orders');
  assert.deepEqual(first, {
    status: 200,
    body: 'first',
    headers: { 'content-type': 'text/plain', 'x-step': 'one' },
    delay: undefined,
    index: 0,
  });
  assert.deepEqual(second, {
    status: 503,
    body: undefined,
    headers: {},
    delay: { minMs: 100, maxMs: 500 },
    index: 1,
  });
  assert.deepEqual(third, {
    status: 429,
    body: undefined,
    headers: { 'retry-after': '1' },
    delay: { minMs: 2000, maxMs: 2000 },
    index: 2,
  });
  assert.equal(Object.isFrozen(first), true);
  assert.equal(Object.isFrozen(first?.headers), true);
  assert.throws(() => {
    (first?.headers as Record<string, string>)['x-step'] = 'changed';
  }, TypeError);
  // The same prepared step comes back on the next lap: nothing is built per request.
  assert.equal(store.next('/orders'), first);
});

test('ScenarioStore – each path has its own cycle, matched exactly', () => {
  const store = new ScenarioStore();
  store.replace([orders, health]);
  assert.equal(store.size, 2);
  assert.equal(store.next('/orders')?.status, 200);
  assert.deepEqual(statuses(store, '/flaky', 3), [500, 200, 500]);
  assert.equal(store.next('/orders')?.status, 503);
  for (const other of ['/orders/', '/Orders', '/orders?x=1', 'orders', '/'])
    assert.equal(store.next(other), undefined, other);
  assert.equal(store.next('/orders')?.status, 429);
});

test('ScenarioStore – replace swaps the whole set and restarts every cycle', () => {
  const store = new ScenarioStore();
  store.replace([orders, health]);
  statuses(store, '/orders', 2);
  statuses(store, '/flaky', 1);
  store.replace([health, { path: '/new', responses: [{ status: 201 }] }]);
  assert.equal(store.size, 2);
  assert.equal(store.next('/orders'), undefined);
  assert.equal(store.next('/flaky')?.status, 500);
  assert.equal(store.next('/new')?.status, 201);
  // Replacing with the same set restarts it too.
  store.replace([health]);
  assert.equal(store.next('/flaky')?.status, 500);
  store.replace([]);
  assert.equal(store.size, 0);
  assert.equal(store.next('/flaky'), undefined);
});

test('ScenarioStore – an invalid set is refused with every problem, and the old set and cycles stay', () => {
  const store = new ScenarioStore();
  store.replace([orders]);
  store.next('/orders');
  const invalid = [
    { path: '/a', responses: [{ status: 200, delay: '9-1ms' }] },
    { path: '/a', responses: [{ status: 200 }] },
  ] as Scenario[];
  assert.throws(
    () => store.replace(invalid),
    (error: ScenarioInvalidError) => {
      assert.equal(error.code, 'SCENARIO_ERR_INVALID');
      assert.deepEqual(
        error.problems.map((p) => p.path),
        ['/0/responses/0/delay', '/1/path'],
      );
      return true;
    },
  );
  assert.equal(store.size, 1);
  assert.equal(store.next('/orders')?.status, 503);
});

test('ScenarioStore – list returns copies; neither they nor the replaced input change the store', () => {
  const store = new ScenarioStore();
  const input = structuredClone([orders]);
  store.replace(input);
  input[0]!.responses[0]!.status = 418;
  input[0]!.path = '/changed';
  const listed = store.list();
  assert.deepEqual(listed, [orders]);
  listed[0]!.responses[0]!.headers!['X-Step'] = 'mutated';
  listed[0]!.responses.push({ status: 201 });
  listed.push(health);
  assert.deepEqual(store.list(), [orders]);
  assert.notEqual(store.list()[0], store.list()[0]);
  assert.equal(store.next('/orders')?.headers['x-step'], 'one');
  assert.equal(store.next('/changed'), undefined);
});
