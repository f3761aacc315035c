import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { History } from '../../src/echo/history.ts';
import { seededRandom } from '../../src/echo/random.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { type Answer, type SendOptions, send as sendTo } from '../helpers/http.ts';
import { until } from '../helpers/runtime.ts';

interface Entry {
  id: string;
  request_id: string;
  timestamp: string;
  method: string;
  url: string;
  path: string;
  query: string;
  headers: Record<string, string | string[]>;
  body: string;
  body_encoding?: string;
  body_size: number;
  body_truncated: boolean;
  remote_addr: string;
  protocol: string;
  status: number | null;
  duration_ms: number | null;
}

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

const send = (echo: RunningEcho, path: string, options?: SendOptions): Promise<Answer> =>
  sendTo(echo.url + path, options);

async function history(echo: RunningEcho): Promise<Entry[]> {
  const res = await request(`${echo.url}/history`);
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  return (await res.body.json()) as Entry[];
}

/** The answered status is written when the response finishes, just after the client has it: wait for it. */
async function settledHistory(echo: RunningEcho): Promise<Entry[]> {
  let entries: Entry[] = [];
  await until('every history entry has its status', async () => {
    entries = await history(echo);
    return entries.every((e) => e.status !== null);
  });
  return entries;
}

test('history – entries come oldest first with every documented field', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const before = Date.now();
  await send(echo, '/first?a=1&b=two', { headers: { 'X-Request-ID': 'hist-1', 'X-Custom': 'one' } });
  await send(echo, '/second/path', {
    method: 'POST',
    headers: { 'X-Request-ID': 'hist-2', 'Content-Type': 'application/json' },
    body: '{"hello":"world"}',
  });
  const after = Date.now();

  const entries = await settledHistory(echo);
  assert.equal(entries.length, 2);
  const [first, second] = entries as [Entry, Entry];

  assert.equal(first.id, 'hist-1');
  assert.equal(first.request_id, 'hist-1');
  assert.match(first.timestamp, ISO_WITH_OFFSET);
  const at = Date.parse(first.timestamp);
  assert.ok(at >= before - 1000 && at <= after + 1000, `timestamp ${first.timestamp} is not now`);
  assert.equal(first.method, 'GET');
  assert.equal(first.url, '/first?a=1&b=two');
  assert.equal(first.path, '/first');
  assert.equal(first.query, 'a=1&b=two');
  assert.equal(first.headers['x-custom'], 'one');
  assert.equal(first.headers['x-request-id'], 'hist-1');
  assert.equal(first.body, '');
  assert.notEqual(first.body_encoding, 'base64');
  assert.equal(first.body_size, 0);
  assert.equal(first.body_truncated, false);
  assert.equal(first.remote_addr, '127.0.0.1');
  assert.equal(first.protocol, 'HTTP/1.1');
  assert.equal(first.status, 200);
  assert.equal(typeof first.duration_ms, 'number');
  assert.ok((first.duration_ms ?? -1) >= 0);

  assert.equal(second.id, 'hist-2');
  assert.equal(second.method, 'POST');
  assert.equal(second.path, '/second/path');
  assert.equal(second.query, '');
  assert.equal(second.body, '{"hello":"world"}');
  assert.notEqual(second.body_encoding, 'base64');
  assert.equal(second.body_size, 17);
  assert.equal(second.body_truncated, false);
  assert.equal(second.headers['content-type'], 'application/json');
  assert.ok(Date.parse(second.timestamp) >= Date.parse(first.timestamp), 'oldest first');
});

test('history – a request without X-Request-ID is stored under the generated id it was answered with', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const res = await send(echo, '/anon');
  const generated = String(res.headers['x-request-id']);
  assert.ok(generated.length > 0);
  const [entry] = await settledHistory(echo);
  assert.equal(entry?.id, generated);
  assert.equal(entry?.request_id, generated);
});

