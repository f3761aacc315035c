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
