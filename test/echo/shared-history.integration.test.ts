import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { completeEntry, History } from '../../src/echo/history.ts';
import { HISTORY_KEYS, startFleetHistory } from '../../src/echo/shared-history.ts';
import { type EchoProcess, startEchoProcess } from '../helpers/liveness.ts';
import { scrapeValue } from '../helpers/metrics.ts';
import { commandCalls, hasRedis, REDIS_MISSING, type RedisServer, startRedis } from '../helpers/redis.ts';
import { until } from '../helpers/runtime.ts';

/**
 * Replicas that agree (#33), history: three echo-chaos processes naming one real `redis-server`
 * write their entries to one capped stream, so `GET /history`, `GET /history/count`,
 * `DELETE /history` and `POST /replay` on any of them see the whole fleet, masked as one process
 * masks; with Redis away each answers from its own memory and says so (`X-Echo-History-Scope`).
 */

const skip = hasRedis() ? false : process.env['CI'] ? false : REDIS_MISSING;

interface Entry {
  id: string;
  path: string;
  method: string;
  status: number | null;
  body: string;
  body_encoding: string;
  headers: Record<string, string>;
}

async function storeUp(replica: EchoProcess): Promise<boolean> {
  const body = (await (await fetch(`${replica.url}/health`)).json()) as { store?: { status: string } };
  return body.store?.status === 'up';
}

async function history(replica: EchoProcess, query = ''): Promise<{ entries: Entry[]; res: Response }> {
  const res = await fetch(`${replica.url}/history${query}`);
  assert.equal(res.status, 200);
  return { entries: (await res.json()) as Entry[], res };
}

async function count(replica: EchoProcess, query = ''): Promise<number> {
  const res = await fetch(`${replica.url}/history/count${query}`);
  assert.equal(res.status, 200);
  return ((await res.json()) as { count: number }).count;
}

/** Every entry of a (filtered) read, page by page, following X-Echo-History-Next-Cursor. */
async function allPages(replica: EchoProcess, filter: string, limit: number): Promise<Entry[]> {
  const out: Entry[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const { entries, res } = await history(
      replica,
      `?limit=${limit}${filter}${cursor === null ? '' : `&cursor=${cursor}`}`,
    );
    out.push(...entries);
    cursor = res.headers.get('x-echo-history-next-cursor');
    if (cursor === null) return out;
  }
  assert.fail('more than 100 pages');
}

/**
 * `shown` is the fleet's order of `sent` (requests sent one after another, the i-th to replica
 * i % replicas): the same entries, each replica's in the order it answered them. Across replicas the
 * order is the order the entries reached Redis, written after each answer: two requests answered
 * by two replicas within a moment may be shown either way round (docs/adr/0037-shared-state.md).
 */
function assertFleetOrder(shown: readonly string[], sent: readonly string[], replicas: number): void {
  assert.deepEqual([...shown].sort(), [...sent].sort(), 'the same entries');
  for (let r = 0; r < replicas; r++) {
    const own = (list: readonly string[]) => list.filter((id) => sent.indexOf(id) % replicas === r);
    assert.deepEqual(own(shown), own(sent), `replica ${r}'s entries in the order it answered them`);
  }
}

