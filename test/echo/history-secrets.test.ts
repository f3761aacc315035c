import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withEcho } from '../helpers/echo-server.ts';

/**
 * `GET /history` masks credentials by default (`ECHO_HISTORY_SECRETS=mask`): the credentials
 * headers, secret-named headers and secret-named members of a JSON body; `POST /replay` still
 * re-sends the original; `ECHO_HISTORY_SECRETS=show` shows everything as received.
 */

interface Entry {
  request_id: string;
  headers: Record<string, string>;
  body: string;
}

const SECRET_BODY = JSON.stringify({
  user: 'ann',
  password: 'hunter2',
  nested: { api_token: 't0k', keep: 1 },
});

async function recordSecret(url: string): Promise<Entry> {
  await fetch(`${url}/login`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: 'Bearer abc.def',
      cookie: 'session=s3cr3t',
      'x-api-key': 'k3y',
      'x-plain': 'visible',
      'x-request-id': 'secret-1',
    },
    body: SECRET_BODY,
  });
  const history = (await (await fetch(`${url}/history`)).json()) as Entry[];
  const entry = history.find((e) => e.request_id === 'secret-1');
  assert.ok(entry);
  return entry;
}

test('history secrets – masked by default in GET /history; replay re-sends the original', () =>
  withEcho(async (echo) => {
    const entry = await recordSecret(echo.url);
    assert.equal(entry.headers['authorization'], '[MASKED]');
    assert.equal(entry.headers['cookie'], '[MASKED]');
    assert.equal(entry.headers['x-api-key'], '[MASKED]');
    assert.equal(entry.headers['x-plain'], 'visible');
    assert.deepEqual(JSON.parse(entry.body), {
      user: 'ann',
      password: '[MASKED]',
      nested: { api_token: '[MASKED]', keep: 1 },
    });
    const replayed = await fetch(`${echo.url}/replay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'secret-1' }),
    });
    assert.equal(replayed.status, 200);
    assert.equal(await replayed.text(), SECRET_BODY, 'the original body');
    // A GET is answered with a summary of its headers: the replayed one shows the original.
    await fetch(`${echo.url}/me`, {
      headers: { authorization: 'Bearer abc.def', 'x-request-id': 'secret-2' },
    });
    const summary = await fetch(`${echo.url}/replay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'secret-2' }),
    });
    assert.match(await summary.text(), /^authorization: Bearer abc\.def$/im, 'the original header');
  }));

test('history secrets – ECHO_HISTORY_SECRETS=show shows them as received', () =>
  withEcho(
    async (echo) => {
      const entry = await recordSecret(echo.url);
      assert.equal(entry.headers['authorization'], 'Bearer abc.def');
      assert.equal(entry.headers['cookie'], 'session=s3cr3t');
      assert.equal(entry.body, SECRET_BODY);
    },
    { ECHO_HISTORY_SECRETS: 'show' },
  ));

/** Echoes `body` with request id `id`, then reads its history entry. */
async function historyBodyOf(url: string, id: string, body: string | Buffer): Promise<string> {
  const res = await fetch(`${url}/echo`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream', 'x-request-id': id },
    body,
  });
  await res.arrayBuffer();
  const history = (await (await fetch(`${url}/history`)).json()) as Entry[];
  const entry = history.find((e) => e.request_id === id);
  assert.ok(entry, id);
  return entry.body;
}

test('history secrets – a JSON body cut at ECHO_HISTORY_MAX_BODY, one nesting deeper than the walk, and a binary body are masked too', () =>
  withEcho(
    async (echo) => {
      // Cut: the stored prefix is no longer JSON.
      const cut = await historyBodyOf(
        echo.url,
        'cut-1',
        JSON.stringify({ password: 'CLEARPW1', pad: 'x'.repeat(2000) }),
      );
      assert.ok(!cut.includes('CLEARPW1'), cut.slice(0, 80));
      assert.match(cut, /"password":\s*"?\[MASKED\]/);

      // Deeper than 32 levels: hidden, while a deep body without secrets stays as sent.
      let deep: unknown = { password: 'DEEPPW' };
      let plain: unknown = { keep: 'me' };
      for (let i = 0; i < 40; i++) {
        deep = { level: deep };
        plain = { level: plain };
      }
      const deepBody = await historyBodyOf(echo.url, 'deep-1', JSON.stringify(deep));
      assert.ok(!deepBody.includes('DEEPPW'));
      assert.equal(await historyBodyOf(echo.url, 'deep-2', JSON.stringify(plain)), JSON.stringify(plain));

      // Not UTF-8 (stored as base64), with a secret next to the stray byte.
      const binary = Buffer.concat([Buffer.from('{"password":"BINPW"}'), Buffer.from([0xff, 0x00])]);
      const shown = await historyBodyOf(echo.url, 'bin-1', binary);
      assert.ok(!Buffer.from(shown, 'base64').toString('latin1').includes('BINPW'), shown);
      const harmless = Buffer.from([0xff, 0x00, 0x01, 0x02]);
      assert.equal(await historyBodyOf(echo.url, 'bin-2', harmless), harmless.toString('base64'));
    },
    { ECHO_HISTORY_MAX_BODY: '1024' },
  ));
