import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { GROWTH_BYTES, IdleReclaimer, type ReclaimDeps } from '../../src/echo/memory-reclaim.ts';
import { freePort, within } from '../helpers/runtime.ts';

const MiB = 1024 * 1024;

/** A process whose request count, RSS and clock the test sets; `collect` drops the RSS to `afterGc`. */
function fakeProcess(rss: number) {
  const p = { requests: 0, rss, afterGc: rss, collections: 0, clock: 0 };
  const deps: ReclaimDeps = {
    requests: () => p.requests,
    rssBytes: () => p.rss,
    collect: () => {
      p.collections++;
      p.clock += 40;
      p.rss = p.afterGc;
    },
    now: () => p.clock,
  };
  return { p, deps };
}

describe('IdleReclaimer', () => {
  it('never collects in a service that saw no traffic, however large it is', () => {
    const { p, deps } = fakeProcess(500 * MiB);
    const reclaimer = new IdleReclaimer(deps);
    p.rss = 900 * MiB;
    for (let i = 0; i < 5; i++) assert.equal(reclaimer.tick(), undefined);
    assert.equal(p.collections, 0);
  });

  it('never collects while requests keep coming, then once on the first idle interval', () => {
    const { p, deps } = fakeProcess(130 * MiB);
    const reclaimer = new IdleReclaimer(deps);
    for (let i = 0; i < 5; i++) {
      p.requests += 1000;
      p.rss += 40 * MiB;
      assert.equal(reclaimer.tick(), undefined, `busy interval ${i}`);
    }
    p.afterGc = 125 * MiB;
    const reclaimed = reclaimer.tick();
    assert.deepEqual(reclaimed, { rssBeforeBytes: 330 * MiB, rssAfterBytes: 125 * MiB, gcMs: 40 });
    assert.equal(p.collections, 1);
    // Still idle: the burst is paid for, nothing more to do.
    for (let i = 0; i < 3; i++) assert.equal(reclaimer.tick(), undefined);
    assert.equal(p.collections, 1);
  });

  it('leaves alone traffic that grew the RSS by less than the threshold', () => {
    const { p, deps } = fakeProcess(130 * MiB);
    const reclaimer = new IdleReclaimer(deps);
    p.requests = 10;
    p.rss = 130 * MiB + GROWTH_BYTES - 1;
    assert.equal(reclaimer.tick(), undefined);
    assert.equal(reclaimer.tick(), undefined);
    assert.equal(p.collections, 0);
  });

  it('measures growth from what the last collection left, so each burst gets one collection', () => {
    const { p, deps } = fakeProcess(130 * MiB);
    const reclaimer = new IdleReclaimer(deps);
    p.requests = 1;
    p.rss = 300 * MiB;
    p.afterGc = 200 * MiB; // live data that stays: the new floor
    assert.equal(reclaimer.tick(), undefined);
    assert.ok(reclaimer.tick());
    // A few scrapes later the RSS has barely moved: no second collection.
    p.requests = 2;
    p.rss = 205 * MiB;
    assert.equal(reclaimer.tick(), undefined);
    assert.equal(reclaimer.tick(), undefined);
    assert.equal(p.collections, 1);
    // A second burst.
    p.requests = 5000;
    p.rss = 260 * MiB;
    assert.equal(reclaimer.tick(), undefined);
    assert.ok(reclaimer.tick());
    assert.equal(p.collections, 2);
  });
});

describe('ECHO_IDLE_RECLAIM, in the running service', () => {
  it('gives the memory of a burst back once the service is idle, and says so in its log', async () => {
    const port = await freePort();
    const child = spawn(
      process.execPath,
      ['--max-semi-space-size=16', '--heap-growing-percent=30', 'src/echo/main.ts'],
      {
        env: {
          ...process.env,
          PORT: String(port),
          HOST: '127.0.0.1',
          LOG_REQUESTS: 'false',
          ECHO_IDLE_RECLAIM: '1s',
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    try {
      const lines = createInterface({ input: child.stdout });
      let listening: () => void;
      const started = new Promise<void>((resolve) => {
        listening = resolve;
      });
      const reclaimed = new Promise<Record<string, number>>((resolve) => {
        lines.on('line', (line) => {
          const entry = JSON.parse(line) as { msg?: string } & Record<string, number>;
          if (entry.msg?.startsWith('Server listening')) listening();
          if (entry.msg?.startsWith('idle after traffic')) resolve(entry);
        });
      });
      await started;
      // A burst that grows the heap: JSON bodies of about 1 MiB, parsed and echoed, 32 at once (so
      // that what they hold while in flight grows the heap, whatever its growing factor).
      const body = JSON.stringify({
        items: Array.from({ length: 20_000 }, (_, i) => ({ i, s: `item-${i}-xxxxxxxxxxxx` })),
      });
      for (let round = 0; round < 8; round++) {
        await Promise.all(
          Array.from({ length: 32 }, async () => {
            const res = await fetch(`http://127.0.0.1:${port}/burst`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body,
            });
            await res.arrayBuffer();
            assert.equal(res.status, 200);
          }),
        );
      }
      const entry = await within(
        reclaimed,
        'no "idle after traffic" log line within 30 s of the burst',
        30_000,
      );
      assert.ok(entry['rss_after_mb']! < entry['rss_before_mb']!, `RSS went down: ${JSON.stringify(entry)}`);
      assert.equal(typeof entry['gc_ms'], 'number');
    } finally {
      child.kill('SIGINT');
      await once(child, 'exit');
    }
  });
});
