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
  assert.equal((await fetch(`${echo.url}/health`)).status, 200, 'the server keeps serving');
});
