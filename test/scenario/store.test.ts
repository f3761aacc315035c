import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type Scenario,
  type ScenarioInvalidError,
  type ScenarioRequest,
  ScenarioStore,
} from '../../src/scenario/index.ts';

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
    faults: undefined,
    index: 0,
  });
  assert.deepEqual(second, {
    status: 503,
    body: undefined,
    headers: {},
    delay: { minMs: 100, maxMs: 500 },
    faults: undefined,
    index: 1,
  });
  assert.deepEqual(third, {
    status: 429,
    body: undefined,
    headers: { 'retry-after': '1' },
    delay: { minMs: 2000, maxMs: 2000 },
    faults: undefined,
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

const get = (path: string, more: Partial<ScenarioRequest> = {}): ScenarioRequest => ({
  method: 'GET',
  path,
  query: '',
  headers: {},
  body: undefined,
  ...more,
});

test('ScenarioStore – match finds without advancing; take serves and advances', () => {
  const store = new ScenarioStore();
  store.replace([health]);
  const handle = store.match(get('/flaky'));
  assert.ok(handle);
  assert.equal(handle.label, '/flaky');
  assert.equal(handle.position, 0);
  assert.equal(store.match(get('/flaky'))?.position, 0, 'matching again moves nothing');
  assert.equal(store.take(handle).status, 500);
  assert.equal(handle.position, 1);
  assert.equal(store.take(handle).status, 200);
  assert.equal(handle.position, 0);
  assert.equal(store.match(get('/other')), undefined);
  assert.throws(() => store.take({ label: 'x', position: 0 }), TypeError);
});

test('ScenarioStore – list order decides, whether the first match is plain or conditional', () => {
  const store = new ScenarioStore();
  store.replace([
    { name: 'posts', path: '/a', method: ['POST'], responses: [{ status: 201 }] },
    { path: '/a', responses: [{ status: 200 }] },
    { pathPattern: '/a', responses: [{ status: 202 }] },
    { path: '/b', responses: [{ status: 203 }] },
    { pathPattern: '/*', responses: [{ status: 204 }] },
  ]);
  const status = (request: ScenarioRequest) => {
    const handle = store.match(request);
    return handle === undefined ? undefined : store.take(handle).status;
  };
  assert.equal(status(get('/a', { method: 'post' })), 201);
  assert.equal(status(get('/a')), 200, 'the plain path before the pattern');
  assert.equal(status(get('/b')), 203);
  assert.equal(status(get('/c')), 204);
  assert.equal(status(get('/c/d')), undefined);
  assert.equal(store.match(get('/a', { method: 'POST' }))?.label, 'posts');
});

test('ScenarioStore – glob metacharacters other than * are literal; ** crosses segments', () => {
  const store = new ScenarioStore();
  store.replace([{ pathPattern: '/v1.0/(x)/**', responses: [{ status: 200 }] }]);
  assert.ok(store.match(get('/v1.0/(x)/a/b')));
  assert.equal(store.match(get('/v1x0/(x)/a')), undefined);
  assert.equal(store.match(get('/v1.0/x/a')), undefined);
});

test('ScenarioStore – headers (string or list), query and body conditions', () => {
  const store = new ScenarioStore();
  store.replace([
    { name: 'h', path: '/c', headers: { 'X-A': 're:[0-9]+' }, responses: [{ status: 200 }] },
    { name: 'q', path: '/c', query: { k: 'v w' }, responses: [{ status: 200 }] },
    { name: 'b', path: '/c', body: { jsonPointer: '/a~1b/0', value: 'null' }, responses: [{ status: 200 }] },
    { name: 'w', path: '/c', body: { jsonPointer: '', value: '{"x":1}' }, responses: [{ status: 200 }] },
  ]);
  const label = (more: Partial<ScenarioRequest>) => store.match(get('/c', more))?.label;
  assert.equal(label({ headers: { 'x-a': '12' } }), 'h');
  assert.equal(label({ headers: { 'x-a': ['no', '7'] } }), 'h');
  assert.equal(label({ headers: { 'x-a': '1a' } }), undefined);
  assert.equal(label({ query: 'k=v+w' }), 'q', 'the query is decoded');
  assert.equal(label({ query: 'k=v%20w' }), 'q');
  assert.equal(label({ body: Buffer.from('{"a/b":[null]}') }), 'b');
  assert.equal(label({ body: '{"a/b":[]}' }), undefined);
  assert.equal(label({ body: '{"x":1}' }), 'w');
  assert.equal(label({ body: '{"x": 1}' }), 'w', 'compared as JSON text, not as sent');
});

test('ScenarioStore – repeat, cycle: false, states, reset and setPosition', () => {
  const store = new ScenarioStore();
  store.replace([
    { name: 'r', path: '/r', responses: [{ status: 500, repeat: 2 }, { status: 200 }] },
    { name: 'once', path: '/o', cycle: false, responses: [{ status: 503 }, { status: 200 }] },
  ]);
  assert.deepEqual(statuses(store, '/r', 5), [500, 500, 200, 500, 500]);
  assert.deepEqual(statuses(store, '/o', 4), [503, 200, 200, 200]);
  assert.deepEqual(store.states(), [
    {
      index: 0,
      name: 'r',
      path: '/r',
      cycle: true,
      position: 1,
      positionServed: 0,
      served: [4, 1],
      total: 5,
    },
    {
      index: 1,
      name: 'once',
      path: '/o',
      cycle: false,
      position: 1,
      positionServed: 0,
      served: [1, 3],
      total: 4,
    },
  ]);
  assert.deepEqual(
    store.reset({ name: 'once' }).map((s) => s.total),
    [0],
  );
  assert.deepEqual(store.reset({ path: '/nope' }), []);
  assert.equal(store.states()[0]?.total, 5, 'the other one kept its state');
  const moved = store.setPosition({ path: '/r' }, 1);
  assert.equal(moved.ok, true);
  assert.deepEqual(statuses(store, '/r', 2), [200, 500]);
  const out = store.setPosition({ name: 'r' }, 2);
  assert.deepEqual([out.ok, !out.ok && out.reason], [false, 'out-of-range']);
  const missing = store.setPosition({ name: 'x' }, 0);
  assert.deepEqual([missing.ok, !missing.ok && missing.reason], [false, 'not-found']);
  assert.equal(store.reset().length, 2);
  assert.deepEqual(
    store.states().map((s) => [s.position, s.total]),
    [
      [0, 0],
      [0, 0],
    ],
  );
});

test('ScenarioStore – replace rejects a bad pattern and keeps the old set', () => {
  const store = new ScenarioStore();
  store.replace([health]);
  assert.throws(
    () => store.replace([{ pathPattern: 're:(', responses: [{ status: 200 }] }]),
    (error: ScenarioInvalidError) =>
      error.code === 'SCENARIO_ERR_INVALID' &&
      /\/0\/pathPattern: .*not a valid regular expression/.test(error.message),
  );
  assert.equal(store.next('/flaky')?.status, 500);
});
