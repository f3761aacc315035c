import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type RunningEcho, withEcho } from '../helpers/echo-server.ts';
import { type Answer, type SendOptions, send as sendTo } from '../helpers/http.ts';
import { countDelta, faultCounts } from '../helpers/metrics.ts';

/**
 * Scenario matching through HTTP: pathPattern (glob `*`, `**`, `re:`), method, headers, query and
 * body conditions, first match in list order; bad patterns are a 400 and the old set stays.
 */

const send = (echo: RunningEcho, path: string, options?: SendOptions): Promise<Answer> =>
  sendTo(echo.url + path, options);

async function post(echo: RunningEcho, scenarios: unknown): Promise<Answer> {
  return send(echo, '/scenario', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(scenarios),
  });
}

async function load(echo: RunningEcho, scenarios: unknown): Promise<void> {
  const res = await post(echo, scenarios);
  assert.equal(res.status, 200, res.text);
}

/** One scenario that answers `status` with body `tag`, for any request it matches. */
function answering(match: Record<string, unknown>, status: number, tag: string): Record<string, unknown> {
  return { ...match, responses: [{ status, body: tag }] };
}

/** The scenario body served, or `echo` when the request was echoed (no scenario matched). */
async function served(echo: RunningEcho, path: string, options?: SendOptions): Promise<string> {
  const res = await send(echo, path, options);
  return res.headers['x-echo-fault'] === 'scenario' ? `${res.status} ${res.text}` : 'echo';
}

test('scenario matching – glob pathPattern: * stays within one segment, ** crosses segments', () =>
  withEcho(async (echo) => {
    await load(echo, [
      answering({ pathPattern: '/users/*/orders' }, 201, 'one'),
      answering({ pathPattern: '/files/**' }, 202, 'any'),
    ]);
    assert.equal(await served(echo, '/users/42/orders'), '201 one');
    assert.equal(await served(echo, '/users/ab-c/orders?x=1'), '201 one');
    assert.equal(await served(echo, '/users/4/2/orders'), 'echo');
    assert.equal(await served(echo, '/users/42/orders/7'), 'echo');
    assert.equal(await served(echo, '/files/a'), '202 any');
    assert.equal(await served(echo, '/files/a/b/c.txt'), '202 any');
    assert.equal(await served(echo, '/files'), 'echo');
  }));

test('scenario matching – re: pathPattern matches the whole path', () =>
  withEcho(async (echo) => {
    await load(echo, [answering({ pathPattern: 're:/api/v[0-9]+/items' }, 200, 'api')]);
    assert.equal(await served(echo, '/api/v2/items'), '200 api');
    assert.equal(await served(echo, '/api/v10/items'), '200 api');
    assert.equal(await served(echo, '/api/vx/items'), 'echo');
    assert.equal(await served(echo, '/api/v2/items/1'), 'echo', 'anchored at the end');
    assert.equal(await served(echo, '/x/api/v2/items'), 'echo', 'anchored at the start');
  }));

test('scenario matching – method: one (any case) or a list', () =>
  withEcho(async (echo) => {
    await load(echo, [
      answering({ path: '/m', method: 'post' }, 201, 'post'),
      answering({ path: '/m', method: ['PUT', 'PATCH'] }, 202, 'put-or-patch'),
    ]);
    assert.equal(await served(echo, '/m', { method: 'POST', body: 'x' }), '201 post');
    assert.equal(await served(echo, '/m', { method: 'PUT', body: 'x' }), '202 put-or-patch');
    assert.equal(await served(echo, '/m', { method: 'PATCH', body: 'x' }), '202 put-or-patch');
    assert.equal(await served(echo, '/m'), 'echo');
    // A single method is stored as a list of one.
    const list = (await (await fetch(`${echo.url}/scenario`)).json()) as Array<{ method: string[] }>;
    assert.deepEqual(list[0]?.method, ['post']);
  }));

test('scenario matching – headers: exact value or re:, names case-insensitive, all must match', () =>
  withEcho(async (echo) => {
    await load(echo, [
      answering({ path: '/h', headers: { 'X-Tenant': 'acme', 'x-version': 're:v[12]' } }, 200, 'both'),
      answering({ path: '/h', headers: { authorization: 're:Bearer .+' } }, 401, 'auth'),
    ]);
    assert.equal(
      await served(echo, '/h', { headers: { 'x-tenant': 'acme', 'X-Version': 'v2' } }),
      '200 both',
    );
    assert.equal(await served(echo, '/h', { headers: { 'x-tenant': 'acme', 'X-Version': 'v3' } }), 'echo');
    assert.equal(await served(echo, '/h', { headers: { 'x-tenant': 'ACME', 'X-Version': 'v1' } }), 'echo');
    assert.equal(await served(echo, '/h', { headers: { 'x-version': 'v1' } }), 'echo', 'a missing header');
    assert.equal(await served(echo, '/h', { headers: { Authorization: 'Bearer abc' } }), '401 auth');
    assert.equal(await served(echo, '/h', { headers: { Authorization: 'Basic abc' } }), 'echo');
  }));

