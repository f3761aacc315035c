/**
 * Issue #30, item 3: reading history must not block the event loop. 100 stored JSON bodies of
 * 64 KiB (the default ECHO_HISTORY_SIZE and ECHO_HISTORY_MAX_BODY), read by four clients at once,
 * took about 2 s of `/health` a read. The server runs in a child process, as `npm start` runs it;
 * the prober measures `/health` from this process while the reads run.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { request } from 'undici';
import { assertLive, describeLiveness, probeLiveness, startEchoProcess } from '../helpers/liveness.ts';

/** A JSON body of exactly `bytes` bytes: records with a secret-named member, so masking rewrites it. */
function jsonBody(bytes: number, n: number): string {
  const records: string[] = [];
  let size = 2 + 13; // {"records":[ ... ]}
  for (let i = 0; size < bytes - 200; i++) {
    const record = JSON.stringify({
      id: i,
      name: `customer ${n}-${i}`,
      note: 'x'.repeat(40),
      password: 'hunter2',
    });
    records.push(record);
    size += record.length + 1;
  }
  const text = `{"records":[${records.join(',')}],"pad":"`;
  return `${text}${'p'.repeat(bytes - text.length - 2)}"}`;
}

test('history – four clients reading 100 stored 64 KiB JSON bodies at once keep /health under 100 ms p99', async (t) => {
  const echo = await startEchoProcess();
  t.after(() => echo.stop());
  for (let n = 0; n < 100; n++) {
    const res = await request(`${echo.url}/orders/${n}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: jsonBody(64 * 1024, n),
    });
    assert.equal(res.statusCode, 200);
    await res.body.dump();
  }

  // The readers run in a worker thread: receiving 4 x 10 x 7 MiB here would make this thread
  // collect garbage for tens of milliseconds at a time, delay its probes and blame the server.
  let reads: Read[] = [];
  await assertLive('while history was read', async () => {
    const prober = probeLiveness(echo.port);
    reads = await readInWorker(`${echo.url}/history`, { readers: 4, readsEach: 10 });
    const report = await prober.stop();
    t.diagnostic(describeLiveness(report));
    return report;
  });
  assert.equal(reads.length, 40);
  for (const read of reads) {
    assert.equal(read.status, 200);
    assert.equal(read.bytes, reads[0]!.bytes);
  }
  // The last read of each reader, parsed: the whole history, oldest first, masked.
  for (const read of reads.filter((r) => r.text !== undefined)) {
    const entries = JSON.parse(read.text!) as Array<{ path: string; body: string }>;
    assert.equal(entries.length, 100);
    assert.equal(entries[0]!.path, '/orders/0');
    assert.equal(entries[99]!.path, '/orders/99');
    assert.match(entries[0]!.body, /"password":"\[MASKED\]"/);
  }
});

interface Read {
  readonly status: number;
  readonly bytes: number;
  /** The body, for the last read of each reader. */
  readonly text?: string;
}

/** `readers` clients at once, each reading `url` `readsEach` times in turn, from a worker thread. */
async function readInWorker(url: string, options: { readers: number; readsEach: number }): Promise<Read[]> {
  const worker = new Worker(
    `
    const { workerData, parentPort } = require('node:worker_threads');
    const reader = async () => {
      const out = [];
      for (let i = 0; i < workerData.readsEach; i++) {
        const res = await fetch(workerData.url);
        const buf = Buffer.from(await res.arrayBuffer());
        const last = i === workerData.readsEach - 1;
        out.push({ status: res.status, bytes: buf.length, ...(last ? { text: buf.toString('utf8') } : {}) });
      }
      return out;
    };
    Promise.all(Array.from({ length: workerData.readers }, reader)).then((all) => parentPort.postMessage(all.flat()));
    `,
    { eval: true, workerData: { url, ...options } },
  );
  const [reads] = (await once(worker, 'message')) as [Read[]];
  await worker.terminate();
  return reads;
}
