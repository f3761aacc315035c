import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import http2 from 'node:http2';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import { WebSocket, WebSocketServer } from 'ws';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { listenLocal } from '../helpers/http.ts';
import { type EchoProcess, startEchoProcess } from '../helpers/liveness.ts';
import { scrapeValue } from '../helpers/metrics.ts';
import { rawExchange } from '../helpers/protocol-clients.ts';
import { until } from '../helpers/runtime.ts';

/**
 * The reverse proxy (#32, `ECHO_UPSTREAM`) against real upstreams started here: a node:http server
 * that records what reached it, one that never answers, and a closed port. What a client sees
 * through echo-chaos, and what the upstream sees.
 */

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

let upstream: Server;
let upstreamUrl: string;
const seen: Seen[] = [];
let hanging: Server;
let hangingUrl: string;
let closedUrl: string;

before(async () => {
  upstream = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if (req.url?.startsWith('/big')) {
        // 8 MiB in 64 KiB pieces, as it is made: the proxy must pass it on, not hold it.
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const piece = Buffer.alloc(64 * 1024, 7);
        let left = 128;
        const more = () => {
          while (left > 0) {
            left--;
            if (!res.write(piece)) return void res.once('drain', more);
          }
          res.end();
        };
        more();
        return;
      }
      const status = req.url?.startsWith('/busy') ? 503 : 200;
      const answer = JSON.stringify({ path: req.url, method: req.method, body });
      res.writeHead(status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(answer),
        'x-upstream': 'real',
      });
      res.end(answer);
    });
  });
  upstreamUrl = await listenLocal(upstream);
  hanging = createServer(() => {});
  hangingUrl = await listenLocal(hanging);
  const closed = createServer();
  closedUrl = await listenLocal(closed);
  closed.close();
});

after(() => {
  upstream.closeAllConnections();
  upstream.close();
  hanging.closeAllConnections();
  hanging.close();
});

