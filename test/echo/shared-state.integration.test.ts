import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type EchoProcess, startEchoProcess } from '../helpers/liveness.ts';
import { scrapeValue } from '../helpers/metrics.ts';
import {
  commandsProcessed,
  hasRedis,
  REDIS_MISSING,
  type RedisServer,
  startRedis,
} from '../helpers/redis.ts';
import { freePort, until } from '../helpers/runtime.ts';

/**
 * Replicas that agree (#33), the scenario set: three echo-chaos processes naming one real
 * `redis-server` (`ECHO_STATE_URL`) serve one set, whichever of them it was posted to; a fourth
 * that joins later takes it over its own file; with Redis gone each keeps serving from its own
 * memory and says so, and when Redis is back they agree again without a restart.
 */

const skip = hasRedis() ? false : process.env['CI'] ? false : REDIS_MISSING;

let redis: RedisServer;
let replicas: EchoProcess[] = [];
let dir: string;

async function health(
  replica: EchoProcess,
): Promise<{ status: string; store?: { url: string; status: string } }> {
  return (await fetch(`${replica.url}/health`)).json() as Promise<{
    status: string;
    store?: { url: string; status: string };
  }>;
}

async function etag(replica: EchoProcess): Promise<string | null> {
  return (await fetch(`${replica.url}/scenario`)).headers.get('etag');
}

async function post(replica: EchoProcess, scenarios: unknown): Promise<void> {
  const res = await fetch(`${replica.url}/scenario`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(scenarios),
  });
  assert.equal(res.status, 200, await res.text());
}