test('scenario matching – query: exact or re:, from the URL, any value of a repeated parameter', () =>
  withEcho(async (echo) => {
    await load(echo, [
      answering({ path: '/q', query: { page: '2', sort: 're:(asc|desc)' } }, 200, 'page2'),
      answering({ path: '/q', query: { id: 're:[0-9]+' } }, 200, 'id'),
    ]);
    assert.equal(await served(echo, '/q?page=2&sort=asc'), '200 page2');
    assert.equal(await served(echo, '/q?sort=desc&page=2&x=1'), '200 page2');
    assert.equal(await served(echo, '/q?page=3&sort=asc'), 'echo');
    assert.equal(await served(echo, '/q?page=2&sort=up'), 'echo');
    assert.equal(await served(echo, '/q?id=abc&id=17'), '200 id');
    assert.equal(await served(echo, '/q?id=abc'), 'echo');
    assert.equal(await served(echo, '/q'), 'echo');
  }));

test('scenario matching – body: contains, equals, jsonPointer with value (exact or re:)', () =>
  withEcho(async (echo) => {
    await load(echo, [
      answering({ path: '/b', body: { jsonPointer: '/order/qty', value: '3' } }, 201, 'qty3'),
      answering({ path: '/b', body: { jsonPointer: '/order/sku', value: 're:AB-[0-9]+' } }, 202, 'sku'),
      answering({ path: '/b', body: { equals: 'ping' } }, 203, 'pong'),
      answering({ path: '/b', body: { contains: 'urgent' } }, 204, 'urgent'),
    ]);
    const postBody = (body: string, type = 'application/json') =>
      served(echo, '/b', { method: 'POST', headers: { 'content-type': type }, body });
    assert.equal(await postBody('{"order":{"qty":3}}'), '201 qty3');
    assert.equal(await postBody('{"order":{"qty":"3"}}'), '201 qty3', 'a string compares as is');
    assert.equal(await postBody('{"order":{"qty":4,"sku":"AB-17"}}'), '202 sku');
    assert.equal(await postBody('{"order":{"qty":4,"sku":"XY-17"}}'), 'echo');
    assert.equal(await postBody('ping', 'text/plain'), '203 pong');
    assert.equal(await postBody('ping!', 'text/plain'), 'echo');
    // 204 has no content: the fault header still says the scenario served it.
    const urgent = await send(echo, '/b', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'an urgent one',
    });
    assert.equal(urgent.status, 204);
    assert.equal(urgent.headers['x-echo-fault'], 'scenario');
    assert.equal(await postBody('{not json', 'application/json'), 'echo');
    assert.equal(await served(echo, '/b'), 'echo', 'no body');
  }));

test('scenario matching – the first match in list order wins, plain exact paths included', () =>
  withEcho(async (echo) => {
    await load(echo, [
      answering({ path: '/first', method: 'GET' }, 200, 'conditional-before'),
      answering({ path: '/first' }, 200, 'plain-after'),
      answering({ path: '/second' }, 200, 'plain-before'),
      answering({ pathPattern: '/**' }, 200, 'catch-all'),
    ]);
    assert.equal(await served(echo, '/first'), '200 conditional-before');
    assert.equal(await served(echo, '/first', { method: 'DELETE' }), '200 plain-after');
    assert.equal(await served(echo, '/second'), '200 plain-before', 'the catch-all comes later');
    assert.equal(await served(echo, '/other'), '200 catch-all');
  }));

test('scenario matching – an exact path without conditions behaves as before: one cycle, any method', () =>
  withEcho(async (echo) => {
    await load(echo, [{ path: '/flaky', responses: [{ status: 500 }, { status: 200 }] }]);
    const statuses: number[] = [];
    for (const method of ['GET', 'POST', 'DELETE', 'GET']) {
      statuses.push(
        (await send(echo, '/flaky', { method, ...(method === 'POST' ? { body: 'x' } : {}) })).status,
      );
    }
    assert.deepEqual(statuses, [500, 200, 500, 200]);
  }));

