/**
 * ScenarioStore.peek, the console's dry run (issue #37): which scenario would answer a request and
 * why each other would not, without changing anything the store keeps.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRandom } from '../../src/echo/random.ts';
import { type Scenario, type ScenarioRequest, ScenarioStore } from '../../src/scenario/index.ts';

const SET: Scenario[] = [
  { name: 'pay-post', path: '/pay', method: ['POST'], responses: [{ status: 201 }] },
  {
    name: 'pay-vip',
    path: '/pay',
    headers: { 'X-Tier': 're:^vip' },
    query: { currency: 'EUR' },
    times: 1,
    responses: [{ status: 202 }],
  },
  {
    name: 'pay-json',
    path: '/pay',
    body: { jsonPointer: '/amount', value: 're:^[0-9]+$' },
    responses: [{ status: 200 }],
  },
  { name: 'pay', path: '/pay', responses: [{ status: 500, repeat: 2 }, { status: 200 }] },
  { name: 'api', pathPattern: '/api/*', order: 'random', responses: [{ status: 200 }, { status: 503 }] },
  { name: 'flash', path: '/flash', activeFor: '10s', responses: [{ status: 418 }] },
  { name: 'catch-all', pathPattern: '/*', responses: [{ status: 404 }] },
];

function request(path: string, more: Partial<ScenarioRequest> = {}): ScenarioRequest {
  return { method: 'GET', path, query: '', headers: {}, body: undefined, ...more };
}

/** A store of SET on a clock the test moves. */
function storeAt() {
  const clock = { now: 1_000_000 };
  const store = new ScenarioStore({ now: () => clock.now });
  store.replace(SET);
  return { store, clock };
}

/** Everything a store shows of where it stands: what a peek must leave as it is. */
function snapshot(store: ScenarioStore) {
  return {
    states: store.states(),
    alice: store.states('alice'),
    bob: store.states('bob'),
    counts: store.counts(),
  };
}

/** The same requests through `match` and `take`: what a store answers. */
function drive(store: ScenarioStore): unknown[] {
  const random = seededRandom(7);
  const requests: Array<[ScenarioRequest, string | undefined]> = [
    [request('/pay'), undefined],
    [request('/pay', { headers: { 'x-tier': 'vip-1' }, query: 'currency=EUR' }), 'alice'],
    [request('/pay', { headers: { 'x-tier': 'vip-1' }, query: 'currency=EUR' }), 'alice'],
    [request('/pay'), 'bob'],
    [request('/api/x'), undefined],
    [request('/api/y'), undefined],
    [request('/flash'), undefined],
    [request('/pay'), undefined],
  ];
  return requests.map(([r, session]) => {
    const handle = store.match(r, session, random);
    return handle === undefined ? undefined : [handle.label, store.take(handle).status];
  });
}

test('ScenarioStore.peek – names the scenario that would answer, its response, and why each other would not', () => {
  const { store } = storeAt();
  const peek = store.peek(request('/pay', { headers: { 'x-tier': 'gold' }, query: 'currency=EUR' }));
  assert.equal(peek.answer, 3);
  assert.equal(peek.omitted, 0);
  assert.deepEqual(
    peek.scenarios.map((s) => [s.label, s.outcome, s.reason?.message ?? s.response]),
    [
      ['pay-post', 'no-match', 'method is not POST'],
      ['pay-vip', 'no-match', 'header x-tier is not "re:^vip"'],
      ['pay-json', 'no-match', 'body is not JSON'],
      ['pay', 'answers', 0],
      ['api', 'no-match', 'path does not match "/api/*"'],
      ['flash', 'no-match', 'path is not "/flash"'],
      ['catch-all', 'shadowed', undefined],
    ],
  );
  assert.equal(peek.scenarios[3]?.status, 500);
  const json = store.peek(request('/pay', { body: '{"amount": "12"}' }));
  assert.equal(json.answer, 2);
  assert.equal(
    store.peek(request('/pay', { body: '{"amount": "x"}' })).scenarios[2]?.reason?.message,
    'body at "/amount" is not "re:^[0-9]+$"',
  );
  assert.equal(
    store.peek(request('/pay', { headers: { 'x-tier': 'vip' } })).scenarios[1]?.reason?.message,
    'no query parameter currency',
  );
  // Under order: random the answer is drawn when the request comes.
  assert.deepEqual(store.peek(request('/api/x')).scenarios[4], {
    index: 4,
    label: 'api',
    outcome: 'answers',
    response: null,
  });
  assert.equal(store.peek(request('/nothing', { method: 'DELETE' })).answer, 6);
});

test('ScenarioStore.peek – an expired scenario is said so: times answered (for the session), activeFor over', () => {
  const { store, clock } = storeAt();
  const vip = request('/pay', { headers: { 'x-tier': 'vip' }, query: 'currency=EUR' });
  const handle = store.match(vip, 'alice');
  assert.ok(handle);
  store.take(handle);
  const forAlice = store.peek(vip, 'alice');
  assert.equal(forAlice.answer, 3);
  assert.deepEqual(forAlice.scenarios[1]?.reason, { field: 'times', message: 'times: 1, all answered' });
  assert.equal(store.peek(vip, 'bob').answer, 1, 'bob has his own times');
  clock.now += 11_000;
  const flash = store.peek(request('/flash'));
  assert.equal(flash.answer, 6);
  assert.equal(flash.scenarios[5]?.outcome, 'expired');
  assert.match(flash.scenarios[5]?.reason?.message ?? '', /^activeFor 10s ended at /);
});

test('ScenarioStore.peek – changes nothing: a store that peeks answers every later request as one that did not', () => {
  const peeked = storeAt().store;
  const untouched = storeAt().store;
  // Both stand somewhere first: positions moved, a session made, a random answer drawn.
  assert.deepEqual(drive(peeked), drive(untouched));
  const before = snapshot(peeked);
  assert.deepEqual(before, snapshot(untouched));
  const requests = [
    request('/pay'),
    request('/pay', { headers: { 'x-tier': 'vip' }, query: 'currency=EUR' }),
    request('/api/z'),
    request('/flash'),
    request('/pay', { body: '{"amount": "1"}' }),
  ];
  for (const r of requests) {
    for (const session of [undefined, 'alice', 'carol', 'dave']) peeked.peek(r, session);
  }
  assert.deepEqual(snapshot(peeked), before, 'peek changed the state');
  assert.equal(peeked.counts().sessions, before.counts.sessions, 'peek made a session');
  assert.deepEqual(drive(peeked), drive(untouched), 'a store that peeked answers otherwise');
  assert.deepEqual(snapshot(peeked), snapshot(untouched));
});

test('Entry.mismatch – decides as matches does, for each condition', () => {
  const store = new ScenarioStore();
  store.replace(SET);
  const requests = [
    request('/pay'),
    request('/pay', { method: 'post' }),
    request('/pay', { headers: { 'x-tier': ['gold', 'vip-2'] }, query: 'currency=EUR&currency=USD' }),
    request('/pay', { headers: { 'x-tier': 'vip' }, query: 'currency=USD' }),
    request('/pay', { body: Buffer.from('{"amount":"77"}') }),
    request('/api/v1'),
    request('/flash'),
    request('/other'),
  ];
  for (const r of requests) {
    const peek = store.peek(r);
    const handle = store.match(r, undefined, () => 0);
    assert.equal(peek.scenarios[peek.answer ?? -1]?.label, handle?.label, `${r.method} ${r.path}`);
  }
});
