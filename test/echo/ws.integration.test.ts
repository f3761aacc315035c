import assert from 'node:assert/strict';
import http from 'node:http';
import { test } from 'node:test';
import { WebSocket } from 'ws';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { eventually, findGc, quietFor, until } from '../helpers/runtime.ts';

/** A drain that does not end the streams would hang the test: fail it instead. */
const DRAIN_TEST = { timeout: 15_000 };

/** The server dispatches HTTP/1.1 upgrades of `/ws` to the handler in `app.echo.upgradeHandlers`. */
function start(env: Record<string, string> = {}): Promise<RunningEcho> {
  return startEcho(env);
}

function wsUrl(echo: RunningEcho, path = '/ws'): string {
  return `${echo.url.replace(/^http/, 'ws')}${path}`;
}

/** Opens a WebSocket; rejects when the handshake fails. */
function connect(echo: RunningEcho): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl(echo), { perMessageDeflate: false });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`handshake answered ${res.statusCode}`)));
  });
}

interface Message {
  data: Buffer;
  isBinary: boolean;
}

/** Collects every message a socket receives, in order. */
function collect(ws: WebSocket): Message[] {
  const messages: Message[] = [];
  ws.on('message', (data, isBinary) => messages.push({ data: data as Buffer, isBinary }));
  return messages;
}

function nextMessage(ws: WebSocket): Promise<Message> {
  return new Promise((resolve) =>
    ws.once('message', (data, isBinary) => resolve({ data: data as Buffer, isBinary })),
  );
}

/** Resolves with the close code and reason the peer sent (or 1006 when the connection just dropped). */
function closed(ws: WebSocket): Promise<{ code: number; reason: string }> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.reject(new Error('already closed'));
  return new Promise((resolve) =>
    ws.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
  );
}

test('ws – a text message comes back unchanged, as a text frame', async (t) => {
  const echo = await start();
  t.after(() => echo.close());
  const ws = await connect(echo);
  t.after(() => ws.terminate());
  const text = 'héllo, wörld ✓ {"json":true}';
  ws.send(text);
  const reply = await nextMessage(ws);
  assert.equal(reply.isBinary, false);
  assert.equal(reply.data.toString('utf8'), text);
  ws.send('');
  const empty = await nextMessage(ws);
  assert.equal(empty.isBinary, false);
  assert.equal(empty.data.length, 0);
});

test('ws – a binary message comes back byte for byte, as a binary frame', async (t) => {
  const echo = await start();
  t.after(() => echo.close());
  const ws = await connect(echo);
  t.after(() => ws.terminate());
  // Not valid UTF-8: a server that turned it into text would have to change it.
  const bytes = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0xc3, 0x28, 0x7f, 0x0a]);
  ws.send(bytes, { binary: true });
  const reply = await nextMessage(ws);
  assert.equal(reply.isBinary, true);
  assert.deepEqual(reply.data, bytes);
  // Text that looks like text, sent binary, stays binary.
  ws.send(Buffer.from('plain words'), { binary: true });
  const words = await nextMessage(ws);
  assert.equal(words.isBinary, true);
  assert.equal(words.data.toString(), 'plain words');
});

test('ws – over TLS (wss:) text and binary messages are echoed the same way', async (t) => {
  const echo = await start({ ENABLE_TLS: 'true' });
  t.after(() => echo.close());
  const ws = await new Promise<WebSocket>((resolve, reject) => {
    // The certificate is the self-signed one made at startup.
    const socket = new WebSocket(`wss://127.0.0.1:${echo.port}/ws`, { rejectUnauthorized: false });
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
  });
  t.after(() => ws.terminate());
  ws.send('over tls');
  const text = await nextMessage(ws);
  assert.equal(text.isBinary, false);
  assert.equal(String(text.data), 'over tls');
  ws.send(Buffer.from([1, 2, 255]), { binary: true });
  const binary = await nextMessage(ws);
  assert.equal(binary.isBinary, true);
  assert.deepEqual(binary.data, Buffer.from([1, 2, 255]));
  assert.equal(echo.app.echo.openStreams.ws, 1);
});