describe('history shared on Redis by three replicas', { skip }, () => {
  let redis: RedisServer;
  let replicas: EchoProcess[] = [];

  before(async () => {
    redis = await startRedis();
    replicas = await Promise.all([0, 1, 2].map(() => startEchoProcess({ ECHO_STATE_URL: redis.url })));
    for (const replica of replicas) await until('connected', () => storeUp(replica));
  });
  after(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await redis?.stop();
  });

  test('every replica shows the requests every replica answered: the same entries, in one order', async () => {
    const sent: string[] = [];
    for (let i = 0; i < 9; i++) {
      const replica = replicas[i % 3]!;
      const res = await fetch(`${replica.url}/fleet/${i}`, {
        method: i % 2 === 0 ? 'GET' : 'POST',
        ...(i % 2 === 0 ? {} : { body: `body ${i}` }),
        headers: { 'x-request-id': `fleet-${i}`, ...(i === 4 ? { 'x-echo-status': '503' } : {}) },
      });
      await res.arrayBuffer();
      sent.push(`fleet-${i}`);
    }
    // Each replica writes its entries just after answering: the last may take a moment to land.
    await until('the fleet has all nine', async () => (await count(replicas[0]!, '?path=/fleet/*')) === 9);
    const seen = await Promise.all(replicas.map((r) => history(r, '?path=/fleet/*')));
    const order = seen[0]!.entries.map((e) => e.id);
    assertFleetOrder(order, sent, 3);
    for (const { entries, res } of seen) {
      assert.equal(res.headers.get('x-echo-history-scope'), 'fleet');
      assert.deepEqual(
        entries.map((e) => e.id),
        order,
        'every replica shows one order',
      );
    }
    const posted = seen[0]!.entries.find((e) => e.id === 'fleet-3')!;
    assert.equal(posted.method, 'POST');
    assert.equal(posted.body, 'body 3');
    assert.equal(posted.status, 200);
    assert.equal(await scrapeValue(replicas[0]!.url, 'echo_state_history_dropped_total'), 0);
    for (const replica of replicas) {
      assert.equal(await count(replica, '?path=/fleet/*'), 9);
      assert.equal(await count(replica, '?path=/fleet/*&method=POST'), 4);
      assert.equal(await count(replica, '?path=/fleet/*&status=5xx'), 1);
      assert.equal(await count(replica, '?path=/fleet/*&fault=status'), 1);
    }
    // Page by page, filtered or not, a cursor from the fleet walks the fleet.
    assert.deepEqual(
      (await allPages(replicas[2]!, '&path=/fleet/*', 4)).map((e) => e.id),
      order,
    );
    const unfiltered = (await allPages(replicas[1]!, '', 2)).map((e) => e.id);
    assert.deepEqual(
      unfiltered.filter((id) => id.startsWith('fleet-')),
      order,
    );
  });

  test('secrets are masked in the fleet’s history as in one process’s; a binary body stays binary', async () => {
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    await (
      await fetch(`${replicas[0]!.url}/masked`, {
        method: 'POST',
        headers: { authorization: 'Bearer abc.def', 'x-request-id': 'masked-1' },
        body: bytes,
      })
    ).arrayBuffer();
    await until('the entry landed', async () => (await count(replicas[1]!, '?path=/masked')) === 1);
    const { entries } = await history(replicas[1]!, '?path=/masked');
    assert.equal(entries.length, 1);
    assert.equal(entries[0]!.headers['authorization'], '[MASKED]');
    assert.equal(entries[0]!.body_encoding, 'base64');
    assert.deepEqual(Buffer.from(entries[0]!.body, 'base64'), bytes);
  });

  test('POST /replay on one replica replays a request another replica recorded', async () => {
    await (
      await fetch(`${replicas[0]!.url}/to-replay?x=1`, {
        method: 'PUT',
        headers: { 'x-request-id': 'replay-me', 'content-type': 'text/plain' },
        body: 'replayed body',
      })
    ).arrayBuffer();
    await until('the entry landed', async () => (await count(replicas[2]!, '?path=/to-replay')) === 1);
    const res = await fetch(`${replicas[2]!.url}/replay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'replay-me' }),
    });
    // The echo answers a text body with itself: the replay sent the stored body.
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'replayed body');
    // Not known anywhere: the fleet says so.
    const missing = await fetch(`${replicas[1]!.url}/replay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'never-recorded' }),
    });
    assert.equal(missing.status, 404);
    assert.equal(
      ((await missing.json()) as { error: { code: string } }).error.code,
      'ECHO_ERR_REPLAY_NOT_FOUND',
    );
    // The replayed request is in the fleet's history too: two PUTs to /to-replay?x=1, one body.
    await until('the replay recorded', async () => (await count(replicas[1]!, '?path=/to-replay')) === 2);
    const { entries } = await history(replicas[1]!, '?path=/to-replay&method=PUT');
    assert.deepEqual(
      entries.map((e) => e.body),
      ['replayed body', 'replayed body'],
    );
  });

  test('DELETE /history on one replica empties every replica’s; cursors go on', async () => {
    const { res } = await history(replicas[0]!, '?limit=1');
    const before = await count(replicas[0]!);
    assert.ok(before > 0);
    const deleted = await fetch(`${replicas[1]!.url}/history`, { method: 'DELETE' });
    assert.equal(deleted.status, 200);
    assert.equal(((await deleted.json()) as { deleted: number }).deleted, before);
    for (const replica of replicas) assert.equal(await count(replica), 0);
    await (
      await fetch(`${replicas[2]!.url}/after-delete`, { headers: { 'x-request-id': 'after' } })
    ).arrayBuffer();
    const cursor = res.headers.get('x-echo-history-next-cursor');
    assert.ok(cursor !== null);
    await until('the entry landed', async () => (await count(replicas[0]!)) === 1);
    const { entries } = await history(replicas[0]!, `?cursor=${cursor}`);
    assert.deepEqual(
      entries.map((e) => e.id),
      ['after'],
    );
  });

  test('Redis away: each replica answers history from its own memory and says so; back: the fleet again', async () => {
    const [a, b] = replicas as [EchoProcess, EchoProcess, EchoProcess];
    await redis.stop();
    await until('a knows the store is away', async () => !(await storeUp(a)));
    await until('b knows the store is away', async () => !(await storeUp(b)));
    await (await fetch(`${a.url}/while-away`, { headers: { 'x-request-id': 'away-a' } })).arrayBuffer();
    const onA = await history(a, '?path=/while-away');
    assert.equal(onA.res.headers.get('x-echo-history-scope'), 'process');
    assert.deepEqual(
      onA.entries.map((e) => e.id),
      ['away-a'],
    );
    const onB = await history(b, '?path=/while-away');
    assert.equal(onB.res.headers.get('x-echo-history-scope'), 'process');
    assert.deepEqual(onB.entries, []);
    // The DELETE /history sent to another replica emptied a's own history too: what a recorded
    // before it (three /fleet/ requests) does not come back while Redis is away.
    assert.equal(await count(a, '?path=/fleet/*'), 0);

    redis = await startRedis(redis.port);
    for (const replica of replicas) await until('connected again', () => storeUp(replica), 20_000);
    await (await fetch(`${a.url}/back`, { headers: { 'x-request-id': 'back-a' } })).arrayBuffer();
    await until('the entry landed', async () => (await count(b, '?path=/back')) === 1);
    const back = await history(b, '?path=/back');
    assert.equal(back.res.headers.get('x-echo-history-scope'), 'fleet');
    assert.deepEqual(
      back.entries.map((e) => e.id),
      ['back-a'],
    );
  });
});

