import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import tls from 'node:tls';
import type { Logger } from 'pino';
import { ConnectionLimiter, REFUSAL_LOG_INTERVAL_MS } from '../../src/echo/transport/connection-limits.ts';
import { startEcho } from '../helpers/echo-server.ts';
import { seriesValue } from '../helpers/metrics.ts';
import { until } from '../helpers/runtime.ts';

// Connection limits (issue #14): slow heads, slow bodies, oversized heads and a connection flood
// are cut off, while a normal client on another connection keeps getting answers. "Normal latency"
// is a generous bound: a loaded 2-core machine must not fail it.
const NORMAL_MS = 2000;

const dir = mkdtempSync(join(tmpdir(), 'echo-limits-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const TLS = { ENABLE_TLS: 'true', CERT_FILE: join(dir, 'absent.crt'), KEY_FILE: join(dir, 'absent.key') };
const FAST = { ECHO_HEADERS_TIMEOUT: '1s', ECHO_REQUEST_TIMEOUT: '1500ms' };

type Open = (port: number) => net.Socket | tls.TLSSocket;
const plain: Open = (port) => net.connect(port, '127.0.0.1');
const secure: Open = (port) =>
  tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] });

/** Sends `first`, then `drip` every `everyMs` while the connection lasts; resolves what came back. */
function slowClient(
  open: Open,
  port: number,
  first: string,
  drip: string,
  everyMs: number,
): Promise<{ text: string; ms: number }> {
  return new Promise((resolve) => {
    const start = Date.now();
    const socket = open(port);
    const chunks: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    // Never cut by the server: give up after a while, so the test fails instead of hanging.
    const lifetime = setTimeout(() => socket.destroy(), 15_000);
    socket.once(socket instanceof tls.TLSSocket ? 'secureConnect' : 'connect', () => {
      socket.write(first);
      timer = setInterval(() => {
        if (socket.writable) socket.write(drip);
      }, everyMs);
    });
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearInterval(timer);
      clearTimeout(lifetime);
      resolve({ text: Buffer.concat(chunks).toString('latin1'), ms: Date.now() - start });
    });
  });
}

/** A normal client's requests, on their own connections, while `busy` runs: each must be quick. */
async function normalClientDuring(url: string, busy: Promise<unknown>, agent?: https.Agent): Promise<number> {
  let done = false;
  void busy.finally(() => {
    done = true;
  });
  let served = 0;
  while (!done) {
    const start = Date.now();
    const status = await get(`${url}/info`, agent);
    const ms = Date.now() - start;
    assert.equal(status, 200);
    assert.ok(ms < NORMAL_MS, `a normal request took ${ms} ms while slow clients were on`);
    served++;
    await sleep(100); // the normal client's pace, one request every 100 ms: not a wait on anything
  }
  return served;
}

function get(url: string, agent?: http.Agent | https.Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const client = url.startsWith('https:') ? https : http;
    const request = client.get(url, { agent: agent ?? false, rejectUnauthorized: false }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('error', reject);
  });
}

for (const [name, env, open, scheme] of [
  ['HTTP/1.1', FAST, plain, 'http'],
  ['HTTPS/1.1', { ...FAST, ...TLS }, secure, 'https'],
] as const) {
  test(`limits – ${name}: a slow head and a slow body are cut (408) while a normal client is served`, {
    timeout: 30_000,
  }, async (t) => {
    const echo = await startEcho(env);
    t.after(() => echo.close());
    const url = `${scheme}://127.0.0.1:${echo.port}`;
    // A head one header every 300 ms, never ending; a body one byte every 300 ms, never complete.
    const slowHead = slowClient(open, echo.port, 'GET / HTTP/1.1\r\nHost: x\r\n', 'X-A: b\r\n', 300);
    const slowBody = slowClient(
      open,
      echo.port,
      'POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n',
      'a',
      300,
    );
    const both = Promise.all([slowHead, slowBody]);
    const served = await normalClientDuring(url, both);
    const [head, body] = await both;
    assert.match(head.text, /^HTTP\/1\.1 408 /, 'the slow head is answered 408');
    assert.match(head.text, /ECHO_ERR_REQUEST_TIMEOUT/);
    assert.match(body.text, /^HTTP\/1\.1 408 /, 'the slow body is answered 408');
    assert.ok(head.ms < 10_000 && body.ms < 10_000, 'both are cut, not left open');
    assert.ok(served >= 2, `the normal client was served ${served} times meanwhile`);
  });
}

