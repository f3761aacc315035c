import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import http2 from 'node:http2';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import {
  type Curl,
  curl,
  h2Request,
  needCurl,
  openH2,
  rawExchange,
  summaryLine,
  TIMEOUT_MS,
  waitFor,
} from '../helpers/protocol-clients.ts';
import { freePort, until } from '../helpers/runtime.ts';

// One cleartext port serves HTTP/1.1, h2c with prior knowledge and the `Upgrade: h2c` handshake.

let echo: RunningEcho;
before(async () => {
  echo = await startEcho();
});
after(async () => {
  await waitFor(echo.close(), 'the shared server did not close');
});

/** The HTTP version curl used, from `-w %{http_version}` written after the body. */
function httpVersionOf(result: Curl): string {
  const marker = result.stdout.lastIndexOf('\nVERSION=');
  assert.ok(marker !== -1, `curl printed no version: ${result.stdout}${result.stderr}`);
  return result.stdout.slice(marker + '\nVERSION='.length).trim();
}
function bodyOf(result: Curl): string {
  return result.stdout.slice(0, result.stdout.lastIndexOf('\nVERSION='));
}
const WRITE_VERSION = ['-w', '\nVERSION=%{http_version}'];

test('one cleartext port – HTTP/1.1 (fetch): GET summary names HTTP/1.1, /info says HTTP/1.1 without TLS', async () => {
  const summary = await fetch(`${echo.url}/plain?a=1`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  assert.equal(summary.status, 200);
  assert.equal(summaryLine(await summary.text()), 'GET /plain?a=1 HTTP/1.1');
  const info = (await (
    await fetch(`${echo.url}/info`, { signal: AbortSignal.timeout(TIMEOUT_MS) })
  ).json()) as {
    protocol: string;
    tls: boolean;
  };
  assert.equal(info.protocol, 'HTTP/1.1');
  assert.equal(info.tls, false);
});

test('one cleartext port – h2c prior knowledge (node:http2): summary and /info say HTTP/2.0', async () => {
  const session = await openH2(echo.url);
  try {
    const summary = await h2Request(session, { ':path': '/h2c?b=2' });
    assert.equal(summary.status, 200);
    assert.equal(summaryLine(summary.body.toString()), 'GET /h2c?b=2 HTTP/2.0');
    const info = JSON.parse((await h2Request(session, { ':path': '/info' })).body.toString());
    assert.equal(info.protocol, 'HTTP/2.0');
    assert.equal(info.tls, false);
    assert.equal(info.remote_addr, '127.0.0.1');
  } finally {
    session.close();
  }
});

test('one cleartext port – the HTTP/2 GET summary shows :authority as host, where HTTP/1.1 shows Host', async () => {
  const authority = new URL(echo.url).host;
  const h1 = await (await fetch(`${echo.url}/h1-host`, { signal: AbortSignal.timeout(TIMEOUT_MS) })).text();
  assert.ok(h1.split('\n').includes(`host: ${authority}`), h1);
  const session = await openH2(echo.url);
  try {
    const summary = (await h2Request(session, { ':path': '/h2c-host' })).body.toString();
    const lines = summary.split('\n');
    assert.equal(lines[0], 'GET /h2c-host HTTP/2.0');
    assert.deepEqual(
      lines.filter((line) => /^host:/i.test(line)),
      [`host: ${authority}`],
      summary,
    );
    assert.doesNotMatch(summary, /^:/m, 'no pseudo-header is shown as it is');
    // A request that names both (allowed when they agree) shows one host line.
    const both = (await h2Request(session, { ':path': '/h2c-both', host: authority })).body.toString();
    assert.deepEqual(
      both.split('\n').filter((line) => /^host:/i.test(line)),
      [`host: ${authority}`],
      both,
    );
  } finally {
    session.close();
  }
});

test('one cleartext port – curl --http2-prior-knowledge is answered over HTTP/2', async (t) => {
  if (!needCurl(t)) return;
  const result = await curl(['--http2-prior-knowledge', ...WRITE_VERSION, `${echo.url}/prior`]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(httpVersionOf(result), '2');
  assert.equal(summaryLine(bodyOf(result)), 'GET /prior HTTP/2.0');
});

test('one cleartext port – curl --http2 upgrade: 101 Switching Protocols, then the response over HTTP/2', async (t) => {
  if (!needCurl(t)) return;
  const result = await curl([
    '-v',
    '--http2',
    ...WRITE_VERSION,
    '-H',
    'X-Probe: up',
    `${echo.url}/upgrade?x=1`,
  ]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stderr, /^< HTTP\/1\.1 101 Switching Protocols/m);
  assert.match(result.stderr, /^< Upgrade: h2c/im);
  assert.match(result.stderr, /^< HTTP\/2 200/m);
  assert.equal(httpVersionOf(result), '2');
  const body = bodyOf(result);
  assert.equal(summaryLine(body), 'GET /upgrade?x=1 HTTP/2.0');
  // The upgraded request's own headers reached the handler; the connection-specific ones did not.
  assert.match(body, /^x-probe: up$/m);
  assert.doesNotMatch(body, /^(upgrade|http2-settings|connection):/im);
});

test('one cleartext port – after an h2c upgrade, further streams on the same connection work', async (t) => {
  if (!needCurl(t)) return;
  // Two URLs, one connection: the second request is stream 3 of the upgraded session.
  const result = await curl([
    '-v',
    '--http2',
    '-o',
    '/dev/null',
    '-o',
    '/dev/null',
    ...WRITE_VERSION,
    `${echo.url}/first`,
    `${echo.url}/second`,
  ]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal((result.stderr.match(/^< HTTP\/2 200/gm) ?? []).length, 2, result.stderr);
  assert.match(result.stderr, /Re-using existing connection/);
  assert.equal((result.stderr.match(/101 Switching Protocols/g) ?? []).length, 1);
});

test('one cleartext port – POST bodies echo over HTTP/1.1, h2c prior knowledge and curl (h2c and --http2)', async (t) => {
  const payload = 'payload: ünïcode and bytes \u0000\u0001';
  const viaFetch = await fetch(`${echo.url}/post`, {
    method: 'POST',
    body: payload,
    headers: { 'content-type': 'text/plain; charset=utf-8' },
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  assert.equal(await viaFetch.text(), payload);

  const session = await openH2(echo.url);
  try {
    const viaH2 = await h2Request(
      session,
      { ':method': 'POST', ':path': '/post', 'content-type': 'application/octet-stream' },
      Buffer.from(payload),
    );
    assert.equal(viaH2.status, 200);
    assert.equal(viaH2.body.toString(), payload);
    assert.equal(viaH2.headers['content-type'], 'application/octet-stream');
  } finally {
    session.close();
  }

  if (!needCurl(t)) return;
  const prior = await curl([
    '--http2-prior-knowledge',
    '--data-binary',
    'curl-h2c',
    ...WRITE_VERSION,
    `${echo.url}/p`,
  ]);
  assert.equal(httpVersionOf(prior), '2');
  assert.equal(bodyOf(prior), 'curl-h2c');
  // curl offers the upgrade with a body too: such a request is served over HTTP/1.1 (RFC 9113, 3.1).
  const upgrade = await curl([
    '-v',
    '--http2',
    '--data-binary',
    'curl-upgrade',
    ...WRITE_VERSION,
    `${echo.url}/p`,
  ]);
  assert.match(upgrade.stderr, /^> Upgrade: h2c/im);
  assert.doesNotMatch(upgrade.stderr, /101 Switching/);
  assert.equal(httpVersionOf(upgrade), '1.1');
  assert.equal(bodyOf(upgrade), 'curl-upgrade');
});

test('one cleartext port – an HTTP/2 body sent without content-length or content-type is echoed, also on a GET', async () => {
  const session = await openH2(echo.url);
  try {
    const post = await h2Request(
      session,
      { ':method': 'POST', ':path': '/nolength' },
      Buffer.from('framed by DATA'),
    );
    assert.equal(post.status, 200);
    assert.equal(post.body.toString(), 'framed by DATA');
    assert.equal(post.headers['content-type'], 'text/plain');
    const get = await h2Request(
      session,
      { ':method': 'GET', ':path': '/get-with-body' },
      Buffer.from('get body'),
    );
    assert.equal(get.body.toString(), 'get body');
    const plain = await h2Request(session, { ':method': 'GET', ':path': '/no-body' });
    assert.equal(summaryLine(plain.body.toString()), 'GET /no-body HTTP/2.0');
  } finally {
    session.close();
  }
});

test('one cleartext port – an Upgrade: h2c request with a body is answered over HTTP/1.1 (raw socket)', async () => {
  const reply = await rawExchange(
    echo.port,
    'POST /with-body HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n' +
      'HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello',
  );
  assert.match(reply, /^HTTP\/1\.1 200 OK\r\n/);
  assert.ok(reply.endsWith('\r\n\r\nhello'), reply);
});

test('one cleartext port – X-Echo-Delay, X-Echo-Status and X-Echo-Compress work over every protocol', async (t) => {
  const controls = { 'x-echo-delay': '200ms', 'x-echo-status': '418', 'x-echo-compress': 'gzip' };

  let started = Date.now();
  const viaFetch = await fetch(`${echo.url}/ctl`, {
    headers: controls,
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  assert.equal(viaFetch.status, 418);
  assert.equal(viaFetch.headers.get('content-encoding'), 'gzip');
  assert.equal(summaryLine(await viaFetch.text()), 'GET /ctl HTTP/1.1'); // fetch decompresses
  assert.ok(Date.now() - started >= 190, 'HTTP/1.1: no delay');

  const session = await openH2(echo.url);
  try {
    started = Date.now();
    const viaH2 = await h2Request(session, { ':path': '/ctl', ...controls });
    assert.ok(Date.now() - started >= 190, 'h2c: no delay');
    assert.equal(viaH2.status, 418);
    assert.equal(viaH2.headers['content-encoding'], 'gzip');
    assert.equal(summaryLine(gunzipSync(viaH2.body).toString()), 'GET /ctl HTTP/2.0');
  } finally {
    session.close();
  }

  if (!needCurl(t)) return;
  const headerArgs = Object.entries(controls).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
  for (const mode of ['--http2-prior-knowledge', '--http2']) {
    started = Date.now();
    const result = await curl([
      mode,
      '--compressed',
      '-i',
      ...headerArgs,
      ...WRITE_VERSION,
      `${echo.url}/ctl`,
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.ok(Date.now() - started >= 190, `${mode}: no delay`);
    assert.equal(httpVersionOf(result), '2', mode);
    const text = bodyOf(result);
    assert.match(text, /^HTTP\/2 418/m, mode);
    assert.match(text, /^content-encoding: gzip/im, mode);
    assert.match(text, /^GET \/ctl HTTP\/2\.0$/m, mode);
  }
});

test('one cleartext port – X-Echo-Status 1xx over h2c: an informational response, then 200', async () => {
  const session = await openH2(echo.url);
  try {
    const result = await h2Request(session, { ':path': '/interim', 'x-echo-status': '103' });
    assert.deepEqual(result.informational, [103]);
    assert.equal(result.status, 200);
  } finally {
    session.close();
  }
});

test('one cleartext port – /health answers over HTTP/1.1, h2c prior knowledge and the h2c upgrade', async (t) => {
  const viaFetch = await fetch(`${echo.url}/health`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  assert.equal(viaFetch.status, 200);
  assert.equal(((await viaFetch.json()) as { status: string }).status, 'healthy');

  const session = await openH2(echo.url);
  try {
    const viaH2 = await h2Request(session, { ':path': '/health' });
    assert.equal(viaH2.status, 200);
    assert.equal(JSON.parse(viaH2.body.toString()).status, 'healthy');
  } finally {
    session.close();
  }

  if (!needCurl(t)) return;
  for (const mode of ['--http2-prior-knowledge', '--http2']) {
    const result = await curl([mode, ...WRITE_VERSION, `${echo.url}/health`]);
    assert.equal(httpVersionOf(result), '2', mode);
    assert.equal(JSON.parse(bodyOf(result)).status, 'healthy', mode);
  }
});

test('one cleartext port – 100 concurrent streams on one h2c session each get their own answer', async () => {
  const session = await openH2(echo.url);
  let connects = 0;
  session.on('connect', () => connects++);
  try {
    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        h2Request(session, {
          ':path': `/stream/${i}`,
          'x-request-id': `stream-${i}`,
          'x-echo-delay': '300ms',
        }),
      ),
    );
    for (const [i, result] of results.entries()) {
      assert.equal(result.status, 200);
      assert.equal(result.headers['x-request-id'], `stream-${i}`);
      assert.equal(summaryLine(result.body.toString()), `GET /stream/${i} HTTP/2.0`);
    }
    // Served side by side: one after another they would take 30 s.
    assert.ok(Date.now() - started < 5_000, `took ${Date.now() - started} ms`);
    assert.equal(connects, 0, 'the session reconnected');
  } finally {
    session.close();
  }
});

test('one cleartext port – a client sending the HTTP/2 preface in pieces is served over h2c', async () => {
  // Each write is flushed on its own, with a pause between: the sniffer must wait for the rest.
  const session = await openH2(echo.url, { splitPrefaceAt: [1, 3, 10, 20], pauseMs: 40 });
  try {
    const result = await h2Request(session, { ':path': '/dribbled' });
    assert.equal(result.status, 200);
    assert.equal(summaryLine(result.body.toString()), 'GET /dribbled HTTP/2.0');
  } finally {
    session.close();
  }
});

test('one cleartext port – an HTTP/1.1 request whose first byte matches the preface is served unchanged', async () => {
  // "P" could start "PRI * HTTP/2.0": the sniffer holds it, then gives it back to the HTTP/1.1 parser.
  const socket = net.connect(echo.port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (c) => chunks.push(c));
  const closed = new Promise<void>((resolve, reject) => {
    socket.once('close', () => resolve());
    socket.once('error', reject);
  });
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write('P');
  await sleep(100);
  socket.write('OST /piecemeal HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n');
  await sleep(50);
  socket.write('Content-Length: 3\r\nConnection: close\r\n\r\nabc');
  await waitFor(closed, 'the server did not answer');
  const text = Buffer.concat(chunks).toString('latin1');
  assert.match(text, /^HTTP\/1\.1 200 OK\r\n/);
  assert.ok(text.endsWith('\r\n\r\nabc'), text);
});

test('one cleartext port – an Upgrade for an unregistered path or protocol is served as a normal request', async () => {
  const reply = await rawExchange(
    echo.port,
    'GET /not-a-socket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
  );
  assert.match(reply, /^HTTP\/1\.1 200 OK\r\n/);
  assert.match(reply, /\r\n\r\nGET \/not-a-socket HTTP\/1\.1\n/);
});

test('one cleartext port – an Upgrade for a path in upgradeHandlers is handed the socket', async () => {
  echo.app.echo.upgradeHandlers.set('/custom-upgrade', (request, socket, head) => {
    socket.end(
      `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: custom\r\n\r\n${request.url} ${head.toString()}`,
    );
  });
  try {
    const reply = await rawExchange(
      echo.port,
      'GET /custom-upgrade?q=1 HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: custom\r\n\r\nearly',
    );
    assert.match(reply, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
    assert.ok(reply.endsWith('\r\n\r\n/custom-upgrade?q=1 early'), reply);
  } finally {
    echo.app.echo.upgradeHandlers.delete('/custom-upgrade');
  }
});

test('X-Echo-Error over h2c – reset resets only that stream (RST_STREAM); the session goes on', async () => {
  const session = await openH2(echo.url);
  try {
    const reset = await h2Request(session, { ':path': '/reset', 'x-echo-error': 'reset' }).then(
      () => assert.fail('the reset stream got a response'),
      (err: Error & { rstCode?: number }) => err,
    );
    assert.equal(reset.rstCode, http2.constants.NGHTTP2_INTERNAL_ERROR, String(reset));
    const next = await h2Request(session, { ':path': '/after-reset' });
    assert.equal(next.status, 200);
  } finally {
    session.close();
  }
});

test('X-Echo-Error over h2c – close ends the session with GOAWAY; the server keeps serving', async (t) => {
  const session = await openH2(echo.url);
  t.after(() => session.destroy());
  const goaway = new Promise<number>((resolve) => session.once('goaway', (code) => resolve(code)));
  const inFlight = h2Request(session, { ':path': '/slow-neighbour', 'x-echo-delay': '5s' }).catch(
    () => 'failed',
  );
  const closed = await h2Request(session, { ':path': '/close', 'x-echo-error': 'close' }).then(
    () => 'answered',
    () => 'failed',
  );
  assert.equal(closed, 'failed');
  assert.equal(await waitFor(goaway, 'no GOAWAY'), http2.constants.NGHTTP2_NO_ERROR);
  assert.equal(await waitFor(inFlight, 'the neighbour stream hung'), 'failed');
  const again = await openH2(echo.url);
  try {
    assert.equal((await h2Request(again, { ':path': '/after-close' })).status, 200);
  } finally {
    again.close();
  }
});

test('replay over h2c – a request recorded over HTTP/2 is replayed to this server', async () => {
  const session = await openH2(echo.url);
  try {
    const original = await h2Request(
      session,
      {
        ':method': 'PUT',
        ':path': '/to-replay?k=v',
        'content-type': 'text/plain',
        'x-request-id': 'h2-replay-1',
      },
      Buffer.from('replay me'),
    );
    assert.equal(original.status, 200);
    const replayed = await h2Request(
      session,
      { ':method': 'POST', ':path': '/replay', 'content-type': 'application/json' },
      Buffer.from(JSON.stringify({ id: 'h2-replay-1' })),
    );
    assert.equal(replayed.status, 200, replayed.body.toString());
    assert.equal(replayed.headers['x-echo-replay-of'], 'h2-replay-1');
    assert.equal(replayed.body.toString(), 'replay me');
  } finally {
    session.close();
  }
});

test('shutdown – close() sends GOAWAY to idle h2c sessions, ends idle keep-alives and silent sockets', async (t) => {
  const server = await startEcho();
  let closing: Promise<void> | undefined;
  t.after(() => closing ?? server.close());
  const session = await openH2(server.url);
  t.after(() => session.destroy());
  assert.equal((await h2Request(session, { ':path': '/warm' })).status, 200);
  const goaway = new Promise<void>((resolve) => session.once('goaway', () => resolve()));
  const sessionClosed = new Promise<void>((resolve) => session.once('close', () => resolve()));

  // An HTTP/1.1 keep-alive connection, idle after its response.
  const keepAlive = net.connect(server.port, '127.0.0.1');
  t.after(() => keepAlive.destroy());
  const keepAliveClosed = new Promise<void>((resolve) => keepAlive.once('close', () => resolve()));
  keepAlive.on('error', () => {});
  const firstAnswer = new Promise<void>((resolve) => keepAlive.once('data', () => resolve()));
  keepAlive.write('GET /keep HTTP/1.1\r\nHost: x\r\n\r\n');
  await waitFor(firstAnswer, 'no answer on the keep-alive connection');

  // A connection that never says which protocol it speaks.
  const silent = net.connect(server.port, '127.0.0.1');
  t.after(() => silent.destroy());
  silent.on('error', () => {});
  const silentClosed = new Promise<void>((resolve) => silent.once('close', () => resolve()));
  await waitFor(new Promise<void>((resolve) => silent.once('connect', () => resolve())), 'no connection');

  const started = Date.now();
  closing = server.close();
  await waitFor(closing, 'close() did not finish');
  assert.ok(Date.now() - started < 2_000, `close took ${Date.now() - started} ms`);
  await waitFor(goaway, 'no GOAWAY');
  await waitFor(sessionClosed, 'the h2c session stayed open');
  await waitFor(keepAliveClosed, 'the keep-alive connection stayed open');
  await waitFor(silentClosed, 'the silent connection stayed open');
});

test('shutdown – close() lets an h2c request in a delay finish with 200 before the session ends', async (t) => {
  const server = await startEcho();
  let closing: Promise<void> | undefined;
  t.after(() => closing ?? server.close());
  const session = await openH2(server.url);
  t.after(() => session.destroy());
  const slow = h2Request(session, { ':path': '/slow', 'x-echo-delay': '10s' });
  await until('the request is in flight', () => server.app.obs.drainState.inFlight === 1);
  closing = server.close();
  const result = await waitFor(slow, 'the request in flight was not answered');
  assert.equal(result.status, 200);
  assert.equal(summaryLine(result.body.toString()), 'GET /slow HTTP/2.0');
  await waitFor(closing, 'close() did not finish');
});

test('shutdown – closeAllConnections (the drain deadline) ends h2c sessions, busy HTTP/1.1 and silent sockets', async (t) => {
  const server = await startEcho();
  t.after(() => server.close());
  const session = await openH2(server.url);
  t.after(() => session.destroy());
  const h2InFlight = h2Request(session, { ':path': '/hold', 'x-echo-delay': '60s' }).then(
    () => 'answered',
    (err: Error) => (err.message.startsWith('no ') ? 'hung' : 'cut'), // `no answer …` is the client's timeout
  );
  const sockets = [
    'GET /hold HTTP/1.1\r\nHost: x\r\nX-Echo-Delay: 60s\r\n\r\n', // busy HTTP/1.1
    '', // silent
    'PRI * HTTP/2.0\r\n', // half a preface
  ].map((text) => {
    const socket = net.connect(server.port, '127.0.0.1', () => socket.write(text));
    socket.on('error', () => {});
    t.after(() => socket.destroy());
    return new Promise<void>((resolve) => socket.once('close', () => resolve()));
  });
  // The h2c stream and the busy HTTP/1.1 request in flight; the other two are only connections, so
  // the service's count of open connections tells when they are in (the h2c one and three sockets).
  await until('both requests are in flight', () => server.app.obs.drainState.inFlight === 2);
  await until('the four connections are open', async () => {
    const info = (await server.app.inject({ url: '/info' })).json() as {
      server: { limits: { open_connections: number } };
    };
    return info.server.limits.open_connections === 4;
  });
  (server.app.server as unknown as { closeAllConnections(): void }).closeAllConnections();
  assert.equal(await waitFor(h2InFlight, 'the h2c stream was not cut'), 'cut');
  await waitFor(Promise.all(sockets), 'a connection stayed open');
});

test('h2c upgrade – a request whose headers need CONTINUATION frames is injected whole (CLI)', async (t) => {
  if (!needCurl(t)) return;
  // Headers over 16 KiB need a larger HTTP/1.1 header limit; the injected block then spans frames.
  const main = fileURLToPath(new URL('../../src/echo/main.ts', import.meta.url));
  const port = await freePort();
  const child = spawn(process.execPath, ['--max-http-header-size=65536', main], {
    env: {
      PATH: process.env['PATH'] ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ECHO_DRAIN_DELAY: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: TIMEOUT_MS * 2,
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  try {
    await until(
      'the server is ready',
      async () => (await fetch(`http://127.0.0.1:${port}/ready`).catch(() => undefined))?.ok === true,
      TIMEOUT_MS,
      50,
    );
    const big = 'b'.repeat(40_000);
    const result = await curl([
      '--http2',
      '-H',
      `X-Big: ${big}`,
      ...WRITE_VERSION,
      `http://127.0.0.1:${port}/big`,
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(httpVersionOf(result), '2');
    const body = bodyOf(result);
    assert.equal(summaryLine(body), 'GET /big HTTP/2.0');
    assert.ok(body.includes(`x-big: ${big}\n`), 'the big header did not arrive whole');
  } finally {
    child.kill('SIGTERM');
    assert.equal(await waitFor(exited, 'the CLI did not exit'), 0);
  }
});

test('curl – this machine has a curl with HTTP/2 (required in CI)', (t) => {
  if (!needCurl(t)) return;
  const probe = spawnSync('curl', ['--version'], { encoding: 'utf8', timeout: TIMEOUT_MS });
  assert.match(probe.stdout, /HTTP2/);
});