async function get(url: string, headers: Record<string, string> = {}, method = 'GET', body?: string) {
  const res = await request(url, {
    method: method as 'GET',
    headers,
    ...(body === undefined ? {} : { body }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text };
}

function lastSeen(): Seen {
  const entry = seen.at(-1);
  assert.ok(entry, 'the upstream saw a request');
  return entry;
}

describe('a proxy in front of a real service', () => {
  let echo: RunningEcho;
  before(async () => {
    echo = await startEcho({ ECHO_UPSTREAM: upstreamUrl, LOG_LEVEL: 'silent' });
  });
  after(() => echo.close());

  test("forwards method, path, query and body, and returns the upstream's status, headers and body", async () => {
    const res = await get(
      `${echo.url}/orders/7?expand=items`,
      { 'content-type': 'text/plain' },
      'POST',
      'hello',
    );
    assert.equal(res.status, 200);
    assert.equal(res.headers['x-upstream'], 'real');
    assert.deepEqual(JSON.parse(res.text), { path: '/orders/7?expand=items', method: 'POST', body: 'hello' });
    const got = lastSeen();
    assert.equal(got.method, 'POST');
    assert.equal(got.body, 'hello');
    assert.equal(got.headers['content-type'], 'text/plain');
  });

  test('an upstream 503 passes as the upstream sent it: no Retry-After added, no fault counted', async () => {
    const res = await get(`${echo.url}/busy`, { 'x-echo-explain': 'true' });
    assert.equal(res.status, 503);
    assert.equal(res.headers['retry-after'], undefined);
    assert.equal(res.headers['x-echo-fault'], undefined);
    assert.equal(res.headers['x-upstream'], 'real');
  });

  test('X-Echo-* controls are consumed, hop-by-hop headers dropped, X-Forwarded-* added, Host the upstream’s', async () => {
    // Raw, so the Connection header goes as written (HTTP clients manage it themselves).
    const socket = connect(echo.port, '127.0.0.1');
    await once(socket, 'connect');
    socket.write(
      'GET /headers HTTP/1.1\r\nHost: 127.0.0.1:' +
        echo.port +
        '\r\nX-Echo-Delay: 1ms\r\nConnection: close, x-hop\r\nX-Hop: secret-to-this-hop\r\n' +
        'X-Kept: yes\r\nX-Forwarded-For: 10.1.2.3\r\nTE: trailers\r\n\r\n',
    );
    socket.resume();
    await once(socket, 'close');
    const got = lastSeen();
    assert.equal(got.headers['x-echo-delay'], undefined);
    assert.equal(got.headers['x-hop'], undefined, 'a header named in Connection goes no further');
    assert.equal(got.headers.te, undefined);
    assert.equal(got.headers['x-kept'], 'yes');
    assert.equal(got.headers['x-forwarded-for'], '10.1.2.3, 127.0.0.1');
    assert.equal(got.headers['x-forwarded-proto'], 'http');
    assert.equal(got.headers['x-forwarded-host'], `127.0.0.1:${echo.port}`);
    assert.equal(got.headers.host, new URL(upstreamUrl).host);
  });

  test('faults before the upstream: an injected error or a reset never calls it; a delay does, later', async () => {
    const before = seen.length;
    const failed = await get(`${echo.url}/pay`, { 'x-echo-error': '503' });
    assert.equal(failed.status, 503);
    assert.match(failed.text, /injected by echo-chaos/);
    await assert.rejects(request(`${echo.url}/pay`, { headers: { 'x-echo-error': 'reset' } }));
    assert.equal(seen.length, before, 'the upstream was not called');
    const delayed = await get(`${echo.url}/pay`, { 'x-echo-delay': '20ms', 'x-echo-explain': 'true' });
    assert.equal(delayed.status, 200);
    assert.equal(seen.length, before + 1);
    assert.match(String(delayed.headers['x-echo-applied']), /"kind":"delay"/);
  });

  test("faults on the answer: a status replaces the upstream's, set headers and a throttle apply", async () => {
    const res = await get(`${echo.url}/orders`, {
      'x-echo-status': '502',
      'x-echo-set-header-x-injected': 'on',
      'x-echo-throttle': '1MB/s',
      'x-echo-explain': 'true',
    });
    assert.equal(res.status, 502);
    assert.equal(res.headers['x-injected'], 'on');
    assert.equal(res.headers['x-upstream'], 'real', "the upstream's own headers stay");
    assert.deepEqual(JSON.parse(res.text).path, '/orders', "the upstream's body");
    const kinds = (JSON.parse(String(res.headers['x-echo-applied'])) as Array<{ kind: string }>).map(
      (f) => f.kind,
    );
    assert.deepEqual(kinds.sort(), ['status', 'throttle']);
  });

  test("truncate and malformed break the upstream's own answer: its status, headers, half its body", async () => {
    const answer = JSON.stringify({ path: '/cut', method: 'GET', body: '' });
    const truncated = await rawExchange(
      echo.port,
      'GET /cut HTTP/1.1\r\nHost: x\r\nX-Echo-Error: truncate\r\n\r\n',
      { keepOpen: true },
    );
    assert.match(truncated, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(truncated, /\r\nx-upstream: real\r\n/i);
    assert.match(truncated, new RegExp(`\\r\\ncontent-length: ${answer.length}\\r\\n`, 'i'));
    assert.ok(truncated.endsWith(`\r\n\r\n${answer.slice(0, Math.floor(answer.length / 2))}`), truncated);
    const busy = await rawExchange(
      echo.port,
      'GET /busy/cut HTTP/1.1\r\nHost: x\r\nX-Echo-Error: malformed\r\n\r\n',
      { keepOpen: true },
    );
    assert.match(busy, /^HTTP\/1\.1 503 Service Unavailable\r\n/);
    assert.match(busy, /\r\ntransfer-encoding: chunked\r\n/i);
    assert.match(busy, /\r\nzz\r\n/);
    assert.equal(lastSeen().url, '/busy/cut', 'the upstream was called');
  });

  test('a scenario answers what it matches; everything else is forwarded', async () => {
    const posted = await request(`${echo.url}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ path: '/mocked', responses: [{ status: 201, body: 'from the scenario' }] }]),
    });
    assert.equal(posted.statusCode, 200);
    await posted.body.dump();
    try {
      const before = seen.length;
      const mocked = await get(`${echo.url}/mocked`);
      assert.equal(mocked.status, 201);
      assert.equal(mocked.text, 'from the scenario');
      assert.equal(seen.length, before, 'a scenario answer is not forwarded');
      assert.equal((await get(`${echo.url}/real`)).headers['x-upstream'], 'real');
    } finally {
      await (
        await request(`${echo.url}/scenario`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '[]',
        })
      ).body.dump();
    }
  });

  test('the service routes are its own, never forwarded', async () => {
    const before = seen.length;
    for (const path of ['/health', '/ready', '/metrics', '/history', '/scenario']) {
      assert.equal((await get(`${echo.url}${path}`)).status, 200, path);
    }
    assert.equal(seen.length, before);
  });

  test('an HTTP/2 client (h2c) is forwarded over HTTP/1.1: no pseudo-header reaches the upstream', async () => {
    const session = http2.connect(echo.url);
    try {
      const stream = session.request({ ':path': '/h2/orders?x=1', 'x-kept': 'h2' });
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      const [head] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders];
      await once(stream, 'end');
      assert.equal(head[':status'], 200);
      assert.equal(head['x-upstream'], 'real');
      assert.equal(JSON.parse(Buffer.concat(chunks).toString()).path, '/h2/orders?x=1');
      const got = lastSeen();
      assert.equal(got.headers['x-kept'], 'h2');
      assert.equal(got.headers['x-forwarded-host'], `127.0.0.1:${echo.port}`);
      assert.ok(Object.keys(got.headers).every((name) => !name.startsWith(':')));
    } finally {
      session.close();
    }
  });

  test('a large answer is streamed through whole', async () => {
    const res = await request(`${echo.url}/big`);
    let bytes = 0;
    for await (const chunk of res.body) bytes += (chunk as Buffer).length;
    assert.equal(res.statusCode, 200);
    assert.equal(bytes, 128 * 64 * 1024);
  });

  test('a forwarded entry replays through the proxy to the upstream, method, path, query and body', async () => {
    const id = `proxy-replay-${Math.random().toString(36).slice(2, 10)}`;
    await get(
      `${echo.url}/replayed?n=1`,
      { 'x-request-id': id, 'content-type': 'text/plain' },
      'POST',
      'again',
    );
    const before = seen.length;
    const replayed = await request(`${echo.url}/replay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id }),
    });
    assert.equal(replayed.statusCode, 200, await replayed.body.text());
    assert.equal(seen.length, before + 1, 'the replay went through the proxy to the upstream');
    assert.equal(lastSeen().url, '/replayed?n=1');
    assert.equal(lastSeen().body, 'again');
  });

  test("history says upstream, its status and its time; the upstream's meters count it", async () => {
    const id = `proxy-history-${Math.random().toString(36).slice(2, 10)}`;
    await get(`${echo.url}/busy/h`, { 'x-request-id': id });
    const history = (await (await request(`${echo.url}/history?path=/busy/h`)).body.json()) as Array<{
      request_id: string;
      status: number;
      upstream?: { url: string; status: number; duration_ms: number };
    }>;
    const entry = history.find((e) => e.request_id === id);
    assert.equal(entry?.status, 503);
    assert.equal(entry?.upstream?.url, upstreamUrl);
    assert.equal(entry?.upstream?.status, 503);
    assert.equal(typeof entry?.upstream?.duration_ms, 'number');
    assert.ok((await scrapeValue(echo.url, 'echo_upstream_requests_total{status="503"}')) >= 2);
    assert.ok((await scrapeValue(echo.url, 'echo_upstream_request_duration_seconds_count')) >= 1);
  });
});