test('limits – HTTPS: a connection that never completes its TLS handshake is closed at ECHO_HEADERS_TIMEOUT', {
  timeout: 30_000,
}, async (t) => {
  const echo = await startEcho({ ...FAST, ...TLS });
  t.after(() => echo.close());
  const silent = slowClient(plain, echo.port, '', '', 60_000);
  const served = await normalClientDuring(`https://127.0.0.1:${echo.port}`, silent);
  const { ms } = await silent;
  assert.ok(ms < 10_000, `closed after ${ms} ms`);
  assert.ok(served >= 1);
});

test('limits – a request held by an injected delay longer than ECHO_REQUEST_TIMEOUT is answered (HTTP/1.1, HTTPS, h2, h2c)', {
  timeout: 30_000,
}, async (t) => {
  const plainEcho = await startEcho(FAST);
  const tlsEcho = await startEcho({ ...FAST, ...TLS });
  t.after(() => Promise.all([plainEcho.close(), tlsEcho.close()]));
  const body = JSON.stringify({ hello: 'world' });
  const delayed = (url: string) =>
    new Promise<number>((resolve, reject) => {
      const client = url.startsWith('https:') ? https : http;
      const request = client.request(
        url,
        {
          method: 'POST',
          agent: false,
          rejectUnauthorized: false,
          headers: { 'content-type': 'application/json', 'x-echo-delay': '2500ms' },
        },
        (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode ?? 0));
        },
      );
      request.on('error', reject);
      request.end(body);
    });
  const h2Delayed = (url: string) =>
    new Promise<number>((resolve, reject) => {
      const session = http2.connect(url, { rejectUnauthorized: false });
      session.on('error', reject);
      const stream = session.request({
        ':method': 'POST',
        ':path': '/held',
        'content-type': 'application/json',
        'x-echo-delay': '2500ms',
      });
      stream.on('response', (headers) => {
        stream.resume();
        stream.on('end', () => {
          session.close();
          resolve(Number(headers[':status']));
        });
      });
      stream.on('error', reject);
      stream.end(body);
    });
  assert.deepEqual(
    await Promise.all([
      delayed(`${plainEcho.url}/held`),
      delayed(`https://127.0.0.1:${tlsEcho.port}/held`),
      h2Delayed(`https://127.0.0.1:${tlsEcho.port}`),
      h2Delayed(plainEcho.url),
    ]),
    [200, 200, 200, 200],
  );
});

for (const [name, env, scheme] of [
  ['h2c', {}, 'http'],
  ['h2', TLS, 'https'],
] as const) {
  test(`limits – ${name}: a stream whose body never finishes is answered 408 at ECHO_REQUEST_TIMEOUT; the session serves on`, {
    timeout: 30_000,
  }, async (t) => {
    const echo = await startEcho({ ...FAST, ...env });
    const session = http2.connect(`${scheme}://127.0.0.1:${echo.port}`, { rejectUnauthorized: false });
    t.after(() => {
      session.destroy();
      return echo.close();
    });
    const slow = session.request({ ':method': 'POST', ':path': '/slow', 'content-type': 'text/plain' });
    slow.write('a');
    const status = new Promise<{ status: number; body: string }>((resolve) => {
      let code = 0;
      let text = '';
      slow.on('response', (headers) => {
        code = Number(headers[':status']);
      });
      slow.on('data', (chunk: Buffer) => {
        text += chunk.toString();
      });
      slow.on('close', () => resolve({ status: code, body: text }));
      slow.on('error', () => {});
    });
    // Another stream on the same session is answered meanwhile.
    const other = session.request({ ':path': '/info' });
    const otherStatus = await new Promise<number>((resolve) => {
      other.on('response', (headers) => resolve(Number(headers[':status'])));
      other.resume();
    });
    assert.equal(otherStatus, 200);
    const cut = await status;
    assert.equal(cut.status, 408);
    assert.match(cut.body, /ECHO_ERR_REQUEST_TIMEOUT/);
  });
}

