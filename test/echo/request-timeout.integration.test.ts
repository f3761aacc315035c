import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { connectionsCheckingIntervalMs } from '../../src/echo/transport/server-settings.ts';
import { type EchoProcess, startEchoProcess } from '../helpers/liveness.ts';

// ECHO_REQUEST_TIMEOUT is kept to within a fraction of itself (issue #30, item 7): node looks for
// requests past their timeout once per `connectionsCheckingInterval`, so the interval decides how
// late a stalled client is cut (node's default, 30 s, cut a 3 s timeout after up to 33 s).

test('request timeout – the check runs every quarter of the smaller timeout, 50 ms to 1 s', () => {
  assert.equal(connectionsCheckingIntervalMs({ headersTimeoutMs: 10_000, requestTimeoutMs: 60_000 }), 1000);
  assert.equal(connectionsCheckingIntervalMs({ headersTimeoutMs: 3_000, requestTimeoutMs: 3_000 }), 750);
  assert.equal(connectionsCheckingIntervalMs({ headersTimeoutMs: 400, requestTimeoutMs: 2_000 }), 100);
  assert.equal(connectionsCheckingIntervalMs({ headersTimeoutMs: 1, requestTimeoutMs: 1 }), 50);
});

let echo: EchoProcess;
before(async () => {
  echo = await startEchoProcess({ ECHO_REQUEST_TIMEOUT: '400ms' });
});
after(() => echo.stop());

/** Sends a request head announcing 100 bytes of body and 10 of them, then stalls; resolves with the answer's status line and when the connection closed (ms after the request was sent). */
async function stall(port: number): Promise<{ statusLine: string; ms: number }> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await once(socket, 'connect');
  let answer = '';
  socket.setEncoding('latin1').on('data', (chunk: string) => {
    answer += chunk;
  });
  const sent = performance.now();
  socket.write(
    'POST /stalled HTTP/1.1\r\nHost: a\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n0123456789',
  );
  await once(socket, 'close');
  return { statusLine: answer.split('\r\n')[0] ?? '', ms: performance.now() - sent };
}

test('request timeout – ECHO_REQUEST_TIMEOUT=400ms cuts a stalled HTTP/1.1 body with a 408 within 400 ms + a margin, wherever it falls between checks', async () => {
  // Eight clients an eighth of a second apart: with a check a second, one of them stalls just after
  // a check and is cut about a second late.
  const stalls: Array<Promise<{ statusLine: string; ms: number }>> = [];
  for (let i = 0; i < 8; i++) {
    stalls.push(stall(echo.port));
    await sleep(125); // the clients' pace: their stalls spread over the check interval, the point here
  }
  const results = await Promise.all(stalls);
  for (const result of results) assert.equal(result.statusLine, 'HTTP/1.1 408 Request Timeout');
  const all = results.map((r) => r.ms.toFixed(0)).join(', ');
  const earliest = Math.min(...results.map((r) => r.ms));
  assert.ok(earliest >= 390, `cut after ${earliest.toFixed(0)} ms, before the timeout`);
  // The check every 100 ms cuts each by about 500 ms: late by up to 100 ms, plus what load adds. A check
  // every second (the old interval) cuts stalls spread evenly over it up to a second late, at most four
  // of the eight within 900 ms; one check for all (node's default, every 30 s) cuts them together, the
  // first sent about 875 ms after the last, so at most five. Counting them rather than bounding the
  // latest leaves room for two stalls that load delays.
  const cutEarly = results.filter((r) => r.ms < 900).length;
  assert.ok(cutEarly >= 6, `${cutEarly} of 8 cut within 900 ms: ${all}`);
  assert.ok(
    results.every((r) => r.ms < 10_000),
    `cut after up to ${Math.max(...results.map((r) => r.ms)).toFixed(0)} ms: ${all}`,
  );
});