async function answer(replica: EchoProcess, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${replica.url}${path}`);
  return { status: res.status, body: await res.text() };
}

describe('the scenario set shared on Redis', { skip }, () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shared-state-'));
    redis = await startRedis();
    replicas = await Promise.all([0, 1, 2].map(() => startEchoProcess({ ECHO_STATE_URL: redis.url })));
    for (const replica of replicas) {
      await until(
        'every replica connected to the store',
        async () => (await health(replica)).store?.status === 'up',
      );
    }
  });

  after(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('/health names the store, without its password, and says it is up', async () => {
    const body = await health(replicas[0]!);
    assert.equal(body.status, 'healthy');
    assert.deepEqual(body.store, { url: redis.url, status: 'up' });
    assert.equal(await scrapeValue(replicas[0]!.url, 'echo_state_store_up'), 1);
  });

  test('a set posted to one replica is served by every replica, with the same ETag', async () => {
    const [a, b, c] = replicas as [EchoProcess, EchoProcess, EchoProcess];
    await post(a, [{ path: '/pay', responses: [{ status: 503, body: 'shared' }] }]);
    const tag = await etag(a);
    await until(
      'b and c serve the set posted to a',
      async () => (await etag(b)) === tag && (await etag(c)) === tag,
    );
    assert.deepEqual(await answer(c, '/pay'), { status: 503, body: 'shared' });
    // And back the other way: c's set reaches a.
    await post(c, [{ path: '/pay', responses: [{ status: 200, body: 'from c' }] }]);
    await until('a serves the set posted to c', async () => (await answer(a, '/pay')).body === 'from c');
    assert.equal(await etag(a), await etag(c));
  });

  test('a replica that joins later takes the shared set over its own file', async () => {
    const file = join(dir, 'own.yaml');
    writeFileSync(file, '- path: /pay\n  responses:\n    - status: 418\n      body: own file\n');
    const late = await startEchoProcess({ ECHO_STATE_URL: redis.url, ECHO_SCENARIO_FILE: file });
    try {
      // It joined before it served: its very first answer is the fleet's.
      assert.deepEqual(await answer(late, '/pay'), { status: 200, body: 'from c' });
      assert.equal((await health(late)).store?.status, 'up');
      assert.equal(await etag(late), await etag(replicas[0]!));
    } finally {
      await late.stop();
    }
  });

  test('Redis gone: each replica serves from memory, says degraded; back: they agree again', async () => {
    const [a, b] = replicas as [EchoProcess, EchoProcess, EchoProcess];
    await redis.stop();
    await until('a says degraded', async () => (await health(a)).status === 'degraded');
    const down = await fetch(`${a.url}/health`);
    assert.equal(down.status, 200, 'liveness holds: a restart would not bring Redis back');
    assert.deepEqual(((await down.json()) as { store: unknown }).store, { url: redis.url, status: 'down' });
    assert.equal(await scrapeValue(a.url, 'echo_state_store_up'), 0);
    assert.equal((await fetch(`${a.url}/ready`)).status, 200);
    // The echo goes on, and a set posted meanwhile is served by the replica that took it.
    assert.equal((await answer(b, '/pay')).body, 'from c');
    await post(a, [{ path: '/pay', responses: [{ status: 202, body: 'while away' }] }]);
    assert.equal((await answer(a, '/pay')).body, 'while away');

    redis = await startRedis(redis.port);
    await until('a is connected again', async () => (await health(a)).status === 'healthy', 20_000);
    await until(
      'b adopts the set a took while Redis was away',
      async () => (await answer(b, '/pay')).body === 'while away',
      20_000,
    );
    assert.equal(await scrapeValue(a.url, 'echo_state_store_up'), 1);
  });
});

test('without ECHO_STATE_URL, /health has no store, no shared-state meter, history no scope header', async () => {
  const alone = await startEchoProcess({});
  try {
    const body = await health(alone);
    assert.equal(body.store, undefined);
    const metrics = await (await fetch(`${alone.url}/metrics`)).text();
    assert.doesNotMatch(metrics, /echo_state_/);
    const history = await fetch(`${alone.url}/history`);
    assert.equal(history.status, 200);
    assert.equal(history.headers.get('x-echo-history-scope'), null);
  } finally {
    await alone.stop();
  }
});

test('a store unreachable at startup: the service starts within the command timeout, says so in one line, serves', async () => {
  const nowhere = `redis://127.0.0.1:${await freePort()}`;
  const alone = await startEchoProcess({ ECHO_STATE_URL: nowhere });
  try {
    assert.equal((await answer(alone, '/hello')).status, 200);
    const body = await health(alone);
    assert.deepEqual(body.store, { url: nowhere, status: 'down' });
    const unreachable = () =>
      alone
        .stdout()
        .split('\n')
        .filter((line) => line.includes('store unreachable at startup'));
    // the log worker writes it a moment after it was logged
    await until('the startup line is written', () => unreachable().length > 0, 10_000).catch(() => {});
    const lines = unreachable();
    assert.equal(lines.length, 1, alone.stdout());
    assert.ok(lines[0]!.includes(nowhere), lines[0]);
  } finally {
    await alone.stop();
  }
});

describe('the hot path with a shared store', { skip }, () => {
  let server: RedisServer;
  let replica: EchoProcess;
  before(async () => {
    server = await startRedis();
    // History off: with it on, each request's entry is written (shared-history.integration.test.ts).
    replica = await startEchoProcess({ ECHO_STATE_URL: server.url, ECHO_HISTORY_SIZE: '0' });
    await until('connected', async () => (await health(replica)).store?.status === 'up');
  });
  after(async () => {
    await replica?.stop();
    await server?.stop();
  });

  test('with history off, echoed requests make no round trip to Redis (only the once-a-second check does)', async () => {
    const before = await commandsProcessed(server.port);
    const started = performance.now();
    for (let i = 0; i < 200; i++) await (await fetch(`${replica.url}/hot/${i}`)).arrayBuffer();
    const seconds = (performance.now() - started) / 1000;
    // Our own INFO, and one hash check a second (two for rounding), nothing per request.
    const most = 1 + Math.ceil(seconds) + 2;
    const made = (await commandsProcessed(server.port)) - before;
    assert.ok(
      made <= most,
      `${made} commands for 200 requests in ${seconds.toFixed(1)} s; at most ${most} expected`,
    );
  });
});

