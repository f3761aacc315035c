import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { test } from 'node:test';
import { logBody } from '../../src/echo/logging.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { until } from '../helpers/runtime.ts';

type LogRecord = Record<string, unknown>;

/**
 * The log records of one request, by its id. The completion hooks run after the client has its
 * answer: fastify runs them (synchronously, one after another) on the response's 'finish', and the
 * response's 'close', which comes after, counts it out of the requests in flight. So once none is in
 * flight, every line of the request has been written.
 */
async function recordsOf(server: RunningEcho, requestId: string): Promise<LogRecord[]> {
  await until('no request in flight: its lines are written', () => server.app.obs.drainState.inFlight === 0);
  return server.logs.filter((r) => r['reqId'] === requestId);
}

function messages(records: readonly LogRecord[]): string[] {
  return records.map((r) => String(r['msg']));
}

async function call(server: RunningEcho, path: string, init: RequestInit = {}): Promise<string> {
  const id = `log-${Math.random().toString(36).slice(2)}`;
  const headers = new Headers(init.headers);
  headers.set('X-Request-ID', id);
  const response = await fetch(server.url + path, { ...init, headers });
  await response.arrayBuffer();
  return id;
}

const DURATION = String.raw`\d+(\.\d+)?ms`;

test('logging – by default one request gives `remote method path` and `remote method path - status duration`', async (t) => {
  const server = await startEcho({}, { captureLogs: true });
  t.after(() => server.close());
  const id = await call(server, '/hello?x=1');
  const records = await recordsOf(server, id);
  assert.equal(records.length, 2, JSON.stringify(records));
  assert.equal(records[0]!['msg'], '127.0.0.1 GET /hello?x=1');
  assert.match(
    String(records[1]!['msg']),
    new RegExp(String.raw`^127\.0\.0\.1 GET /hello\?x=1 - 200 ${DURATION}$`),
  );
  // Nothing else is in those lines unless asked for.
  for (const r of records) {
    assert.equal(r['headers'], undefined);
    assert.equal(r['body'], undefined);
  }
});

test('logging – the completion line carries the status the client saw', async (t) => {
  const server = await startEcho({}, { captureLogs: true });
  t.after(() => server.close());
  const id = await call(server, '/teapot', { method: 'DELETE', headers: { 'X-Echo-Status': '418' } });
  assert.match(
    messages(await recordsOf(server, id))[1] ?? '',
    new RegExp(String.raw`^127\.0\.0\.1 DELETE /teapot - 418 ${DURATION}$`),
  );
});

test('logging – LOG_REQUESTS=false logs nothing for a request', async (t) => {
  const server = await startEcho({ LOG_REQUESTS: 'false' }, { captureLogs: true });
  t.after(() => server.close());
  const id = await call(server, '/quiet', { method: 'POST', body: 'shh' });
  assert.deepEqual(await recordsOf(server, id), []);
});

test('logging – LOG_HEADERS=true adds the request headers to the request line', async (t) => {
  const server = await startEcho({ LOG_HEADERS: 'true' }, { captureLogs: true });
  t.after(() => server.close());
  const id = await call(server, '/with-headers', { headers: { 'X-Team': 'platform' } });
  const records = await recordsOf(server, id);
  assert.equal(records[0]!['msg'], '127.0.0.1 GET /with-headers');
  const headers = records[0]!['headers'] as Record<string, string>;
  assert.equal(headers['x-team'], 'platform');
  assert.equal(headers['x-request-id'], id);
});

test('logging – LOG_BODY=true logs the request body', async (t) => {
  const server = await startEcho({ LOG_REQUESTS: 'false', LOG_BODY: 'true' }, { captureLogs: true });
  t.after(() => server.close());
  const id = await call(server, '/orders', { method: 'POST', body: '{"id":7}' });
  const records = await recordsOf(server, id);
  assert.deepEqual(
    records.map((r) => [r['msg'], r['body']]),
    [['request body', { text: '{"id":7}', size: 8, truncated: false }]],
  );
});

test('logging – LOG_BODY=true logs the body of a GET that has one, and the echo still returns it', async (t) => {
  const server = await startEcho({ LOG_REQUESTS: 'false', LOG_BODY: 'true' }, { captureLogs: true });
  t.after(() => server.close());
  const id = 'log-get-body';
  const answer = await new Promise<string>((resolve, reject) => {
    const req = httpRequest(
      `${server.url}/lookup`,
      { method: 'GET', headers: { 'X-Request-ID': id, 'Content-Type': 'text/plain', 'Content-Length': '7' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve(text));
      },
    );
    req.on('error', reject);
    req.end('find me');
  });
  assert.equal(answer, 'find me');
  const records = await recordsOf(server, id);
  assert.deepEqual(
    records.map((r) => [r['msg'], r['body']]),
    [['request body', { text: 'find me', size: 7, truncated: false }]],
  );
});