test('limits – an oversized head is a 431 in JSON; the server serves on', { timeout: 30_000 }, async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const big = `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`;
  const answer = await slowClient(plain, echo.port, big, '', 60_000);
  assert.match(answer.text, /^HTTP\/1\.1 431 /);
  assert.match(answer.text, /ECHO_ERR_HEADERS_TOO_LARGE/);
  assert.equal(await get(`${echo.url}/info`), 200);
});

/** Opens a connection and reads what it gets back until it closes (or `waitMs` passes). */
function connectAndRead(open: Open, port: number, send: string, waitMs: number) {
  return new Promise<{ text: string; closed: boolean; socket: net.Socket }>((resolve) => {
    const socket = open(port);
    const chunks: Buffer[] = [];
    const timer = setTimeout(
      () => resolve({ text: Buffer.concat(chunks).toString('latin1'), closed: false, socket }),
      waitMs,
    );
    socket.once(socket instanceof tls.TLSSocket ? 'secureConnect' : 'connect', () => socket.write(send));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(chunks).toString('latin1'), closed: true, socket });
    });
  });
}

for (const [name, env, open, scheme] of [
  ['HTTP/1.1', {}, plain, 'http'],
  ['HTTPS/1.1', TLS, secure, 'https'],
] as const) {
  test(`limits – ${name}: a connection flood past ECHO_MAX_CONNECTIONS is refused with a clean 503; kept-alive clients are served; the flood gone, new clients are too`, {
    timeout: 30_000,
  }, async (t) => {
    const echo = await startEcho({ ...env, ECHO_MAX_CONNECTIONS: '20' }, { captureLogs: true });
    t.after(() => echo.close());
    const url = `${scheme}://127.0.0.1:${echo.port}`;
    const agent =
      scheme === 'https'
        ? new https.Agent({ keepAlive: true, maxSockets: 1, rejectUnauthorized: false })
        : new http.Agent({ keepAlive: true, maxSockets: 1 });
    t.after(() => agent.destroy());
    // The normal client's connection is open before the flood.
    assert.equal(await get(`${url}/info`, agent), 200);

    // The flood: 19 idle connections fill the cap, then 10 more are refused.
    const held: net.Socket[] = [];
    t.after(() => {
      for (const socket of held) socket.destroy();
    });
    for (let i = 0; i < 19; i++) {
      const socket = open(echo.port);
      socket.on('error', () => {});
      held.push(socket);
      await new Promise((resolve) =>
        socket.once(socket instanceof tls.TLSSocket ? 'secureConnect' : 'connect', resolve),
      );
    }
    await until(
      '20 connections open: the 19 idle ones and the agent one',
      async () => (await openConnections(echo.port, agent)) >= 20,
    );
    const refused = await Promise.all(
      Array.from({ length: 10 }, () =>
        connectAndRead(open, echo.port, 'GET /info HTTP/1.1\r\nHost: x\r\n\r\n', 5000),
      ),
    );
    for (const answer of refused) {
      assert.ok(answer.closed, 'a refused connection is closed');
      assert.match(answer.text, /^HTTP\/1\.1 503 /);
      assert.match(answer.text, /\r\nconnection: close\r\n/i);
      assert.match(answer.text, /ECHO_ERR_TOO_MANY_CONNECTIONS/);
    }
    // The kept-alive client goes on, quickly.
    for (let i = 0; i < 3; i++) {
      const start = Date.now();
      assert.equal(await get(`${url}/info`, agent), 200);
      assert.ok(Date.now() - start < NORMAL_MS);
    }
    const metrics = await metricsText(url, agent);
    assert.equal(seriesValue(metrics, 'echo_connections_refused_total'), 10);
    assert.equal(seriesValue(metrics, 'echo_open_connections'), 20);
    const lines = echo.logs.filter((line) => String(line['msg']).includes('ECHO_MAX_CONNECTIONS'));
    assert.equal(lines.length, 1, 'one log line for the burst, not one per connection');

    // The flood goes; new clients are served again.
    for (const socket of held) socket.destroy();
    await until(
      'a new client is served again',
      async () => (await get(`${url}/info`).catch(() => 0)) === 200,
    );
  });
}

