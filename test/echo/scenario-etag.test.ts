import assert from 'node:assert/strict';
import { test } from 'node:test';
import { scenarioSetHash, validateScenarios } from '../../src/scenario/index.ts';
import { startEcho } from '../helpers/echo-server.ts';
import { send } from '../helpers/http.ts';

const SET = [
  { name: 'a', path: '/a', responses: [{ status: 503, body: 'down', headers: { 'Retry-After': '2' } }] },
  { path: '/b', method: ['GET'], responses: [{ status: 200, delay: '5ms' }, { status: 500 }], cycle: true },
];

test('scenario ETag – GET /scenario carries the content hash of the set as stored, quoted', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const empty = await send(`${echo.url}/scenario`);
  assert.equal(empty.status, 200);
  assert.equal(empty.headers['etag'], `"${scenarioSetHash([])}"`);

  const posted = await send(`${echo.url}/scenario`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(SET),
  });
  assert.equal(posted.status, 200);
  const res = await send(`${echo.url}/scenario`);
  assert.equal(res.status, 200);
  assert.equal(res.headers['etag'], `"${scenarioSetHash(JSON.parse(res.text))}"`);
  // The operator's side: the hash of the validated array it pushes is the hash the pod answers.
  const validated = validateScenarios(SET);
  assert.ok(validated.ok);
  assert.equal(res.headers['etag'], `"${scenarioSetHash(validated.scenarios)}"`);
  assert.notEqual(res.headers['etag'], empty.headers['etag']);
});

test('scenario ETag – If-None-Match naming the current tag is a 304 without a body; a stale one gets the set', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const before = String((await send(`${echo.url}/scenario`)).headers['etag']);
  await send(`${echo.url}/scenario`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(SET),
  });
  const etag = String((await send(`${echo.url}/scenario`)).headers['etag']);
  for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
    const res = await send(`${echo.url}/scenario`, { headers: { 'if-none-match': header } });
    assert.equal(res.status, 304, header);
    assert.equal(res.text, '', header);
    assert.equal(res.headers['etag'], etag, header);
  }
  const stale = await send(`${echo.url}/scenario`, { headers: { 'if-none-match': before } });
  assert.equal(stale.status, 200);
  assert.equal(JSON.parse(stale.text).length, 2);
});

test('scenario ETag – the same set posted as YAML, keys in another order, has the same tag; an invalid POST leaves it', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await send(`${echo.url}/scenario`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(SET),
  });
  const etag = (await send(`${echo.url}/scenario`)).headers['etag'];
  const yaml = [
    '- responses: [{headers: {Retry-After: "2"}, body: down, status: 503}]',
    '  path: /a',
    '  name: a',
    '- cycle: true',
    '  responses: [{delay: 5ms, status: 200}, {status: 500}]',
    '  method: [GET]',
    '  path: /b',
  ].join('\n');
  const posted = await send(`${echo.url}/scenario`, {
    method: 'POST',
    headers: { 'content-type': 'application/yaml' },
    body: yaml,
  });
  assert.equal(posted.status, 200, posted.text);
  assert.equal((await send(`${echo.url}/scenario`)).headers['etag'], etag);
  const refused = await send(`${echo.url}/scenario`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '[{"path": "/x", "responses": []}]',
  });
  assert.equal(refused.status, 400);
  assert.equal((await send(`${echo.url}/scenario`)).headers['etag'], etag);
});

test('scenario ETag – POST /scenario with If-None-Match naming the set held is a 412 that restarts nothing; another tag replaces', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const post = (headers: Record<string, string> = {}) =>
    send(`${echo.url}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(SET),
    });
  const stale = String((await send(`${echo.url}/scenario`)).headers['etag']);
  // Holding another set: the conditional push replaces it, as a plain one does.
  assert.equal((await post({ 'if-none-match': stale.replace(/.$/, 'x"') })).status, 200);
  const etag = String((await send(`${echo.url}/scenario`)).headers['etag']);
  assert.notEqual(etag, stale);
  // /b answers 200 then 500 in turn: one step taken.
  assert.equal((await send(`${echo.url}/b`)).status, 200);
  const held = await post({ 'if-none-match': etag });
  assert.equal(held.status, 412);
  const error = (JSON.parse(held.text) as { error: { code: string; message: string } }).error;
  assert.equal(error.code, 'ECHO_ERR_SCENARIO_SET_HELD');
  assert.match(error.message, /already/);
  // Nothing restarted: the sequence goes on where it stood.
  assert.equal((await send(`${echo.url}/b`)).status, 500);
  // Weak comparison, and a list, as GET's If-None-Match.
  assert.equal((await post({ 'if-none-match': `"other", W/${etag}` })).status, 412);
  // Without the header the same set is replaced and starts again, as always.
  assert.equal((await post()).status, 200);
  assert.equal((await send(`${echo.url}/b`)).status, 200);
});
