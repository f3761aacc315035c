import assert from 'node:assert/strict';
import { Socket } from 'node:net';
import { test } from 'node:test';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { type Answer, type SendOptions, send as sendTo } from '../helpers/http.ts';
import { until } from '../helpers/runtime.ts';

interface Entry {
  id: string;
  request_id: string;
  method: string;
  url: string;
  path: string;
  query: string;
  headers: Record<string, string | string[]>;
  body: string;
  body_encoding?: string;
  body_size: number;
  status: number | null;
}

const send = (base: string, path: string, options?: SendOptions): Promise<Answer> =>
  sendTo(base + path, options);

function postReplay(echo: RunningEcho, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  return send(echo.url, '/replay', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** History once every recorded request has its answered status. */
async function history(echo: RunningEcho): Promise<Entry[]> {
  let entries: Entry[] = [];
  await until('every history entry has its answered status', async () => {
    const res = await send(echo.url, '/history');
    assert.equal(res.status, 200);
    entries = JSON.parse(res.body.toString()) as Entry[];
    return entries.every((e) => e.status !== null);
  });
  return entries;
}

function assertError(res: Answer, status: number, code: string, requestId?: string): void {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status}: ${res.body}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = JSON.parse(res.body.toString()) as {
    error: { code: string; message: string; request_id: string };
  };
  assert.equal(body.error.code, code);
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 0);
  assert.equal(body.error.request_id, res.headers['x-request-id']);
  if (requestId !== undefined) assert.equal(body.error.request_id, requestId);
}

/**
 * A port nothing listens on: 1 (tcpmux), which nothing on these machines serves. A port bound and
 * released could be taken by another test's server before the replay reaches it.
 */
async function closedPort(): Promise<number> {
  return 1;
}

test('replay – with only an id re-sends the request and answers with the upstream status, type and body', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const original = await send(echo.url, '/orders?page=2', {
    method: 'POST',
    headers: {
      'X-Request-ID': 'orig-1',
      'Content-Type': 'application/vnd.test+json',
      'X-Echo-Status': '201',
      'X-Tenant': 'acme',
    },
    body: '{"item":"book"}',
  });
  assert.equal(original.status, 201);

  const res = await postReplay(echo, { id: 'orig-1' });
  assert.equal(res.status, 201);
  assert.equal(res.headers['content-type'], 'application/vnd.test+json');
  assert.equal(res.body.toString(), '{"item":"book"}');
  assert.equal(res.headers['x-echo-replay-of'], 'orig-1');

  // The re-sent request reached this server's echo route, as the original did.
  const entries = await history(echo);
  assert.equal(entries.length, 2);
  const replayed = entries[1]!;
  assert.notEqual(replayed.id, 'orig-1');
  assert.equal(replayed.method, 'POST');
  assert.equal(replayed.url, '/orders?page=2');
  assert.equal(replayed.headers['x-tenant'], 'acme');
  assert.equal(replayed.body, '{"item":"book"}');
  assert.equal(replayed.status, 201);
});

test('replay – a GET is re-sent as a GET without a body', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await send(echo.url, '/look?q=1', { headers: { 'X-Request-ID': 'get-1' } });
  const res = await postReplay(echo, { id: 'get-1' });
  assert.equal(res.status, 200);
  assert.match(res.body.toString(), /^GET \/look\?q=1 HTTP\/1\.1\n/);
  assert.equal(res.headers['x-echo-replay-of'], 'get-1');
  const replayed = (await history(echo))[1];
  assert.equal(replayed?.method, 'GET');
  assert.equal(replayed?.body_size, 0);
});

test('replay – modify_headers replaces and adds headers on the replayed request', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await send(echo.url, '/things', {
    method: 'PUT',
    headers: { 'X-Request-ID': 'mh-1', 'X-Keep': 'kept', 'X-Change': 'old', 'Content-Type': 'text/plain' },
    body: 'payload',
  });
  const res = await postReplay(echo, {
    id: 'mh-1',
    modify_headers: { 'x-change': 'new', 'X-Added': 'added', 'X-Echo-Status': '202' },
  });
  assert.equal(res.status, 202, 'a control header added by modify_headers takes effect upstream');
  assert.equal(res.body.toString(), 'payload');
  const replayed = (await history(echo))[1]!;
  assert.equal(replayed.headers['x-keep'], 'kept');
  assert.equal(replayed.headers['x-change'], 'new');
  assert.equal(replayed.headers['x-added'], 'added');
});