test('scenario matching – the fault ledger names the scenario and counts it', () =>
  withEcho(async (echo) => {
    await load(echo, [
      { name: 'checkout-down', pathPattern: '/checkout/*', responses: [{ status: 503 }, { status: 200 }] },
    ]);
    const before = await faultCounts(echo.url);
    const res = await send(echo, '/checkout/9', { headers: { 'X-Echo-Explain': 'true' } });
    assert.equal(res.status, 503);
    assert.equal(res.headers['x-echo-fault'], 'scenario');
    assert.deepEqual(JSON.parse(String(res.headers['x-echo-applied'])), [
      { kind: 'scenario', control: 'scenario checkout-down', source: 'scenario', value: 0 },
    ]);
    assert.deepEqual(countDelta(before, await faultCounts(echo.url)), { scenario: 1 });
    // A request no scenario matches is no fault.
    const plain = await send(echo, '/checkout/9/items');
    assert.equal(plain.headers['x-echo-fault'], undefined);
    assert.deepEqual(countDelta(before, await faultCounts(echo.url)), { scenario: 1 });
  }));

test('scenario matching – with faults switched off the scenario is skipped and its position stays', () =>
  withEcho(async (echo) => {
    await load(echo, [{ path: '/s', responses: [{ status: 500 }, { status: 201 }] }]);
    const off = await send(echo, '/control/faults', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"enabled":false}',
    });
    assert.equal(off.status, 200);
    assert.equal((await send(echo, '/s')).status, 200);
    assert.equal((await send(echo, '/s')).status, 200);
    await send(echo, '/control/faults', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"enabled":true}',
    });
    assert.equal((await send(echo, '/s')).status, 500, 'the cycle did not move while off');
    assert.equal((await send(echo, '/s')).status, 201);
  }));

test('scenario matching – nested repetition, refused on the old backtracking engine, runs in linear time on RE2', () =>
  withEcho(async (echo) => {
    await load(echo, [
      answering({ pathPattern: 're:/n(a+)+' }, 201, 'nested'),
      answering({ path: '/b', body: { jsonPointer: '/a', value: 're:(x*)*y' } }, 202, 'body'),
    ]);
    assert.equal(await served(echo, `/n${'a'.repeat(2000)}`), '201 nested');
    assert.equal(await served(echo, `/n${'a'.repeat(2000)}!`), 'echo');
    const json = (a: string) => ({
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ a }),
    });
    assert.equal(await served(echo, '/b', json(`${'x'.repeat(5000)}y`)), '202 body');
    assert.equal(await served(echo, '/b', json('x'.repeat(5000))), 'echo');
  }));

test('scenario matching – the first match in list order wins across exact paths, globs and re: prefixes', () =>
  withEcho(async (echo) => {
    await load(echo, [
      answering({ path: '/api/v1/a', method: ['POST'] }, 201, 'exact-post'),
      answering({ pathPattern: 're:/api/v[0-9]+/.*' }, 202, 're'),
      answering({ pathPattern: '/api/**' }, 203, 'glob'),
      answering({ path: '/api/v1/a' }, 204, 'plain'),
      answering({ pathPattern: 're:.*' }, 210, 'any'),
    ]);
    assert.equal(await served(echo, '/api/v1/a', { method: 'POST' }), '201 exact-post');
    assert.equal(await served(echo, '/api/v1/a'), '202 re');
    assert.equal(await served(echo, '/api/x/a'), '203 glob');
    assert.equal(await served(echo, '/other'), '210 any');
  }));

const OLD = [{ path: '/kept', responses: [{ status: 418 }] }];