test('logging – LOG_BODY cuts the body at MAX_LOG_BODY_SIZE and says so', async (t) => {
  const server = await startEcho(
    { LOG_REQUESTS: 'false', LOG_BODY: 'true', MAX_LOG_BODY_SIZE: '5' },
    { captureLogs: true },
  );
  t.after(() => server.close());
  const id = await call(server, '/long', { method: 'PUT', body: 'hello world' });
  const [record] = await recordsOf(server, id);
  assert.deepEqual(record?.['body'], { text: 'hello', size: 11, truncated: true });
});

test('logging – LOG_BODY never logs a body sent to /sse', async (t) => {
  const server = await startEcho({ LOG_BODY: 'true', LOG_RESPONSE_BODY: 'true' }, { captureLogs: true });
  t.after(() => server.close());
  const id = await call(server, '/sse', { method: 'POST', body: 'secret-stream' });
  const records = await recordsOf(server, id);
  assert.equal(records.length, 2, JSON.stringify(records));
  assert.doesNotMatch(JSON.stringify(records), /secret-stream/);
});

test('logging – LOG_RESPONSE=true logs a completion summary: status, duration, length', async (t) => {
  const server = await startEcho({ LOG_REQUESTS: 'false', LOG_RESPONSE: 'true' }, { captureLogs: true });
  t.after(() => server.close());
  const id = await call(server, '/summary', {
    method: 'POST',
    body: 'abc',
    headers: { 'X-Echo-Status': '201' },
  });
  const records = await recordsOf(server, id);
  assert.equal(records.length, 1, JSON.stringify(records));
  const r = records[0]!;
  assert.equal(r['msg'], 'response');
  assert.equal(r['status'], 201);
  assert.equal(typeof r['duration_ms'], 'number');
  assert.equal(r['content_length'], 3);
  assert.equal(r['headers'], undefined);
  assert.equal(r['body'], undefined);
});

test('logging – LOG_RESPONSE_HEADERS=true logs the response headers', async (t) => {
  const server = await startEcho(
    { LOG_REQUESTS: 'false', LOG_RESPONSE_HEADERS: 'true', ECHO_HEADER_X_Service: 'echo' },
    { captureLogs: true },
  );
  t.after(() => server.close());
  const id = await call(server, '/h', { headers: { 'X-Echo-Set-Header-Cache-Control': 'no-store' } });
  const records = await recordsOf(server, id);
  assert.equal(records.length, 1, JSON.stringify(records));
  const headers = records[0]!['headers'] as Record<string, unknown>;
  assert.equal(records[0]!['msg'], 'response');
  assert.equal(headers['x-request-id'], id);
  assert.equal(headers['x-service'], 'echo');
  assert.equal(headers['cache-control'], 'no-store');
  assert.match(String(headers['content-type']), /^text\/plain/);
});

test('logging – LOG_RESPONSE_BODY=true logs the response body, cut at MAX_LOG_BODY_SIZE', async (t) => {
  const server = await startEcho(
    { LOG_REQUESTS: 'false', LOG_RESPONSE_BODY: 'true', MAX_LOG_BODY_SIZE: '4' },
    { captureLogs: true },
  );
  t.after(() => server.close());
  const short = await call(server, '/r', { method: 'POST', body: 'ok' });
  const long = await call(server, '/r', { method: 'POST', body: 'abcdefgh' });
  assert.deepEqual(
    (await recordsOf(server, short)).map((r) => [r['msg'], r['body']]),
    [['response', { text: 'ok', size: 2, truncated: false }]],
  );
  assert.deepEqual(
    (await recordsOf(server, long)).map((r) => r['body']),
    [{ text: 'abcd', size: 8, truncated: true }],
  );
});

test('logging – LOG_RESPONSE_BODY never logs the body of /sse', async (t) => {
  const server = await startEcho({ LOG_RESPONSE_BODY: 'true' }, { captureLogs: true });
  let closing: Promise<void> | undefined;
  t.after(() => closing ?? server.close());
  // Letters in the id: a run of 13+ digits can pass the Luhn check and be masked as a card number.
  const id = `sse-${Math.random().toString(36).slice(2, 10)}`;
  const response = await fetch(`${server.url}/sse`, { headers: { 'X-Request-ID': id } });
  assert.equal(response.status, 200);
  const reader = response.body!.getReader();
  await reader.read();
  // The server ends the stream (the drain of its close says goodbye): the response finishes, so the
  // hooks that log a response body run for it (a client that leaves would leave no line to check).
  closing = server.close();
  const decoder = new TextDecoder();
  let text = '';
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    text += decoder.decode(chunk.value, { stream: true });
  }
  await closing;
  assert.match(text, /event: close/, 'the server ended the stream');
  // The log reaches the capture through the logger's destination, which may write a moment later.
  const completion = new RegExp(String.raw`^127\.0\.0\.1 GET /sse - 200 ${DURATION}$`);
  await until('the completion line of /sse is logged', () =>
    server.logs.some((r) => r['reqId'] === id && completion.test(String(r['msg']))),
  );
  const records = server.logs.filter((r) => r['reqId'] === id);
  for (const r of records) assert.equal(r['body'], undefined, JSON.stringify(r));
});