test('replay – modify_body replaces the body, and the length sent is the new one', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await send(echo.url, '/submit', {
    method: 'POST',
    headers: { 'X-Request-ID': 'mb-1', 'Content-Type': 'text/plain' },
    body: 'the original, rather long body',
  });
  const res = await postReplay(echo, { id: 'mb-1', modify_body: 'short' });
  assert.equal(res.status, 200);
  assert.equal(res.body.toString(), 'short');
  assert.equal(res.headers['content-type'], 'text/plain');
  const replayed = (await history(echo))[1]!;
  assert.equal(replayed.body, 'short');
  assert.equal(replayed.body_size, 5);
  assert.equal(replayed.headers['content-length'], '5');
});

test('replay – target sends the request to another server, which sees method, path, query, headers and body', async (t) => {
  const a = await startEcho();
  t.after(() => a.close());
  const b = await startEcho();
  t.after(() => b.close());
  await send(a.url, '/api/v1/items?sort=desc&limit=3', {
    method: 'PATCH',
    headers: { 'X-Request-ID': 'tg-1', 'Content-Type': 'application/json', 'X-Custom': 'yes' },
    body: '{"name":"x"}',
  });

  const res = await postReplay(a, {
    id: 'tg-1',
    target: b.url,
    modify_headers: { 'X-Extra': 'extra' },
    modify_body: '{"name":"changed"}',
  });
  assert.equal(res.status, 200);
  assert.equal(res.body.toString(), '{"name":"changed"}');
  assert.equal(res.headers['content-type'], 'application/json');
  assert.equal(res.headers['x-echo-replay-of'], 'tg-1');

  const atB = await history(b);
  assert.equal(atB.length, 1);
  const got = atB[0]!;
  assert.equal(got.method, 'PATCH');
  assert.equal(got.path, '/api/v1/items');
  assert.equal(got.query, 'sort=desc&limit=3');
  assert.equal(got.headers['x-custom'], 'yes');
  assert.equal(got.headers['x-extra'], 'extra');
  assert.equal(got.headers['content-type'], 'application/json');
  assert.equal(got.headers['content-length'], String('{"name":"changed"}'.length));
  assert.equal(got.headers['host'], `127.0.0.1:${b.port}`, "the target's own host is used");
  assert.equal(got.body, '{"name":"changed"}');
  // The original server only holds the original request: the replay went elsewhere.
  assert.deepEqual(
    (await history(a)).map((e) => e.id),
    ['tg-1'],
  );
});

test('replay – carries the caller’s deadline to the target as both deadline headers, not the stored one', async (t) => {
  const a = await startEcho();
  t.after(() => a.close());
  const b = await startEcho();
  t.after(() => b.close());
  await send(a.url, '/stored', { headers: { 'X-Request-ID': 'dl-1', 'Obs-Timeout-Ms': '99' } });

  const before = Date.now();
  const res = await postReplay(a, { id: 'dl-1', target: b.url }, { 'Obs-Timeout-Ms': '5000' });
  assert.equal(res.status, 200, res.body.toString());
  const got = (await history(b))[0]!;
  const remaining = Number(got.headers['obs-timeout-ms']);
  assert.ok(remaining > 2000 && remaining <= 4950, `Obs-Timeout-Ms ${got.headers['obs-timeout-ms']}`);
  const deadline = Number(got.headers['obs-timeout-deadline-ms']);
  assert.ok(deadline > before && deadline <= Date.now() + 4950, `deadline ${deadline}`);
});