async function metricsText(url: string, agent: http.Agent | https.Agent): Promise<string> {
  return new Promise((resolve, reject) => {
    const client = url.startsWith('https:') ? https : http;
    client
      .get(`${url}/metrics`, { agent }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          text += chunk;
        });
        response.on('end', () => resolve(text));
      })
      .on('error', reject);
  });
}

async function openConnections(port: number, agent: http.Agent | https.Agent): Promise<number> {
  const scheme = agent instanceof https.Agent ? 'https' : 'http';
  return seriesValue(await metricsText(`${scheme}://127.0.0.1:${port}`, agent), 'echo_open_connections');
}

test('limits – h2c: a connection past ECHO_MAX_CONNECTIONS gets a GOAWAY, not a reset', {
  timeout: 30_000,
}, async (t) => {
  const echo = await startEcho({ ECHO_MAX_CONNECTIONS: '1' });
  const first = http2.connect(echo.url);
  t.after(() => {
    first.destroy();
    return echo.close();
  });
  await new Promise((resolve) => first.once('remoteSettings', resolve));
  const second = http2.connect(echo.url);
  second.on('error', () => {});
  const goaway = await new Promise<number>((resolve) => second.once('goaway', (code) => resolve(code)));
  assert.equal(goaway, http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
  second.destroy();
  // Read through the one admitted session: any new connection would be refused too.
  const metrics = first.request({ ':path': '/metrics' });
  let text = '';
  metrics.setEncoding('utf8');
  metrics.on('data', (chunk: string) => {
    text += chunk;
  });
  await new Promise((resolve) => metrics.on('end', resolve));
  assert.equal(seriesValue(text, 'echo_connections_refused_total'), 1);
});

for (const [name, env, url] of [
  ['h2c', {}, (port: number) => `http://127.0.0.1:${port}`],
  ['h2', TLS, (port: number) => `https://127.0.0.1:${port}`],
] as const) {
  test(`limits – ${name}: SETTINGS advertise ECHO_H2_MAX_CONCURRENT_STREAMS; a client opening more loses its session (GOAWAY)`, {
    timeout: 30_000,
  }, async (t) => {
    const echo = await startEcho({ ...env, ECHO_H2_MAX_CONCURRENT_STREAMS: '3' });
    const session = http2.connect(url(echo.port), { rejectUnauthorized: false });
    t.after(() => {
      session.destroy();
      return echo.close();
    });
    const settings = await new Promise<http2.Settings>((resolve) => session.once('remoteSettings', resolve));
    assert.equal(settings.maxConcurrentStreams, 3);
    assert.equal(settings.maxHeaderListSize, 65_536);
    // A polite client keeps to it: 4 delayed requests, all answered.
    const statuses = await Promise.all(
      Array.from(
        { length: 4 },
        () =>
          new Promise<number>((resolve) => {
            const stream = session.request({ ':path': '/held', 'x-echo-delay': '300ms' });
            stream.on('response', (headers) => resolve(Number(headers[':status'])));
            stream.resume();
          }),
      ),
    );
    assert.deepEqual(statuses, [200, 200, 200, 200]);
    // Enforced by the server, not only by a polite client: a raw client that acknowledged the
    // SETTINGS opens 4 streams at once; the fourth ends the session (GOAWAY, PROTOCOL_ERROR,
    // RFC 9113 5.1.2), the first three having been accepted (last stream id 5).
    const goaway = await rawH2Streams(echo.port, name === 'h2', 4);
    assert.equal(goaway?.code, http2.constants.NGHTTP2_PROTOCOL_ERROR);
    assert.equal(goaway?.lastStream, 5);
    assert.match(goaway?.debug ?? '', /max concurrent streams exceeded/);
    // The server serves on.
    const after = session.request({ ':path': '/info' });
    const status = await new Promise<number>((resolve) => {
      after.on('response', (headers) => resolve(Number(headers[':status'])));
      after.resume();
    });
    assert.equal(status, 200);
  });
}

interface Goaway {
  readonly lastStream: number;
  readonly code: number;
  readonly debug: string;
}

/**
 * Opens `count` streams at once on a raw HTTP/2 connection (ignoring the server's limit, as a
 * hostile client would) and resolves the GOAWAY the server sends (undefined if none came).
 */
function rawH2Streams(port: number, overTls: boolean, count: number): Promise<Goaway | undefined> {
  return new Promise((resolve, reject) => {
    const socket: net.Socket = overTls
      ? tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false, ALPNProtocols: ['h2'] })
      : net.connect(port, '127.0.0.1');
    let buffer = Buffer.alloc(0);
    let sent = false;
    const finish = (goaway?: Goaway) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(goaway);
    };
    const timer = setTimeout(finish, 5000);
    socket.on('error', reject);
    socket.once(overTls ? 'secureConnect' : 'connect', () => {
      socket.write(
        Buffer.concat([
          Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'),
          frame(0x4, 0, 0, Buffer.alloc(0)),
        ]),
      );
    });
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      while (buffer.length >= 9) {
        const length = buffer.readUIntBE(0, 3);
        if (buffer.length < 9 + length) break;
        const type = buffer[3];
        const flags = buffer[4]!;
        const payload = buffer.subarray(9, 9 + length);
        buffer = buffer.subarray(9 + length);
        if (type === 0x4 && (flags & 0x1) === 0) {
          // The server's SETTINGS: acknowledge them, then open every stream at once. Each asks for a
          // delay, so none ends before the last is opened.
          socket.write(frame(0x4, 0x1, 0, Buffer.alloc(0)));
          if (!sent) {
            sent = true;
            const streams = Array.from({ length: count }, (_, i) =>
              frame(0x1, 0x5, 2 * i + 1, requestBlock(overTls ? 'https' : 'http')),
            );
            socket.write(Buffer.concat(streams));
          }
        } else if (type === 0x7) {
          finish({
            lastStream: payload.readUInt32BE(0) & 0x7fffffff,
            code: payload.readUInt32BE(4),
            debug: payload.subarray(8).toString('latin1'),
          });
        }
      }
    });
  });
}

