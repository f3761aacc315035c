import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { type Answer, send } from '../helpers/http.ts';

const ORIGIN = 'https://evil.example';

/** The admin routes, as a browser on another origin would call them, with the body they accept. */
const ADMIN: ReadonlyArray<readonly [string, string, string?]> = [
  ['GET', '/history'],
  ['GET', '/scenario'],
  ['POST', '/scenario', '[]'],
  ['POST', '/scenario/reset', '{}'],
  ['GET', '/scenario/state'],
  ['PUT', '/control/faults', '{"enabled":true}'],
  ['GET', '/control/readiness'],
  ['POST', '/replay', '{"id":"none"}'],
  ['GET', '/actuator/obs'],
  ['POST', '/actuator/obs/enforcement', '{"value":"ENFORCING"}'],
];

function preflight(echo: RunningEcho, path: string, method: string): Promise<Answer> {
  return send(echo.url + path, {
    method: 'OPTIONS',
    headers: {
      origin: ORIGIN,
      'access-control-request-method': method,
      'access-control-request-headers': 'content-type, authorization',
    },
  });
}

function call(echo: RunningEcho, method: string, path: string, body?: string): Promise<Answer> {
  return send(echo.url + path, {
    method,
    headers: { origin: ORIGIN, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body }),
  });
}

function corsHeaders(res: Answer): string[] {
  return Object.keys(res.headers).filter((name) => name.startsWith('access-control-'));
}

test('security cors – admin routes answer a cross-origin preflight without allowing anything', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const paths = [...ADMIN.map(([, path]) => path), '/%73cenario', '/history?limit=1', '/actuator/obs/mode'];
  for (const path of paths) {
    const res = await preflight(echo, path, 'POST');
    assert.equal(res.status, 204, path);
    assert.deepEqual(corsHeaders(res), [], `${path}: ${corsHeaders(res)}`);
  }
  // Not recorded as echoes either.
  assert.deepEqual(JSON.parse((await send(`${echo.url}/history`)).text), []);
});

test('security cors – admin routes reflect no origin and allow no credentials on the request itself', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  for (const [method, path, body] of ADMIN) {
    const res = await call(echo, method, path, body);
    assert.ok(res.status < 500, `${method} ${path}: ${res.status}`);
    assert.deepEqual(corsHeaders(res), [], `${method} ${path}: ${corsHeaders(res)}`);
  }
});

test('security cors – echo paths, probes and /info stay permissive, credentials included', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  for (const path of ['/api/orders', '/scenarios', '/history-of-mine', '/health', '/info']) {
    const pre = await preflight(echo, path, 'PUT');
    assert.equal(pre.status, 204, path);
    assert.equal(pre.headers['access-control-allow-origin'], ORIGIN, path);
    assert.equal(pre.headers['access-control-allow-credentials'], 'true', path);
    const res = await call(echo, 'GET', path);
    assert.equal(res.headers['access-control-allow-origin'], ORIGIN, path);
    assert.equal(res.headers['access-control-allow-credentials'], 'true', path);
  }
});

test('security cors – ECHO_CORS_ADMIN=true opens the admin routes to other origins again', async (t) => {
  const echo = await startEcho({ ECHO_CORS_ADMIN: 'true' });
  t.after(() => echo.close());
  for (const [method, path, body] of ADMIN) {
    const pre = await preflight(echo, path, method);
    assert.equal(pre.headers['access-control-allow-origin'], ORIGIN, `preflight ${path}`);
    const res = await call(echo, method, path, body);
    assert.equal(res.headers['access-control-allow-origin'], ORIGIN, `${method} ${path}`);
    assert.equal(res.headers['access-control-allow-credentials'], 'true', `${method} ${path}`);
  }
});