test('ws – a ping is answered with a pong carrying the same data', async (t) => {
  const echo = await start();
  t.after(() => echo.close());
  const ws = await connect(echo);
  t.after(() => ws.terminate());
  const pong = new Promise<Buffer>((resolve) => ws.once('pong', resolve));
  ws.ping(Buffer.from('are you there'));
  assert.equal(String(await pong), 'are you there');
});

test('ws – a message of MAX_BODY_SIZE is echoed; one byte more closes with 1009', async (t) => {
  const echo = await start({ MAX_BODY_SIZE: '1024' });
  t.after(() => echo.close());
  const ws = await connect(echo);
  t.after(() => ws.terminate());
  const fits = Buffer.alloc(1024, 0x61);
  ws.send(fits, { binary: true });
  assert.deepEqual((await nextMessage(ws)).data, fits);
  const done = closed(ws);
  ws.send('a'.repeat(1025));
  const { code } = await done;
  assert.equal(code, 1009);
  assert.ok(
    await eventually(() => echo.app.echo.openStreams.ws === 0, 10_000),
    'the closed socket is uncounted',
  );
});

test('ws – many messages of both kinds come back complete and in order', async (t) => {
  const echo = await start();
  t.after(() => echo.close());
  const ws = await connect(echo);
  t.after(() => ws.terminate());
  const received = collect(ws);
  const sent: Message[] = [];
  for (let i = 0; i < 2000; i++) {
    const body = `message ${i} ${'x'.repeat(i % 300)}`;
    const isBinary = i % 3 === 0;
    const data = Buffer.from(body);
    sent.push({ data, isBinary });
    ws.send(data, { binary: isBinary });
  }
  assert.ok(await eventually(() => received.length === sent.length, 10_000), `got ${received.length}`);
  for (let i = 0; i < sent.length; i++) {
    assert.equal(received[i]?.isBinary, sent[i]?.isBinary, `frame type of message ${i}`);
    assert.deepEqual(received[i]?.data, sent[i]?.data, `message ${i}`);
  }
});

test(
  'ws – draining closes every socket with 1001, and close() waits for their close handshakes',
  DRAIN_TEST,
  async () => {
    const echo = await start();
    const sockets = await Promise.all([connect(echo), connect(echo), connect(echo)]);
    const closes = sockets.map((ws) => closed(ws));
    assert.equal(echo.app.echo.openStreams.ws, 3);
    const started = Date.now();
    await echo.close();
    const results = await Promise.all(closes);
    assert.deepEqual(
      results.map((r) => r.code),
      [1001, 1001, 1001],
    );
    assert.match(results[0]?.reason ?? '', /draining/);
    assert.ok(Date.now() - started < 5000, `close took ${Date.now() - started} ms`);
    assert.equal(echo.app.echo.openStreams.ws, 0);
  },
);

test(
  'ws – a client that never answers the close frame is cut off at ECHO_DRAIN_TIMEOUT',
  DRAIN_TEST,
  async () => {
    const echo = await start({ ECHO_DRAIN_TIMEOUT: '300ms' });
    const ws = await connect(echo);
    (ws as unknown as { _socket: import('node:net').Socket })._socket.pause();
    const started = Date.now();
    await echo.close();
    const ms = Date.now() - started;
    ws.terminate();
    assert.ok(ms >= 250 && ms < 3000, `close took ${ms} ms`);
    assert.equal(echo.app.echo.openStreams.ws, 0);
  },
);

test(
  'ws – a socket that opens while the server drains is closed with 1001 at once',
  DRAIN_TEST,
  async (t) => {
    const echo = await start();
    t.after(() => echo.close());
    echo.app.echo.drain.abort();
    const ws = await connect(echo);
    const { code } = await closed(ws);
    assert.equal(code, 1001);
    assert.equal(echo.app.echo.openStreams.ws, 0);
  },
);