test('logging – a streamed response body is logged as [stream] and still arrives complete', async (t) => {
  const server = await startEcho({ LOG_REQUESTS: 'false', LOG_RESPONSE_BODY: 'true' }, { captureLogs: true });
  t.after(() => server.close());
  const id = 'stream-1';
  const response = await fetch(`${server.url}/big`, {
    headers: { 'X-Request-ID': id, 'X-Echo-Response-Size': '300000' },
  });
  assert.equal(response.status, 200);
  assert.equal((await response.arrayBuffer()).byteLength, 300_000);
  const records = await recordsOf(server, id);
  assert.deepEqual(
    records.map((r) => r['body']),
    [{ text: '[stream]', size: null, truncated: false }],
  );
});

test('logging – a compressed response is logged as [stream] and decompresses to the whole body', async (t) => {
  const server = await startEcho({ LOG_REQUESTS: 'false', LOG_RESPONSE_BODY: 'true' }, { captureLogs: true });
  t.after(() => server.close());
  const id = 'stream-gzip';
  const body = 'compress me '.repeat(1000);
  const response = await fetch(`${server.url}/zip`, {
    method: 'POST',
    body,
    headers: { 'X-Request-ID': id, 'X-Echo-Compress': 'gzip' },
  });
  assert.equal(response.headers.get('content-encoding'), 'gzip');
  assert.equal(await response.text(), body);
  const records = await recordsOf(server, id);
  assert.deepEqual(
    records.map((r) => (r['body'] as { text: string }).text),
    ['[stream]'],
  );
});

test('logging – LOG_TRANSACTION=true logs one consolidated record of request and response', async (t) => {
  const server = await startEcho({ LOG_REQUESTS: 'false', LOG_TRANSACTION: 'true' }, { captureLogs: true });
  t.after(() => server.close());
  const id = await call(server, '/tx?q=1', { method: 'POST', body: 'payload', headers: { 'X-Team': 'sre' } });
  const records = await recordsOf(server, id);
  assert.equal(records.length, 1, JSON.stringify(records));
  const r = records[0]!;
  assert.equal(r['msg'], 'transaction');
  const request = r['request'] as Record<string, unknown>;
  const response = r['response'] as Record<string, unknown>;
  assert.equal(request['method'], 'POST');
  assert.equal(request['url'], '/tx?q=1');
  assert.equal(request['remote'], '127.0.0.1');
  assert.equal((request['headers'] as Record<string, string>)['x-team'], 'sre');
  assert.equal(response['status'], 200);
  assert.equal((response['headers'] as Record<string, string>)['x-request-id'], id);
  assert.equal(typeof r['duration_ms'], 'number');
  // Bodies follow LOG_BODY and LOG_RESPONSE_BODY, both off here.
  assert.equal(request['body'], undefined);
  assert.equal(response['body'], undefined);
});

test('logging – LOG_TRANSACTION with LOG_BODY and LOG_RESPONSE_BODY carries both bodies, and no other record', async (t) => {
  const server = await startEcho(
    {
      LOG_REQUESTS: 'false',
      LOG_TRANSACTION: 'true',
      LOG_BODY: 'true',
      LOG_RESPONSE_BODY: 'true',
      LOG_RESPONSE: 'true',
      MAX_LOG_BODY_SIZE: '6',
    },
    { captureLogs: true },
  );
  t.after(() => server.close());
  const id = await call(server, '/tx', { method: 'POST', body: 'request-body' });
  const records = await recordsOf(server, id);
  assert.deepEqual(messages(records), ['transaction']);
  const r = records[0]!;
  assert.deepEqual((r['request'] as LogRecord)['body'], { text: 'reques', size: 12, truncated: true });
  assert.deepEqual((r['response'] as LogRecord)['body'], { text: 'reques', size: 12, truncated: true });
});

test('logging – LOG_TRANSACTION omits the bodies of /sse', async (t) => {
  const server = await startEcho(
    { LOG_REQUESTS: 'false', LOG_TRANSACTION: 'true', LOG_BODY: 'true', LOG_RESPONSE_BODY: 'true' },
    { captureLogs: true },
  );
  t.after(() => server.close());
  const id = await call(server, '/sse', { method: 'POST', body: 'hidden-body' });
  const records = await recordsOf(server, id);
  assert.deepEqual(messages(records), ['transaction']);
  assert.doesNotMatch(JSON.stringify(records), /hidden-body/);
});

