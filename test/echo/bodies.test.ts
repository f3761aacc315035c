import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { request } from 'undici';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

async function send(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<Answer> {
  const res = await request(url, {
    method: (options.method ?? 'GET') as 'GET',
    headers: options.headers ?? {},
    ...(options.body === undefined ? {} : { body: options.body }),
  });
  const body = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, headers: res.headers, body };
}

/** Sends raw HTTP/1.1 (so header case and order are exactly ours) and returns head and body. */
function raw(port: number, text: string): Promise<{ head: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const all = Buffer.concat(chunks).toString('latin1');
      const at = all.indexOf('\r\n\r\n');
      resolve({ head: all.slice(0, at), body: all.slice(at + 4) });
    });
  });
}

const DECODE: Record<string, (b: Buffer) => Buffer> = {
  gzip: gunzipSync,
  br: brotliDecompressSync,
  deflate: inflateSync,
};

let echo: RunningEcho;

before(async () => {
  echo = await startEcho();
});

after(async () => {
  await echo.close();
});

// --- GET summary ---------------------------------------------------------------------------------

test('GET summary – request line with protocol, every header as received, client IP and timestamp', async () => {
  const before = Date.now();
  const r = await raw(
    echo.port,
    'GET /summary/path?a=1&b=two HTTP/1.1\r\nHost: echo.test\r\nX-Custom-Header: Value With Spaces\r\n' +
      'accept: */*\r\nX-Dup: one\r\nX-Dup: two\r\nConnection: close\r\n\r\n',
  );
  const afterMs = Date.now();
  assert.match(r.head, /^HTTP\/1\.1 200 OK\r\n/);
  assert.match(r.head, /\r\ncontent-type: text\/plain; charset=utf-8\r\n/i);
  const lines = r.body.split('\n');
  assert.deepEqual(lines.slice(0, 7), [
    'GET /summary/path?a=1&b=two HTTP/1.1',
    'Host: echo.test',
    'X-Custom-Header: Value With Spaces',
    'accept: */*',
    'X-Dup: one',
    'X-Dup: two',
    'Connection: close',
  ]);
  assert.equal(lines[7], '');
  assert.equal(lines[8], 'Client IP: 127.0.0.1');
  const stamp = /^Timestamp: (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)$/.exec(lines[9] ?? '');
  assert.ok(stamp, `timestamp line: ${lines[9]}`);
  const at = Date.parse(stamp[1] ?? '');
  assert.ok(at >= before - 1000 && at <= afterMs + 1000, `timestamp ${stamp[1]} is now`);
});

test('GET summary – over HTTP/1.0 the request line says HTTP/1.0', async () => {
  const r = await raw(echo.port, 'GET /old HTTP/1.0\r\nHost: x\r\n\r\n');
  assert.match(r.body, /^GET \/old HTTP\/1\.0\nHost: x\n/);
});