test('replay – with abort-on-exhaustion and no budget left, a 504 ECHO_ERR_REPLAY_BUDGET_EXHAUSTED; nothing reaches the target', async (t) => {
  const a = await startEcho({ OBS_TIMEOUT_BUDGET_ABORT_ON_EXHAUSTION: 'true' });
  t.after(() => a.close());
  const b = await startEcho();
  t.after(() => b.close());
  await send(a.url, '/stored', { headers: { 'X-Request-ID': 'dl-2' } });

  const refused = await postReplay(a, { id: 'dl-2', target: b.url }, { 'Obs-Timeout-Ms': '0' });
  assertError(refused, 504, 'ECHO_ERR_REPLAY_BUDGET_EXHAUSTED');
  assert.deepEqual(await history(b), []);
  // With budget left, the same replay goes through.
  const ok = await postReplay(a, { id: 'dl-2', target: b.url }, { 'Obs-Timeout-Ms': '5000' });
  assert.equal(ok.status, 200);
  assert.equal((await history(b)).length, 1);
});

test('replay – a target with a trailing slash or a base path still reaches the stored path', async (t) => {
  const a = await startEcho();
  t.after(() => a.close());
  const b = await startEcho();
  t.after(() => b.close());
  await send(a.url, '/deep/path?x=1', { headers: { 'X-Request-ID': 'slash-1' } });
  const res = await postReplay(a, { id: 'slash-1', target: `${b.url}/` });
  assert.equal(res.status, 200);
  assert.deepEqual(
    (await history(b)).map((e) => e.url),
    ['/deep/path?x=1'],
  );
});

test('replay – a binary body is replayed byte for byte, to this server and to a target', async (t) => {
  const a = await startEcho();
  t.after(() => a.close());
  const b = await startEcho();
  t.after(() => b.close());
  const bytes = Buffer.from(Array.from({ length: 1024 }, (_, i) => (i * 37 + 11) % 256));
  await send(a.url, '/upload', {
    method: 'POST',
    headers: { 'X-Request-ID': 'bin-1', 'Content-Type': 'application/octet-stream' },
    body: bytes,
  });

  const self = await postReplay(a, { id: 'bin-1' });
  assert.equal(self.status, 200);
  assert.equal(self.headers['content-type'], 'application/octet-stream');
  assert.deepEqual(self.body, bytes);

  const remote = await postReplay(a, { id: 'bin-1', target: b.url });
  assert.deepEqual(remote.body, bytes);
  const got = (await history(b))[0]!;
  assert.equal(got.body_encoding, 'base64');
  assert.deepEqual(Buffer.from(got.body, 'base64'), bytes);
});

test('replay – hop-by-hop and length headers are not forwarded', async (t) => {
  const a = await startEcho();
  t.after(() => a.close());
  const b = await startEcho();
  t.after(() => b.close());
  // Sent raw: a well-behaved client refuses to set most of these headers.
  const raw = [
    'POST /hop?x=1 HTTP/1.1',
    `Host: 127.0.0.1:${a.port}`,
    'X-Request-ID: hop-1',
    'Connection: keep-alive, X-Private-Hop',
    'Keep-Alive: timeout=5',
    'X-Private-Hop: secret',
    'Proxy-Authorization: Basic Zm9vOmJhcg==',
    'TE: trailers',
    'Trailer: X-Checksum',
    'Transfer-Encoding: chunked',
    'Content-Type: text/plain',
    'X-Plain: kept',
    '',
    '5',
    'hello',
    '0',
    '',
    '',
  ].join('\r\n');
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = new Socket();
    let data = '';
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1');
      if (/\r\n\r\nhello$/.test(data)) {
        socket.destroy();
        resolve(data);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(data));
    socket.connect(a.port, '127.0.0.1', () => socket.write(raw));
  });
  assert.match(answer, /^HTTP\/1\.1 200/);

  const res = await postReplay(a, { id: 'hop-1', target: b.url });
  assert.equal(res.status, 200);
  assert.equal(res.body.toString(), 'hello');
  const got = (await history(b))[0]!;
  assert.equal(got.body, 'hello');
  assert.equal(got.headers['x-plain'], 'kept');
  assert.equal(got.headers['x-request-id'], 'hop-1');
  for (const name of [
    'keep-alive',
    'x-private-hop',
    'proxy-authorization',
    'te',
    'trailer',
    'transfer-encoding',
  ]) {
    assert.equal(got.headers[name], undefined, `${name} must not be forwarded`);
  }
  assert.notEqual(got.headers['connection'], 'keep-alive, X-Private-Hop');
  assert.equal(got.headers['content-length'], '5', 'the length is computed again, not copied');
});

