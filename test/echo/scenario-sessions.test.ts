import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { type Answer, type SendOptions, send as sendTo } from '../helpers/http.ts';
import { scrapeValue } from '../helpers/metrics.ts';

/**
 * Scenario order, windows and sessions through HTTP (issue #31 items 3-5): `X-Echo-Session` gives
 * each session its own sequence and `times`, `times` expires a scenario (state and metric),
 * `order: random` draws from the request's seed, and a bad value is a 400 naming it that keeps the
 * stored set. One server for the file: each test posts the set it needs.
 */

let echo: RunningEcho;
before(async () => {
  echo = await startEcho();
});
after(() => echo.close());

const send = (path: string, options?: SendOptions): Promise<Answer> => sendTo(echo.url + path, options);

const json = (method: string, body: unknown): SendOptions => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

async function load(scenarios: unknown): Promise<void> {
  const res = await send('/scenario', json('POST', scenarios));
  assert.equal(res.status, 200, res.text);
}

async function statuses(
  path: string,
  count: number,
  headers: Record<string, string> = {},
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push((await send(path, { headers })).status);
  return out;
}

interface State {
  name?: string;
  order: string;
  position: number;
  total: number;
  served?: number[];
  expired: boolean;
  remaining?: number;
  activeUntil?: string;
}

async function stateOf(query = ''): Promise<{ session?: string; sessions?: number; scenarios: State[] }> {
  const res = await send(`/scenario/state${query}`);
  assert.equal(res.status, 200, res.text);
  return JSON.parse(res.text) as { session?: string; sessions?: number; scenarios: State[] };
}

function errorOf(res: Answer, status: number, code: string) {
  assert.equal(res.status, status, res.text);
  const error = (
    JSON.parse(res.text) as {
      error: { code: string; message: string; details?: Array<{ field: string; message: string }> };
    }
  ).error;
  assert.equal(error.code, code);
  return error;
}

const session = (id: string) => ({ 'X-Echo-Session': id });

const SEQUENCE = {
  name: 'seq',
  path: '/seq',
  responses: [{ status: 500 }, { status: 502 }, { status: 200 }],
};

test('scenario sessions – two sessions each see the sequence from its start, apart from requests without one', async () => {
  await load([SEQUENCE]);
  assert.deepEqual(await statuses('/seq', 1), [500]);
  assert.deepEqual(await statuses('/seq', 2, session('alpha')), [500, 502]);
  assert.deepEqual(await statuses('/seq', 1, session('beta')), [500], 'beta starts at the start');
  assert.deepEqual(await statuses('/seq', 1, session('alpha')), [200], 'alpha goes on where it was');
  assert.deepEqual(await statuses('/seq', 1), [502], 'so do requests without a session');

  const alpha = await stateOf('?session=alpha');
  assert.equal(alpha.session, 'alpha');
  assert.deepEqual(
    alpha.scenarios.map((s) => [s.position, s.total, s.served]),
    [[0, 3, undefined]],
  );
  const shared = await stateOf();
  assert.equal(shared.sessions, 2);
  assert.deepEqual(
    shared.scenarios.map((s) => [s.position, s.total, s.served]),
    [[2, 2, [1, 1, 0]]],
  );

  // A session's reset and position move that session only.
  const reset = await send('/scenario/reset', json('POST', { session: 'alpha' }));
  assert.equal(reset.status, 200, reset.text);
  assert.equal((JSON.parse(reset.text) as { session: string }).session, 'alpha');
  const moved = await send('/scenario/state', json('PUT', { name: 'seq', position: 2, session: 'beta' }));
  assert.equal(moved.status, 200, moved.text);
  assert.deepEqual(await statuses('/seq', 1, session('alpha')), [500]);
  assert.deepEqual(await statuses('/seq', 1, session('beta')), [200]);
  assert.deepEqual(await statuses('/seq', 1), [200]);
});

test('scenario sessions – times: 2 answers twice, then the echo answers; the state says expired and the metric counts it', async () => {
  const series = 'echo_scenario_expired_total{reason="times"}';
  const before = await scrapeValue(echo.url, series);
  await load([{ name: 'twice', path: '/twice', times: 2, responses: [{ status: 503, body: 'scripted' }] }]);
  const answers = [];
  for (let i = 0; i < 3; i++) answers.push(await send('/twice'));
  assert.deepEqual(
    answers.map((a) => [a.status, a.headers['x-echo-fault']]),
    [
      [503, 'scenario'],
      [503, 'scenario'],
      [200, undefined],
    ],
  );
  assert.match(answers[2]!.text, /^GET \/twice HTTP\/1\.1/, 'the third is echoed');
  const [twice] = (await stateOf()).scenarios;
  assert.deepEqual([twice?.expired, twice?.remaining, twice?.total], [true, 0, 2]);
  assert.equal(await scrapeValue(echo.url, series), before + 1);

  // A session has its own two answers, and its expiry is counted too.
  assert.deepEqual(await statuses('/twice', 3, session('gamma')), [503, 503, 200]);
  const [gamma] = (await stateOf('?session=gamma')).scenarios;
  assert.deepEqual([gamma?.expired, gamma?.remaining], [true, 0]);
  assert.equal(await scrapeValue(echo.url, series), before + 2);

  // A reset gives two more.
  assert.equal((await send('/scenario/reset', { method: 'POST' })).status, 200);
  assert.deepEqual(await statuses('/twice', 3), [503, 503, 200]);
});