test('ws – past ECHO_MAX_STREAMS (WebSocket and SSE together) a socket is closed with 1013', async (t) => {
  const echo = await start({ ECHO_MAX_STREAMS: '2', ECHO_SSE_TICKER: '1s' });
  t.after(() => echo.close());
  const first = await connect(echo);
  t.after(() => first.terminate());
  // The second stream is an SSE one: the cap counts both kinds.
  const sse = http.get(`${echo.url}/sse`, { agent: false });
  t.after(() => sse.destroy());
  const response = await new Promise<http.IncomingMessage>((resolve) => sse.once('response', resolve));
  assert.equal(response.statusCode, 200);
  assert.deepEqual(echo.app.echo.openStreams, { ws: 1, sse: 1 });

  const refused = await connect(echo);
  const { code, reason } = await closed(refused);
  assert.equal(code, 1013);
  assert.match(reason, /too many/);
  assert.deepEqual(echo.app.echo.openStreams, { ws: 1, sse: 1 }, 'a refused socket is not counted');

  // Once a stream leaves, a new socket is welcome and echoes.
  const gone = closed(first);
  first.close();
  await gone;
  assert.ok(await eventually(() => echo.app.echo.openStreams.ws === 0, 10_000));
  const next = await connect(echo);
  t.after(() => next.terminate());
  next.send('in again');
  assert.equal(String((await nextMessage(next)).data), 'in again');
});

test('ws – openStreams.ws and /health count exactly the open sockets', async (t) => {
  const echo = await start();
  t.after(() => echo.close());
  const health = async () =>
    ((await (await fetch(`${echo.url}/health`)).json()) as { metrics: { open_websockets: number } }).metrics
      .open_websockets;
  assert.equal(await health(), 0);
  const sockets = await Promise.all(Array.from({ length: 5 }, () => connect(echo)));
  assert.equal(echo.app.echo.openStreams.ws, 5);
  assert.equal(await health(), 5);
  // Two leave politely, one just drops its connection.
  const gone = [closed(sockets[0]!), closed(sockets[1]!)];
  sockets[0]!.close();
  sockets[1]!.close(4000, 'bye');
  await Promise.all(gone);
  sockets[2]!.terminate();
  assert.ok(
    await eventually(() => echo.app.echo.openStreams.ws === 2, 10_000),
    `${echo.app.echo.openStreams.ws}`,
  );
  assert.equal(await health(), 2);
  sockets[3]!.terminate();
  sockets[4]!.terminate();
  assert.ok(await eventually(() => echo.app.echo.openStreams.ws === 0, 10_000));
});

test('ws – a plain GET to /ws is a 426 JSON error that names the upgrade', async (t) => {
  const echo = await start();
  t.after(() => echo.close());
  const res = await fetch(`${echo.url}/ws`);
  assert.equal(res.status, 426);
  assert.equal(res.headers.get('upgrade'), 'websocket');
  assert.match(String(res.headers.get('content-type')), /^application\/json/);
  const body = (await res.json()) as { error: { code: string; request_id: string } };
  assert.equal(body.error.code, 'ECHO_ERR_UPGRADE_REQUIRED');
  assert.equal(body.error.request_id, res.headers.get('x-request-id'));
  assert.equal(echo.app.echo.openStreams.ws, 0);
});

test('ws – a client that sends without reading cannot make the server buffer its echoes', async (t) => {
  // The client below never answers a close frame: closing the server waits ECHO_DRAIN_TIMEOUT for it.
  const echo = await start({ ECHO_DRAIN_TIMEOUT: '1s' });
  t.after(() => echo.close());
  const ws = await connect(echo);
  // The client reads nothing: its socket is paused, so the echoes pile up on the server's side.
  (ws as unknown as { _socket: import('node:net').Socket })._socket.pause();
  const chunk = Buffer.alloc(64 * 1024, 0x62);
  const total = 1024; // 64 MiB
  let written = 0;
  for (let i = 0; i < total; i++) ws.send(chunk, { binary: true }, () => written++);
  // A server that kept reading would take all 64 MiB and hold what it cannot send. One that stops
  // reading while its echoes wait lets the TCP windows fill (some MiB of kernel buffers), then
  // the client's writes stall. A stall has no event: the client is given time to send everything.
  await quietFor(1500, 'the client sends and reads nothing: a server that read on would take it all');
  ws.terminate();
  assert.ok(
    written < total / 2,
    `the server took ${written} of ${total} 64 KiB messages without sending them`,
  );
});