test('history – the same X-Request-ID sent twice gives two entries with unique ids', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const answers = [
    await send(echo, '/dup/1', { headers: { 'X-Request-ID': 'same' } }),
    await send(echo, '/dup/2', { headers: { 'X-Request-ID': 'same' } }),
    await send(echo, '/dup/3', { headers: { 'X-Request-ID': 'same' } }),
  ];
  const entries = await settledHistory(echo);
  // Each answer keeps the request id; one stored under another id says which.
  assert.deepEqual(
    answers.map((a) => a.headers['x-request-id']),
    ['same', 'same', 'same'],
  );
  assert.deepEqual(
    answers.map((a) => a.headers['x-echo-history-id']),
    [undefined, entries[1]?.id, entries[2]?.id],
  );
  assert.deepEqual(
    entries.map((e) => e.path),
    ['/dup/1', '/dup/2', '/dup/3'],
  );
  assert.deepEqual(
    entries.map((e) => e.request_id),
    ['same', 'same', 'same'],
  );
  assert.equal(entries[0]?.id, 'same');
  assert.equal(new Set(entries.map((e) => e.id)).size, 3, 'ids must be unique');
});

test('history – a binary body is stored as base64, byte for byte', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  await send(echo, '/bin', {
    method: 'PUT',
    headers: { 'Content-Type': 'application/octet-stream' },
    body: bytes,
  });
  const [entry] = await settledHistory(echo);
  assert.equal(entry?.body_encoding, 'base64');
  assert.deepEqual(Buffer.from(entry?.body ?? '', 'base64'), bytes);
  assert.equal(entry?.body_size, 256);
  assert.equal(entry?.body_truncated, false);
});

test('history – ECHO_HISTORY_SIZE bounds the entries: 20 requests keep the 5 newest, oldest first', async (t) => {
  const echo = await startEcho({ ECHO_HISTORY_SIZE: '5' });
  t.after(() => echo.close());
  for (let i = 0; i < 20; i++) await send(echo, `/r/${i}`, { headers: { 'X-Request-ID': `r-${i}` } });
  const entries = await settledHistory(echo);
  assert.deepEqual(
    entries.map((e) => e.path),
    ['/r/15', '/r/16', '/r/17', '/r/18', '/r/19'],
  );
  assert.deepEqual(
    entries.map((e) => e.id),
    ['r-15', 'r-16', 'r-17', 'r-18', 'r-19'],
  );
});

test('history – ECHO_HISTORY_MAX_BODY cuts a stored body but keeps its real size', async (t) => {
  const echo = await startEcho({ ECHO_HISTORY_MAX_BODY: '1024' });
  t.after(() => echo.close());
  const big = Buffer.alloc(100 * 1024, 'a');
  const res = await send(echo, '/big', {
    method: 'POST',
    headers: { 'Content-Type': 'text/plain' },
    body: big,
  });
  assert.equal(res.status, 200);
  assert.equal(res.body.length, 102400, 'the echo itself is not cut');
  await send(echo, '/small', { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'tiny' });

  const [cut, small] = await settledHistory(echo);
  assert.equal(cut?.body, 'a'.repeat(1024));
  assert.equal(cut?.body_truncated, true);
  assert.equal(cut?.body_size, 102400);
  assert.equal(small?.body, 'tiny');
  assert.equal(small?.body_truncated, false);
  assert.equal(small?.body_size, 4);
});

test('history – ECHO_HISTORY_SIZE=0 keeps nothing, and requests are still echoed', async (t) => {
  const echo = await startEcho({ ECHO_HISTORY_SIZE: '0' });
  t.after(() => echo.close());
  const res = await send(echo, '/not-kept', { method: 'POST', body: 'still echoed' });
  assert.equal(res.status, 200);
  assert.equal(res.body.toString(), 'still echoed');
  assert.deepEqual(await history(echo), []);
});