function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(stream, 5);
  return Buffer.concat([header, payload]);
}

/** A GET with a 500 ms delay, HPACK literals without indexing or Huffman coding. */
function requestBlock(scheme: string): Buffer {
  const literal = (name: string, value: string) =>
    Buffer.concat([
      Buffer.of(0, name.length),
      Buffer.from(name),
      Buffer.of(value.length),
      Buffer.from(value),
    ]);
  return Buffer.concat([
    literal(':method', 'GET'),
    literal(':scheme', scheme),
    literal(':path', '/held'),
    literal(':authority', 'x'),
    literal('x-echo-delay', '500ms'),
  ]);
}

test('limits – /info shows the limits in effect and the open connections', { timeout: 30_000 }, async (t) => {
  const echo = await startEcho({ ECHO_MAX_CONNECTIONS: '50', ECHO_KEEP_ALIVE_TIMEOUT: '5s' });
  t.after(() => echo.close());
  const info = (await (await fetch(`${echo.url}/info`)).json()) as {
    server: { limits: Record<string, number> };
  };
  assert.deepEqual(info.server.limits, {
    headers_timeout_ms: 10_000,
    request_timeout_ms: 60_000,
    keep_alive_timeout_ms: 5000,
    max_connections: 50,
    open_connections: 1,
    h2_max_concurrent_streams: 100,
    max_concurrent_compression: 2,
    history_max_entries: 100,
    history_max_body_bytes: 65_536,
    history_max_bytes: 32 * 1024 * 1024,
  });
});

