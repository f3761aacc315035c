import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type EchoProcess, startEchoProcess } from '../helpers/liveness.ts';
import { hasRedis, REDIS_MISSING, type RedisServer, startRedis } from '../helpers/redis.ts';
import { quietFor, until } from '../helpers/runtime.ts';

/**
 * Replicas that agree (#33), the rate limit: `ECHO_RATE_LIMIT_RPS` is one bucket for every process
 * naming the same Redis (`ECHO_STATE_URL`), not one per process; with Redis away each process
 * takes from its own again. Three echo-chaos processes and a real `redis-server`.
 */

const skip = hasRedis() || process.env['CI'] ? false : REDIS_MISSING;
const RPS = 1;
const BURST = 3;

let redis: RedisServer;
let replicas: EchoProcess[] = [];

const storeStatus = async (replica: EchoProcess) =>
  ((await (await fetch(`${replica.url}/health`)).json()) as { store?: { status: string } }).store?.status;

/** Sends `count` requests round-robin over the replicas, one at a time: how many passed, and in how long. */
async function burst(count: number): Promise<{ passed: number; limited: number; seconds: number }> {
  const started = performance.now();
  let passed = 0;
  let limited = 0;
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${replicas[i % replicas.length]!.url}/limited/${i}`);
    await res.arrayBuffer();
    if (res.status === 200) passed++;
    else if (res.status === 429) limited++;
  }
  return { passed, limited, seconds: (performance.now() - started) / 1000 };
}

describe('the rate limit shared on Redis', { skip }, () => {
  before(async () => {
    redis = await startRedis();
    const env = {
      ECHO_STATE_URL: redis.url,
      ECHO_RATE_LIMIT_RPS: String(RPS),
      ECHO_RATE_LIMIT_BURST: String(BURST),
    };
    replicas = await Promise.all([0, 1, 2].map(() => startEchoProcess(env)));
    for (const replica of replicas) {
      await until('every replica connected', async () => (await storeStatus(replica)) === 'up');
    }
  });

  after(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await redis?.stop();
  });

  test('three replicas pass what one bucket allows, not three times it', async () => {
    // Let the bucket fill (an earlier request of the setup may have taken from it): it refills with
    // time in the replicas' shared store, and nothing else shows when it is full.
    await quietFor((BURST / RPS) * 1000, 'nothing takes from the shared bucket while it refills');
    const { passed, limited, seconds } = await burst(18);
    // One bucket: the burst, plus what refills while the requests are sent (and one of rounding).
    const most = BURST + Math.ceil(seconds * RPS) + 1;
    assert.ok(passed >= BURST, `passed ${passed}, the burst is ${BURST}`);
    assert.ok(passed <= most, `passed ${passed} of 18 in ${seconds.toFixed(2)} s; one bucket allows ${most}`);
    assert.equal(passed + limited, 18);
  });

  test('with Redis away, each replica takes from its own bucket again', async () => {
    await redis.stop();
    for (const replica of replicas) {
      await until('the store is down for each', async () => (await storeStatus(replica)) === 'down');
    }
    // Each process's own bucket is full by now (it took nothing while the fleet's served).
    const { passed, seconds } = await burst(18);
    const fleetMost = BURST + Math.ceil(seconds * RPS) + 1;
    assert.ok(
      passed > fleetMost,
      `passed ${passed}: more than one bucket's ${fleetMost}, as three buckets do`,
    );
  });
});