test('history – X-Echo-History-Enabled: false keeps a request out; true records it', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const res = await send(echo, '/secret', {
    method: 'POST',
    headers: { 'X-Echo-History-Enabled': 'false' },
    body: 'not stored',
  });
  assert.equal(res.status, 200);
  assert.equal(res.body.toString(), 'not stored');
  await send(echo, '/kept', { headers: { 'X-Echo-History-Enabled': 'true' } });
  const entries = await settledHistory(echo);
  assert.deepEqual(
    entries.map((e) => e.path),
    ['/kept'],
  );
});

test('history – the service’s own routes are not recorded', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await send(echo, '/health');
  await send(echo, '/ready');
  await send(echo, '/info');
  await send(echo, '/metrics');
  await send(echo, '/history');
  await send(echo, '/scenario');
  await send(echo, '/scenario', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: '[]',
  });
  const replay = await send(echo, '/replay', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: '{"id":"nope"}',
  });
  assert.equal(replay.status, 404);
  assert.deepEqual(await history(echo), []);
  await send(echo, '/echoed');
  assert.deepEqual(
    (await history(echo)).map((e) => e.path),
    ['/echoed'],
  );
});

test('history – a request rejected for a malformed control header is not recorded', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const res = await send(echo, '/bad', { headers: { 'X-Echo-Status': 'abc' } });
  assert.equal(res.status, 400);
  assert.deepEqual(await history(echo), []);
});

test('history – the status recorded is the status answered', async (t) => {
  const echo = await startEcho(
    {},
    { scenarios: [{ path: '/scripted', responses: [{ status: 418, body: 'teapot' }] }] },
  );
  t.after(() => echo.close());
  const answered: number[] = [];
  answered.push((await send(echo, '/plain')).status);
  answered.push((await send(echo, '/created', { headers: { 'X-Echo-Status': '201' } })).status);
  answered.push((await send(echo, '/unavailable', { headers: { 'X-Echo-Status': '503' } })).status);
  answered.push((await send(echo, '/error', { headers: { 'X-Echo-Error': 'bad-gateway' } })).status);
  answered.push((await send(echo, '/scripted')).status);
  assert.deepEqual(answered, [200, 201, 503, 502, 418]);
  const entries = await settledHistory(echo);
  assert.deepEqual(
    entries.map((e) => e.status),
    answered,
  );
});

test('history – duration_ms includes an injected delay', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await send(echo, '/slow', { headers: { 'X-Echo-Delay': '200ms' } });
  const [entry] = await settledHistory(echo);
  assert.ok((entry?.duration_ms ?? 0) >= 190, `duration_ms ${entry?.duration_ms} should be >= 200`);
});

test('history – an entry in flight has status null; a client that left is recorded as 499', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const controller = new AbortController();
  const pending = request(`${echo.url}/waiting`, {
    headers: { 'X-Echo-Delay': '5s', 'X-Request-ID': 'leaver' },
    signal: controller.signal,
  }).catch((err: unknown) => err);
  let entries: Entry[] = [];
  await until('the delayed request is in the history', async () => {
    entries = await history(echo);
    return entries.length > 0;
  });
  assert.equal(entries[0]?.id, 'leaver');
  assert.equal(entries[0]?.status, null);
  assert.equal(entries[0]?.duration_ms, null);

  controller.abort();
  await pending;
  let status: number | null = null;
  await until('the request that was left has its status', async () => {
    status = (await history(echo))[0]?.status ?? null;
    return status !== null;
  });
  assert.equal(status, 499);
});