test('ws – 1,000 concurrent clients get their own messages back, and memory returns to its baseline', async (t) => {
  const echo = await start();
  t.after(() => echo.close());
  const state = echo.app.echo;
  const gc = findGc();
  const heapUsed = (): number => {
    for (let i = 0; i < 3; i++) gc?.();
    return process.memoryUsage().heapUsed;
  };
  const connections = (): Promise<number> =>
    new Promise((resolve, reject) =>
      echo.app.server.getConnections((err, count) => (err ? reject(err) : resolve(count))),
    );

  /** `count` clients open at once, each exchanging its own messages; returns the heap while all are open. */
  const round = async (count: number): Promise<number> => {
    const sockets: WebSocket[] = [];
    // Connect in waves so the listen backlog never overflows, but keep every socket open.
    for (let i = 0; i < count; i += 100) {
      sockets.push(
        ...(await Promise.all(Array.from({ length: Math.min(100, count - i) }, () => connect(echo)))),
      );
    }
    assert.equal(state.openStreams.ws, count);
    await Promise.all(
      sockets.map(async (ws, i) => {
        const received = collect(ws);
        const mine = [
          { data: Buffer.from(`client ${i} first`), isBinary: false },
          { data: Buffer.from(`client ${i} second ${'y'.repeat(i % 97)}`), isBinary: false },
          { data: Buffer.from([i & 0xff, i >> 8, 0, 255]), isBinary: true },
        ];
        for (const m of mine) ws.send(m.data, { binary: m.isBinary });
        assert.ok(
          await eventually(() => received.length >= mine.length, 20_000),
          `client ${i} got ${received.length}`,
        );
        assert.equal(received.length, mine.length, `client ${i} got someone else's messages`);
        mine.forEach((m, j) => {
          assert.equal(received[j]?.isBinary, m.isBinary, `client ${i} message ${j} frame type`);
          assert.deepEqual(received[j]?.data, m.data, `client ${i} message ${j}`);
        });
        ws.removeAllListeners('message');
      }),
    );
    const peak = heapUsed();
    await Promise.all(
      sockets.map((ws) => {
        const done = closed(ws);
        ws.close(1000);
        return done;
      }),
    );
    assert.ok(
      await eventually(() => state.openStreams.ws === 0, 10_000),
      `${state.openStreams.ws} still counted`,
    );
    await until('no server connection left open', async () => (await connections()) === 0, 10_000);
    return peak;
  };

  // Warm up (JIT, buffer pools) before the baseline.
  await round(100);
  const baseline = heapUsed();
  const peak = await round(1000);
  if (gc === undefined) {
    t.skip('heap check skipped: no gc function (run with --expose-gc)');
    return;
  }
  // What the closed sockets held is freed as their last callbacks run: wait for it, boundedly.
  const kept = 1.5 * 1024 * 1024;
  let after = heapUsed();
  await eventually(() => {
    after = heapUsed();
    return after - baseline < kept;
  }, 10_000);
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(2)} MiB`;
  t.diagnostic(`heap: baseline ${mib(baseline)}, 1,000 open ${mib(peak)}, after ${mib(after)}`);
  // 1,000 open sockets (both ends live in this process) take several MiB: the check can see them.
  assert.ok(peak - baseline > 4 * 1024 * 1024, `1,000 sockets took only ${mib(peak - baseline)}`);
  assert.ok(after - baseline < kept, `heap kept ${mib(after - baseline)} after every client left`);
});