describe('scenario positions shared on Redis', { skip }, () => {
  let server: RedisServer;
  let fleet: EchoProcess[] = [];
  before(async () => {
    server = await startRedis();
    fleet = await Promise.all([0, 1, 2].map(() => startEchoProcess({ ECHO_STATE_URL: server.url })));
    for (const replica of fleet) {
      await until('connected', async () => (await health(replica)).store?.status === 'up');
    }
  });
  after(async () => {
    await Promise.all(fleet.map((r) => r.stop()));
    await server?.stop();
  });

  /** Posts `scenarios` to the first replica and waits until every replica serves that set. */
  async function share(scenarios: unknown): Promise<void> {
    await post(fleet[0]!, scenarios);
    const tag = await etag(fleet[0]!);
    await until('every replica serves the set', async () => {
      for (const replica of fleet) if ((await etag(replica)) !== tag) return false;
      return true;
    });
  }

  test('property: requests sent to random replicas get the answers one process gives, for many seeds', async () => {
    const set = [
      {
        name: 'flaky',
        path: '/flaky',
        responses: [{ status: 503, repeat: 2 }, { status: 200, body: 'ok' }, { status: 429 }],
      },
      { name: 'once', path: '/once', times: 2, responses: [{ status: 418, body: 'teapot' }] },
    ];
    const alone = await startEchoProcess({});
    try {
      for (const seed of [1, 7, 42, 1234, 99991]) {
        await share(set);
        await post(alone, set);
        // A small LCG: the same replicas, paths and sessions for a seed, every run.
        let state = seed;
        const next = (n: number) => {
          state = (state * 1103515245 + 12345) % 2147483648;
          return state % n;
        };
        const fleetAnswers: string[] = [];
        const aloneAnswers: string[] = [];
        for (let i = 0; i < 24; i++) {
          const path = ['/flaky', '/once', '/flaky'][next(3)]!;
          const session = next(4) === 0 ? 'user-1' : undefined;
          const headers: Record<string, string> = session === undefined ? {} : { 'X-Echo-Session': session };
          const ask = async (replica: EchoProcess) => {
            const res = await fetch(`${replica.url}${path}`, { headers });
            const body = await res.text();
            // The echo's own answer names the request: equal in kind, not in bytes (ports, ids).
            return `${path} ${res.status} ${body.startsWith('GET ') ? 'echo' : body}`;
          };
          fleetAnswers.push(await ask(fleet[next(3)]!));
          aloneAnswers.push(await ask(alone));
        }
        assert.deepEqual(fleetAnswers, aloneAnswers, `seed ${seed}`);
      }
    } finally {
      await alone.stop();
    }
  });

  test('"503, 503, then 200" over three replicas: two 503s in all, not two per replica', async () => {
    await share([
      {
        path: '/boot',
        cycle: false,
        responses: [
          { status: 503, repeat: 2 },
          { status: 200, body: 'up' },
        ],
      },
    ]);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await answer(fleet[i % 3]!, '/boot')).status);
    assert.deepEqual(statuses, [503, 503, 200, 200, 200, 200]);
  });

  test('fifty concurrent requests spread over three replicas take fifty distinct steps', async () => {
    const responses = Array.from({ length: 50 }, (_, i) => ({ status: 200, body: `step ${i}` }));
    await share([{ path: '/steps', cycle: false, responses }]);
    const bodies = await Promise.all(
      Array.from({ length: 50 }, (_, i) => answer(fleet[i % 3]!, '/steps').then((a) => a.body)),
    );
    assert.deepEqual(
      [...bodies].sort((a, b) => Number(a.slice(5)) - Number(b.slice(5))),
      responses.map((r) => r.body),
    );
  });

  test('a conditional push of one set to every replica (the operator’s) restarts it once, not once per replica', async () => {
    const set = [
      { path: '/pushed', cycle: false, responses: ['a', 'b', 'c', 'd', 'e'].map((body) => ({ body })) },
    ];
    const pushTo = async (replica: EchoProcess, tag: string) =>
      fetch(`${replica.url}/scenario`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'if-none-match': `"${tag}"` },
        body: JSON.stringify(set),
      });
    const { scenarioSetHash } = await import('../../src/scenario/index.ts');
    const hash = scenarioSetHash(set);
    // All three at once, as the operator's workers push them: the store takes the set once.
    const pushed = await Promise.all(fleet.map((replica) => pushTo(replica, hash)));
    for (const res of pushed) assert.ok([200, 412].includes(res.status), `push answered ${res.status}`);
    await until('every replica serves the set', async () => {
      for (const replica of fleet) if ((await etag(replica)) !== `"${hash}"`) return false;
      return true;
    });
    const bodies: string[] = [];
    for (let i = 0; i < 2; i++) bodies.push((await answer(fleet[i % 3]!, '/pushed')).body);
    // Pushed again (an operator that restarted): every replica holds it, nothing restarts.
    const again = await Promise.all(fleet.map((replica) => pushTo(replica, hash)));
    assert.deepEqual(
      again.map((res) => res.status),
      [412, 412, 412],
    );
    bodies.push((await answer(fleet[2]!, '/pushed')).body);
    // A replica that has not yet taken a set the store holds (here: one whose tag is not named)
    // replaces its own, but the store is not written again: the fleet's sequence goes on.
    assert.equal((await pushTo(fleet[1]!, 'another')).status, 200);
    for (let i = 3; i < 5; i++) bodies.push((await answer(fleet[i % 3]!, '/pushed')).body);
    assert.deepEqual(bodies, ['a', 'b', 'c', 'd', 'e']);
  });

  test('times counts the fleet: times: 3 answers three requests in all, then the echo does', async () => {
    await share([{ path: '/thrice', times: 3, responses: [{ status: 418, body: 'scripted' }] }]);
    const statuses: number[] = [];
    for (let i = 0; i < 9; i++) statuses.push((await answer(fleet[i % 3]!, '/thrice')).status);
    assert.deepEqual(statuses, [418, 418, 418, 200, 200, 200, 200, 200, 200]);
  });

  test('state, reset and position on one replica are the fleet’s; a session walks its own sequence on any replica', async () => {
    await share([{ name: 'seq', path: '/seq', responses: [{ body: 'a' }, { body: 'b' }, { body: 'c' }] }]);
    await answer(fleet[0]!, '/seq');
    await answer(fleet[1]!, '/seq');
    const state = async (replica: EchoProcess, query = '') =>
      (
        (await (await fetch(`${replica.url}/scenario/state${query}`)).json()) as {
          scenarios: Array<{ position: number; total: number }>;
        }
      ).scenarios[0]!;
    assert.deepEqual(
      { position: (await state(fleet[2]!)).position, total: (await state(fleet[2]!)).total },
      { position: 2, total: 2 },
    );
    assert.equal((await answer(fleet[2]!, '/seq')).body, 'c');
    // A reset on one replica starts the fleet again.
    const reset = await fetch(`${fleet[1]!.url}/scenario/reset`, { method: 'POST' });
    assert.equal(reset.status, 200);
    assert.equal((await answer(fleet[0]!, '/seq')).body, 'a');
    // A position set on one replica is where the next request on another starts.
    const moved = await fetch(`${fleet[2]!.url}/scenario/state`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'seq', position: 2 }),
    });
    assert.equal(moved.status, 200, await moved.text());
    assert.equal((await answer(fleet[1]!, '/seq')).body, 'c');
    // A session: its own sequence, shared by the replicas it reaches.
    const inSession = async (replica: EchoProcess) =>
      await (await fetch(`${replica.url}/seq`, { headers: { 'X-Echo-Session': 'user-7' } })).text();
    assert.deepEqual(
      [await inSession(fleet[0]!), await inSession(fleet[1]!), await inSession(fleet[2]!)],
      ['a', 'b', 'c'],
    );
    assert.equal((await state(fleet[0]!, '?session=user-7')).total, 3);
  });
});
