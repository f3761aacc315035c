import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { startEcho } from '../helpers/echo-server.ts';

/**
 * Requests the HTTP parser refuses before any route sees them (a malformed head, a head too large,
 * a bad Content-Length) are answered in the documented JSON error shape with an `X-Request-ID`,
 * and the server keeps serving.
 */

/** Sends raw bytes and resolves with everything the server wrote before closing. */
function raw(port: number, bytes: Buffer | string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

test('client errors – the parser refusals are JSON with a request id, then the connection closes', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const cases: Array<[string, string, number, string]> = [
    [
      'a header without a colon',
      'GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n',
      400,
      'ECHO_ERR_BAD_REQUEST',
    ],
    [
      'a head above 16 KiB',
      `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      'ECHO_ERR_HEADERS_TOO_LARGE',
    ],
    [
      'a Content-Length that is not a number',
      'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
      400,
      'ECHO_ERR_BAD_REQUEST',
    ],
  ];
  for (const [what, request, status, code] of cases) {
    const answer = await raw(echo.port, request);
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    assert.match(head, new RegExp(`^HTTP/1\\.1 ${status} `), what);
    assert.match(head, /\r\ncontent-type: application\/json/i, what);
    const id = /\r\nx-request-id: ([0-9a-f-]{36})/i.exec(head)?.[1];
    assert.ok(id, `${what}: an X-Request-ID`);
    const error = (JSON.parse(body) as { error: { code: string; request_id: string; message: string } })
      .error;
    assert.equal(error.code, code, what);
    assert.equal(error.request_id, id, `${what}: the body names the same id`);
  }
  // A good WebSocket handshake and a good h2c upgrade still switch protocols.
  const ws = await rawHead(
    echo.port,
    'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: chat, superchat\r\n\r\n',
  );
  assert.match(ws, /^HTTP\/1\.1 101 /);
  const h2c = await rawHead(
    echo.port,
    'GET /x HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n',
  );
  assert.match(h2c, /^HTTP\/1\.1 101 /);
  assert.equal((await fetch(`${echo.url}/health`)).status, 200, 'the server keeps serving');
});

/** Sends raw bytes and resolves with the first response head, then closes the connection. */
function rawHead(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let seen = '';
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.toString('latin1');
      const end = seen.indexOf('\r\n\r\n');
      if (end !== -1) {
        socket.destroy();
        resolve(seen.slice(0, end));
      }
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(seen));
  });
}

test('client errors – a body that never finishes is cut at ECHO_REQUEST_TIMEOUT (408); a delayed answer is not', async (t) => {
  const echo = await startEcho({ ECHO_REQUEST_TIMEOUT: '1s', ECHO_HEADERS_TIMEOUT: '1s' });
  t.after(() => echo.close());
  // Promises 100 bytes, sends 5, then nothing: without the timeout this connection stays forever.
  const answer = await raw(echo.port, 'POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nhello');
  assert.match(answer, /^HTTP\/1\.1 408 /);
  const body = answer.slice(answer.indexOf('\r\n\r\n') + 4);
  assert.equal((JSON.parse(body) as { error: { code: string } }).error.code, 'ECHO_ERR_REQUEST_TIMEOUT');
  // A head that never finishes, too.
  assert.match(await raw(echo.port, 'GET /slow HTTP/1.1\r\nHost: x\r\n'), /^HTTP\/1\.1 408 /);
  // The timeout covers receiving the request, not the injected delay of the answer.
  const delayed = await fetch(`${echo.url}/held`, { headers: { 'X-Echo-Delay': '2500ms' } });
  assert.equal(delayed.status, 200);
});

test('client errors – no Host, a URL that does not decode and CONNECT get the JSON shape with a request id too', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const cases: Array<[string, string, RegExp]> = [
    ['an HTTP/1.1 request without Host', 'GET /x HTTP/1.1\r\nConnection: close\r\n\r\n', /Host/],
    ['a URL that does not decode', 'GET /%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', /%zz/],
    ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', /not a proxy/],
    [
      'two Host headers',
      'GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n',
      /one Host header, not 2/,
    ],
    [
      'two Host headers in HTTP/1.0',
      'GET /x HTTP/1.0\r\nhost: a\r\nHOST: b\r\n\r\n',
      /one Host header, not 2/,
    ],
    [
      'a WebSocket handshake without a key',
      'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n',
      /Sec-WebSocket-Key/,
    ],
    [
      'a WebSocket handshake of another version',
      'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 7\r\n\r\n',
      /Sec-WebSocket-Version must be 13/,
    ],
    [
      'a WebSocket handshake with a bad subprotocol list',
      'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: a, a\r\n\r\n',
      /Sec-WebSocket-Protocol/,
    ],
    [
      'an h2c upgrade with an HTTP2-Settings that is not base64url',
      'GET /x HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: !!!\r\n\r\n',
      /HTTP2-Settings/,
    ],
    [
      'an h2c upgrade with an HTTP2-Settings of a bad length',
      'GET /x HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAA\r\n\r\n',
      /HTTP2-Settings/,
    ],
  ];
  for (const [what, request, says] of cases) {
    const answer = await raw(echo.port, request);
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    assert.match(head, /^HTTP\/1\.1 400 /, what);
    assert.match(head, /\r\ncontent-type: application\/json/i, what);
    if (what.includes('WebSocket')) assert.match(head, /\r\nsec-websocket-version: 13\r\n/i, what);
    const id = /\r\nx-request-id: ([0-9a-f-]{36})/i.exec(head)?.[1];
    assert.ok(id, `${what}: an X-Request-ID`);
    const error = (JSON.parse(body) as { error: { code: string; request_id: string; message: string } })
      .error;
    assert.equal(error.code, 'ECHO_ERR_BAD_REQUEST', what);
    assert.equal(error.request_id, id, `${what}: the body names the same id`);
    assert.match(error.message, says, what);
  }
  // HTTP/1.0 needs no Host.
  const old = await raw(echo.port, 'GET /x HTTP/1.0\r\n\r\n');
  assert.match(old, /^HTTP\/1\.1 200 /);
  assert.equal((await fetch(`${echo.url}/health`)).status, 200, 'the server keeps serving');
});
