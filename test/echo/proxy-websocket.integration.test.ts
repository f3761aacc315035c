import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { WebSocket, WebSocketServer } from 'ws';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { listenLocal } from '../helpers/http.ts';
import { scrapeValue } from '../helpers/metrics.ts';

/**
 * Faults on the WebSocket traffic the reverse proxy tunnels (#32, item 2): a real `ws` server as the
 * upstream, counting the handshakes that reach it, and a `ws` client through echo-chaos. A handshake
 * gets the faults of any forwarded request from its headers, the environment and scenarios; the
 * upstream is never called for one that is answered instead.
 */

let upstream: Server;
let upstreamUrl: string;
let wss: WebSocketServer;
/** The paths of the handshakes that reached the upstream. */
const reached: string[] = [];
let echo: RunningEcho;
let wsUrl: string;

before(async () => {
  upstream = createServer((_req, res) => res.end('plain'));
  wss = new WebSocketServer({ server: upstream });
  wss.on('connection', (socket, req) => {
    reached.push(req.url ?? '');
    if (req.url?.startsWith('/big')) {
      // 3 KiB at once: a throttle of 1KB/s must spread it over about 3 s.
      socket.send(Buffer.alloc(3 * 1024, 1));
      return;
    }
    if (req.url?.startsWith('/bye')) {
      socket.send('bye');
      socket.close(1000, 'done');
      return;
    }
    socket.send(`hello ${req.url}`);
    socket.on('message', (data) => socket.send(`upstream got ${String(data)}`));
  });
  upstreamUrl = await listenLocal(upstream);
  echo = await startEcho({ ECHO_UPSTREAM: upstreamUrl, ECHO_ERROR_TIMEOUT: '400ms' });
  wsUrl = echo.url.replace('http', 'ws');
});

after(async () => {
  await echo.close();
  wss.close();
  upstream.closeAllConnections();
  upstream.close();
});

/** Opens a WebSocket through echo-chaos: the 101's headers and the first message, or the refusal. */
async function open(
  path: string,
  headers: Record<string, string> = {},
): Promise<{ client: WebSocket; response: IncomingMessage; first: string; openMs: number }> {
  const started = performance.now();
  const client = new WebSocket(`${wsUrl}${path}`, { headers });
  // Both listened for at once: the first message may come in the same read as the 101.
  const upgraded = once(client, 'upgrade') as Promise<[IncomingMessage]>;
  const message = once(client, 'message') as Promise<[Buffer]>;
  const [response] = await upgraded;
  const [data] = await message;
  return { client, response, first: String(data), openMs: performance.now() - started };
}

/** A handshake echo-chaos answers instead of upgrading: its status, headers and body. */
async function refused(
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: IncomingMessage['headers']; body: string }> {
  const client = new WebSocket(`${wsUrl}${path}`, { headers });
  client.on('error', () => {});
  const [, response] = (await once(client, 'unexpected-response')) as [unknown, IncomingMessage];
  const answer = await readAnswer(response);
  client.terminate();
  return answer;
}

async function readAnswer(res: IncomingMessage) {
  let body = '';
  for await (const chunk of res) body += String(chunk);
  return { status: res.statusCode ?? 0, headers: res.headers, body };
}

describe('faults before the upstream is called', () => {
  test('a delay holds the handshake, then the tunnel works both ways and says what was applied', async () => {
    const before = reached.length;
    const { client, response, first, openMs } = await open('/live/delayed', {
      'X-Echo-Delay': '300ms',
      'X-Echo-Explain': 'true',
      'X-Echo-Set-Header-X-Lane': 'slow',
    });
    assert.ok(openMs >= 290, `opened after ${Math.round(openMs)} ms, asked 300`);
    assert.equal(first, 'hello /live/delayed');
    assert.equal(reached.length, before + 1);
    assert.equal(response.headers['x-echo-fault'], 'delay');
    assert.equal(response.headers['x-lane'], 'slow');
    const applied = JSON.parse(String(response.headers['x-echo-applied'])) as Array<{
      kind: string;
      value: number;
    }>;
    assert.deepEqual(
      applied.map((f) => [f.kind, f.value]),
      [['delay', 300]],
    );
    client.send('ping');
    const [echoed] = (await once(client, 'message')) as [Buffer];
    assert.equal(String(echoed), 'upstream got ping');
    client.close();
  });

  test('an error status answers the handshake and the upstream is never called', async () => {
    const before = reached.length;
    const answer = await refused('/live/failing', { 'X-Echo-Error': '503' });
    assert.equal(answer.status, 503);
    assert.equal(answer.headers['x-echo-fault'], 'error');
    assert.equal(answer.headers['retry-after'], '1');
    assert.match(answer.body, /503 Service Unavailable \(injected by echo-chaos: error\)/);
    assert.equal(reached.length, before, 'the upstream saw no handshake');
  });

  test('chaos at 100% answers with a chaos status; a replaced status answers with it', async () => {
    const before = reached.length;
    const chaos = await refused('/live/chaos', { 'X-Echo-Chaos': '100' });
    assert.ok([500, 502, 503, 504, 408, 429].includes(chaos.status), String(chaos.status));
    assert.equal(chaos.headers['x-echo-fault'], 'chaos');
    const status = await refused('/live/status', { 'X-Echo-Status': '418' });
    assert.equal(status.status, 418);
    assert.equal(status.headers['x-echo-fault'], 'status');
    assert.equal(reached.length, before);
  });

  test('reset ends the connection with an RST, before the upstream is called', async () => {
    const before = reached.length;
    const client = new WebSocket(`${wsUrl}/live/reset`, { headers: { 'X-Echo-Error': 'reset' } });
    const [error] = (await once(client, 'error')) as [NodeJS.ErrnoException];
    assert.equal(error.code, 'ECONNRESET');
    assert.equal(reached.length, before);
  });

  test('truncate sends half of a 101 head and closes; the client fails the handshake', async () => {
    const before = reached.length;
    const client = new WebSocket(`${wsUrl}/live/cut`, { headers: { 'X-Echo-Error': 'truncate' } });
    const [error] = (await once(client, 'error')) as [Error];
    assert.match(error.message, /socket hang up|ECONNRESET|Parse Error|closed/i);
    assert.equal(client.readyState, WebSocket.CLOSED);
    assert.equal(reached.length, before);
  });

  test('a bad control header is a 400 naming it, and the next handshake still works', async () => {
    const answer = await refused('/live/bad', { 'X-Echo-Delay': 'soon' });
    assert.equal(answer.status, 400);
    const body = JSON.parse(answer.body) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'ECHO_ERR_INVALID_HEADER');
    assert.match(body.error.message, /x-echo-delay/i);
    const { client, first } = await open('/live/after-bad');
    assert.equal(first, 'hello /live/after-bad');
    client.close();
  });
});