for (const [what, scenario, field, words] of [
  [
    'a pathPattern longer than 512 characters',
    { pathPattern: `/${'a'.repeat(600)}`, responses: [{ status: 200 }] },
    '/0/pathPattern',
    /at most 512 characters/,
  ],
  [
    'a re: pathPattern longer than 512 characters',
    { pathPattern: `re:/${'a'.repeat(600)}`, responses: [{ status: 200 }] },
    '/0/pathPattern',
    /at most 512 characters/,
  ],
  [
    'an invalid regular expression in pathPattern',
    { pathPattern: 're:/api/(v1', responses: [{ status: 200 }] },
    '/0/pathPattern',
    /pathPattern "re:\/api\/\(v1": not a valid regular expression/,
  ],
  [
    'a backreference in pathPattern (RE2 has none: it could not run in linear time)',
    { pathPattern: 're:/(a+)\\1', responses: [{ status: 500 }] },
    '/0/pathPattern',
    /linear-time engine \(RE2 syntax\): backreferences and lookaround are not supported \(\\1 is a backreference\)/,
  ],
  [
    'a lookahead in a body condition',
    { path: '/x', body: { jsonPointer: '/a', value: 're:(?=x)x*y' }, responses: [{ status: 200 }] },
    '/0/body/value',
    /linear-time engine \(RE2 syntax\): backreferences and lookaround are not supported; it cannot compile this one/,
  ],
  [
    'a lookbehind in a header condition',
    { path: '/x', headers: { 'X-A': 're:(?<!a)b' }, responses: [{ status: 200 }] },
    '/0/headers/X-A',
    /backreferences and lookaround are not supported \(`\(\?<!` is a lookbehind\)/,
  ],
  [
    'an escape JavaScript and RE2 read differently',
    { path: '/x', query: { a: 're:\\z' }, responses: [{ status: 200 }] },
    '/0/query/a',
    /^(?!.*backreferences).*\\z means one thing in JavaScript and another in RE2/,
  ],
  [
    'a regular expression whose program is too large',
    { pathPattern: 're:/[a-z]{70}', responses: [{ status: 200 }] },
    '/0/pathPattern',
    /compiles to \d+ instructions, more than 64 \(about one a character or class/,
  ],
  [
    'a glob with more than 8 ** (the pattern of the report)',
    { pathPattern: '/**a**a**a**a**a**a**a**a**b', responses: [{ status: 200 }] },
    '/0/pathPattern',
    /pathPattern "\/\*\*a.*b": a glob may hold at most 8 \*\* and 16 wildcards \(\* and \*\*\) in all, got 9 \*\* and 9 wildcards/,
  ],
  [
    'a glob with more than 16 wildcards',
    { pathPattern: `/${'*/'.repeat(17)}x`, responses: [{ status: 200 }] },
    '/0/pathPattern',
    /at most 8 \*\* and 16 wildcards .* got 0 \*\* and 17 wildcards/,
  ],
  [
    'an invalid regular expression in a header condition',
    { path: '/x', headers: { 'X-A': 're:[a-' }, responses: [{ status: 200 }] },
    '/0/headers/X-A',
    /not a valid regular expression/,
  ],
  [
    'an invalid regular expression in a query condition',
    { path: '/x', query: { a: 're:*' }, responses: [{ status: 200 }] },
    '/0/query/a',
    /not a valid regular expression/,
  ],
  [
    'both path and pathPattern',
    { path: '/x', pathPattern: '/x/*', responses: [{ status: 200 }] },
    '/0/pathPattern',
    /exactly one of them/,
  ],
  [
    'a body condition with two forms',
    { path: '/x', body: { contains: 'a', equals: 'b' }, responses: [{ status: 200 }] },
    '/0/body',
    /exactly one of contains, equals or jsonPointer/,
  ],
  [
    'a jsonPointer without value',
    { path: '/x', body: { jsonPointer: '/a' }, responses: [{ status: 200 }] },
    '/0/body/value',
    /value is required/,
  ],
] as const) {
  test(`scenario matching – ${what} is a 400 naming it, and the old scenarios stay`, () =>
    withEcho(async (echo) => {
      await load(echo, OLD);
      const before = await (await fetch(`${echo.url}/scenario`)).text();
      const res = await post(echo, [scenario]);
      assert.equal(res.status, 400, res.text);
      const error = (
        JSON.parse(res.text) as {
          error: { code: string; details: Array<{ field: string; message: string }> };
        }
      ).error;
      assert.equal(error.code, 'ECHO_ERR_INVALID_SCENARIOS');
      const detail = error.details.find((d) => d.field === field);
      assert.ok(detail, `no problem at ${field}: ${res.text}`);
      assert.match(detail.message, words);
      assert.equal(await (await fetch(`${echo.url}/scenario`)).text(), before);
      assert.equal((await send(echo, '/kept')).status, 418);
    }));
}

test('scenario matching – names must be unique; the same path with other conditions is allowed', () =>
  withEcho(async (echo) => {
    const dup = await post(echo, [
      { name: 'a', path: '/x', method: 'GET', responses: [{ status: 200 }] },
      { name: 'a', path: '/x', method: 'POST', responses: [{ status: 200 }] },
    ]);
    assert.equal(dup.status, 400);
    assert.match(dup.text, /name \\"a\\" is already used by scenario 0/);
    await load(echo, [
      { name: 'a', path: '/x', method: 'GET', responses: [{ status: 200 }] },
      { name: 'b', path: '/x', method: 'POST', responses: [{ status: 200 }] },
      { path: '/x', responses: [{ status: 200 }] },
    ]);
  }));
