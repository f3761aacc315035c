import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRandom } from '../../src/echo/random.ts';
import {
  MAX_SESSION_STATES,
  MAX_SESSIONS,
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
    upstream: undefined,
    grpcStatus: undefined,
    grpcMessage: undefined,
    grpcMetadata: {},
    grpcTrailers: {},
  });
  assert.deepEqual(second, {
    status: 503,
    body: undefined,
    headers: {},
    delay: { minMs: 100, maxMs: 500 },
    faults: undefined,
    index: 1,
    upstream: undefined,
    grpcStatus: undefined,
    grpcMessage: undefined,
    grpcMetadata: {},
    grpcTrailers: {},
  });
  assert.deepEqual(third, {
    status: 429,
    body: undefined,
    headers: { 'retry-after': '1' },
    delay: { minMs: 2000, maxMs: 2000 },
    faults: undefined,
    index: 2,
    upstream: undefined,
    grpcStatus: undefined,
    grpcMessage: undefined,
    grpcMetadata: {},
    grpcTrailers: {},
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
  assert.equal(handle.next?.status, 500, 'the response take would serve, read without taking it');
  assert.equal(store.match(get('/flaky'))?.position, 0, 'matching again moves nothing');
  assert.equal(store.take(handle).status, 500);
  assert.equal(handle.next?.status, 200);
  assert.equal(handle.position, 1);
  assert.equal(store.take(handle).status, 200);
  assert.equal(handle.position, 0);
  assert.equal(store.match(get('/other')), undefined);
  assert.throws(
    () => store.take({ label: 'x', position: 0, upstream: undefined, next: undefined }),
    TypeError,
  );
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
      order: 'cycle',
      position: 1,
      positionServed: 0,
      served: [4, 1],
      total: 5,
      expired: false,
    },
    {
      index: 1,
      name: 'once',
      path: '/o',
      cycle: false,
      order: 'cycle',
      position: 1,
      positionServed: 0,
      served: [1, 3],
      total: 4,
      expired: false,
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

/** A random source that hands out `values` in turn and counts the draws. */
function scripted(values: readonly number[]): { random: () => number; draws: () => number } {
  let i = 0;
  return { random: () => values[i++ % values.length]!, draws: () => i };
}

const weighted: Scenario = {
  name: 'weighted',
  path: '/w',
  order: 'random',
  responses: [
    { status: 200, weight: 1 },
    { status: 503, weight: 3 },
    { status: 504, weight: 0 },
    { status: 429, weight: 6 },
  ],
};

test('ScenarioStore – order: random draws by weight, one value of the given random per answer', () => {
  const store = new ScenarioStore();
  store.replace([weighted]);
  // Weights 1, 3, 0, 6 of 10: [0, 0.1) is 200, [0.1, 0.4) 503, never 504, [0.4, 1) 429.
  const points = [0, 0.0999, 0.1, 0.3999, 0.4, 0.9999];
  const source = scripted(points);
  assert.deepEqual(
    points.map(() => store.next('/w', undefined, source.random)?.status),
    [200, 200, 503, 503, 429, 429],
  );
  assert.equal(source.draws(), points.length);
});

test('ScenarioStore – order: random answers match the weights over many seeded draws, and a seed replays', () => {
  const store = new ScenarioStore();
  store.replace([weighted]);
  const draws = 20_000;
  const random = seededRandom(42);
  const counts = new Map<number, number>();
  for (let i = 0; i < draws; i++) {
    const status = store.next('/w', undefined, random)!.status ?? 0;
    counts.set(status, (counts.get(status) ?? 0) + 1);
  }
  // Binomial standard deviation at 20,000 draws is at most 0.36%: 1.5% is over four of them.
  for (const [status, share] of [
    [200, 0.1],
    [503, 0.3],
    [429, 0.6],
  ] as const) {
    assert.ok(
      Math.abs((counts.get(status) ?? 0) / draws - share) < 0.015,
      `${status}: ${counts.get(status)}`,
    );
  }
  assert.equal(counts.get(504), undefined, 'weight 0 is never drawn');
  const run = (seed: number) => {
    store.reset();
    const seeded = seededRandom(seed);
    return Array.from({ length: 20 }, () => store.next('/w', undefined, seeded)?.status);
  };
  assert.deepEqual(run(7), run(7));
  assert.notDeepEqual(run(7), run(8));
});

test('ScenarioStore – order: random serves a drawn response repeat times, then draws again; the handle shows the draw', () => {
  const store = new ScenarioStore();
  store.replace([{ path: '/r', order: 'random', responses: [{ status: 500, repeat: 3 }, { status: 200 }] }]);
  const source = scripted([0.1, 0.9, 0.2]);
  const handle = store.match(get('/r'), undefined, source.random);
  assert.equal(handle?.position, 0, 'drawn at match, so the handle names what take serves');
  assert.equal(store.take(handle!).status, 500);
  assert.deepEqual(
    Array.from({ length: 5 }, () => store.next('/r', undefined, source.random)?.status),
    [500, 500, 200, 500, 500],
  );
  assert.equal(source.draws(), 3, 'one draw a run');
  const [state] = store.states();
  assert.deepEqual([state?.order, state?.position, state?.positionServed], ['random', 0, 2]);
  const pinned = store.setPosition({ path: '/r' }, 1);
  assert.deepEqual([pinned.ok, !pinned.ok && pinned.reason], [false, 'random']);
});

test('ScenarioStore – activeFor: matches until the window ends on the injected clock, then the next scenario does', () => {
  let now = 1_000_000;
  const store = new ScenarioStore({ now: () => now });
  store.replace([
    { name: 'brief', path: '/a', activeFor: '30s', responses: [{ status: 503 }] },
    { name: 'after', pathPattern: '/*', responses: [{ status: 200 }] },
  ]);
  assert.equal(store.next('/a')?.status, 503);
  now += 29_999;
  assert.equal(store.next('/a')?.status, 503);
  assert.deepEqual(store.counts(), { expiredActiveFor: 0, expiredTimes: 0, sessions: 0, sessionsEvicted: 0 });
  now += 1;
  assert.equal(store.next('/a')?.status, 200, 'expired: the pattern below answers');
  assert.equal(store.next('/a')?.status, 200);
  const [brief] = store.states();
  assert.equal(brief?.expired, true);
  assert.equal(brief?.activeUntil, new Date(1_030_000).toISOString());
  assert.equal(brief?.total, 2);
  assert.equal(store.counts().expiredActiveFor, 1, 'counted once, however often it is passed over');
  // A reset starts the window again, from now.
  store.reset({ name: 'brief' });
  assert.equal(store.next('/a')?.status, 503);
  assert.equal(store.states()[0]?.activeUntil, new Date(now + 30_000).toISOString());
  now += 30_000;
  // Replacing the set counts a window that ended without a request to notice it.
  store.replace([{ path: '/a', activeFor: '1ms', responses: [{ status: 503 }] }]);
  assert.equal(store.counts().expiredActiveFor, 2);
  now += 1;
  assert.equal(store.states()[0]?.expired, true);
  assert.equal(store.counts().expiredActiveFor, 3, 'a read of the state or the counts notices it too');
});

test('ScenarioStore – times: answers at most n requests, then stops matching; a reset gives n more', () => {
  const store = new ScenarioStore();
  store.replace([{ name: 'twice', path: '/t', times: 2, responses: [{ status: 503 }, { status: 500 }] }]);
  assert.deepEqual(statuses(store, '/t', 4), [503, 500, undefined, undefined]);
  const [state] = store.states();
  assert.deepEqual([state?.expired, state?.remaining, state?.total], [true, 0, 2]);
  assert.equal(store.counts().expiredTimes, 1);
  store.reset();
  assert.deepEqual(store.states()[0]?.remaining, 2);
  assert.deepEqual(statuses(store, '/t', 3), [503, 500, undefined]);
  assert.equal(store.counts().expiredTimes, 2);
});

test('ScenarioStore – sessions: each has its own position and times count, apart from requests without one', () => {
  const store = new ScenarioStore();
  store.replace([
    { name: 'seq', path: '/s', times: 3, responses: [{ status: 500 }, { status: 502 }, { status: 200 }] },
  ]);
  assert.deepEqual(statuses(store, '/s', 2), [500, 502]);
  const session = (id: string, count: number) =>
    Array.from({ length: count }, () => store.next('/s', id)?.status);
  assert.deepEqual(session('a', 2), [500, 502], 'a starts at the start');
  assert.deepEqual(session('b', 4), [500, 502, 200, undefined], 'b too, and its times run out alone');
  assert.deepEqual(session('a', 2), [200, undefined]);
  assert.deepEqual(statuses(store, '/s', 2), [200, undefined], 'requests without a session went on');
  assert.equal(store.counts().expiredTimes, 3);
  const a = store.states('a')[0]!;
  assert.deepEqual([a.position, a.total, a.expired, a.remaining, a.served], [0, 3, true, 0, undefined]);
  const unknown = store.states('nobody')[0]!;
  assert.deepEqual([unknown.position, unknown.total, unknown.expired], [0, 0, false]);
  assert.equal(store.counts().sessions, 2, 'reading a session keeps nothing');
  // A session's reset and position touch that session only.
  assert.equal(store.reset(undefined, 'a')[0]?.total, 0);
  assert.equal(store.states('b')[0]?.total, 3);
  assert.equal(store.states()[0]?.total, 3);
  assert.equal(store.setPosition({ name: 'seq' }, 2, 'a').ok, true);
  assert.deepEqual(session('a', 2), [200, 500]);
  assert.equal(store.states()[0]?.position, 0);
  // A reset without a session drops every session; so does a new set.
  store.reset();
  assert.equal(store.counts().sessions, 0);
  assert.deepEqual(session('b', 1), [500]);
  store.replace([{ path: '/s', responses: [{ status: 201 }] }]);
  assert.equal(store.counts().sessions, 0);
  assert.equal(store.counts().sessionsEvicted, 0, 'neither is an eviction');
});

test('ScenarioStore – keeps at most MAX_SESSIONS sessions, dropping the least recently used and counting it', () => {
  const store = new ScenarioStore();
  store.replace([{ path: '/p', responses: [{ status: 500 }, { status: 200 }] }]);
  for (let i = 0; i < MAX_SESSIONS; i++) store.next('/p', `s${i}`);
  assert.deepEqual(store.counts(), {
    expiredActiveFor: 0,
    expiredTimes: 0,
    sessions: MAX_SESSIONS,
    sessionsEvicted: 0,
  });
  // s0 is used again, so s1 is now the least recently used.
  assert.equal(store.next('/p', 's0')?.status, 200);
  store.next('/p', 'new');
  assert.deepEqual([store.counts().sessions, store.counts().sessionsEvicted], [MAX_SESSIONS, 1]);
  assert.equal(store.states('s1')[0]?.total, 0, 's1 was dropped: it starts again');
  assert.equal(store.states('s0')[0]?.total, 2);
  assert.equal(store.states('s2')[0]?.total, 1);
  assert.equal(store.next('/p', 's1')?.status, 500);
  assert.equal(store.counts().sessionsEvicted, 2, 's2 made room for it');
});

test('ScenarioStore – keeps at most MAX_SESSION_STATES session states in all, dropping whole sessions', () => {
  const store = new ScenarioStore();
  const perSession = 100;
  store.replace(
    Array.from({ length: perSession }, (_, i) => ({ path: `/p${i}`, responses: [{ status: 200 }] })),
  );
  const sessions = MAX_SESSION_STATES / perSession;
  for (let s = 0; s < sessions; s++) for (let i = 0; i < perSession; i++) store.next(`/p${i}`, `s${s}`);
  assert.deepEqual([store.counts().sessions, store.counts().sessionsEvicted], [sessions, 0]);
  store.next('/p0', 'one-more');
  assert.deepEqual([store.counts().sessions, store.counts().sessionsEvicted], [sessions, 1]);
  assert.equal(store.states('s0')[0]?.total, 0);
  assert.equal(store.states('s1')[0]?.total, 1);
});

test('ScenarioStore – sessionIds lists the sessions kept, most recently used first, at most the limit; reading is not a use', () => {
  const store = new ScenarioStore();
  store.replace([health]);
  for (const session of ['a', 'b', 'c', 'a']) store.next('/flaky', session);
  assert.deepEqual(store.sessionIds(10), ['a', 'c', 'b']);
  assert.deepEqual(store.sessionIds(2), ['a', 'c']);
  assert.deepEqual(store.sessionIds(10), ['a', 'c', 'b'], 'listing moved the order');
  store.reset(undefined, 'c');
  assert.deepEqual(store.sessionIds(10), ['a', 'b']);
});