describe('an upstream that is not there or does not answer', () => {
  let down: RunningEcho;
  let slow: RunningEcho;
  before(async () => {
    down = await startEcho({ ECHO_UPSTREAM: closedUrl });
    slow = await startEcho({ ECHO_UPSTREAM: hangingUrl, ECHO_UPSTREAM_TIMEOUT: '300ms' });
  });
  after(async () => {
    await down.close();
    await slow.close();
  });

  test('a closed port is a 502 naming the upstream and the cause, recorded and counted', async () => {
    const res = await get(`${down.url}/x`, { 'x-request-id': 'proxy-down-1' });
    assert.equal(res.status, 502);
    const error = JSON.parse(res.text).error as { code: string; message: string };
    assert.equal(error.code, 'ECHO_ERR_PROXY_UNREACHABLE');
    assert.ok(error.message.includes(closedUrl), error.message);
    assert.match(error.message, /ECONNREFUSED/);
    const history = (await (await request(`${down.url}/history`)).body.json()) as Array<{
      request_id: string;
      status: number;
      upstream?: { error?: string; status: number | null };
    }>;
    const entry = history.find((e) => e.request_id === 'proxy-down-1');
    assert.equal(entry?.status, 502);
    assert.equal(entry?.upstream?.status, null);
    assert.match(entry?.upstream?.error ?? '', /ECONNREFUSED/);
    assert.equal(await scrapeValue(down.url, 'echo_upstream_requests_total{status="error"}'), 1);
    // An upstream that is down is an answer, not an error of the service's own.
    assert.doesNotMatch(await (await request(`${down.url}/metrics`)).body.text(), /ECHO_ERR_PROXY/);
    // And the server keeps serving.
    assert.equal((await get(`${down.url}/health`)).status, 200);
  });

  test('an upstream slower than ECHO_UPSTREAM_TIMEOUT is a 504 naming it', async () => {
    const res = await get(`${slow.url}/x`);
    assert.equal(res.status, 504);
    const error = JSON.parse(res.text).error as { code: string; message: string };
    assert.equal(error.code, 'ECHO_ERR_PROXY_TIMEOUT');
    assert.ok(error.message.includes(hangingUrl), error.message);
    assert.match(error.message, /300 ms/);
  });

  test('a client that leaves while the upstream is silent ends the forward: the server stays free', async () => {
    const socket = connect((slow as RunningEcho).port, '127.0.0.1');
    await once(socket, 'connect');
    socket.write('GET /leaving HTTP/1.1\r\nHost: x\r\n\r\n');
    socket.destroy();
    assert.equal((await get(`${slow.url}/health`)).status, 200);
  });
});