describe('the fleet’s history is bounded as one process’s', { skip }, () => {
  let redis: RedisServer;
  let replicas: EchoProcess[] = [];

  before(async () => {
    redis = await startRedis();
    const env = {
      ECHO_STATE_URL: redis.url,
      ECHO_HISTORY_SIZE: '30',
      ECHO_HISTORY_MAX_BYTES: String(1024 * 1024),
    };
    replicas = await Promise.all([0, 1].map(() => startEchoProcess(env)));
    for (const replica of replicas) await until('connected', () => storeUp(replica));
  });
  after(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await redis?.stop();
  });

  test('ECHO_HISTORY_SIZE is the fleet’s window: the newest entries, whichever replica took them', async () => {
    for (let i = 0; i < 40; i++)
      await (
        await fetch(`${replicas[i % 2]!.url}/w/${i}`, { headers: { 'x-request-id': `w-${i}` } })
      ).arrayBuffer();
    await until('the newest landed', async () => (await count(replicas[0]!, '?path=/w/39')) === 1);
    await until('the one before landed', async () => (await count(replicas[0]!, '?path=/w/38')) === 1);
    for (const replica of replicas) {
      assert.equal(await count(replica), 30);
      const { entries } = await history(replica, '?limit=1000');
      assert.equal(entries.length, 30);
      // The newest 30 (give or take the order of two requests answered by two replicas at once).
      const kept = entries.map((e) => Number(e.id.slice(2)));
      assert.ok(Math.min(...kept) >= 8, `the oldest kept: w-${Math.min(...kept)}`);
      assertFleetOrder(
        entries.map((e) => e.id),
        Array.from({ length: 40 }, (_, i) => `w-${i}`).filter((id) => entries.some((e) => e.id === id)),
        2,
      );
    }
    // An id that left the window is gone for replay too.
    const res = await fetch(`${replicas[0]!.url}/replay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'w-0' }),
    });
    assert.equal(res.status, 404);
  });

  test('a read holds at most ECHO_HISTORY_MAX_BYTES of bodies: a page of large bodies ends early, with a next cursor', async () => {
    const body = Buffer.alloc(64 * 1024, 'x');
    for (let i = 0; i < 20; i++)
      await (
        await fetch(`${replicas[i % 2]!.url}/big/${i}`, {
          method: 'POST',
          body,
          headers: { 'x-request-id': `big-${i}` },
        })
      ).arrayBuffer();
    await until('all landed', async () => (await count(replicas[0]!, '?path=/big/*')) === 20);
    const first = await history(replicas[0]!, '?path=/big/*&limit=20');
    const shown = first.entries.length;
    assert.ok(shown >= 1 && shown < 20, `${shown} entries of 64 KiB in one page of a 1 MiB budget`);
    assert.ok(first.entries.every((e) => e.body.length === body.length));
    // Following the cursor shows the rest: no entry is lost to the bound.
    const all = await allPages(replicas[1]!, '&path=/big/*', 20);
    assert.deepEqual(all.map((e) => e.id).sort(), Array.from({ length: 20 }, (_, i) => `big-${i}`).sort());
  });
});

/**
 * A fleet history writing a fresh History's entries through `client`, its turns run by the test
 * (`turns`: the flushes scheduled, in order), failing the test on any write error unless told.
 */
function writer(client: Redis, onError: (error: unknown) => void = (error) => assert.fail(String(error))) {
  const local = new History(100, 1024);
  const turns: Array<() => void> = [];
  const fleet = startFleetHistory({
    client,
    history: local,
    up: () => true,
    onError,
    schedule: (flush) => turns.push(flush),
  });
  /** Records a GET of `url` with id `id` (and `body`) and ends it with a 200. */
  const end = (id: string, url: string, body?: string) =>
    completeEntry(
      local.record({
        requestId: id,
        method: 'GET',
        url,
        headers: {},
        body: body === undefined ? undefined : Buffer.from(body),
        remoteAddr: '127.0.0.1',
        protocol: 'HTTP/1.1',
      })!,
      200,
      1,
    );
  return { local, turns, fleet, end };
}

describe('writing the fleet’s history: one write per turn of the event loop', { skip }, () => {
  let redis: RedisServer;
  let client: Redis;
  before(async () => {
    redis = await startRedis();
    client = new Redis({ port: redis.port, host: '127.0.0.1', lazyConnect: true });
    await client.connect();
  });
  after(async () => {
    client?.disconnect();
    await redis?.stop();
  });

  test('the entries that end in one turn go to Redis in one script call, none before the turn ends', async () => {
    const { turns, fleet, end } = writer(client);
    const record = (i: number) => end(`batch-${i}`, `/batch/${i}`, i === 0 ? undefined : `b${i}`);
    // A first batch loads the script (EVALSHA answered NOSCRIPT, then EVAL).
    record(0);
    turns.shift()!();
    await fleet.flushed();
    const scripts = async () =>
      (await commandCalls(redis.port, 'evalsha')) + (await commandCalls(redis.port, 'eval'));
    const scriptsBefore = await scripts();
    for (let i = 1; i <= 10; i++) record(i);
    assert.equal(turns.length, 1, 'one flush scheduled for the turn');
    assert.equal(await client.xlen(HISTORY_KEYS.stream), 1, 'nothing written before the turn ends');
    turns.shift()!();
    await fleet.flushed();
    assert.equal((await scripts()) - scriptsBefore, 1, 'one script call for the ten');
    assert.equal(await client.xlen(HISTORY_KEYS.stream), 11);
    assert.equal(await fleet.count({ given: [] }), 11);
    // A later turn's entries are the next batch, numbered after these.
    record(11);
    assert.equal(turns.length, 1);
    turns.shift()!();
    await fleet.flushed();
    const { copy, page } = await fleet.page(undefined, 100, { given: [] });
    assert.deepEqual([page?.firstSeq, page?.lastSeq], [1, 12]);
    assert.equal(copy.atOrAfter(12)?.id, 'batch-11');
    assert.equal(copy.atOrAfter(5)?.body, 'b4');
    assert.equal(fleet.dropped, 0);
    fleet.close();
  });

  test('a read waits for the entries queued behind the write in flight, not only for that write', async () => {
    await client.del(HISTORY_KEYS.stream, HISTORY_KEYS.seq, HISTORY_KEYS.ids, HISTORY_KEYS.bodies);
    const { turns, fleet, end } = writer(client);
    end('first', '/queued');
    turns.shift()!(); // the first batch leaves
    end('second', '/queued'); // queued while it is on its way; its turn never comes here
    await fleet.flushed();
    assert.equal(await client.xlen(HISTORY_KEYS.stream), 2);
    fleet.close();
  });

  test('a write that fails drops its batch and counts it; the entries stay in the process’s history', async () => {
    // A client with nothing to reach and no queue: its commands fail at once.
    const gone = new Redis({ port: 1, host: '127.0.0.1', lazyConnect: true, enableOfflineQueue: false });
    const errors: unknown[] = [];
    const { local, turns, fleet, end } = writer(gone, (error) => errors.push(error));
    for (let i = 0; i < 3; i++) end(`lost-${i}`, '/lost');
    turns.shift()!();
    await fleet.flushed();
    assert.equal(fleet.dropped, 3);
    assert.equal(errors.length, 1);
    assert.equal(local.size, 3);
    fleet.close();
    gone.disconnect();
  });
});
