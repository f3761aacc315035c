import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { test } from 'node:test';
import type { ReplayResolver } from '../../src/echo/replay-guard.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { type Answer, send } from '../helpers/http.ts';

/**
 * Names the echo server resolves through an injected table, never real DNS: `*.test` names do not
 * exist, so a replay that reaches the loopback server proves the address dialled is the one the
 * guard checked, not a second lookup. Names that lead to a metadata address lead to loopback
 * first, so a guard that let them through would be caught by the counting server below, and no
 * test ever dials a real link-local or external address.
 */
const NAMES: Record<string, string[]> = {
  'stand-in.test': ['127.0.0.1'],
  'rebind.test': ['127.0.0.1', '169.254.169.254'],
  'mapped.test': ['127.0.0.1', '::ffff:169.254.169.254'],
  'metadata.google.internal': ['127.0.0.1'],
  // The target listens on 127.0.0.1 only: ::1 refuses (or is unavailable), and the next address is tried.
  'dual.test': ['::1', '127.0.0.1'],
};
const resolver: ReplayResolver = async (name) => {
  const addresses = NAMES[name];
  if (addresses === undefined)
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

/** A loopback target that counts connections and requests, and answers a redirect on /redirect. */
interface Target {
  readonly port: number;
  readonly seen: { connections: number; requests: string[] };
  readonly server: Server;
}

async function startTarget(): Promise<Target> {
  const seen = { connections: 0, requests: [] as string[] };
  const server = createServer((req, res) => {
    seen.requests.push(`${req.method} ${req.url}`);
    req.resume();
    if (req.url === '/redirect') {
      res.writeHead(302, { location: '/moved', 'content-type': 'text/plain' }).end('see /moved');
    } else res.writeHead(200, { 'content-type': 'text/plain' }).end('from the target');
  });
  server.on('connection', () => {
    seen.connections++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { port: typeof address === 'object' && address !== null ? address.port : 0, seen, server };
}

async function withTarget(t: { after(fn: () => unknown): void }): Promise<Target> {
  const target = await startTarget();
  t.after(() => {
    target.server.closeAllConnections();
    return new Promise<void>((resolve) => target.server.close(() => resolve()));
  });
  return target;
}

async function echoWith(
  t: { after(fn: () => unknown): void },
  env: Record<string, string> = {},
): Promise<RunningEcho> {
  const echo = await startEcho(env, { replayResolver: resolver });
  t.after(() => echo.close());
  return echo;
}

async function record(echo: RunningEcho, path: string, id: string): Promise<void> {
  assert.equal((await send(echo.url + path, { headers: { 'x-request-id': id } })).status, 200);
}

function replay(echo: RunningEcho, id: string, target: string): Promise<Answer> {
  return send(`${echo.url}/replay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id, target }),
  });
}

function assertRefused(res: Answer, target: string, why: RegExp): void {
  assert.equal(res.status, 403, res.text);
  const body = JSON.parse(res.text) as { error: { code: string; message: string; request_id: string } };
  assert.equal(body.error.code, 'ECHO_ERR_REPLAY_TARGET_REFUSED');
  assert.ok(body.error.message.includes(target), `${body.error.message} names ${target}`);
  assert.match(body.error.message, why);
  assert.equal(body.error.request_id, res.headers['x-request-id']);
}

test('replay targets – a name resolving to loopback is dialled at the address the guard checked', async (t) => {
  const target = await withTarget(t);
  const echo = await echoWith(t);
  await record(echo, '/orders/7', 'rt-1');
  const res = await replay(echo, 'rt-1', `http://stand-in.test:${target.port}`);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.text, 'from the target');
  assert.deepEqual(target.seen.requests, ['GET /orders/7']);
});

test('replay targets – a name that also resolves to a metadata address is refused with a 403 and nothing is sent', async (t) => {
  const target = await withTarget(t);
  const echo = await echoWith(t);
  await record(echo, '/orders/7', 'rt-2');
  assertRefused(
    await replay(echo, 'rt-2', `http://rebind.test:${target.port}`),
    `rebind.test:${target.port}`,
    /169\.254\.169\.254/,
  );
  assertRefused(
    await replay(echo, 'rt-2', `http://mapped.test:${target.port}`),
    `mapped.test:${target.port}`,
    /::ffff:169\.254\.169\.254/,
  );
  assertRefused(
    await replay(echo, 'rt-2', `http://metadata.google.internal:${target.port}`),
    'metadata.google.internal',
    /metadata service/,
  );
  assert.equal(target.seen.connections, 0, 'no connection reached the target');
  assert.deepEqual(target.seen.requests, []);
  // The server keeps serving, and the same loopback target is reachable by an allowed name.
  assert.equal((await replay(echo, 'rt-2', `http://stand-in.test:${target.port}`)).status, 200);
  assert.equal(target.seen.connections, 1);
});

test('replay targets – ECHO_REPLAY_ALLOWED_TARGETS allows only what it lists; listing the metadata address allows it', async (t) => {
  const target = await withTarget(t);
  const closed = await echoWith(t, { ECHO_REPLAY_ALLOWED_TARGETS: '10.0.0.0/8, 127.0.0.1:1' });
  await record(closed, '/a', 'rt-3');
  assertRefused(
    await replay(closed, 'rt-3', `http://127.0.0.1:${target.port}`),
    `127.0.0.1:${target.port}`,
    /not in ECHO_REPLAY_ALLOWED_TARGETS/,
  );
  assertRefused(
    await replay(closed, 'rt-3', `http://stand-in.test:${target.port}`),
    'stand-in.test',
    /resolves to 127\.0\.0\.1: not in/,
  );
  assert.equal(target.seen.connections, 0);
  // A replay without target goes to this server itself, whatever the list says.
  assert.equal(
    (
      await send(`${closed.url}/replay`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"id":"rt-3"}',
      })
    ).status,
    200,
  );

  const listed = await echoWith(t, {
    ECHO_REPLAY_ALLOWED_TARGETS: `127.0.0.1:${target.port}, 169.254.169.254`,
  });
  await record(listed, '/b', 'rt-4');
  assert.equal((await replay(listed, 'rt-4', `http://127.0.0.1:${target.port}`)).status, 200);
  // rebind.test resolves to loopback and the metadata address: both listed now, and loopback is dialled.
  assert.equal((await replay(listed, 'rt-4', `http://rebind.test:${target.port}`)).status, 200);
  assert.deepEqual(target.seen.requests, ['GET /b', 'GET /b']);
});

test('replay targets – a redirect from the target is answered as it is, never followed', async (t) => {
  const target = await withTarget(t);
  const echo = await echoWith(t);
  await record(echo, '/redirect', 'rt-5');
  const res = await replay(echo, 'rt-5', `http://127.0.0.1:${target.port}`);
  assert.equal(res.status, 302);
  assert.equal(res.headers['content-type'], 'text/plain');
  assert.equal(res.headers['location'], '/moved', "the target's Location comes back with it");
  assert.deepEqual(target.seen.requests, ['GET /redirect'], 'the redirect was not followed');
});

test('replay targets – a dual-stack name falls back to its next checked address when the first refuses', async (t) => {
  const target = await withTarget(t);
  const echo = await echoWith(t);
  await record(echo, '/dual', 'rt-6');
  const res = await replay(echo, 'rt-6', `http://dual.test:${target.port}`);
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(target.seen.requests, ['GET /dual']);
});

test('replay targets – the example of docs/security.md: a refused target is a 403 before the id is looked up, whatever history holds', async (t) => {
  const echo = await echoWith(t, { ECHO_REPLAY_ALLOWED_TARGETS: 'staging.internal,10.20.0.0/16' });
  // `abc` was never recorded: the target is judged first, so the answer tells nothing of history.
  assertRefused(
    await replay(echo, 'abc', 'http://169.254.169.254'),
    '169.254.169.254:80',
    /not in ECHO_REPLAY_ALLOWED_TARGETS/,
  );
  await record(echo, '/orders/9', 'known');
  assertRefused(
    await replay(echo, 'known', 'http://169.254.169.254'),
    '169.254.169.254:80',
    /not in ECHO_REPLAY_ALLOWED_TARGETS/,
  );
  // An allowed target with an unknown id is still a 404.
  const missing = await replay(echo, 'abc', 'http://10.20.0.1:9');
  assert.equal(missing.status, 404, missing.text);
});
