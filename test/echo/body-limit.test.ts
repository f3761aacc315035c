import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { test } from 'node:test';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/**
 * Sends a request with node:http, so that the framing (Content-Length or chunked) and the method
 * (a GET with a body) are exactly what the test says, which fetch does not allow.
 */
function send(
  server: RunningEcho,
  options: { method: string; path: string; headers?: Record<string, string>; chunks: readonly string[] },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${server.url}${options.path}`,
      { method: options.method, headers: { 'x-request-id': 'body-limit', ...options.headers } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    // The server may answer 413 and close before the whole body is written.
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') reject(err);
    });
    for (const chunk of options.chunks) req.write(chunk);
    req.end();
  });
}

function assertTooLarge(answer: Answer): void {
  assert.equal(answer.status, 413, answer.body);
  assert.match(String(answer.headers['content-type']), /^application\/json/);
  assert.equal(answer.headers['x-request-id'], 'body-limit');
  assert.deepEqual(JSON.parse(answer.body), {
    error: {
      code: 'ECHO_ERR_BODY_TOO_LARGE',
      message: 'request body exceeds MAX_BODY_SIZE (1024 bytes)',
      request_id: 'body-limit',
    },
  });
}

async function historyPaths(server: RunningEcho): Promise<string[]> {
  const entries = (await (await fetch(`${server.url}/history`)).json()) as Array<{ path: string }>;
  return entries.map((e) => e.path);
}

const KIB2 = 'x'.repeat(2048);

test('body limit – MAX_BODY_SIZE=1024: a 2 KiB POST to an echo path is a 413 JSON error', async (t) => {
  const server = await startEcho({ MAX_BODY_SIZE: '1024' });
  t.after(() => server.close());
  assertTooLarge(
    await send(server, {
      method: 'POST',
      path: '/upload',
      headers: { 'content-type': 'text/plain', 'content-length': '2048' },
      chunks: [KIB2],
    }),
  );
});

test('body limit – a 2 KiB JSON POST is refused the same way (every content type)', async (t) => {
  const server = await startEcho({ MAX_BODY_SIZE: '1024' });
  t.after(() => server.close());
  const json = JSON.stringify({ data: KIB2 });
  assertTooLarge(
    await send(server, {
      method: 'PUT',
      path: '/things/1',
      headers: { 'content-type': 'application/json', 'content-length': String(json.length) },
      chunks: [json],
    }),
  );
});

test('body limit – a GET with a 2 KiB body is a 413 too', async (t) => {
  const server = await startEcho({ MAX_BODY_SIZE: '1024' });
  t.after(() => server.close());
  assertTooLarge(
    await send(server, {
      method: 'GET',
      path: '/search',
      headers: { 'content-length': '2048' },
      chunks: [KIB2],
    }),
  );
});

test('body limit – a chunked body without Content-Length is cut off at the limit with a 413', async (t) => {
  const server = await startEcho({ MAX_BODY_SIZE: '1024' });
  t.after(() => server.close());
  assertTooLarge(
    await send(server, {
      method: 'POST',
      path: '/stream',
      headers: { 'transfer-encoding': 'chunked' },
      chunks: [KIB2.slice(0, 700), KIB2.slice(0, 700), KIB2.slice(0, 648)],
    }),
  );
});

test('body limit – a chunked GET body over the limit is a 413', async (t) => {
  const server = await startEcho({ MAX_BODY_SIZE: '1024' });
  t.after(() => server.close());
  assertTooLarge(
    await send(server, {
      method: 'GET',
      path: '/chunked-get',
      headers: { 'transfer-encoding': 'chunked' },
      chunks: [KIB2.slice(0, 1000), KIB2.slice(0, 1000)],
    }),
  );
});

test('body limit – exactly MAX_BODY_SIZE bytes pass and are echoed whole', async (t) => {
  const server = await startEcho({ MAX_BODY_SIZE: '1024' });
  t.after(() => server.close());
  const body = 'y'.repeat(1024);
  for (const [method, headers] of [
    ['POST', { 'content-length': '1024', 'content-type': 'text/plain' }],
    ['POST', { 'transfer-encoding': 'chunked' }],
    ['GET', { 'content-length': '1024' }],
  ] as const) {
    const answer = await send(server, {
      method,
      path: '/exact',
      headers,
      chunks: [body.slice(0, 512), body.slice(512)],
    });
    assert.equal(answer.status, 200, `${method} ${JSON.stringify(headers)}: ${answer.body}`);
    assert.equal(answer.body, body);
  }
});

test('body limit – after 413s the server keeps serving and history holds only accepted requests', async (t) => {
  const server = await startEcho({ MAX_BODY_SIZE: '1024' });
  t.after(() => server.close());
  await send(server, { method: 'POST', path: '/before', headers: {}, chunks: ['small'] });
  const before = await historyPaths(server);
  assert.deepEqual(before, ['/before']);

  assertTooLarge(
    await send(server, {
      method: 'POST',
      path: '/too-big',
      headers: { 'content-length': '2048' },
      chunks: [KIB2],
    }),
  );
  assertTooLarge(
    await send(server, {
      method: 'GET',
      path: '/too-big-get',
      headers: { 'content-length': '2048' },
      chunks: [KIB2],
    }),
  );
  assertTooLarge(
    await send(server, {
      method: 'PATCH',
      path: '/too-big-chunked',
      headers: { 'transfer-encoding': 'chunked' },
      chunks: [KIB2, KIB2],
    }),
  );

  assert.deepEqual(await historyPaths(server), before);
  const after = await fetch(`${server.url}/after`, { method: 'POST', body: 'still here' });
  assert.equal(after.status, 200);
  assert.equal(await after.text(), 'still here');
  assert.deepEqual(await historyPaths(server), ['/before', '/after']);
});

test('body limit – the default MAX_BODY_SIZE (10 MiB) takes a 2 MiB body', async (t) => {
  const server = await startEcho({});
  t.after(() => server.close());
  const body = 'z'.repeat(2 * 1024 * 1024);
  const response = await fetch(`${server.url}/large`, { method: 'POST', body });
  assert.equal(response.status, 200);
  assert.equal((await response.text()).length, body.length);
});

test('body limit – MAX_BODY_SIZE=1 refuses a 2-byte body but still answers a GET without one', async (t) => {
  const server = await startEcho({ MAX_BODY_SIZE: '1' });
  t.after(() => server.close());
  const refused = await send(server, {
    method: 'POST',
    path: '/two-bytes',
    headers: { 'content-length': '2' },
    chunks: ['ab'],
  });
  assert.equal(refused.status, 413);
  assert.equal(JSON.parse(refused.body).error.code, 'ECHO_ERR_BODY_TOO_LARGE');
  assert.equal((await fetch(`${server.url}/plain`)).status, 200);
});