describe('faults on the tunnel', () => {
  test('a throttle slows what the upstream sends through the tunnel', async () => {
    const { client, first, openMs } = await open('/big/throttled', { 'X-Echo-Throttle': '1KB/s' });
    assert.equal(first.length, 3 * 1024);
    // 3 KiB at 1 KB/s from an empty bucket: about 3 s; a lower bound only.
    assert.ok(openMs >= 2000, `the 3 KiB message came after ${Math.round(openMs)} ms`);
    client.close();
  });

  test('slow-close: after the upstream ends, the client is held open before the close', async () => {
    const client = new WebSocket(`${wsUrl}/bye/lingering`, { headers: { 'X-Echo-Error': 'slow-close' } });
    const upgraded = once(client, 'upgrade') as Promise<[IncomingMessage]>;
    const message = once(client, 'message') as Promise<[Buffer]>;
    const closed = once(client, 'close');
    const [response] = await upgraded;
    assert.equal(response.headers['x-echo-fault'], 'slow-close');
    const [data] = await message;
    assert.equal(String(data), 'bye');
    const messageAt = performance.now();
    await closed;
    const heldMs = performance.now() - messageAt;
    assert.ok(heldMs >= 350, `closed ${Math.round(heldMs)} ms after the upstream's last message`);
  });
});

describe('scenarios, the master switch, history and meters', () => {
  test('a scenario answers a handshake with its response; another forwards it with a delay', async () => {
    const set = await fetch(`${echo.url}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        { path: '/live/mocked', responses: [{ status: 403, body: 'no sockets here' }] },
        {
          path: '/live/slowed',
          upstream: upstreamUrl,
          responses: [{ delay: '300ms', headers: { 'X-From': 'scenario' } }],
        },
      ]),
    });
    assert.equal(set.status, 200, await set.text());
    try {
      const before = reached.length;
      const mocked = await refused('/live/mocked', {});
      assert.equal(mocked.status, 403);
      assert.equal(mocked.body, 'no sockets here');
      assert.equal(mocked.headers['x-echo-fault'], 'scenario');
      assert.equal(reached.length, before);

      const { client, response, first, openMs } = await open('/live/slowed');
      assert.equal(first, 'hello /live/slowed');
      assert.ok(openMs >= 290, `opened after ${Math.round(openMs)} ms`);
      assert.equal(response.headers['x-from'], 'scenario');
      assert.equal(response.headers['x-echo-fault'], 'scenario,delay');
      client.close();
    } finally {
      await fetch(`${echo.url}/scenario`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '[]',
      });
    }
  });

  test('with faults switched off, a faulted handshake is tunnelled plainly', async () => {
    const off = await fetch(`${echo.url}/control/faults`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"enabled": false}',
    });
    assert.equal(off.status, 200);
    try {
      const { client, response, first } = await open('/live/switched-off', { 'X-Echo-Error': '503' });
      assert.equal(first, 'hello /live/switched-off');
      assert.equal(response.headers['x-echo-fault'], undefined);
      client.close();
    } finally {
      await fetch(`${echo.url}/control/faults`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: '{"enabled": true}',
      });
    }
  });

  test('history records each handshake with its faults and the upstream; the meters count them', async () => {
    const { client } = await open('/live/recorded', {
      'X-Echo-Delay': '10ms',
      'X-Request-ID': 'ws-recorded-1',
    });
    client.close();
    await refused('/live/recorded', { 'X-Echo-Error': '502', 'X-Request-ID': 'ws-recorded-2' });
    const history = (await (await fetch(`${echo.url}/history?path=/live/recorded`)).json()) as Array<{
      request_id: string;
      status: number;
      faults: Array<{ kind: string }>;
      upstream?: { status: number | null; duration_ms: number | null };
    }>;
    const tunnelled = history.find((e) => e.request_id === 'ws-recorded-1');
    const failed = history.find((e) => e.request_id === 'ws-recorded-2');
    assert.equal(tunnelled?.status, 101);
    assert.deepEqual(
      tunnelled?.faults.map((f) => f.kind),
      ['delay'],
    );
    assert.equal(tunnelled?.upstream?.status, 101);
    assert.equal(typeof tunnelled?.upstream?.duration_ms, 'number');
    assert.equal(failed?.status, 502);
    assert.equal(failed?.upstream, undefined, 'the upstream was not called');
    assert.ok((await scrapeValue(echo.url, 'echo_upstream_requests_total{status="101"}')) >= 1);
    assert.ok((await scrapeValue(echo.url, 'echo_faults_injected_total{kind="error"}')) >= 1);
  });
});