test('GET summary – HEAD answers the summary headers without a body', async () => {
  const r = await raw(echo.port, 'HEAD /head HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.match(r.head, /^HTTP\/1\.1 200 OK\r\n/);
  assert.match(r.head, /content-type: text\/plain; charset=utf-8/i);
  assert.equal(r.body, '');
});

// --- Echoed bodies -------------------------------------------------------------------------------

for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
  test(`${method} echo – the body comes back as sent, with the request Content-Type`, async () => {
    const payload = JSON.stringify({ method, n: 42, text: 'héllo wörld' });
    const r = await send(`${echo.url}/items/1`, {
      method,
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: payload,
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(r.body.toString('utf8'), payload);
  });

  test(`${method} echo – without a Content-Type the echo is text/plain`, async () => {
    const r = await raw(
      echo.port,
      `${method} /plain HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\nConnection: close\r\n\r\nhello there`,
    );
    assert.match(r.head, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(r.head, /\r\ncontent-type: text\/plain\r\n/i);
    assert.equal(r.body, 'hello there');
  });
}

test('POST echo – an unusual media type is mirrored exactly', async () => {
  const r = await send(`${echo.url}/xml`, {
    method: 'POST',
    headers: { 'content-type': 'application/vnd.acme+xml; version=2' },
    body: '<a/>',
  });
  assert.equal(r.headers['content-type'], 'application/vnd.acme+xml; version=2');
  assert.equal(r.body.toString(), '<a/>');
});

test('POST echo – an empty body is echoed as empty', async () => {
  const r = await send(`${echo.url}/empty`, {
    method: 'POST',
    headers: { 'content-type': 'text/csv' },
    body: '',
  });
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'text/csv');
  assert.equal(r.body.length, 0);
});

test('GET with a body – the body is echoed, not summarised', async () => {
  const r = await raw(
    echo.port,
    'GET /with-body HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 9\r\n' +
      'Connection: close\r\n\r\n{"q":"x"}',
  );
  assert.match(r.head, /^HTTP\/1\.1 200 OK\r\n/);
  assert.match(r.head, /\r\ncontent-type: application\/json\r\n/i);
  assert.equal(r.body, '{"q":"x"}');
});

test('POST echo – binary bodies round-trip byte-exact', async () => {
  const every = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const noise = randomBytes(200_000);
  for (const payload of [every, noise]) {
    const r = await send(`${echo.url}/bin`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: payload,
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/octet-stream');
    assert.equal(r.body.length, payload.length);
    assert.ok(r.body.equals(payload), 'bytes differ');
  }
});

test('POST echo – a chunked body without a length is echoed whole', async () => {
  const r = await raw(
    echo.port,
    'POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n' +
      'Connection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n',
  );
  assert.match(r.head, /^HTTP\/1\.1 200 OK\r\n/);
  assert.equal(r.body, 'hello world');
});

// --- X-Echo-Response-Size -------------------------------------------------------------------------

test('X-Echo-Response-Size – exactly N bytes, application/octet-stream, with Content-Length', async () => {
  const r = await send(`${echo.url}/sized`, { headers: { 'X-Echo-Response-Size': '123457' } });
  assert.equal(r.status, 200);
  assert.equal(r.body.length, 123457);
  assert.equal(r.headers['content-length'], '123457');
  assert.equal(r.headers['content-type'], 'application/octet-stream');
});

test('X-Echo-Response-Size – the bytes are random: two answers differ', async () => {
  const a = await send(`${echo.url}/sized`, { headers: { 'X-Echo-Response-Size': '4096' } });
  const b = await send(`${echo.url}/sized`, { headers: { 'X-Echo-Response-Size': '4096' } });
  assert.equal(a.body.length, 4096);
  assert.equal(b.body.length, 4096);
  assert.ok(!a.body.equals(b.body), 'two random bodies are equal');
  assert.ok(new Set(a.body).size > 200, 'the body is not a constant fill');
});

test('X-Echo-Response-Size – 0 answers an empty body with Content-Length 0', async () => {
  const r = await send(`${echo.url}/zero`, { headers: { 'X-Echo-Response-Size': '0' } });
  assert.equal(r.status, 200);
  assert.equal(r.body.length, 0);
  assert.equal(r.headers['content-length'], '0');
});

test('X-Echo-Response-Size – replaces a POST body and mirrors the request Content-Type', async () => {
  const r = await send(`${echo.url}/sized`, {
    method: 'POST',
    headers: { 'X-Echo-Response-Size': '10', 'content-type': 'application/json' },
    body: '{"ignored":true}',
  });
  assert.equal(r.body.length, 10);
  assert.equal(r.headers['content-type'], 'application/json');
});

test('X-Echo-Response-Size – X-Echo-Content-Type overrides the content type', async () => {
  const r = await send(`${echo.url}/sized`, {
    headers: { 'X-Echo-Response-Size': '10', 'X-Echo-Content-Type': 'image/png' },
  });
  assert.equal(r.body.length, 10);
  assert.equal(r.headers['content-type'], 'image/png');
});

test('X-Echo-Response-Size – above ECHO_MAX_RESPONSE_SIZE is a 400; at it is served', async () => {
  const server = await startEcho({ ECHO_MAX_RESPONSE_SIZE: '1000' });
  try {
    const over = await send(`${server.url}/big`, { headers: { 'X-Echo-Response-Size': '1001' } });
    assert.equal(over.status, 400);
    const error = JSON.parse(over.body.toString()).error;
    assert.equal(error.code, 'ECHO_ERR_INVALID_HEADER');
    assert.equal(error.details[0].field, 'x-echo-response-size');
    assert.match(error.details[0].message, /ECHO_MAX_RESPONSE_SIZE \(1000 bytes\)/);
    const at = await send(`${server.url}/big`, { headers: { 'X-Echo-Response-Size': '1000' } });
    assert.equal(at.status, 200);
    assert.equal(at.body.length, 1000);
  } finally {
    await server.close();
  }
});

test('X-Echo-Response-Size – a negative, fractional or non-numeric size is a 400', async () => {
  for (const value of ['-1', '1.5', '1e3', 'big', '']) {
    const r = await send(`${echo.url}/big`, { headers: { 'X-Echo-Response-Size': value } });
    assert.equal(r.status, 400, `X-Echo-Response-Size: ${JSON.stringify(value)}`);
  }
});

// --- X-Echo-Compress ------------------------------------------------------------------------------

for (const encoding of ['gzip', 'br', 'deflate']) {
  test(`X-Echo-Compress – ${encoding}: Content-Encoding, Vary and a body that decodes to the echo`, async () => {
    const payload = JSON.stringify({ encoding, list: Array.from({ length: 500 }, (_, i) => `item-${i}`) });
    const r = await send(`${echo.url}/zip`, {
      method: 'POST',
      headers: { 'X-Echo-Compress': encoding, 'content-type': 'application/json' },
      body: payload,
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-encoding'], encoding);
    assert.match(String(r.headers['vary']), /x-echo-compress/i);
    assert.equal(r.headers['content-type'], 'application/json');
    assert.ok(r.body.length < payload.length, 'the body is compressed');
    const decode = DECODE[encoding];
    assert.ok(decode);
    assert.equal(decode(r.body).toString('utf8'), payload);
  });

  test(`X-Echo-Compress – ${encoding} with X-Echo-Response-Size decodes to exactly N bytes`, async () => {
    const r = await send(`${echo.url}/zip`, {
      headers: { 'X-Echo-Compress': encoding, 'X-Echo-Response-Size': '300000' },
    });
    assert.equal(r.headers['content-encoding'], encoding);
    assert.equal(r.headers['content-length'], undefined, 'no Content-Length of the uncompressed size');
    assert.equal(DECODE[encoding]?.(r.body).length, 300000);
  });
}

test('X-Echo-Compress – gzip of a 5 MiB response decodes to exactly 5 MiB', async () => {
  const size = 5 * 1024 * 1024;
  const r = await send(`${echo.url}/huge`, {
    headers: { 'X-Echo-Compress': 'gzip', 'X-Echo-Response-Size': String(size) },
  });
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-encoding'], 'gzip');
  assert.equal(r.headers['content-type'], 'application/octet-stream');
  assert.equal(gunzipSync(r.body).length, size);
});

test('X-Echo-Compress – the GET summary compresses too', async () => {
  const r = await send(`${echo.url}/summary-zip`, { headers: { 'X-Echo-Compress': 'br' } });
  assert.equal(r.headers['content-encoding'], 'br');
  assert.match(brotliDecompressSync(r.body).toString(), /^GET \/summary-zip HTTP\/1\.1\n/);
});

test('X-Echo-Compress – an injected fault body is compressed too', async () => {
  const r = await send(`${echo.url}/fault-zip`, {
    headers: { 'X-Echo-Compress': 'gzip', 'X-Echo-Error': '503' },
  });
  assert.equal(r.status, 503);
  assert.equal(r.headers['content-encoding'], 'gzip');
  assert.equal(gunzipSync(r.body).toString(), '503 Service Unavailable (injected by echo-chaos: error)\n');
});

test('X-Echo-Compress – Vary keeps Origin from CORS alongside X-Echo-Compress', async () => {
  const r = await send(`${echo.url}/cors-zip`, {
    headers: { 'X-Echo-Compress': 'gzip', Origin: 'http://app.example' },
  });
  assert.equal(r.headers['access-control-allow-origin'], 'http://app.example');
  const vary = String(r.headers['vary'])
    .split(',')
    .map((v) => v.trim().toLowerCase());
  assert.ok(vary.includes('origin'), `Vary: ${r.headers['vary']}`);
  assert.ok(vary.includes('x-echo-compress'), `Vary: ${r.headers['vary']}`);
});

test('X-Echo-Compress – an unknown encoding is a 400', async () => {
  for (const value of ['zip', 'identity', 'gzip, br']) {
    const r = await send(`${echo.url}/zip`, { headers: { 'X-Echo-Compress': value } });
    assert.equal(r.status, 400, `X-Echo-Compress: ${value}`);
    assert.equal(r.headers['content-encoding'], undefined);
    assert.equal(JSON.parse(r.body.toString()).error.details[0].field, 'x-echo-compress');
  }
});

// --- X-Echo-Content-Type --------------------------------------------------------------------------

test('X-Echo-Content-Type – overrides the mirrored type of an echoed body', async () => {
  const r = await send(`${echo.url}/ct`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', 'X-Echo-Content-Type': 'application/json; charset=utf-8' },
    body: '{"a":1}',
  });
  assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
  assert.equal(r.body.toString(), '{"a":1}');
});

test('X-Echo-Content-Type – overrides the text/plain of the GET summary and of a fault', async () => {
  const summary = await send(`${echo.url}/ct`, { headers: { 'X-Echo-Content-Type': 'text/html' } });
  assert.equal(summary.headers['content-type'], 'text/html');
  const fault = await send(`${echo.url}/ct`, {
    headers: { 'X-Echo-Content-Type': 'application/problem+json', 'X-Echo-Error': '500' },
  });
  assert.equal(fault.status, 500);
  assert.equal(fault.headers['content-type'], 'application/problem+json');
});

test('X-Echo-Content-Type – something that is not a media type is a 400', async () => {
  for (const value of ['json', 'text/', '/plain', 'a b/c']) {
    const r = await send(`${echo.url}/ct`, { headers: { 'X-Echo-Content-Type': value } });
    assert.equal(r.status, 400, `X-Echo-Content-Type: ${value}`);
    assert.equal(JSON.parse(r.body.toString()).error.details[0].field, 'x-echo-content-type');
  }
});
