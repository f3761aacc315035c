/**
 * Issue #31, item 6: a history you can query. `GET /history?path=&method=&status=&fault=&session=
 * &since=` answers the entries passing every filter given, `GET /history/count` with the same
 * filters answers `{"count": n}`, `DELETE /history` empties it, and every route is behind
 * ECHO_ADMIN_TOKEN. A bad value is a 400 naming the parameter, and changes nothing.
 * One server for the file: each test records under a path of its own and filters by it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FAULT_KINDS } from '../../src/echo/applied.ts';
import { History } from '../../src/echo/history.ts';
import {
  countMatching,
  filteredPage,
  localSource,
  parseHistoryFilter,
} from '../../src/echo/history-filter.ts';
import { maskedPath } from '../../src/echo/history-secrets.ts';
import { historyStream } from '../../src/echo/history-stream.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { type Answer, send } from '../helpers/http.ts';
import { until } from '../helpers/runtime.ts';

const TOKEN = 'history-query-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };

interface Entry {
  readonly id: string;
  readonly timestamp: string;
  readonly method: string;
  readonly url: string;
  readonly path: string;
  readonly status: number | null;
  readonly faults: ReadonlyArray<{ readonly kind: string }>;
}

interface ErrorAnswer {
  readonly error: {
    readonly code: string;
    readonly message: string;
    readonly details: ReadonlyArray<{
      readonly field: string;
      readonly message: string;
      readonly value?: string;
    }>;
  };
}

let echo: RunningEcho;
before(async () => {
  echo = await startEcho({ ECHO_ADMIN_TOKEN: TOKEN, ECHO_HISTORY_SIZE: '1000' });
});
after(() => echo.close());

/** An echo request; the status answered, 0 when the connection was reset on purpose. */
async function hit(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<number> {
  try {
    return (await send(echo.url + path, { method, headers })).status;
  } catch (error) {
    assert.equal((error as { code?: string }).code, 'ECONNRESET', `${method} ${path}: ${String(error)}`);
    return 0;
  }
}

const query = (params: Record<string, string>): string => new URLSearchParams(params).toString();

function admin(pathAndQuery: string, method = 'GET'): Promise<Answer> {
  return send(echo.url + pathAndQuery, { method, headers: AUTH });
}

/** The entries `GET /history?<q>` answers. */
async function entries(q: string): Promise<Entry[]> {
  const answer = await admin(`/history?${q}`);
  assert.equal(answer.status, 200, `/history?${q}: ${answer.text}`);
  assert.match(String(answer.headers['content-type']), /^application\/json/);
  return JSON.parse(answer.text) as Entry[];
}

/** What `GET /history/count?<q>` answers, checked to be exactly `{"count": n}`. */
async function count(q: string): Promise<number> {
  const answer = await admin(`/history/count?${q}`);
  assert.equal(answer.status, 200, `/history/count?${q}: ${answer.text}`);
  assert.match(String(answer.headers['content-type']), /^application\/json/);
  const body = JSON.parse(answer.text) as { count: number };
  assert.deepEqual(Object.keys(body), ['count']);
  return body.count;
}

/** `METHOD url` of each entry the filters pick, oldest first; the count of the same filters agrees. */
async function found(params: Record<string, string>): Promise<string[]> {
  const q = query(params);
  const list = (await entries(q)).map((e) => `${e.method} ${e.url}`);
  assert.equal(await count(q), list.length, `count of ${q}`);
  return list;
}

test('history query – path: the path without its query, whole; a trailing * matches every path starting with the rest', async () => {
  assert.equal(await hit('/q-path/pay'), 200);
  assert.equal(await hit('/q-path/pay?attempt=2'), 200);
  assert.equal(await hit('/q-path/pay', {}, 'POST'), 200);
  assert.equal(await hit('/q-path/payment'), 200);
  assert.equal(await hit('/q-path/pay/refund'), 200);
  assert.equal(await hit('/q-path/caf%C3%A9'), 200);

  assert.deepEqual(await found({ path: '/q-path/pay' }), [
    'GET /q-path/pay',
    'GET /q-path/pay?attempt=2',
    'POST /q-path/pay',
  ]);
  assert.deepEqual(await found({ path: '/q-path/pay/*' }), ['GET /q-path/pay/refund']);
  assert.equal((await found({ path: '/q-path/pay*' })).length, 5);
  assert.equal((await found({ path: '/q-path/*' })).length, 6);
  // As it was sent: percent-encoded, so the filter's value is the encoded path, itself encoded.
  assert.deepEqual(await found({ path: '/q-path/caf%C3%A9' }), ['GET /q-path/caf%C3%A9']);
  assert.deepEqual(await found({ path: '/q-path/café' }), []);
  assert.deepEqual(await found({ path: '/q-path/pa' }), []);
});

test('history query – path is compared with the path as GET /history shows it: a masked secret cannot be spelt out by prefixes', async () => {
  assert.equal(await hit('/q-mask/users/alice@example.com/orders'), 200);
  const [shown] = await entries(query({ path: '/q-mask/*' }));
  assert.equal(shown!.path, '/q-mask/users/[MASKED:email]/orders');
  assert.deepEqual(await found({ path: '/q-mask/users/[MASKED:email]/orders' }), [
    'GET /q-mask/users/[MASKED:email]/orders',
  ]);
  assert.deepEqual(await found({ path: '/q-mask/users/[MASKED*' }), [
    'GET /q-mask/users/[MASKED:email]/orders',
  ]);
  for (const guess of ['/q-mask/users/a*', '/q-mask/users/alice@example.com/orders', '/q-mask/users/alice@*'])
    assert.deepEqual(await found({ path: guess }), [], guess);
});

test('history query – with ECHO_HISTORY_SECRETS=show (no path view) the path is compared as stored, in place', async () => {
  const record = (history: History, url: string) =>
    history.record({
      requestId: url,
      method: 'GET',
      url,
      headers: {},
      body: undefined,
      remoteAddr: '127.0.0.1',
      protocol: 'HTTP/1.1',
      idMayRepeat: false,
    });
  const shown = new History(10, 1024);
  const masked = new History(10, 1024, { pathView: maskedPath });
  for (const history of [shown, masked]) {
    record(history, '/users/alice@example.com/orders?page=2');
    record(history, '/users/bob');
  }
  const pathFilter = (path: string) => parseHistoryFilter((name) => (name === 'path' ? path : undefined), []);
  for (const [path, asStored, asMasked] of [
    ['/users/alice@example.com/orders', 1, 0],
    ['/users/a*', 1, 0],
    ['/users/[MASKED:email]/orders', 0, 1],
    ['/users/*', 2, 2],
    ['/users/bob', 1, 1],
    ['/users/bo', 0, 0],
  ] as const) {
    assert.equal(await countMatching(localSource(shown), pathFilter(path)), asStored, `${path} as stored`);
    assert.equal(await countMatching(localSource(masked), pathFilter(path)), asMasked, `${path} masked`);
  }
});

test('history query – method: case-insensitive', async () => {
  for (const method of ['GET', 'POST', 'PUT', 'DELETE', 'POST'])
    assert.equal(await hit('/q-method/order', {}, method), 200);
  assert.deepEqual(await found({ path: '/q-method/order', method: 'post' }), [
    'POST /q-method/order',
    'POST /q-method/order',
  ]);
  assert.deepEqual(await found({ path: '/q-method/order', method: 'Delete' }), ['DELETE /q-method/order']);
  assert.deepEqual(await found({ path: '/q-method/order', method: 'PATCH' }), []);
});

test('history query – status: one status, or a class (1xx-5xx, any case); a reset (status 0) is in none', async () => {
  assert.equal(await hit('/q-status/unavailable', { 'X-Echo-Status': '503' }), 503);
  assert.equal(await hit('/q-status/missing', { 'X-Echo-Status': '404' }), 404);
  assert.equal(await hit('/q-status/plain'), 200);
  assert.equal(await hit('/q-status/created', { 'X-Echo-Status': '201' }), 201);
  assert.equal(await hit('/q-status/reset', { 'X-Echo-Error': 'reset' }), 0);

  const prefix = { path: '/q-status/*' };
  assert.deepEqual(await found({ ...prefix, status: '503' }), ['GET /q-status/unavailable']);
  assert.deepEqual(await found({ ...prefix, status: '5xx' }), ['GET /q-status/unavailable']);
  assert.deepEqual(await found({ ...prefix, status: '4XX' }), ['GET /q-status/missing']);
  assert.deepEqual(await found({ ...prefix, status: '2xx' }), [
    'GET /q-status/plain',
    'GET /q-status/created',
  ]);
  assert.deepEqual(await found({ ...prefix, status: '200' }), ['GET /q-status/plain']);
  assert.deepEqual(await found({ ...prefix, status: '500' }), []);
  assert.deepEqual(await found({ ...prefix, status: '1xx' }), []);
});

test('history query – fault: a kind of FAULT_KINDS picks the entries it was applied to, none those without', async () => {
  assert.equal(await hit('/q-fault/status', { 'X-Echo-Status': '503' }), 503);
  assert.equal(await hit('/q-fault/delay', { 'X-Echo-Delay': '1ms' }), 200);
  assert.equal(await hit('/q-fault/reset', { 'X-Echo-Error': 'reset' }), 0);
  assert.equal(await hit('/q-fault/error', { 'X-Echo-Error': '500' }), 500);
  assert.equal(await hit('/q-fault/both', { 'X-Echo-Delay': '1ms', 'X-Echo-Status': '429' }), 429);
  assert.equal(await hit('/q-fault/plain'), 200);

  const prefix = { path: '/q-fault/*' };
  assert.deepEqual(await found({ ...prefix, fault: 'status' }), ['GET /q-fault/status', 'GET /q-fault/both']);
  assert.deepEqual(await found({ ...prefix, fault: 'delay' }), ['GET /q-fault/delay', 'GET /q-fault/both']);
  assert.deepEqual(await found({ ...prefix, fault: 'reset' }), ['GET /q-fault/reset']);
  assert.deepEqual(await found({ ...prefix, fault: 'error' }), ['GET /q-fault/error']);
  assert.deepEqual(await found({ ...prefix, fault: 'none' }), ['GET /q-fault/plain']);
  // Every kind the echo can inject is a valid filter, read from the same list the metrics use.
  for (const kind of FAULT_KINDS) await found({ ...prefix, fault: kind });
  assert.deepEqual(await found({ ...prefix, fault: 'garbage' }), []);
});

test('history query – session: the X-Echo-Session the request was sent with', async () => {
  assert.equal(await hit('/q-session/cart', { 'X-Echo-Session': 'test-a' }), 200);
  assert.equal(await hit('/q-session/cart', { 'X-Echo-Session': 'test-b' }), 200);
  assert.equal(await hit('/q-session/pay', { 'X-Echo-Session': 'test-a' }), 200);
  assert.equal(await hit('/q-session/pay'), 200);

  assert.deepEqual(await found({ session: 'test-a' }), ['GET /q-session/cart', 'GET /q-session/pay']);
  assert.deepEqual(await found({ session: 'test-b' }), ['GET /q-session/cart']);
  assert.deepEqual(await found({ session: 'test-A' }), []);
  assert.deepEqual(await found({ session: 'test-c' }), []);
});

/** `ms` as RFC 3339 at the offset `+05:30`. */
function atPlus0530(ms: number): string {
  return `${new Date(ms + 330 * 60_000).toISOString().slice(0, -1)}+05:30`;
}

test('history query – since: entries recorded at or after an RFC 3339 time (any offset) or epoch milliseconds', async () => {
  assert.equal(await hit('/q-since/before'), 200);
  let recorded = Number.NaN;
  await until('the first entry is recorded', async () => {
    const [first] = await entries(query({ path: '/q-since/before' }));
    recorded = Date.parse(first?.timestamp ?? '');
    return Number.isFinite(recorded);
  });
  // `since` is a millisecond after the first entry's: wait for the clock to reach it.
  await until('the clock has moved past the first entry', () => Date.now() > recorded, 10_000, 1);
  const since = Date.now();
  assert.equal(await hit('/q-since/after'), 200);

  const prefix = { path: '/q-since/*' };
  assert.deepEqual(await found({ ...prefix, since: String(since) }), ['GET /q-since/after']);
  assert.deepEqual(await found({ ...prefix, since: new Date(since).toISOString() }), ['GET /q-since/after']);
  assert.deepEqual(await found({ ...prefix, since: atPlus0530(since) }), ['GET /q-since/after']);
  assert.deepEqual(await found({ ...prefix, since: '1970-01-01T00:00:00Z' }), [
    'GET /q-since/before',
    'GET /q-since/after',
  ]);
  assert.deepEqual(await found({ ...prefix, since: String(since + 3_600_000) }), []);
  // At: an entry recorded at the very millisecond given is in.
  const [afterEntry] = await entries(query({ path: '/q-since/after' }));
  assert.deepEqual(await found({ ...prefix, since: afterEntry!.timestamp }), ['GET /q-since/after']);
  const next = new Date(Date.parse(afterEntry!.timestamp) + 1).toISOString();
  assert.deepEqual(await found({ ...prefix, since: next }), []);
});

test('history query – filters combine with AND', async () => {
  const base = { 'X-Echo-Session': 'and-s' };
  assert.equal(await hit('/q-and/pay', { ...base, 'X-Echo-Status': '503' }, 'POST'), 503); // every filter
  assert.equal(await hit('/q-and/pay', base, 'POST'), 200); // no fault, 200
  assert.equal(await hit('/q-and/pay', { ...base, 'X-Echo-Status': '503' }), 503); // GET
  assert.equal(await hit('/q-and/pay', { 'X-Echo-Session': 'other', 'X-Echo-Status': '503' }, 'POST'), 503);
  assert.equal(await hit('/q-and/refund', { ...base, 'X-Echo-Status': '503' }, 'POST'), 503);
  assert.equal(await hit('/q-and/pay', { ...base, 'X-Echo-Status': '502' }, 'POST'), 502);

  const all = {
    path: '/q-and/pay',
    method: 'POST',
    status: '503',
    fault: 'status',
    session: 'and-s',
    since: '2000-01-01T00:00:00Z',
  };
  const picked = await entries(query(all));
  assert.equal(picked.length, 1);
  assert.equal(picked[0]!.status, 503);
  assert.equal(await count(query(all)), 1);
  // Each filter alone picks more: the one entry is their intersection.
  for (const name of ['path', 'method', 'status', 'session'] as const)
    assert.ok((await count(query({ path: '/q-and/*', [name]: all[name] }))) > 1, name);
  assert.equal(await count(query({ ...all, status: '5xx' })), 2);
  assert.equal(await count(query({ ...all, since: String(Date.now() + 60_000) })), 0);
});

test('history query – a filtered page holds limit matches; its Link repeats the filters; the last page has none', async () => {
  const order = ['hit', 'miss', 'hit', 'miss', 'hit', 'miss', 'hit', 'miss'];
  for (const [n, which] of order.entries())
    assert.equal(await hit(`/q-pages/${which}`, { 'X-Request-ID': `q-pages-${n}` }), 200);

  const first = await admin('/history?limit=2&path=/q-pages/hit');
  assert.equal(first.status, 200, first.text);
  assert.deepEqual(
    (JSON.parse(first.text) as Entry[]).map((e) => e.id),
    ['q-pages-0', 'q-pages-2'],
  );
  const cursor = first.headers['x-echo-history-next-cursor'];
  assert.equal(typeof cursor, 'string');
  assert.equal(first.headers['link'], `</history?limit=2&path=/q-pages/hit&cursor=${cursor}>; rel="next"`);

  // The last two matches: entries are stored after them (misses), but none that matches, so no Link.
  const second = await admin(`/history?limit=2&path=/q-pages/hit&cursor=${cursor}`);
  assert.deepEqual(
    (JSON.parse(second.text) as Entry[]).map((e) => e.id),
    ['q-pages-4', 'q-pages-6'],
  );
  assert.equal(second.headers['link'], undefined);
  assert.equal(second.headers['x-echo-history-next-cursor'], undefined);

  // A count covers every stored entry, whatever the page size.
  assert.equal(await count('path=/q-pages/hit'), 4);
  // The Link quotes each filter as it was given, encoded as a query value.
  const timed = await admin('/history?limit=1&path=/q-pages/*&since=2000-01-01T00:00:00%2B01:00');
  assert.equal(timed.status, 200, timed.text);
  const link = String(timed.headers['link']);
  assert.match(link, /^<\/history\?limit=1&path=\/q-pages\/\*&since=2000-01-01T00:00:00%2B01:00&cursor=\d+>/);
  const followed = await admin(link.slice(1, link.indexOf('>')));
  assert.deepEqual(
    (JSON.parse(followed.text) as Entry[]).map((e) => e.id),
    ['q-pages-1'],
  );
});

/** [query, the parameter the 400 names]. */
const BAD: ReadonlyArray<readonly [string, string]> = [
  ['path=', 'path'],
  ['path=pay', 'path'],
  ['path=%2Fpay%3Fx%3D1', 'path'],
  ['path=/a+b', 'path'],
  [`path=/${'a'.repeat(2048)}`, 'path'],
  ['path=/a&path=/b', 'path'],
  ['method=', 'method'],
  ['method=GTE', 'method'],
  [`method=${'G'.repeat(33)}`, 'method'],
  ['status=', 'status'],
  ['status=600', 'status'],
  ['status=099', 'status'],
  ['status=6xx', 'status'],
  ['status=5x', 'status'],
  ['status=2xx0', 'status'],
  ['status=abc', 'status'],
  ['status=500&status=503', 'status'],
  ['fault=', 'fault'],
  ['fault=nope', 'fault'],
  ['fault=Delay', 'fault'],
  ['session=', 'session'],
  ['session=a%20b', 'session'],
  [`session=${'s'.repeat(129)}`, 'session'],
  ['since=', 'since'],
  ['since=yesterday', 'since'],
  ['since=2026-11-27T10:00:00', 'since'],
  ['since=2026-11-27', 'since'],
  ['since=2026-02-30T00:00:00Z', 'since'],
  ['since=2026-11-27T24:00:00Z', 'since'],
  ['since=-1', 'since'],
  ['since=1e12', 'since'],
  ['since=9999999999999999', 'since'],
  ['sessoin=abc', 'sessoin'],
];

test('history query – a bad filter value, a filter given twice or an unknown one is a 400 naming it, on both routes; history is unchanged', async () => {
  assert.equal(await hit('/q-bad/one', { 'X-Echo-Status': '503' }), 503);
  const before = (await entries('limit=1000')).map((e) => e.id);
  const total = await count('');

  for (const route of ['/history', '/history/count']) {
    for (const [q, field] of BAD) {
      const answer = await admin(`${route}?${q}`);
      const what = `${route}?${q.slice(0, 80)}`;
      assert.equal(answer.status, 400, `${what}: ${answer.text}`);
      assert.match(String(answer.headers['content-type']), /^application\/json/, what);
      const { error } = JSON.parse(answer.text) as ErrorAnswer;
      assert.equal(error.code, 'ECHO_ERR_INVALID_HISTORY_QUERY', what);
      assert.deepEqual(
        error.details.map((d) => d.field),
        [field],
        what,
      );
      assert.ok(error.message.includes(field), `${what}: ${error.message}`);
      const given = new URLSearchParams(q).getAll(field);
      if (given.length === 1 && field !== 'sessoin') {
        // The value, quoted (cut at 64 characters), and the form expected.
        assert.equal(error.details[0]!.value, given[0]!.slice(0, 64), what);
        assert.ok(error.message.includes(`${field}=${JSON.stringify(given[0]!.slice(0, 64))}`), what);
        assert.match(error.message, /expected/, what);
      }
    }
  }
  // limit and cursor page a read; a count covers everything and takes neither.
  for (const q of ['limit=10', 'cursor=0']) {
    const answer = await admin(`/history/count?${q}`);
    assert.equal(answer.status, 400, answer.text);
    assert.match((JSON.parse(answer.text) as ErrorAnswer).error.message, /GET \/history\/count takes path/);
  }
  // Every problem is named at once.
  const several = JSON.parse((await admin('/history?status=600&fault=nope&since=x')).text) as ErrorAnswer;
  assert.deepEqual(
    several.error.details.map((d) => d.field),
    ['status', 'fault', 'since'],
  );

  // The bounds themselves are accepted.
  for (const q of [
    `path=/${'a'.repeat(2047)}`,
    `session=${'s'.repeat(128)}`,
    'status=100',
    'status=599',
    'since=0',
    'since=2026-11-27T10:00:00.123456789-08:00',
    'since=2024-02-29T00:00:00z',
  ])
    assert.equal((await admin(`/history?${q}`)).status, 200, q.slice(0, 80));

  assert.equal((await send(`${echo.url}/health`)).status, 200);
  assert.equal(await hit('/q-bad/two'), 200);
  const afterwards = (await entries('limit=1000')).map((e) => e.id);
  assert.deepEqual(afterwards.slice(0, -1), before);
  assert.equal(await count(''), total + 1);
});

test('history query – /history/count and DELETE /history are behind ECHO_ADMIN_TOKEN like GET /history', async () => {
  for (const [method, path] of [
    ['GET', '/history'],
    ['GET', '/history/count'],
    ['GET', '/history/count?path=/q-bad/one'],
    ['DELETE', '/history'],
  ] as const) {
    const refused: ReadonlyArray<Record<string, string>> = [{}, { authorization: 'Bearer wrong' }];
    for (const headers of refused) {
      const answer = await send(echo.url + path, { method, headers });
      assert.equal(answer.status, 401, `${method} ${path}: ${answer.text}`);
      assert.equal(answer.headers['www-authenticate'], 'Bearer realm="echo-chaos"');
      assert.equal((JSON.parse(answer.text) as ErrorAnswer).error.code, 'ECHO_ERR_UNAUTHORIZED');
    }
  }
  // The refused DELETE deleted nothing.
  assert.ok((await count('')) > 0);
});

test('history query – DELETE /history empties history and answers how many it deleted; cursors stay valid; a parameter is a 400', async () => {
  assert.equal(await hit('/q-delete/before'), 200);
  assert.equal(await hit('/q-delete/before'), 200);
  const stored = await count('');
  assert.ok(stored >= 2);
  const page = await admin('/history?limit=1');
  const cursor = page.headers['x-echo-history-next-cursor'];
  assert.equal(typeof cursor, 'string');

  // A filter-looking parameter is refused, not ignored: this DELETE would otherwise empty everything.
  const filtered = await admin('/history?path=/q-delete/before', 'DELETE');
  assert.equal(filtered.status, 400, filtered.text);
  const { error } = JSON.parse(filtered.text) as ErrorAnswer;
  assert.equal(error.code, 'ECHO_ERR_INVALID_HISTORY_QUERY');
  assert.deepEqual(
    error.details.map((d) => d.field),
    ['path'],
  );
  assert.match(error.message, /DELETE \/history takes no parameters/);
  assert.equal(await count(''), stored);

  const deleted = await admin('/history', 'DELETE');
  assert.equal(deleted.status, 200, deleted.text);
  assert.match(String(deleted.headers['content-type']), /^application\/json/);
  assert.deepEqual(JSON.parse(deleted.text), { status: 'history cleared', deleted: stored });
  assert.equal(await count(''), 0);
  assert.deepEqual(await entries(''), []);
  assert.equal(await count('path=/q-delete/before'), 0);

  // Recording goes on; a cursor handed out before the DELETE leads to what came after it.
  assert.equal(await hit('/q-delete/after', { 'X-Request-ID': 'q-delete-after' }), 200);
  assert.deepEqual(
    (await entries('')).map((e) => e.id),
    ['q-delete-after'],
  );
  assert.deepEqual(
    (await entries(`cursor=${cursor}`)).map((e) => e.id),
    ['q-delete-after'],
  );
  const again = await admin('/history', 'DELETE');
  assert.deepEqual(JSON.parse(again.text), { status: 'history cleared', deleted: 1 });
  // Other methods are refused with the ones the routes serve.
  const put = await admin('/history', 'PUT');
  assert.equal(put.status, 405);
  assert.equal(put.headers['allow'], 'GET, HEAD, DELETE');
  assert.equal((await admin('/history/count', 'DELETE')).status, 405);
});

test('history query – a pass over many entries lets other work run between its turns, and counts every entry once', async () => {
  const history = new History(20_000, 1024);
  for (let n = 0; n < 20_000; n++) {
    const entry = history.record({
      requestId: `r-${n}`,
      method: n % 2 === 0 ? 'GET' : 'POST',
      url: `/pass/${n % 10}?n=${n}`,
      headers: {},
      body: undefined,
      remoteAddr: '127.0.0.1',
      protocol: 'HTTP/1.1',
      idMayRepeat: false,
    })!;
    entry.status = 200;
  }
  const given: Record<string, string> = { path: '/pass/3', method: 'get' };
  const filter = parseHistoryFilter((name) => given[name], []);
  let ranMeanwhile = false;
  setImmediate(() => {
    ranMeanwhile = true;
  });
  // Entries 3, 13, 23, ...: even numbers never end in 3, so GET picks none of them.
  assert.equal(await countMatching(localSource(history), filter), 0);
  assert.ok(ranMeanwhile, 'the pass took no turn of the event loop');
  const byPath = parseHistoryFilter((name) => (name === 'path' ? '/pass/3' : undefined), []);
  assert.equal(await countMatching(localSource(history), byPath), 2_000);
});

test('history query – an entry of a filtered page that no longer passes when its turn comes is left out', async () => {
  const history = new History(10, 1024);
  const record = (id: string) =>
    history.record({
      requestId: id,
      method: 'GET',
      url: '/in-flight',
      headers: {},
      body: undefined,
      remoteAddr: '127.0.0.1',
      protocol: 'HTTP/1.1',
      idMayRepeat: false,
    })!;
  const first = record('first');
  record('second');
  const page = await filteredPage(
    localSource(history),
    undefined,
    10,
    parseHistoryFilter((name) => (name === 'fault' ? 'none' : undefined), []),
  );
  assert.deepEqual(page?.matched?.seqs, [0, 1]);
  // The first request, still in flight, gets a fault between the page's pass and its stream.
  first.faults = [{ kind: 'delay', control: 'X-Echo-Delay', source: 'header', value: 5 }];
  let text = '';
  for await (const chunk of historyStream(history, page)) text += String(chunk);
  assert.deepEqual(
    (JSON.parse(text) as Entry[]).map((e) => e.id),
    ['second'],
  );
});