test('replay – a stale Content-Length of the original is not sent with a new body', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await send(echo.url, '/len', {
    method: 'POST',
    headers: { 'X-Request-ID': 'len-1', 'Content-Type': 'text/plain' },
    body: '0123456789',
  });
  const res = await postReplay(echo, { id: 'len-1', modify_body: '0123456789ABCDEFGHIJ' });
  assert.equal(res.status, 200);
  assert.equal(res.body.toString(), '0123456789ABCDEFGHIJ');
});

test('replay – bad JSON is a 400 ECHO_ERR_INVALID_JSON', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await send(echo.url, '/x', { headers: { 'X-Request-ID': 'x-1' } });
  const before = await history(echo);
  const res = await postReplay(echo, '{"id": "x-1"', { 'X-Request-ID': 'bad-json' });
  assertError(res, 400, 'ECHO_ERR_INVALID_JSON', 'bad-json');
  assert.equal((await send(echo.url, '/health')).status, 200);
  assert.deepEqual(await history(echo), before);
});

test('replay – a body without id, or with fields of the wrong type, is a 400 ECHO_ERR_INVALID_REPLAY', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await send(echo.url, '/x', { headers: { 'X-Request-ID': 'x-1' } });
  const before = await history(echo);
  const bad: unknown[] = [
    {},
    { id: '' },
    { id: 42 },
    { id: null },
    [],
    ['x-1'],
    '"x-1"',
    'null',
    { id: 'x-1', modify_headers: 'X-A: 1' },
    { id: 'x-1', modify_headers: ['a'] },
    { id: 'x-1', modify_headers: { 'X-A': 1 } },
    { id: 'x-1', modify_headers: { 'bad name': 'v' } },
    { id: 'x-1', modify_headers: { 'X-A': 'line\r\nX-Injected: yes' } },
    { id: 'x-1', modify_headers: { 'X-A': 'bell\u0007' } },
    { id: 'x-1', modify_headers: { 'X-A': 'snow \u2603' } },
    { id: 'x-1', modify_headers: { Host: 'evil.example' } },
    { id: 'x-1', modify_headers: { 'Transfer-Encoding': 'chunked' } },
    { id: 'x-1', modify_headers: { Connection: 'close' } },
    { id: 'x-1', modify_body: 12 },
    { id: 'x-1', modify_body: { text: 'a' } },
    { id: 'x-1', target: 8080 },
    { id: 'x-1', unknown: true },
  ];
  for (const body of bad) {
    const res = await postReplay(echo, body);
    assertError(res, 400, 'ECHO_ERR_INVALID_REPLAY');
  }
  assert.equal((await send(echo.url, '/health')).status, 200);
  assert.deepEqual(await history(echo), before);
});

test('replay – an unknown id is a 404 ECHO_ERR_REPLAY_NOT_FOUND', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await send(echo.url, '/x', { headers: { 'X-Request-ID': 'x-1' } });
  const before = await history(echo);
  const res = await postReplay(echo, { id: 'never-seen' }, { 'X-Request-ID': 'nf' });
  assertError(res, 404, 'ECHO_ERR_REPLAY_NOT_FOUND', 'nf');
  assert.match(JSON.parse(res.body.toString()).error.message, /never-seen/);
  assert.deepEqual(await history(echo), before);
});

test('replay – an id that was evicted from history is a 404', async (t) => {
  const echo = await startEcho({ ECHO_HISTORY_SIZE: '2' });
  t.after(() => echo.close());
  await send(echo.url, '/1', { headers: { 'X-Request-ID': 'ev-1' } });
  await send(echo.url, '/2', { headers: { 'X-Request-ID': 'ev-2' } });
  await send(echo.url, '/3', { headers: { 'X-Request-ID': 'ev-3' } });
  assertError(await postReplay(echo, { id: 'ev-1' }), 404, 'ECHO_ERR_REPLAY_NOT_FOUND');
  assert.equal(
    (await postReplay(echo, { id: 'ev-2', modify_headers: { 'X-Echo-History-Enabled': 'false' } })).status,
    200,
  );
});

