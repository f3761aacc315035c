import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withEcho } from '../helpers/echo-server.ts';

/**
 * `GET /history` masks secrets by default (`ECHO_HISTORY_SECRETS=mask`) with obs's rules: the
 * credentials headers, secret-named headers, query parameters, form and JSON fields, and bearer
 * tokens, emails and card numbers in every text; `POST /replay` sends that view without the
 * credential headers unless `ECHO_REPLAY_CREDENTIALS=original`; `ECHO_HISTORY_SECRETS=show` shows
 * everything as received.
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

/** Replays `id` to this server itself; answers the echoed text. */
async function replaySelf(url: string, id: string): Promise<string> {
  const replayed = await fetch(`${url}/replay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id }),
  });
  assert.equal(replayed.status, 200);
  return replayed.text();
}

test('history secrets – masked by default in GET /history; replay sends the masked view, without the credential headers', () =>
  withEcho(async (echo) => {
    const entry = await recordSecret(echo.url);
    assert.equal(entry.headers['authorization'], '[MASKED]');
    assert.equal(entry.headers['cookie'], '[MASKED]');
    assert.equal(entry.headers['x-api-key'], '[MASKED]');
    assert.equal(entry.headers['x-plain'], 'visible');
    const masked = { user: 'ann', password: '[MASKED]', nested: { api_token: '[MASKED]', keep: 1 } };
    assert.deepEqual(JSON.parse(entry.body), masked);
    assert.deepEqual(JSON.parse(await replaySelf(echo.url, 'secret-1')), masked, 'the masked body');
    // A GET is answered with a summary of its headers: the replayed one has no Authorization.
    await fetch(`${echo.url}/me`, {
      headers: { authorization: 'Bearer abc.def', 'x-request-id': 'secret-2' },
    });
    assert.doesNotMatch(await replaySelf(echo.url, 'secret-2'), /^authorization:/im);
  }));

test('history secrets – ECHO_REPLAY_CREDENTIALS=original: replay re-sends the original, the view stays masked', () =>
  withEcho(
    async (echo) => {
      const entry = await recordSecret(echo.url);
      assert.equal(entry.headers['authorization'], '[MASKED]');
      assert.equal(await replaySelf(echo.url, 'secret-1'), SECRET_BODY, 'the original body');
      await fetch(`${echo.url}/me`, {
        headers: { authorization: 'Bearer abc.def', 'x-request-id': 'secret-2' },
      });
      assert.match(await replaySelf(echo.url, 'secret-2'), /^authorization: Bearer abc\.def$/im);
    },
    { ECHO_REPLAY_CREDENTIALS: 'original' },
  ));

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

interface FullEntry extends Entry {
  url: string;
  path: string;
  query: string;
  body_encoding: string;
}

/** Sends one request with request id `id`, then reads its history entry. */
async function recorded(url: string, id: string, path: string, init: RequestInit = {}): Promise<FullEntry> {
  const res = await fetch(`${url}${path}`, {
    ...init,
    headers: { ...(init.headers as Record<string, string>), 'x-request-id': id },
  });
  await res.arrayBuffer();
  const history = (await (await fetch(`${url}/history`)).json()) as FullEntry[];
  const entry = history.find((e) => e.request_id === id);
  assert.ok(entry, id);
  return entry;
}

test('history secrets – form bodies, query strings, text bodies, emails and cards in JSON, binary bytes: masked with obs’s rules, the rest as sent', () =>
  withEcho(
    async (echo) => {
      // A form body: a secret-named field keeps its name, its value is the mask.
      const form = await recorded(echo.url, 'form-1', '/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'user=ann&password=hunter2&token=t0k3n&note=hello+world&client%5Fsecret=CS1',
      });
      assert.equal(
        form.body,
        'user=ann&password=[MASKED]&token=[MASKED]&note=hello+world&client%5Fsecret=[MASKED]',
      );

      // A query string: in `url` and `query`; `path` and the other parameters as sent.
      const query = await recorded(echo.url, 'query-1', '/callback?access_token=AT123&page=2&api_key=K456');
      assert.equal(query.url, '/callback?access_token=[MASKED]&page=2&api_key=[MASKED]');
      assert.equal(query.query, 'access_token=[MASKED]&page=2&api_key=[MASKED]');
      assert.equal(query.path, '/callback');

      // A text body holding a header line with a bearer token.
      const text = await recorded(echo.url, 'text-1', '/notes', {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: 'GET /x HTTP/1.1\nAuthorization: Bearer abc.def.ghi\nX-Note: keep me\n',
      });
      assert.ok(!text.body.includes('abc.def.ghi'), text.body);
      assert.equal(text.body, 'GET /x HTTP/1.1\nAuthorization: [MASKED]\nX-Note: keep me\n');

      // Emails and card numbers (Luhn-valid; an order number is not) in a JSON body.
      const json = await recorded(echo.url, 'json-1', '/orders', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          email: 'ann@example.com',
          card: '4111 1111 1111 1111',
          card_number: 5555555555554444,
          order: '1234567890123',
          note: 'mail bob@example.org, thanks',
          name: 'Ann',
        }),
      });
      assert.deepEqual(JSON.parse(json.body), {
        email: '[MASKED:email]',
        card: '[MASKED:card]',
        card_number: '[MASKED:card]',
        order: '1234567890123',
        note: 'mail [MASKED:email], thanks',
        name: 'Ann',
      });

      // A binary body: its base64 view decodes to the same bytes, the secret masked.
      const binary = Buffer.concat([
        Buffer.from([0xff, 0x00]),
        Buffer.from('Authorization: Bearer BINTOKEN\nrest'),
        Buffer.from([0xfe]),
      ]);
      const bin = await recorded(echo.url, 'bin-3', '/upload', {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body: binary,
      });
      assert.equal(bin.body_encoding, 'base64');
      assert.deepEqual(
        Buffer.from(bin.body, 'base64'),
        Buffer.concat([
          Buffer.from([0xff, 0x00]),
          Buffer.from('Authorization: [MASKED]\nrest'),
          Buffer.from([0xfe]),
        ]),
      );

      // Nothing secret: every kind as sent.
      const plain = await recorded(echo.url, 'plain-1', '/search?q=shoes&page=1', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'colour=red&size=42',
      });
      assert.equal(plain.url, '/search?q=shoes&page=1');
      assert.equal(plain.body, 'colour=red&size=42');
    },
    { ECHO_HISTORY_MAX_BODY: '262144' },
  ));

test('history secrets – a text body longer than obs masks in one go is masked whole, and shown whole', () =>
  withEcho(
    async (echo) => {
      const body = `${'lorem ipsum '.repeat(10_000)}password=LATEPW and Bearer LATETOKEN end`;
      const entry = await recorded(echo.url, 'long-1', '/long', {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body,
      });
      assert.ok(!entry.body.includes('LATEPW') && !entry.body.includes('LATETOKEN'), entry.body.slice(-100));
      assert.equal(entry.body, `${'lorem ipsum '.repeat(10_000)}password=[MASKED] and Bearer [MASKED] end`);
    },
    { ECHO_HISTORY_MAX_BODY: '262144' },
  ));

test('history secrets – a numeric header is never a card: an epoch-ms deadline that passes the Luhn check is shown as sent', () =>
  withEcho(async (echo) => {
    // 1795831715044 passes the Luhn check, as one 13-digit timestamp in ten does.
    const deadline = '1795831715044';
    const res = await fetch(`${echo.url}/numbers`, {
      headers: {
        'X-Request-ID': 'numeric-1',
        'Obs-Timeout-Deadline-Ms': deadline,
        'X-Card': '4111 1111 1111 1111',
        'X-Order': deadline,
      },
    });
    await res.arrayBuffer();
    const entries = (await (await fetch(`${echo.url}/history`)).json()) as Entry[];
    const entry = entries.find((e) => e.request_id === 'numeric-1');
    assert.equal(entry?.headers['obs-timeout-deadline-ms'], deadline);
    // Anywhere else the same digits, and a card, are masked as before.
    assert.equal(entry?.headers['x-order'], '[MASKED:card]');
    assert.equal(entry?.headers['x-card'], '[MASKED:card]');
  }));
