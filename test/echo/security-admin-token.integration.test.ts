import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { buildApp } from '../../src/echo/app.ts';
import { loadConfig } from '../../src/echo/config.ts';
import { type EchoConfigError, isEchoError } from '../../src/echo/errors.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { type Answer, send } from '../helpers/http.ts';
import { h2Request, openH2 } from '../helpers/protocol-clients.ts';

const TOKEN = 'tok-3f9c1e7a-Secret_~value';
const JSON_TYPE = { 'content-type': 'application/json' };

interface Call {
  readonly method: string;
  readonly path: string;
  readonly body?: string;
  /** The status with the token: anything the route itself answers, never 401. */
  readonly status: number;
}

/** Every protected route, with a body it accepts. */
const PROTECTED: readonly Call[] = [
  { method: 'POST', path: '/scenario', body: '[]', status: 200 },
  { method: 'POST', path: '/scenario/reset', body: '{}', status: 200 },
  { method: 'PUT', path: '/scenario/state', body: '{"name":"none","position":0}', status: 404 },
  { method: 'PUT', path: '/control/readiness', body: '{"ready":true}', status: 200 },
  { method: 'PUT', path: '/control/liveness', body: '{"healthy":true}', status: 200 },
  { method: 'PUT', path: '/control/faults', body: '{"enabled":true}', status: 200 },
  { method: 'POST', path: '/replay', body: '{"id":"not-in-history"}', status: 404 },
  { method: 'GET', path: '/history', status: 200 },
  { method: 'GET', path: '/history/count?status=5xx', status: 200 },
  { method: 'DELETE', path: '/history', status: 200 },
  { method: 'POST', path: '/actuator/obs/enforcement', body: '{"value":"ENFORCING"}', status: 200 },
  { method: 'POST', path: '/actuator/obs/mode', body: '{"value":"ENFORCING"}', status: 200 },
  // The router decodes the path: the same route, the same lock.
  { method: 'PUT', path: '/%63ontrol/faults', body: '{"enabled":true}', status: 200 },
];

function call(echo: RunningEcho, c: Call, authorization?: string): Promise<Answer> {
  return send(echo.url + c.path, {
    method: c.method,
    headers: {
      ...(c.body === undefined ? {} : JSON_TYPE),
      ...(authorization === undefined ? {} : { authorization }),
    },
    ...(c.body === undefined ? {} : { body: c.body }),
  });
}

function assertRefused(res: Answer, what: string): void {
  assert.equal(res.status, 401, `${what}: ${res.text}`);
  assert.equal(res.headers['www-authenticate'], 'Bearer realm="echo-chaos"', what);
  const body = JSON.parse(res.text) as { error: { code: string; request_id: string; message: string } };
  assert.equal(body.error.code, 'ECHO_ERR_UNAUTHORIZED', what);
  assert.equal(body.error.request_id, res.headers['x-request-id'], what);
  assert.ok(!res.text.includes(TOKEN), `${what}: the answer quotes the token`);
}

test('admin token – each protected route refuses without the token and with a wrong one, and works with it', async (t) => {
  const echo = await startEcho({ ECHO_ADMIN_TOKEN: TOKEN });
  t.after(() => echo.close());
  const wrong = [
    undefined,
    'Bearer wrong',
    `Bearer ${TOKEN}x`,
    `Bearer ${TOKEN.slice(0, -1)}`,
    `Basic ${TOKEN}`,
    TOKEN,
    'Bearer ',
  ];
  for (const c of PROTECTED) {
    for (const authorization of wrong)
      assertRefused(await call(echo, c, authorization), `${c.method} ${c.path} with ${authorization}`);
    const res = await call(echo, c, `Bearer ${TOKEN}`);
    assert.equal(res.status, c.status, `${c.method} ${c.path} with the token: ${res.text}`);
    // The scheme is case-insensitive (RFC 9110, section 11.1).
    assert.equal(
      (await call(echo, c, `bearer ${TOKEN}`)).status,
      c.status,
      `${c.method} ${c.path} lower-case scheme`,
    );
  }
});

