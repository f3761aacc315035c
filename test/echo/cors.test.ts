import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { type Answer, type SendOptions, send as sendTo } from '../helpers/http.ts';
import { until } from '../helpers/runtime.ts';

const ORIGIN = 'https://app.example.com';

const send = (echo: RunningEcho, path: string, options?: SendOptions): Promise<Answer> =>
  sendTo(echo.url + path, options);

function list(value: string | string[] | undefined): string[] {
  return String(value ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '');
}

function preflight(echo: RunningEcho, path: string, method: string, headers: string): Promise<Answer> {
  return send(echo, path, {
    method: 'OPTIONS',
    headers: {
      Origin: ORIGIN,
      'Access-Control-Request-Method': method,
      'Access-Control-Request-Headers': headers,
    },
  });
}

test('cors – a preflight gets a 204 that allows the origin, the method and the headers asked for', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const res = await preflight(echo, '/api/orders', 'PUT', 'X-Echo-Delay, Content-Type, X-Custom-Thing');
  assert.equal(res.status, 204);
  assert.equal(res.text, '');
  const allowOrigin = res.headers['access-control-allow-origin'];
  assert.ok(allowOrigin === ORIGIN || allowOrigin === '*', `allow-origin ${allowOrigin}`);
  const methods = list(res.headers['access-control-allow-methods']);
  for (const m of ['get', 'post', 'put', 'patch', 'delete'])
    assert.ok(methods.includes(m), `${m} in ${methods}`);
  const allowed = list(res.headers['access-control-allow-headers']);
  assert.ok(
    allowed.includes('*') ||
      ['x-echo-delay', 'content-type', 'x-custom-thing'].every((h) => allowed.includes(h)),
    `allow-headers ${allowed}`,
  );
  assert.ok(res.headers['x-request-id'], 'the preflight carries a request id too');
});

test('cors – a preflight is answered for the service’s own routes and is not recorded', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  for (const path of ['/replay', '/scenario', '/health']) {
    const res = await preflight(echo, path, 'POST', 'Content-Type');
    assert.equal(res.status, 204, path);
    // The admin routes answer it without allowing anything (test/echo/security-cors.test.ts).
    if (path === '/health') assert.ok(res.headers['access-control-allow-origin'], path);
  }
  await preflight(echo, '/echoed', 'DELETE', 'X-Echo-Status');
  const history = JSON.parse((await send(echo, '/history')).text) as unknown[];
  assert.deepEqual(history, [], 'a preflight is not an echoed request');
});

test('cors – a request with Origin gets Allow-Origin and exposed headers including X-Request-ID', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const res = await send(echo, '/thing', {
    method: 'POST',
    headers: { Origin: ORIGIN, 'Content-Type': 'text/plain' },
    body: 'hi',
  });
  assert.equal(res.status, 200);
  assert.equal(res.text, 'hi');
  const allowOrigin = res.headers['access-control-allow-origin'];
  assert.ok(allowOrigin === ORIGIN || allowOrigin === '*', `allow-origin ${allowOrigin}`);
  if (allowOrigin === ORIGIN) assert.ok(list(res.headers['vary']).includes('origin'), 'Vary: Origin');
  const exposed = list(res.headers['access-control-expose-headers']);
  for (const name of ['x-request-id', 'x-echo-request-count']) {
    assert.ok(exposed.includes(name), `${name} exposed: ${exposed}`);
  }
  assert.ok(!exposed.includes('content-type'), 'safelisted headers need no exposing');
});

test('cors – every header the response carries is exposed: faults, echoed and set headers', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const res = await send(echo, '/thing', {
    headers: {
      Origin: ORIGIN,
      'X-Echo-Error': '503',
      'X-Echo-Headers': 'x-trace',
      'X-Trace': 'abc',
      'X-Echo-Set-Header-X-Custom': 'v',
    },
  });
  assert.equal(res.status, 503);
  const exposed = list(res.headers['access-control-expose-headers']);
  for (const name of ['x-echo-fault', 'x-echoed-x-trace', 'x-custom', 'retry-after', 'x-request-id']) {
    assert.ok(exposed.includes(name), `${name} exposed: ${exposed}`);
  }
});

test('cors – the service’s own routes, injected faults and JSON errors carry CORS headers', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const health = await send(echo, '/health', { headers: { Origin: ORIGIN } });
  assert.equal(health.status, 200);
  assert.ok(health.headers['access-control-allow-origin']);

  const fault = await send(echo, '/x', { headers: { Origin: ORIGIN, 'X-Echo-Error': '503' } });
  assert.equal(fault.status, 503);
  assert.ok(fault.headers['access-control-allow-origin'], 'a browser can read an injected fault');

  const bad = await send(echo, '/x', { headers: { Origin: ORIGIN, 'X-Echo-Status': 'nope' } });
  assert.equal(bad.status, 400);
  assert.ok(bad.headers['access-control-allow-origin'], 'a browser can read the JSON error');
  assert.equal(JSON.parse(bad.text).error.code, 'ECHO_ERR_INVALID_HEADER');
});

test('cors – a request without Origin gets no Allow-Origin', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const res = await send(echo, '/plain');
  assert.equal(res.status, 200);
  assert.equal(res.headers['access-control-allow-origin'], undefined);
});

test('cors – with ENABLE_CORS=false there are no CORS headers and OPTIONS is echoed', async (t) => {
  const echo = await startEcho({ ENABLE_CORS: 'false' });
  t.after(() => echo.close());
  const get = await send(echo, '/thing', { headers: { Origin: ORIGIN } });
  assert.equal(get.status, 200);
  for (const name of Object.keys(get.headers)) {
    assert.ok(!name.startsWith('access-control-'), `unexpected ${name}`);
  }

  const options = await send(echo, '/thing', {
    method: 'OPTIONS',
    headers: {
      Origin: ORIGIN,
      'Access-Control-Request-Method': 'PUT',
      'Access-Control-Request-Headers': 'X-Echo-Delay',
      'X-Request-ID': 'opt-1',
      'X-Echo-Status': '202',
    },
  });
  assert.equal(options.status, 202, 'OPTIONS goes through the echo pipeline');
  for (const name of Object.keys(options.headers)) {
    assert.ok(!name.startsWith('access-control-'), `unexpected ${name}`);
  }
  const recorded = async () =>
    JSON.parse((await send(echo, '/history')).text) as Array<{ id: string; method: string }>;
  await until('both requests are in the history', async () => (await recorded()).length >= 2);
  const history = await recorded();
  assert.deepEqual(
    history.map((e) => [e.id, e.method]),
    [
      [history[0]?.id, 'GET'],
      ['opt-1', 'OPTIONS'],
    ],
  );
});