describe('a large upload streams through', () => {
  let sink: Server;
  let sinkUrl: string;
  const received: Array<{ bytes: number; length: string | undefined }> = [];
  let proxy: EchoProcess;
  before(async () => {
    sink = createServer((req, res) => {
      let bytes = 0;
      req.on('data', (c: Buffer) => {
        bytes += c.length;
      });
      req.on('end', () => {
        received.push({ bytes, length: req.headers['content-length'] });
        res.end(String(bytes));
      });
    });
    sinkUrl = await listenLocal(sink);
    // Its own process, so its memory is its own.
    proxy = await startEchoProcess({ ECHO_UPSTREAM: sinkUrl });
  });
  after(async () => {
    await proxy.stop();
    sink.closeAllConnections();
    sink.close();
  });

  test('256 MiB, far past MAX_BODY_SIZE, reach the upstream whole with their length; the proxy holds a bounded part', async () => {
    const total = 256 * 1024 * 1024;
    const piece = Buffer.alloc(256 * 1024, 1);
    let sent = 0;
    const upload = new Readable({
      read() {
        if (sent >= total) return void this.push(null);
        sent += piece.length;
        this.push(piece);
      },
    });
    const idle = proxy.rssBytes();
    let peak = idle;
    const sampler = setInterval(() => {
      peak = Math.max(peak, proxy.rssBytes());
    }, 20);
    try {
      const res = await request(`${proxy.url}/upload`, {
        method: 'PUT',
        headers: { 'content-type': 'application/octet-stream', 'content-length': String(total) },
        body: upload,
      });
      assert.equal(res.statusCode, 200);
      assert.equal(await res.body.text(), String(total));
    } finally {
      clearInterval(sampler);
    }
    assert.deepEqual(received.at(-1), { bytes: total, length: String(total) });
    // Read whole, the body alone would be 256 MiB (MAX_BODY_SIZE would have refused it at 10 MB).
    assert.ok(peak - idle < 96 * 1024 * 1024, `RSS grew ${Math.round((peak - idle) / 2 ** 20)} MiB`);
  });

  test('a long body a scenario matches on its first 64 KiB is answered by the scenario, not forwarded', async () => {
    const posted = await request(`${proxy.url}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        { path: '/upload', body: { contains: 'MARK' }, responses: [{ status: 202, body: 'held' }] },
      ]),
    });
    assert.equal(posted.statusCode, 200);
    await posted.body.dump();
    const before = received.length;
    const long = Buffer.concat([Buffer.from('MARK'), Buffer.alloc(1024 * 1024, 2)]);
    const res = await request(`${proxy.url}/upload`, { method: 'POST', body: long });
    assert.equal(res.statusCode, 202);
    assert.equal(await res.body.text(), 'held');
    assert.equal(received.length, before);
    // The connection is still good for the next request.
    assert.equal((await request(`${proxy.url}/health`)).statusCode, 200);
  });
});

describe('streams through the proxy: WebSocket and SSE', () => {
  let streams: Server;
  let streamsUrl: string;
  let wss: WebSocketServer;
  let echo: RunningEcho;
  let sawFirst: () => void = () => {};
  const firstSeen = new Promise<void>((resolve) => {
    sawFirst = resolve;
  });
  before(async () => {
    streams = createServer((req, res) => {
      if (req.url === '/events') {
        // The first event, then the rest only once the client has it: a proxy that held the body
        // until its end would never deliver the first one.
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write('data: event 1\n\n');
        void firstSeen.then(() => res.end('data: event 2\n\n'));
        return;
      }
      res.end('plain');
    });
    wss = new WebSocketServer({ server: streams });
    wss.on('connection', (socket, req) => {
      socket.send(`hello ${req.url} via ${String(req.headers['x-forwarded-host'])}`);
      socket.on('message', (data) => socket.send(`upstream got ${String(data)}`));
    });
    streamsUrl = await listenLocal(streams);
    echo = await startEcho({ ECHO_UPSTREAM: streamsUrl });
  });
  after(async () => {
    await echo.close();
    wss.close();
    streams.closeAllConnections();
    streams.close();
  });

  test('a WebSocket upgrade on any path but /ws is tunnelled to the upstream, both ways', async () => {
    const client = new WebSocket(`${echo.url.replace('http', 'ws')}/live/feed`);
    const messages: string[] = [];
    client.on('message', (data) => messages.push(String(data)));
    await once(client, 'open');
    client.send('ping');
    await until('two messages through the tunnel', () => messages.length >= 2);
    client.close();
    assert.deepEqual(messages, [`hello /live/feed via 127.0.0.1:${echo.port}`, 'upstream got ping']);
  });

  test("the service's own /ws stays its own", async () => {
    const client = new WebSocket(`${echo.url.replace('http', 'ws')}/ws`);
    await once(client, 'open');
    client.send('ping');
    const [data] = (await once(client, 'message')) as [Buffer];
    client.close();
    assert.doesNotMatch(String(data), /hello|upstream got/);
  });

  test('an upstream that refuses the upgrade: the client gets a failure, not a hang', async () => {
    const refusing = await startEcho({ ECHO_UPSTREAM: closedUrl });
    try {
      const client = new WebSocket(`${refusing.url.replace('http', 'ws')}/live`);
      const [error] = (await once(client, 'error').catch((e: unknown) => [e])) as [Error];
      assert.match(error.message, /Unexpected server response: 502/);
      client.terminate();
    } finally {
      await refusing.close();
    }
  });

  test('an SSE stream passes event by event, not at its end', async () => {
    const res = await request(`${echo.url}/events`);
    assert.equal(res.headers['content-type'], 'text/event-stream');
    let text = '';
    const reading = (async () => {
      for await (const chunk of res.body) {
        text += String(chunk);
        if (text.includes('event 1')) sawFirst();
      }
    })();
    const timeout = new Promise((_, reject) =>
      setTimeout(() => reject(new Error(`stalled at: ${text}`)), 10_000).unref(),
    );
    await Promise.race([reading, timeout]);
    assert.equal(text, 'data: event 1\n\ndata: event 2\n\n');
  });
});

describe('slow-close of an upstream answer', () => {
  let echo: RunningEcho;
  before(async () => {
    echo = await startEcho({ ECHO_UPSTREAM: upstreamUrl, ECHO_ERROR_TIMEOUT: '300ms' });
  });
  after(() => echo.close());

  test("the upstream's whole answer arrives, then the connection stays open before it closes", async () => {
    const socket = connect(echo.port, '127.0.0.1');
    await once(socket, 'connect');
    socket.write('GET /lingering HTTP/1.1\r\nHost: x\r\nX-Echo-Error: slow-close\r\n\r\n');
    let got = '';
    let wholeAt = 0;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      got += chunk;
      if (wholeAt === 0 && got.endsWith('}')) wholeAt = performance.now();
    });
    await once(socket, 'close');
    const closedAt = performance.now();
    assert.match(got, /\r\nx-upstream: real\r\n/i);
    assert.ok(got.endsWith('"path":"/lingering","method":"GET","body":""}'), got);
    assert.ok(
      wholeAt > 0 && closedAt - wholeAt >= 250,
      `closed ${Math.round(closedAt - wholeAt)} ms after the answer`,
    );
  });
});

describe("a scenario's own upstream", () => {
  let echo: RunningEcho;
  before(async () => {
    // No ECHO_UPSTREAM: only what the scenario matches is forwarded.
    echo = await startEcho();
  });
  after(() => echo.close());

  async function setScenarios(set: unknown): Promise<{ status: number; text: string }> {
    const res = await request(`${echo.url}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(set),
    });
    return { status: res.statusCode, text: await res.body.text() };
  }

  test('"5% of POST /orders get a 503" on a real service: the matched requests are forwarded with the faults drawn', async () => {
    const set = [
      { pathPattern: '/orders/*', method: ['POST'], upstream: upstreamUrl, responses: [{ error: '503:50' }] },
    ];
    assert.equal((await setScenarios(set)).status, 200);
    const outcomes = new Set<string>();
    for (let seed = 1; seed <= 24; seed++) {
      const before = seen.length;
      const res = await get(`${echo.url}/orders/${seed}`, { 'x-echo-seed': String(seed) }, 'POST', 'x');
      if (res.status === 503) {
        assert.match(res.text, /injected by echo-chaos/);
        assert.equal(seen.length, before, 'an injected 503 never reaches the upstream');
        outcomes.add('injected');
      } else {
        assert.equal(res.headers['x-upstream'], 'real');
        assert.equal(lastSeen().url, `/orders/${seed}`);
        outcomes.add('forwarded');
      }
    }
    assert.deepEqual([...outcomes].sort(), ['forwarded', 'injected']);
    // What the scenario does not match is echoed, as without it.
    const other = await get(`${echo.url}/other`);
    assert.equal(other.headers['x-upstream'], undefined);
    assert.match(other.text, /^GET \/other HTTP\/1\.1/);
  });

  test("a forwarding response's status replaces the upstream's and its headers are added", async () => {
    const set = [
      {
        path: '/relabelled',
        upstream: upstreamUrl,
        responses: [{ status: 299, headers: { 'X-Scn': 'on' } }],
      },
    ];
    assert.equal((await setScenarios(set)).status, 200);
    const res = await get(`${echo.url}/relabelled`);
    assert.equal(res.status, 299);
    assert.equal(res.headers['x-scn'], 'on');
    assert.equal(res.headers['x-upstream'], 'real');
    assert.equal(JSON.parse(res.text).path, '/relabelled');
  });

  test('a bad upstream is a 400 naming it, and the stored set stays', async () => {
    const stored = await (await request(`${echo.url}/scenario`)).body.json();
    for (const upstream of ['ftp://x', 'http://u:p@x', 'http://x/?q=1', 'not a url']) {
      const refused = await setScenarios([{ path: '/x', upstream, responses: [{}] }]);
      assert.equal(refused.status, 400, upstream);
      assert.match(refused.text, /\/0\/upstream/);
    }
    assert.deepEqual(await (await request(`${echo.url}/scenario`)).body.json(), stored);
  });
});

describe('Host as configured', () => {
  let echo: RunningEcho;
  before(async () => {
    echo = await startEcho({ ECHO_UPSTREAM: upstreamUrl, ECHO_UPSTREAM_HOST_HEADER: 'preserve' });
  });
  after(() => echo.close());

  test("ECHO_UPSTREAM_HOST_HEADER=preserve sends the client's Host", async () => {
    await get(`${echo.url}/host`, { host: 'shop.example' });
    assert.equal(lastSeen().headers.host, 'shop.example');
  });
});