test('logging – LOG_TRANSACTION logs a streamed response body as [stream]', async (t) => {
  const server = await startEcho(
    { LOG_REQUESTS: 'false', LOG_TRANSACTION: 'true', LOG_RESPONSE_BODY: 'true' },
    { captureLogs: true },
  );
  t.after(() => server.close());
  const id = await call(server, '/big', { headers: { 'X-Echo-Response-Size': '70000' } });
  const records = await recordsOf(server, id);
  assert.equal(records.length, 1, JSON.stringify(records));
  assert.deepEqual((records[0]!['response'] as LogRecord)['body'], {
    text: '[stream]',
    size: null,
    truncated: false,
  });
});

test('logging – a 413 whose connection is closed still names the client in the completion line', async (t) => {
  const server = await startEcho({ MAX_BODY_SIZE: '16' }, { captureLogs: true });
  t.after(() => server.close());
  const id = 'too-large-get';
  await new Promise<void>((resolve, reject) => {
    const req = httpRequest(
      `${server.url}/search`,
      { method: 'GET', headers: { 'x-request-id': id, 'content-length': '64' } },
      (res) => {
        res.resume();
        res.on('end', resolve);
      },
    );
    req.on('error', reject);
    req.end('x'.repeat(64));
  });
  const lines = messages(await recordsOf(server, id));
  assert.equal(lines[0], '127.0.0.1 GET /search');
  assert.match(lines[1] ?? '', new RegExp(String.raw`^127\.0\.0\.1 GET /search - 413 ${DURATION}$`));
});

test('logBody – text and buffers are cut at a byte count, never inside a character; streams are described, never read', () => {
  assert.deepEqual(logBody('héllo', 2), { text: 'h', size: 6, truncated: true }, 'é is not split in two');
  assert.deepEqual(logBody('héllo', 3), { text: 'hé', size: 6, truncated: true });
  assert.deepEqual(logBody(Buffer.from('€uro'), 2), { text: '', size: 6, truncated: true });
  assert.deepEqual(logBody(Buffer.from('abc'), 10), { text: 'abc', size: 3, truncated: false });
  assert.deepEqual(logBody(undefined, 10), { text: '', size: 0, truncated: false });
  assert.deepEqual(logBody('anything', 0), { text: '', size: 8, truncated: true });
  let read = false;
  const stream = {
    read() {
      read = true;
    },
  };
  assert.deepEqual(logBody(stream, 10), { text: '[stream]', size: null, truncated: false });
  assert.equal(read, false);
});

test('logging – secrets in headers and bodies never reach the log, with every LOG_* option on', async (t) => {
  const server = await startEcho(
    {
      LOG_REQUESTS: 'true',
      LOG_HEADERS: 'true',
      LOG_BODY: 'true',
      LOG_RESPONSE: 'true',
      LOG_RESPONSE_HEADERS: 'true',
      LOG_RESPONSE_BODY: 'true',
      MAX_LOG_BODY_SIZE: '65536',
    },
    { captureLogs: true },
  );
  t.after(() => server.close());
  const secrets = {
    bearer: 'eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu.sig-0123456789',
    password: 'hunter2-correct-horse',
    email: 'alice.secret@example.com',
    card: '4111 1111 1111 1111',
    ssn: '123-45-6789',
    cookie: 'sessionid-7f3a9c0e2b',
  };
  const body = JSON.stringify({
    user: { email: secrets.email, password: secrets.password },
    payment: { note: `card ${secrets.card}` },
    ssn: secrets.ssn,
  });
  const headers = {
    Authorization: `Bearer ${secrets.bearer}`,
    Cookie: `sid=${secrets.cookie}`,
    'Content-Type': 'application/json',
    'X-Echo-Set-Header-X-Contact': secrets.email,
  };
  const id = await call(server, '/signup', { method: 'POST', headers, body });
  const transactionServer = await startEcho(
    { LOG_TRANSACTION: 'true', LOG_BODY: 'true', LOG_RESPONSE_BODY: 'true', LOG_HEADERS: 'true' },
    { captureLogs: true },
  );
  t.after(() => transactionServer.close());
  const transactionId = await call(transactionServer, '/signup', { method: 'POST', headers, body });

  const records = [...(await recordsOf(server, id)), ...(await recordsOf(transactionServer, transactionId))];
  assert.ok(records.length >= 4, `${records.length} records`);
  const text = JSON.stringify(records);
  // The request was really logged (so the check below is not vacuous)...
  assert.match(text, /\/signup/);
  assert.match(text, /payment/);
  // ...and no secret survived in any message, header or body.
  for (const [kind, secret] of Object.entries(secrets)) {
    assert.ok(!text.includes(secret), `${kind} leaked into the log`);
  }
});
