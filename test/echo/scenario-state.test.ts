import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type RunningEcho, withEcho } from '../helpers/echo-server.ts';
import { type Answer, type SendOptions, send as sendTo } from '../helpers/http.ts';

/**
 * Scenario state through HTTP: a response's `repeat`, `cycle: false`, and the state routes
 * (`GET /scenario/state`, `POST /scenario/reset`, `PUT /scenario/state`).
 */

const send = (echo: RunningEcho, path: string, options?: SendOptions): Promise<Answer> =>
  sendTo(echo.url + path, options);

const json = (method: string, body: unknown): SendOptions => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

async function load(echo: RunningEcho, scenarios: unknown): Promise<void> {
  const res = await send(echo, '/scenario', json('POST', scenarios));
  assert.equal(res.status, 200, res.text);
}

async function statuses(echo: RunningEcho, path: string, count: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push((await send(echo, path)).status);
  return out;
}

interface State {
  index: number;
  name?: string;
  path?: string;
  pathPattern?: string;
  cycle: boolean;
  order: string;
  position: number;
  positionServed: number;
  served: number[];
  total: number;
  expired: boolean;
}

async function states(echo: RunningEcho): Promise<State[]> {
  const res = await send(echo, '/scenario/state');
  assert.equal(res.status, 200);
  return (JSON.parse(res.text) as { scenarios: State[] }).scenarios;
}

function errorOf(res: Answer, status: number, code: string): string {
  assert.equal(res.status, status, res.text);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const error = (JSON.parse(res.text) as { error: { code: string; message: string } }).error;
  assert.equal(error.code, code);
  return error.message;
}

const FLAKY = {
  name: 'flaky',
  path: '/flaky',
  responses: [{ status: 500, repeat: 3 }, { status: 200 }, { status: 429, repeat: 2 }],
};
const ONCE = {
  name: 'once',
  pathPattern: '/boot/*',
  cycle: false,
  responses: [{ status: 503, repeat: 2 }, { status: 200 }],
};

test('scenario state – repeat serves a response n times before the cycle moves on', () =>
  withEcho(async (echo) => {
    await load(echo, [FLAKY]);
    assert.deepEqual(await statuses(echo, '/flaky', 8), [500, 500, 500, 200, 429, 429, 500, 500]);
  }));

test('scenario state – a request that chaos or an error answers takes no scenario response', () =>
  withEcho(async (echo) => {
    await load(echo, [ONCE]);
    const answers: Array<Record<string, string>> = [
      { 'X-Echo-Error': '500' },
      { 'X-Echo-Error': 'reset' },
      { 'X-Echo-Chaos': '100' },
    ];
    for (const headers of answers) {
      const answered = await send(echo, '/boot/a', { headers }).catch(() => undefined);
      if (answered !== undefined) {
        assert.doesNotMatch(String(answered.headers['x-echo-fault']), /scenario/, JSON.stringify(headers));
      }
    }
    const [state] = await states(echo);
    assert.equal(state?.total, 0, 'no response of the scenario was served');
    assert.deepEqual(await statuses(echo, '/boot/a', 3), [503, 503, 200], 'the warm-up is intact');
  }));

test('scenario state – cycle: false stays on the last response', () =>
  withEcho(async (echo) => {
    await load(echo, [ONCE]);
    assert.deepEqual(await statuses(echo, '/boot/a', 6), [503, 503, 200, 200, 200, 200]);
    const [state] = await states(echo);
    assert.deepEqual(state, {
      index: 0,
      name: 'once',
      pathPattern: '/boot/*',
      cycle: false,
      order: 'cycle',
      position: 1,
      positionServed: 0,
      served: [2, 4],
      total: 6,
      expired: false,
    });
  }));

test('scenario state – GET /scenario/state lists each scenario position and counts', () =>
  withEcho(async (echo) => {
    await load(echo, [FLAKY, ONCE, { path: '/plain', responses: [{ status: 201 }] }]);
    await statuses(echo, '/flaky', 4);
    await statuses(echo, '/boot/x', 1);
    assert.deepEqual(await states(echo), [
      {
        index: 0,
        name: 'flaky',
        path: '/flaky',
        cycle: true,
        order: 'cycle',
        position: 2,
        positionServed: 0,
        served: [3, 1, 0],
        total: 4,
        expired: false,
      },
      {
        index: 1,
        name: 'once',
        pathPattern: '/boot/*',
        cycle: false,
        order: 'cycle',
        position: 0,
        positionServed: 1,
        served: [1, 0],
        total: 1,
        expired: false,
      },
      {
        index: 2,
        path: '/plain',
        cycle: true,
        order: 'cycle',
        position: 0,
        positionServed: 0,
        served: [0],
        total: 0,
        expired: false,
      },
    ]);
  }));

