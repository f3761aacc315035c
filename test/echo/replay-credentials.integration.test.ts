import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { withEcho } from '../helpers/echo-server.ts';
import { exitOf } from '../helpers/runtime.ts';

/**
 * `ECHO_REPLAY_CREDENTIALS` (default `masked`): what `POST /replay` sends to a target. Masked, the
 * target gets the request as `GET /history` shows it, without its credential headers; `original`,
 * as it was received.
 */

interface Received {
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A target on 127.0.0.1 that records what reaches it and answers 204. */
async function startTarget(): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      received.push({ url: req.url ?? '', headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, received, server };
}

/** Records a login with every kind of credential, replays it to the target, answers what arrived. */
async function replayLogin(echoUrl: string, modifyHeaders?: Record<string, string>): Promise<Received> {
  const target = await startTarget();
  try {
    const sent = await fetch(`${echoUrl}/login?access_token=AT123&page=1`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: 'Bearer ORIGINAL-TOKEN',
        cookie: 'session=S3CR3T',
        'x-api-key': 'K3Y',
        'x-plain': 'visible',
        'x-request-id': 'login-1',
      },
      body: 'user=ann&password=hunter2',
    });
    await sent.arrayBuffer();
    const replayed = await fetch(`${echoUrl}/replay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: 'login-1',
        target: target.url,
        ...(modifyHeaders ? { modify_headers: modifyHeaders } : {}),
      }),
    });
    assert.equal(replayed.status, 204, await replayed.text());
    assert.equal(target.received.length, 1);
    return target.received[0]!;
  } finally {
    target.server.close();
  }
}

test('replay credentials – by default a target gets no original credential: no credential header, body and query masked', () =>
  withEcho(async (echo) => {
    const got = await replayLogin(echo.url);
    assert.equal(got.headers['authorization'], undefined);
    assert.equal(got.headers['cookie'], undefined);
    assert.equal(got.headers['x-api-key'], undefined);
    assert.equal(got.headers['x-plain'], 'visible');
    assert.equal(got.url, '/login?access_token=[MASKED]&page=1');
    assert.equal(got.body, 'user=ann&password=[MASKED]');
    const everything = JSON.stringify(got);
    for (const secret of ['ORIGINAL-TOKEN', 'S3CR3T', 'K3Y', 'AT123', 'hunter2'])
      assert.ok(!everything.includes(secret), `${secret} reached the target`);
  }));

test('replay credentials – masked, a credential given in modify_headers is sent: the caller chose it', () =>
  withEcho(async (echo) => {
    const got = await replayLogin(echo.url, { authorization: 'Bearer CHOSEN' });
    assert.equal(got.headers['authorization'], 'Bearer CHOSEN');
    assert.equal(got.headers['cookie'], undefined);
  }));

test('replay credentials – ECHO_REPLAY_CREDENTIALS=original sends the request as received', () =>
  withEcho(
    async (echo) => {
      const got = await replayLogin(echo.url);
      assert.equal(got.headers['authorization'], 'Bearer ORIGINAL-TOKEN');
      assert.equal(got.headers['cookie'], 'session=S3CR3T');
      assert.equal(got.headers['x-api-key'], 'K3Y');
      assert.equal(got.url, '/login?access_token=AT123&page=1');
      assert.equal(got.body, 'user=ann&password=hunter2');
    },
    { ECHO_REPLAY_CREDENTIALS: 'original' },
  ));

test('replay credentials – a bad ECHO_REPLAY_CREDENTIALS stops startup with one line naming variable, value and form', async () => {
  const main = fileURLToPath(new URL('../../src/echo/main.ts', import.meta.url));
  const child = spawn(process.execPath, [main], {
    env: { PATH: process.env['PATH'] ?? '', PORT: '0', ECHO_REPLAY_CREDENTIALS: 'plain' },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 15_000,
  });
  const result = await exitOf(child);
  assert.equal(result.code, 1);
  assert.deepEqual(
    result.stderr.split('\n').filter((line) => line !== ''),
    ['echo-chaos: ECHO_REPLAY_CREDENTIALS="plain" is invalid: expected masked or original'],
  );
});