test('replay – a target that is not an absolute http(s) URL is a 400 ECHO_ERR_INVALID_TARGET', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await send(echo.url, '/x', { headers: { 'X-Request-ID': 'x-1' } });
  const before = await history(echo);
  for (const target of ['not a url', 'ftp://127.0.0.1/', '/relative/path', 'file:///etc/passwd', '']) {
    const res = await postReplay(echo, { id: 'x-1', target });
    assertError(res, 400, 'ECHO_ERR_INVALID_TARGET');
  }
  assert.equal((await send(echo.url, '/health')).status, 200);
  assert.deepEqual(await history(echo), before);
});

test('replay – an unreachable target is a 502 ECHO_ERR_UPSTREAM_UNREACHABLE', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await send(echo.url, '/x', { headers: { 'X-Request-ID': 'x-1' } });
  const before = await history(echo);
  const port = await closedPort();
  const res = await postReplay(echo, { id: 'x-1', target: `http://127.0.0.1:${port}` });
  assertError(res, 502, 'ECHO_ERR_UPSTREAM_UNREACHABLE');
  assert.equal((await send(echo.url, '/health')).status, 200);
  assert.deepEqual(await history(echo), before);
});

test('replay – a target slower than ECHO_REPLAY_TIMEOUT is a 504 ECHO_ERR_UPSTREAM_TIMEOUT, on time', async (t) => {
  const a = await startEcho({ ECHO_REPLAY_TIMEOUT: '300ms' });
  t.after(() => a.close());
  const b = await startEcho();
  t.after(() => b.close());
  await send(a.url, '/slow', { headers: { 'X-Request-ID': 'slow-1' } });
  const before = await history(a);
  const started = Date.now();
  const res = await postReplay(a, { id: 'slow-1', target: b.url, modify_headers: { 'X-Echo-Delay': '2s' } });
  const elapsed = Date.now() - started;
  assertError(res, 504, 'ECHO_ERR_UPSTREAM_TIMEOUT');
  // Answered at its own timeout, not after the target's 2 s: the bound says which, with room for a
  // loaded machine.
  assert.ok(elapsed >= 250 && elapsed < 1900, `answered after ${elapsed} ms, expected about 300 ms`);
  // The target did get the request (it was just too slow).
  assert.deepEqual(
    (await history(b)).map((e) => e.path),
    ['/slow'],
  );
  assert.equal((await send(a.url, '/health')).status, 200);
  assert.deepEqual(await history(a), before);
});

test('replay – a body that is not JSON is a 415 ECHO_ERR_UNSUPPORTED_MEDIA_TYPE', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await send(echo.url, '/x', { headers: { 'X-Request-ID': 'x-1' } });
  const before = await history(echo);
  for (const type of ['text/plain', 'application/yaml', 'application/x-www-form-urlencoded']) {
    const res = await send(echo.url, '/replay', {
      method: 'POST',
      headers: { 'Content-Type': type },
      body: type === 'application/yaml' ? 'id: x-1\n' : '{"id":"x-1"}',
    });
    assertError(res, 415, 'ECHO_ERR_UNSUPPORTED_MEDIA_TYPE');
  }
  const untyped = await send(echo.url, '/replay', { method: 'POST', body: '{"id":"x-1"}' });
  assertError(untyped, 415, 'ECHO_ERR_UNSUPPORTED_MEDIA_TYPE');
  assert.equal((await send(echo.url, '/health')).status, 200);
  assert.deepEqual(await history(echo), before);
});

test('replay – JSON with a charset parameter is accepted', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await send(echo.url, '/x', { headers: { 'X-Request-ID': 'x-1' } });
  const res = await send(echo.url, '/replay', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json; charset=utf-8' },
    body: '{"id":"x-1"}',
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers['x-echo-replay-of'], 'x-1');
});
