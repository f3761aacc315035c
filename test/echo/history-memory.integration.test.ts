/**
 * Issue #30, item 4: at the documented maximum `ECHO_HISTORY_MAX_BODY=10485760`, reading 100 stored
 * bodies built one JSON string of about a gigabyte: a 500 (`RangeError: Invalid string length`), a
 * 14 s block and 2.8 GB of RSS. History is now bounded in all by `ECHO_HISTORY_MAX_BYTES` (32 MiB by
 * default: the oldest entries go first) and read entry by entry, so a read never builds one string.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { startEchoProcess } from '../helpers/liveness.ts';

const MiB = 1024 * 1024;

/** A JSON body of exactly `bytes` bytes, with secret-named members (so masking rewrites it). */
function jsonBody(bytes: number): string {
  const records: string[] = [];
  for (let i = 0; i < 1000; i++)
    records.push(JSON.stringify({ id: i, name: `customer ${i}`, password: 'hunter2' }));
  const text = `{"records":[${records.join(',')}],"pad":"`;
  return `${text}${'p'.repeat(bytes - text.length - 2)}"}`;
}

test('history – 40 stored JSON bodies of 10 MiB (ECHO_HISTORY_MAX_BODY at its maximum) read as valid JSON, RSS under 512 MiB (the chart’s memory limit)', async (t) => {
  const echo = await startEchoProcess({ ECHO_HISTORY_MAX_BODY: String(10 * MiB) });
  t.after(() => echo.stop());
  let peakRssBytes = echo.rssBytes();
  const sampler = setInterval(() => {
    peakRssBytes = Math.max(peakRssBytes, echo.rssBytes());
  }, 50);
  t.after(() => clearInterval(sampler));

  const body = Buffer.from(jsonBody(10 * MiB));
  for (let n = 0; n < 40; n++) {
    const res = await request(`${echo.url}/upload/${n}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': `upload-${n}` },
      body,
    });
    assert.equal(res.statusCode, 200);
    await res.body.dump();
  }

  const reads: Array<Array<{ id: string; body_size: number; body: string }>> = [];
  for (let read = 0; read < 2; read++) {
    const res = await request(`${echo.url}/history`, { headersTimeout: 120_000, bodyTimeout: 120_000 });
    const text = await res.body.text();
    assert.equal(res.statusCode, 200, text.slice(0, 500));
    reads.push(JSON.parse(text));
  }
  clearInterval(sampler);
  peakRssBytes = Math.max(peakRssBytes, echo.rssBytes());
  t.diagnostic(`peak RSS ${(peakRssBytes / MiB).toFixed(0)} MiB`);
  assert.ok(peakRssBytes < 512 * MiB, `peak RSS ${(peakRssBytes / MiB).toFixed(0)} MiB`);

  for (const entries of reads) {
    // The newest entries that fit in 32 MiB, oldest first, each with its whole body, masked.
    assert.ok(entries.length >= 1 && entries.length <= 3, `${entries.length} entries`);
    assert.deepEqual(
      entries.map((e) => e.id),
      Array.from({ length: entries.length }, (_, i) => `upload-${40 - entries.length + i}`),
    );
    for (const entry of entries) {
      assert.equal(entry.body_size, 10 * MiB);
      assert.match(entry.body.slice(0, 200), /"password":"\[MASKED\]"/);
    }
  }
  const health = await request(`${echo.url}/health`);
  assert.equal(health.statusCode, 200);
  const { metrics } = (await health.body.json()) as { metrics: { history_size: number } };
  assert.ok(metrics.history_size <= 3);
});