test('admin token – a refused write changes nothing', async (t) => {
  const echo = await startEcho({ ECHO_ADMIN_TOKEN: TOKEN });
  t.after(() => echo.close());
  const enforcement = {
    method: 'POST',
    path: '/actuator/obs/enforcement',
    body: '{"value":"DRY_RUN"}',
    status: 200,
  };
  assertRefused(await call(echo, enforcement, 'Bearer nope'), 'DRY_RUN');
  assert.equal(JSON.parse((await send(`${echo.url}/actuator/obs/enforcement`)).text).mode, 'ENFORCING');
  assertRefused(
    await call(echo, { method: 'PUT', path: '/control/readiness', body: '{"ready":false}', status: 200 }),
    'readiness',
  );
  assert.equal((await send(`${echo.url}/ready`)).status, 200);
  // And with the token it does change: the refusal above was the lock, not a broken route.
  await call(echo, enforcement, `Bearer ${TOKEN}`);
  assert.equal(JSON.parse((await send(`${echo.url}/actuator/obs/enforcement`)).text).mode, 'DRY_RUN');
});

test('admin token – echo paths, probes, metrics, info and reads of settings stay open', async (t) => {
  const echo = await startEcho({ ECHO_ADMIN_TOKEN: TOKEN });
  t.after(() => echo.close());
  const open: ReadonlyArray<readonly [string, string]> = [
    ['GET', '/health'],
    ['GET', '/ready'],
    ['GET', '/metrics'],
    ['GET', '/info'],
    ['GET', '/scenario'],
    ['GET', '/control/faults'],
    ['GET', '/actuator/obs/enforcement'],
    ['POST', '/api/orders'],
    ['PUT', '/scenarios-of-mine'],
    ['POST', '/controls'],
    ['DELETE', '/anything'],
  ];
  for (const [method, path] of open) {
    const res = await send(echo.url + path, { method, body: method === 'GET' ? undefined : 'x' } as never);
    assert.equal(res.status, 200, `${method} ${path}: ${res.text}`);
    assert.equal(res.headers['www-authenticate'], undefined, `${method} ${path}`);
  }
  const info = JSON.parse((await send(`${echo.url}/info`)).text) as { server: Record<string, unknown> };
  assert.equal(info.server['admin_token_required'], true);
});

test('admin token – without ECHO_ADMIN_TOKEN everything stays open, and /info says so', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  for (const c of PROTECTED) assert.equal((await call(echo, c)).status, c.status, `${c.method} ${c.path}`);
  const info = JSON.parse((await send(`${echo.url}/info`)).text) as { server: Record<string, unknown> };
  assert.equal(info.server['admin_token_required'], false);
});

test('admin token – the token never appears in a log line, even with headers and transactions logged', async (t) => {
  const echo = await startEcho(
    { ECHO_ADMIN_TOKEN: TOKEN, LOG_HEADERS: 'true', LOG_TRANSACTION: 'true', LOG_RESPONSE_HEADERS: 'true' },
    { captureLogs: true },
  );
  t.after(() => echo.close());
  for (const authorization of [`Bearer ${TOKEN}`, `Bearer ${TOKEN}x`]) {
    await call(echo, PROTECTED[0] as Call, authorization);
    await send(`${echo.url}/api/with-token`, { headers: { authorization } });
  }
  await send(`${echo.url}/api/with-token`, { headers: { 'x-api-token': TOKEN } });
  // Headers were logged (the check is not vacuous), and the token is not among them.
  const lines = echo.logs.map((l) => JSON.stringify(l));
  assert.ok(
    lines.some((l) => l.includes('/api/with-token') && /authorization/i.test(l)),
    `no line logged the request headers:\n${lines.join('\n')}`,
  );
  for (const line of lines) assert.ok(!line.includes(TOKEN.slice(4)), `the token is in a log line: ${line}`);
});

test('admin token – ECHO_ADMIN_TOKEN_FILE is read once at startup, trailing newline and all', async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'echo-token-')), 'token');
  writeFileSync(file, `${TOKEN}\n`);
  const echo = await startEcho({ ECHO_ADMIN_TOKEN_FILE: file });
  t.after(() => echo.close());
  const history = PROTECTED.find((c) => c.path === '/history') as Call;
  assertRefused(await call(echo, history), 'no token');
  assert.equal((await call(echo, history, `Bearer ${TOKEN}`)).status, 200);
  // Read once: changing the file later changes nothing until a restart.
  writeFileSync(file, 'another\n');
  assert.equal((await call(echo, history, `Bearer ${TOKEN}`)).status, 200);
  assertRefused(await call(echo, history, 'Bearer another'), 'the new content');
});

