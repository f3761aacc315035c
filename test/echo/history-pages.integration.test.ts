/**
 * Issue #30, item 3: one read of `GET /history` is bounded. A page holds at most `limit` entries
 * (100 by default, 1000 at most), oldest first, as the plain JSON array it always was; the next
 * page's cursor comes in `Link: <...>; rel="next"` and `X-Echo-History-Next-Cursor`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { type Answer, send } from '../helpers/http.ts';

interface Entry {
  readonly id: string;
  readonly path: string;
}

async function record(echo: RunningEcho, from: number, to: number): Promise<void> {
  for (let n = from; n < to; n++) {
    const answer = await send(`${echo.url}/item/${n}`, { headers: { 'X-Request-ID': `req-${n}` } });
    assert.equal(answer.status, 200);
  }
}

async function read(echo: RunningEcho, pathAndQuery: string): Promise<{ answer: Answer; ids: string[] }> {
  const answer = await send(echo.url + pathAndQuery);
  assert.equal(answer.status, 200, answer.text);
  assert.match(String(answer.headers['content-type']), /^application\/json/);
  return { answer, ids: (JSON.parse(answer.text) as Entry[]).map((e) => e.id) };
}

const ids = (from: number, to: number): string[] =>
  Array.from({ length: to - from }, (_, i) => `req-${from + i}`);

/** The target of a `Link` header's `rel="next"`. */
function nextLink(answer: Answer): string | undefined {
  const link = answer.headers['link'];
  if (link === undefined) return undefined;
  const match = /^<([^>]+)>; rel="next"$/.exec(String(link));
  assert.ok(match, `Link: ${String(link)}`);
  return match[1];
}

test('history pages – limit gives the oldest entries first; the Link and the cursor lead to the next page, the last page has neither', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await record(echo, 0, 5);

  const first = await read(echo, '/history?limit=2');
  assert.deepEqual(first.ids, ids(0, 2));
  const cursor = first.answer.headers['x-echo-history-next-cursor'];
  assert.equal(typeof cursor, 'string');
  const link = nextLink(first.answer);
  assert.equal(link, `/history?limit=2&cursor=${cursor}`);

  const second = await read(echo, link!);
  assert.deepEqual(second.ids, ids(2, 4));
  const last = await read(echo, nextLink(second.answer)!);
  assert.deepEqual(last.ids, ids(4, 5));
  assert.equal(last.answer.headers['link'], undefined);
  assert.equal(last.answer.headers['x-echo-history-next-cursor'], undefined);

  // Without a limit: every entry of the default history (100), as before; nothing after it.
  const all = await read(echo, '/history');
  assert.deepEqual(all.ids, ids(0, 5));
  assert.equal(all.answer.headers['link'], undefined);
});

test('history pages – a page holds 100 entries by default and 1000 at most; a cursor keeps its place while requests arrive', async (t) => {
  const echo = await startEcho({ ECHO_HISTORY_SIZE: '1200' });
  t.after(() => echo.close());
  await record(echo, 0, 1100);

  const byDefault = await read(echo, '/history');
  assert.deepEqual(byDefault.ids, ids(0, 100));
  assert.ok(nextLink(byDefault.answer));
  const most = await read(echo, '/history?limit=1000');
  assert.deepEqual(most.ids, ids(0, 1000));

  // Requests that arrive between two pages come after the ones already stored, never before.
  const page = await read(
    echo,
    `/history?limit=1000&cursor=${most.answer.headers['x-echo-history-next-cursor']}`,
  );
  assert.deepEqual(page.ids, ids(1000, 1100));
  assert.equal(page.answer.headers['link'], undefined);
  await record(echo, 1100, 1103);
  const cursor = most.answer.headers['x-echo-history-next-cursor'];
  const again = await read(echo, `/history?limit=1000&cursor=${cursor}`);
  assert.deepEqual(again.ids, ids(1000, 1103));
});

test('history pages – a cursor whose entries were evicted starts at the oldest entry still stored', async (t) => {
  const echo = await startEcho({ ECHO_HISTORY_SIZE: '3' });
  t.after(() => echo.close());
  await record(echo, 0, 3);
  const first = await read(echo, '/history?limit=1');
  assert.deepEqual(first.ids, ['req-0']);
  const link = nextLink(first.answer)!;

  // req-1 .. req-4 are evicted: the next page starts at the oldest entry stored, req-5.
  await record(echo, 3, 8);
  const next = await read(echo, link);
  assert.deepEqual(next.ids, ['req-5']);
  const rest = await read(echo, nextLink(next.answer)!);
  assert.deepEqual(rest.ids, ['req-6']);
  const tail = await read(echo, nextLink(rest.answer)!);
  assert.deepEqual(tail.ids, ['req-7']);
  assert.equal(tail.answer.headers['link'], undefined);
  assert.equal(tail.answer.headers['x-echo-history-next-cursor'], undefined);
});

/** [query, the parameter the error names]. */
const BAD: ReadonlyArray<readonly [string, string]> = [
  ['limit=0', 'limit'],
  ['limit=1001', 'limit'],
  ['limit=-1', 'limit'],
  ['limit=ten', 'limit'],
  ['limit=1.5', 'limit'],
  ['limit=', 'limit'],
  ['limit=99999999999999999999', 'limit'],
  ['limit=2&limit=3', 'limit'],
  ['cursor=abc', 'cursor'],
  ['cursor=-1', 'cursor'],
  ['cursor=', 'cursor'],
  ['cursor=1e3', 'cursor'],
  ['cursor=9007199254740993', 'cursor'],
  ['cursor=5', 'cursor'],
  ['cursor=1&cursor=2', 'cursor'],
  ['offset=10', 'offset'],
];

test('history pages – a bad limit or cursor, or an unknown parameter, is a 400 naming it; history is unchanged', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await record(echo, 0, 3);
  const before = await read(echo, '/history');

  for (const [query, field] of BAD) {
    const answer = await send(`${echo.url}/history?${query}`);
    assert.equal(answer.status, 400, `${query}: ${answer.text}`);
    assert.match(String(answer.headers['content-type']), /^application\/json/);
    const { error } = JSON.parse(answer.text) as {
      error: { code: string; message: string; details: Array<{ field: string; message: string }> };
    };
    assert.equal(error.code, 'ECHO_ERR_INVALID_HISTORY_QUERY', query);
    assert.deepEqual(
      error.details.map((d) => d.field),
      [field],
      query,
    );
    assert.match(error.message, new RegExp(field), query);
  }
  // A cursor never handed out (this process has recorded 3 entries) says so.
  const future = JSON.parse((await send(`${echo.url}/history?cursor=5`)).text) as {
    error: { message: string };
  };
  assert.match(future.error.message, /never handed out/);

  const after = await read(echo, '/history');
  assert.deepEqual(after.ids, before.ids);
  assert.equal((await send(`${echo.url}/health`)).status, 200);
});
