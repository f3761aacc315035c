/**
 * Issue #30, item 4: history's memory is bounded in all by `ECHO_HISTORY_MAX_BYTES`, whatever the
 * traffic: past it the oldest entries go first; reads never evict, and the JSON a read prepares is
 * counted too.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { History, type HistoryEntry } from '../../src/echo/history.ts';
import { seededRandom } from '../../src/echo/random.ts';
import { startEcho } from '../helpers/echo-server.ts';
import { send } from '../helpers/http.ts';

test('history budget – ECHO_HISTORY_MAX_BYTES=1048576 keeps the newest 64 KiB bodies that fit, well before ECHO_HISTORY_SIZE', async (t) => {
  const echo = await startEcho({ ECHO_HISTORY_MAX_BYTES: '1048576' });
  t.after(() => echo.close());
  const body = JSON.stringify({ data: 'x'.repeat(64 * 1024 - 12) });
  for (let n = 0; n < 20; n++) {
    const answer = await send(`${echo.url}/big/${n}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': `big-${n}` },
      body,
    });
    assert.equal(answer.status, 200);
  }
  const read = async (): Promise<string[]> => {
    const res = await request(`${echo.url}/history`);
    assert.equal(res.statusCode, 200);
    return ((await res.body.json()) as Array<{ id: string }>).map((e) => e.id);
  };
  const ids = await read();
  // A body and the room set aside for its JSON: 128 KiB an entry, so 7 fit in 1 MiB with their heads.
  assert.equal(ids.length, 7, ids.join(' '));
  assert.deepEqual(
    ids,
    Array.from({ length: 7 }, (_, i) => `big-${13 + i}`),
  );
  // Reading (which prepares and keeps each entry's JSON) evicts nothing.
  assert.deepEqual(await read(), ids);
  const health = (await (await request(`${echo.url}/health`)).body.json()) as {
    metrics: { history_size: number; history_bytes: number };
  };
  assert.equal(health.metrics.history_size, 7);
  // What the seven hold against the budget: their bodies and the room for their JSON, within it.
  assert.ok(health.metrics.history_bytes > 7 * 128 * 1024, String(health.metrics.history_bytes));
  assert.ok(health.metrics.history_bytes <= 1024 * 1024, String(health.metrics.history_bytes));
});

test('history budget – whatever is recorded and read, what history holds stays within maxBytes and is the newest entries', () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    const random = seededRandom(seed);
    const maxBodyBytes = 1 + Math.floor(random() * 4096);
    const maxBytes = 2 * maxBodyBytes + 4096 + Math.floor(random() * 32 * 1024);
    const history = new History(1 + Math.floor(random() * 40), maxBodyBytes, {
      maxBytes,
      // A view that makes the JSON larger than the body, as masking short values can.
      view: (entry): HistoryEntry => ({
        ...(JSON.parse(JSON.stringify(entry)) as HistoryEntry),
        body: entry.body.replaceAll('a', '[MASKED]'),
      }),
    });
    let recorded = 0;
    for (let step = 0; step < 600; step++) {
      if (random() < 0.3) {
        const before = history.list().map((e) => e.id);
        for (const entry of history.list()) {
          const json = JSON.parse(history.json(entry).toString('utf8')) as { id: string };
          assert.equal(json.id, entry.id);
        }
        assert.deepEqual(
          history.list().map((e) => e.id),
          before,
          `seed ${seed} step ${step}: a read evicted`,
        );
      } else {
        const size = Math.floor(random() * maxBodyBytes * 1.5);
        const entry = history.record({
          requestId: `r-${recorded++}`,
          method: 'POST',
          url: `/p/${'q'.repeat(Math.floor(random() * 200))}`,
          headers: { 'x-pad': 'h'.repeat(Math.floor(random() * 1000)) },
          body: Buffer.from('a'.repeat(size)),
          remoteAddr: '127.0.0.1',
          protocol: 'HTTP/1.1',
          idMayRepeat: false,
        });
        if (entry !== undefined && random() < 0.9) entry.status = 200;
      }
      assert.ok(
        history.storedBytes <= maxBytes,
        `seed ${seed} step ${step}: ${history.storedBytes} > ${maxBytes}`,
      );
      const ids = history.list().map((e) => Number(e.id.slice(2)));
      assert.deepEqual(
        ids,
        Array.from({ length: ids.length }, (_, i) => recorded - ids.length + i),
        `seed ${seed} step ${step}: not the newest entries in order`,
      );
    }
  }
});