async function startupProblems(env: Record<string, string>): Promise<readonly string[]> {
  try {
    const app = await buildApp(loadConfig(env), { scenarios: [], logger: pino({ level: 'silent' }) });
    await app.close();
  } catch (err) {
    assert.ok(isEchoError(err) && err.code === 'ECHO_ERR_CONFIG', String(err));
    return (err as EchoConfigError).problems;
  }
  assert.fail(`started with ${JSON.stringify(env)}`);
}

test('admin token – a token file missing, empty or unusable, an empty token, or both set stop startup with one line', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'echo-token-'));
  const empty = join(dir, 'empty');
  writeFileSync(empty, ' \n');
  const spaced = join(dir, 'spaced');
  writeFileSync(spaced, 'two words\n');
  const missing = join(dir, 'missing');
  const cases: ReadonlyArray<readonly [Record<string, string>, RegExp]> = [
    [
      { ECHO_ADMIN_TOKEN_FILE: missing },
      /^ECHO_ADMIN_TOKEN_FILE=".*missing" is invalid: cannot read it \(ENOENT\)$/,
    ],
    [{ ECHO_ADMIN_TOKEN_FILE: empty }, /^ECHO_ADMIN_TOKEN_FILE=".*empty" is invalid: the file is empty$/],
    [{ ECHO_ADMIN_TOKEN_FILE: spaced }, /^ECHO_ADMIN_TOKEN_FILE=".*spaced" is invalid: expected a token/],
    [{ ECHO_ADMIN_TOKEN_FILE: dir }, /^ECHO_ADMIN_TOKEN_FILE=".*" is invalid: cannot read it \(EISDIR\)$/],
    [{ ECHO_ADMIN_TOKEN: '' }, /^ECHO_ADMIN_TOKEN is set but empty/],
    [
      { ECHO_ADMIN_TOKEN: TOKEN, ECHO_ADMIN_TOKEN_FILE: empty },
      /^ECHO_ADMIN_TOKEN and ECHO_ADMIN_TOKEN_FILE are both set/,
    ],
  ];
  for (const [env, expected] of cases) {
    let problems: readonly string[];
    try {
      problems = await startupProblems(env);
    } catch (err) {
      // loadConfig itself refuses some of them, before buildApp.
      assert.ok(isEchoError(err) && err.code === 'ECHO_ERR_CONFIG', String(err));
      problems = (err as EchoConfigError).problems;
    }
    assert.equal(problems.length, 1, `${JSON.stringify(env)}: ${problems.join('\n')}`);
    assert.match(problems[0] as string, expected);
    assert.ok(!(problems[0] as string).includes(TOKEN), 'the token is quoted');
  }
});

test('admin token – over HTTP/2 (h2c prior knowledge) the lock is the same', async (t) => {
  const echo = await startEcho({ ECHO_ADMIN_TOKEN: TOKEN });
  t.after(() => echo.close());
  const session = await openH2(echo.url);
  t.after(() => session.close());
  const put = (authorization?: string) =>
    h2Request(
      session,
      {
        ':method': 'PUT',
        ':path': '/control/faults',
        'content-type': 'application/json',
        ...(authorization === undefined ? {} : { authorization }),
      },
      Buffer.from('{"enabled":true}'),
    );
  const refused = await put();
  assert.equal(refused.status, 401);
  assert.equal(refused.headers['www-authenticate'], 'Bearer realm="echo-chaos"');
  assert.equal(JSON.parse(refused.body.toString()).error.code, 'ECHO_ERR_UNAUTHORIZED');
  assert.equal((await put(`Bearer ${TOKEN}x`)).status, 401);
  assert.equal((await put(`Bearer ${TOKEN}`)).status, 200);
});

test('admin token – the entry point stops with exit 1 and one line naming the unreadable token file', async () => {
  const { spawn } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const main = fileURLToPath(new URL('../../src/echo/main.ts', import.meta.url));
  const cwd = mkdtempSync(join(tmpdir(), 'echo-token-main-'));
  const missing = join(cwd, 'no-such-token');
  const child = spawn(process.execPath, [main], {
    cwd,
    env: { PATH: process.env['PATH'] ?? '', PORT: '0', HOST: '127.0.0.1', ECHO_ADMIN_TOKEN_FILE: missing },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 15_000,
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  child.stdout.resume();
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(code, 1, stderr);
  assert.deepEqual(
    stderr.split('\n').filter((l) => l !== ''),
    [`echo-chaos: ECHO_ADMIN_TOKEN_FILE=${JSON.stringify(missing)} is invalid: cannot read it (ENOENT)`],
  );
});