test('scenario sessions – activeFor shows when it ends; the meters exist from the start', async () => {
  const started = Date.now();
  await load([{ name: 'window', path: '/window', activeFor: '30s', responses: [{ status: 503 }] }]);
  const [window] = (await stateOf()).scenarios;
  assert.equal(window?.expired, false);
  const until = Date.parse(window?.activeUntil ?? '');
  assert.ok(until >= started + 30_000 && until <= Date.now() + 30_000, window?.activeUntil);
  const metrics = await (await fetch(`${echo.url}/metrics`)).text();
  for (const series of [
    'echo_scenario_expired_total{reason="activeFor"}',
    'echo_scenario_sessions_evicted_total',
    'echo_scenario_sessions',
  ]) {
    assert.match(metrics, new RegExp(`^${series.replace(/[{}]/g, '\\$&')} \\d+$`, 'm'), series);
  }
});

test('scenario sessions – order: random with X-Echo-Seed gives the same answer for the same seed', async () => {
  await load([
    {
      path: '/draw',
      order: 'random',
      responses: [
        { status: 200, weight: 1 },
        { status: 503, weight: 1 },
      ],
    },
  ]);
  const seeds = Array.from({ length: 24 }, (_, i) => String(i + 1));
  const pass = async () => {
    const out: number[] = [];
    for (const seed of seeds) out.push((await send('/draw', { headers: { 'X-Echo-Seed': seed } })).status);
    return out;
  };
  const first = await pass();
  assert.deepEqual(await pass(), first);
  assert.deepEqual(new Set(first), new Set([200, 503]), 'both responses are drawn');
  const [state] = (await stateOf()).scenarios;
  assert.equal(state?.order, 'random');
  const pinned = await send('/scenario/state', json('PUT', { path: '/draw', position: 1 }));
  assert.match(errorOf(pinned, 400, 'ECHO_ERR_INVALID_SCENARIO_STATE').message, /order: random/);
});

test('scenario sessions – a bad order, weight, activeFor or times is a 400 naming it, and the stored set stays', async () => {
  await load([SEQUENCE]);
  const stored = (await send('/scenario')).text;
  const bad: Array<[unknown, string]> = [
    [{ path: '/x', order: 'shuffle', responses: [{ status: 200 }] }, '/0/order'],
    [{ path: '/x', order: 'random', responses: [{ status: 200, weight: -1 }] }, '/0/responses/0/weight'],
    [{ path: '/x', responses: [{ status: 200, weight: 2 }] }, '/0/responses/0/weight'],
    [{ path: '/x', order: 'random', responses: [{ status: 200, weight: 0 }] }, '/0/responses'],
    [{ path: '/x', order: 'random', cycle: false, responses: [{ status: 200 }] }, '/0/cycle'],
    [{ path: '/x', activeFor: 'soon', responses: [{ status: 200 }] }, '/0/activeFor'],
    [{ path: '/x', activeFor: '0s', responses: [{ status: 200 }] }, '/0/activeFor'],
    [{ path: '/x', activeFor: '400d', responses: [{ status: 200 }] }, '/0/activeFor'],
    [{ path: '/x', times: 0, responses: [{ status: 200 }] }, '/0/times'],
    [{ path: '/x', times: 'twice', responses: [{ status: 200 }] }, '/0/times'],
  ];
  for (const [scenario, field] of bad) {
    const res = await send(
      '/scenario',
      json('POST', [{ path: '/ok', responses: [{ status: 200 }] }, scenario]),
    );
    const error = errorOf(res, 400, 'ECHO_ERR_INVALID_SCENARIOS');
    const named = field.replace('/0', '/1');
    assert.deepEqual(
      error.details?.map((d) => d.field),
      [named],
      JSON.stringify(scenario),
    );
    assert.ok(error.message.includes(named), error.message);
    assert.equal((await send('/scenario')).text, stored, 'the previous set stays');
  }
  // YAML takes the same fields.
  const yaml = await send('/scenario', {
    method: 'POST',
    headers: { 'content-type': 'application/yaml' },
    body: '- path: /y\n  order: random\n  activeFor: 1m\n  times: 3\n  responses:\n    - {status: 200, weight: 2}\n    - {status: 503}\n',
  });
  assert.equal(yaml.status, 200, yaml.text);
});

test('scenario sessions – a bad session in the state routes is a 400 naming it, and nothing changes', async () => {
  await load([SEQUENCE]);
  await statuses('/seq', 1, session('delta'));
  for (const query of [
    '?session=',
    '?session=a%20b',
    `?session=${'x'.repeat(129)}`,
    '?session=a&session=b',
    '?sesion=a',
  ]) {
    const res = await send(`/scenario/state${query}`);
    assert.match(errorOf(res, 400, 'ECHO_ERR_INVALID_SCENARIO_STATE').message, /session|sesion/, query);
  }
  for (const body of [{ session: '' }, { session: 5 }, { name: 'seq', session: 'a b' }]) {
    const res = await send('/scenario/reset', json('POST', body));
    assert.match(
      errorOf(res, 400, 'ECHO_ERR_INVALID_SCENARIO_STATE').message,
      /session/,
      JSON.stringify(body),
    );
  }
  const put = await send('/scenario/state', json('PUT', { name: 'seq', position: 1, session: ['a'] }));
  errorOf(put, 400, 'ECHO_ERR_INVALID_SCENARIO_STATE');
  const missing = await send('/scenario/reset', json('POST', { name: 'nope', session: 'delta' }));
  errorOf(missing, 404, 'ECHO_ERR_SCENARIO_NOT_FOUND');
  assert.equal((await stateOf('?session=delta')).scenarios[0]?.total, 1, 'delta kept its state');
});