for (const [name, env, open] of [
  ['HTTP/1.1', {}, plain],
  ['HTTPS/1.1', TLS, secure],
] as const) {
  test(`limits – ${name}: an idle keep-alive connection is closed after ECHO_KEEP_ALIVE_TIMEOUT`, {
    timeout: 30_000,
  }, async (t) => {
    const echo = await startEcho({ ...env, ECHO_KEEP_ALIVE_TIMEOUT: '1s' });
    t.after(() => echo.close());
    const answer = await slowClient(open, echo.port, 'GET /info HTTP/1.1\r\nHost: x\r\n\r\n', '', 60_000);
    assert.match(answer.text, /^HTTP\/1\.1 200 /);
    assert.match(answer.text, /\r\nkeep-alive: timeout=1\r\n/i, 'the timeout is announced');
    assert.ok(answer.ms >= 900 && answer.ms < 10_000, `closed after ${answer.ms} ms`);
  });
}

test('limits – h2c: an idle session is closed (GOAWAY) after ECHO_KEEP_ALIVE_TIMEOUT', {
  timeout: 30_000,
}, async (t) => {
  const echo = await startEcho({ ECHO_KEEP_ALIVE_TIMEOUT: '1s' });
  const session = http2.connect(echo.url);
  t.after(() => {
    session.destroy();
    return echo.close();
  });
  const start = Date.now();
  await new Promise((resolve) => session.once('goaway', resolve));
  const ms = Date.now() - start;
  assert.ok(ms >= 900 && ms < 10_000, `GOAWAY after ${ms} ms`);
});

test('connection limiter – counts open connections and logs refusals at most once per interval, with the count since the last line', () => {
  let now = 0;
  const lines: Array<{ fields: Record<string, unknown>; msg: string }> = [];
  const logger = {
    warn: (fields: Record<string, unknown>, msg: string) => lines.push({ fields, msg }),
  } as unknown as Logger;
  const limiter = new ConnectionLimiter(2, logger, () => now);
  let refusedCount = 0;
  limiter.onRefused = () => refusedCount++;
  const sockets = [new EventEmitter(), new EventEmitter(), new EventEmitter()] as unknown as net.Socket[];
  assert.equal(limiter.admit(sockets[0]!), true);
  assert.equal(limiter.admit(sockets[1]!), true);
  assert.equal(limiter.open, 2);
  assert.equal(limiter.admit(sockets[2]!), false, 'the third is refused');
  now = 5000;
  assert.equal(limiter.admit(sockets[2]!), false);
  assert.equal(lines.length, 1, 'one line for the first refusal, none within the interval');
  now = REFUSAL_LOG_INTERVAL_MS + 1;
  assert.equal(limiter.admit(sockets[2]!), false);
  assert.equal(lines.length, 2);
  assert.equal(lines[1]!.fields['refused'], 2, 'the second line counts both refusals since the first');
  assert.equal(refusedCount, 3, 'the metric counts every refusal');
  (sockets[0] as unknown as EventEmitter).emit('close');
  assert.equal(limiter.open, 1);
  assert.equal(limiter.admit(sockets[2]!), true, 'a closed connection frees its place');
});