test('scenario state – POST /scenario/reset resets every scenario, or one by name or path', () =>
  withEcho(async (echo) => {
    await load(echo, [FLAKY, ONCE]);
    await statuses(echo, '/flaky', 4);
    await statuses(echo, '/boot/x', 3);

    const one = await send(echo, '/scenario/reset', json('POST', { name: 'flaky' }));
    assert.equal(one.status, 200, one.text);
    let [flaky, once] = await states(echo);
    assert.deepEqual([flaky?.position, flaky?.total, once?.position, once?.total], [0, 0, 1, 3]);
    assert.deepEqual(await statuses(echo, '/flaky', 1), [500]);

    const byPattern = await send(echo, '/scenario/reset', json('POST', { path: '/boot/*' }));
    assert.equal(byPattern.status, 200, byPattern.text);
    [flaky, once] = await states(echo);
    assert.deepEqual([flaky?.total, once?.position, once?.total], [1, 0, 0]);

    await statuses(echo, '/boot/x', 3);
    const all = await send(echo, '/scenario/reset', { method: 'POST' });
    assert.equal(all.status, 200, all.text);
    assert.deepEqual(
      (await states(echo)).map((s) => [s.position, s.positionServed, s.total]),
      [
        [0, 0, 0],
        [0, 0, 0],
      ],
    );
    assert.deepEqual(await statuses(echo, '/boot/x', 1), [503]);
  }));

test('scenario state – POST /scenario/reset naming nothing is a 404, a bad body a 400; nothing changes', () =>
  withEcho(async (echo) => {
    await load(echo, [FLAKY]);
    await statuses(echo, '/flaky', 2);
    const before = await states(echo);
    assert.match(
      errorOf(
        await send(echo, '/scenario/reset', json('POST', { name: 'nope' })),
        404,
        'ECHO_ERR_SCENARIO_NOT_FOUND',
      ),
      /no scenario has name "nope"/,
    );
    assert.match(
      errorOf(
        await send(echo, '/scenario/reset', json('POST', { path: '/nope' })),
        404,
        'ECHO_ERR_SCENARIO_NOT_FOUND',
      ),
      /path "\/nope"/,
    );
    for (const bad of [{ id: 'flaky' }, { name: 3 }, { name: 'flaky', path: '/flaky' }, ['flaky']]) {
      errorOf(await send(echo, '/scenario/reset', json('POST', bad)), 400, 'ECHO_ERR_INVALID_SCENARIO_STATE');
    }
    assert.deepEqual(await states(echo), before);
  }));

test('scenario state – PUT /scenario/state sets one scenario position by name or path', () =>
  withEcho(async (echo) => {
    await load(echo, [FLAKY, ONCE]);
    const set = await send(echo, '/scenario/state', json('PUT', { name: 'flaky', position: 2 }));
    assert.equal(set.status, 200, set.text);
    assert.equal((JSON.parse(set.text) as { scenario: State }).scenario.position, 2);
    assert.deepEqual(await statuses(echo, '/flaky', 3), [429, 429, 500]);

    const byPath = await send(echo, '/scenario/state', json('PUT', { path: '/boot/*', position: 1 }));
    assert.equal(byPath.status, 200, byPath.text);
    assert.deepEqual(await statuses(echo, '/boot/1', 2), [200, 200]);
  }));

test('scenario state – PUT /scenario/state out of range or ambiguous is a 400, unknown a 404; state unchanged', () =>
  withEcho(async (echo) => {
    await load(echo, [
      FLAKY,
      { name: 'get', path: '/twice', method: 'GET', responses: [{ status: 200 }] },
      { name: 'post', path: '/twice', method: 'POST', responses: [{ status: 201 }] },
    ]);
    await statuses(echo, '/flaky', 1);
    const before = await states(echo);
    const put = (body: unknown) => send(echo, '/scenario/state', json('PUT', body));
    assert.match(
      errorOf(await put({ name: 'flaky', position: 3 }), 400, 'ECHO_ERR_INVALID_SCENARIO_STATE'),
      /position must be an integer 0-2 .* got 3/,
    );
    errorOf(await put({ name: 'flaky', position: -1 }), 400, 'ECHO_ERR_INVALID_SCENARIO_STATE');
    errorOf(await put({ name: 'flaky', position: 1.5 }), 400, 'ECHO_ERR_INVALID_SCENARIO_STATE');
    errorOf(await put({ name: 'flaky' }), 400, 'ECHO_ERR_INVALID_SCENARIO_STATE');
    errorOf(await put({ position: 1 }), 400, 'ECHO_ERR_INVALID_SCENARIO_STATE');
    assert.match(
      errorOf(await put({ path: '/twice', position: 0 }), 400, 'ECHO_ERR_INVALID_SCENARIO_STATE'),
      /2 scenarios have path "\/twice"/,
    );
    errorOf(await put({ name: 'ghost', position: 0 }), 404, 'ECHO_ERR_SCENARIO_NOT_FOUND');
    assert.deepEqual(await states(echo), before);
    assert.deepEqual(await statuses(echo, '/flaky', 3), [500, 500, 200]);
  }));

test('scenario state – replacing the scenarios resets every position', () =>
  withEcho(async (echo) => {
    await load(echo, [FLAKY]);
    await statuses(echo, '/flaky', 4);
    await load(echo, [FLAKY]);
    const [state] = await states(echo);
    assert.deepEqual([state?.position, state?.total], [0, 0]);
    assert.deepEqual(await statuses(echo, '/flaky', 1), [500]);
  }));