test('history – ids stay unique when a sent request id looks like a generated suffix', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await send(echo, '/s/1', { headers: { 'X-Request-ID': 'order-1' } });
  await send(echo, '/s/2', { headers: { 'X-Request-ID': 'order' } });
  await send(echo, '/s/3', { headers: { 'X-Request-ID': 'order' } });
  await send(echo, '/s/4', { headers: { 'X-Request-ID': 'order' } });
  const entries = await settledHistory(echo);
  assert.equal(entries.length, 4);
  assert.equal(entries[0]?.id, 'order-1');
  assert.equal(entries[1]?.id, 'order');
  assert.equal(new Set(entries.map((e) => e.id)).size, 4, `ids ${entries.map((e) => e.id)} are not unique`);
  // Each id finds its own request again: replaying it answers with that request's path.
  for (const entry of entries) {
    const res = await send(echo, '/replay', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Echo-History-Enabled': 'false' },
      body: JSON.stringify({ id: entry.id, modify_headers: { 'X-Echo-History-Enabled': 'false' } }),
    });
    assert.equal(res.status, 200);
    assert.match(res.body.toString(), new RegExp(`^GET ${entry.path} HTTP/1.1`));
  }
});

test('history – a body that is text but for its last byte is kept as base64, byte for byte', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const bytes = Buffer.concat([Buffer.from('hello world'), Buffer.from([0xc3])]);
  await send(echo, '/almost-text', {
    method: 'POST',
    headers: { 'Content-Type': 'application/octet-stream' },
    body: bytes,
  });
  const [entry] = await settledHistory(echo);
  assert.equal(entry?.body_encoding, 'base64');
  assert.deepEqual(Buffer.from(entry?.body ?? '', 'base64'), bytes);
});

test('history – a text body cut inside a multi-byte character keeps only whole characters', async (t) => {
  const echo = await startEcho({ ECHO_HISTORY_MAX_BODY: '5' });
  t.after(() => echo.close());
  await send(echo, '/accents', {
    method: 'POST',
    headers: { 'Content-Type': 'text/plain; charset=utf-8' },
    body: 'ééé',
  });
  const [entry] = await settledHistory(echo);
  assert.notEqual(entry?.body_encoding, 'base64');
  assert.equal(entry?.body, 'éé');
  assert.equal(entry?.body_size, 6);
  assert.equal(entry?.body_truncated, true);
});

test('history – the index by id, brought up to date only when needed, agrees with one kept on every record', () => {
  // A reference that indexes every entry as it is recorded (what History did before), against
  // seeded sequences of generated and sent ids (sent ones repeat), look-ups and evictions.
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    const random = seededRandom(seed);
    const capacity = 1 + Math.floor(random() * 12);
    const history = new History(capacity, 64);
    const ring: string[] = [];
    const byId = new Set<string>();
    let collisions = 0;
    let generated = 0;
    for (let step = 0; step < 400; step++) {
      const roll = random();
      if (roll < 0.25) {
        // a look-up: a stored id, an evicted or never-seen one
        const id =
          random() < 0.7 && ring.length > 0
            ? ring[Math.floor(random() * ring.length)]!
            : `gen-${Math.floor(random() * (generated + 1))}`;
        assert.equal(
          history.get(id)?.id,
          byId.has(id) ? id : undefined,
          `seed ${seed} step ${step}: get(${id})`,
        );
        continue;
      }
      const sent = roll < 0.6;
      const requestId = sent ? `sent-${Math.floor(random() * 4)}` : `gen-${generated++}`;
      let expected = requestId;
      if (sent) while (byId.has(expected)) expected = `${requestId}-${++collisions}`;
      const entry = history.record({
        requestId,
        method: 'GET',
        url: '/',
        headers: {},
        body: undefined,
        remoteAddr: '127.0.0.1',
        protocol: 'HTTP/1.1',
        idMayRepeat: sent,
      });
      assert.equal(entry?.id, expected, `seed ${seed} step ${step}: recorded id`);
      ring.push(expected);
      byId.add(expected);
      if (ring.length > capacity) byId.delete(ring.shift()!);
      assert.deepEqual(
        history.list().map((e) => e.id),
        ring,
      );
    }
    // Every stored entry is found by its id, and nothing else is.
    for (const id of ring) assert.equal(history.get(id)?.id, id);
    assert.equal(history.size, ring.length);
  }
});
