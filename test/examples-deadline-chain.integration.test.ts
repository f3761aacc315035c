import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * The deadline-chain example shows the timeout budget crossing three services and a sink with
 * fetch, undici, axios and node:http: this checks what it prints. Bounds are generous: the numbers'
 * order, the shared deadline, upper bounds and the counts are asserted, never how fast a hop was
 * (a loaded machine only makes the remaining budget smaller).
 */

const SERVER = fileURLToPath(new URL('../examples/deadline-chain/server.ts', import.meta.url));
const START_TIMEOUT_MS = 20_000;
const CLIENTS = ['fetch', 'undici', 'axios', 'http'] as const;
/** obs's defaults: `safety-margin` and `minimum-budget`. */
const SAFETY_MARGIN_MS = 50;
const MINIMUM_BUDGET_MS = 100;

interface Call {
  client: string;
  to: string;
  remainingMs: number | null;
  outcome: 'reached' | 'refused' | 'failed';
  status?: number;
  code?: string;
  message?: string;
  exhausted: { transport: string; before: number; after: number };
  nextHits: { before: number; after: number };
}
interface Hop {
  hop: string;
  url: string;
  budget?: { remainingMs: number; deadlineEpochMs: number; source: string };
  headers: Record<string, string | null>;
  spentMs: number;
  call: Call;
  next?: Hop;
}
interface Sink {
  hop: 'sink';
  hits: number;
  headers: Record<string, string | null>;
}

/** Starts the example with `env` added (no inherited `OBS_*`/`OTEL_*`/`SPEND_MS`); resolves hop1's URL. */
async function start(
  t: TestContext,
  env: Record<string, string>,
): Promise<{ url: string; stop(): Promise<void> }> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(OBS|OTEL)_/i.test(k) && k !== 'SPEND_MS'),
  );
  const child = spawn(process.execPath, [SERVER], { env: { ...base, PORT: '0', HOST: '127.0.0.1', ...env } });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let output = '';
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk;
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening at" line:\n${output}`)), START_TIMEOUT_MS);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk;
      const m = /listening at (https?:\/\/[^\s"]+)/i.exec(output);
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening:\n${output}`));
    });
  });
  return {
    url,
    async stop() {
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      assert.equal(await exited, 0, output);
    },
  };
}

/** One request through the chain: hop1, hop2, hop3 and (when reached) the sink. */
async function chain(url: string, headers: Record<string, string>, query = '') {
  const res = await fetch(`${url}/${query}`, { headers });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  const hop1 = JSON.parse(text) as Hop;
  const hop2 = hop1.next;
  const hop3 = hop2?.next;
  assert.ok(hop1.budget && hop2?.budget && hop3?.budget, text);
  assert.deepEqual([hop1.hop, hop2.hop, hop3.hop], ['hop1', 'hop2', 'hop3'], text);
  return { hop1, hop2, hop3, sink: hop3.next as Sink | undefined, text };
}

/** The value of `obs_timeout_budget_exhausted_total{transport}` a service's `/metrics` shows. */
async function scrapeExhausted(hopUrl: string, transport: string): Promise<number> {
  const res = await fetch(`${hopUrl}/metrics`);
  assert.equal(res.status, 200);
  const text = await res.text();
  const m = new RegExp(`^obs_timeout_budget_exhausted_total\\{transport="${transport}"\\} (\\d+)$`, 'm').exec(
    text,
  );
  return m?.[1] === undefined ? 0 : Number(m[1]);
}

/**
 * The shape every chain shows: hop1's budget from `Obs-Timeout-Ms` less the margin, hop2 and hop3 on
 * hop1's absolute deadline, each hop arriving with at least `spendMs` less than the one before
 * (unless the budget ran out), and each call counted as exhausted exactly when it had
 * `minimum-budget` or less (calls within a few ms of the line are not judged).
 */
function assertChain(hops: Hop[], timeoutMs: number, spendMs: number, text: string): void {
  const [hop1, ...rest] = hops;
  assert.ok(hop1?.budget);
  assert.equal(hop1.budget.source, 'remaining-header', text);
  assert.equal(hop1.headers['obs-timeout-ms'], String(timeoutMs), text);
  assert.ok(hop1.budget.remainingMs <= timeoutMs - SAFETY_MARGIN_MS, text);
  for (const hop of rest) {
    assert.equal(hop.budget?.source, 'deadline-header', `${hop.hop}: ${text}`);
    assert.equal(hop.budget?.deadlineEpochMs, hop1.budget.deadlineEpochMs, `${hop.hop}: ${text}`);
    assert.equal(hop.headers['obs-timeout-deadline-ms'], String(hop1.budget.deadlineEpochMs), text);
  }
  for (let i = 1; i < hops.length; i++) {
    const before = hops[i - 1]!.budget!.remainingMs;
    const after = hops[i]!.budget!.remainingMs;
    // a timer may fire a millisecond early by Date.now; a spent budget stops at 0
    assert.ok(after === 0 || before - after >= spendMs - 5, `${hops[i]!.hop} after ${before}: ${text}`);
  }
  for (const hop of hops) {
    assert.equal(hop.spentMs, spendMs, text);
    const { call } = hop;
    assert.equal(call.exhausted.transport, call.client, text);
    assert.ok(call.remainingMs !== null && call.remainingMs <= hop.budget!.remainingMs, text);
    if (Math.abs(call.remainingMs - MINIMUM_BUDGET_MS) > 10) {
      const counted = call.remainingMs <= MINIMUM_BUDGET_MS ? 1 : 0;
      assert.equal(call.exhausted.after - call.exhausted.before, counted, `${hop.hop}'s call: ${text}`);
    }
  }
}

test('examples – deadline-chain: one absolute deadline across three hops, the remaining budget shrinking (default clients: fetch, undici, axios)', async (t) => {
  const { url, stop } = await start(t, {});

  const { hop1, hop2, hop3, sink, text } = await chain(url, { 'Obs-Timeout-Ms': '2000' });
  assertChain([hop1, hop2, hop3], 2000, 100, text);
  assert.deepEqual(
    [hop1.call.client, hop2.call.client, hop3.call.client],
    ['fetch', 'undici', 'axios'],
    text,
  );
  assert.ok(hop3.budget!.remainingMs < hop1.budget!.remainingMs, text);
  for (const hop of [hop1, hop2, hop3]) {
    assert.equal(hop.call.outcome, 'reached', text);
    assert.equal(hop.call.status, 200, text);
    assert.equal(hop.call.nextHits.after, hop.call.nextHits.before + 1, text);
  }
  assert.equal(sink?.hop, 'sink', text);
  assert.equal(sink.hits, 1, text);
  assert.equal(sink.headers['obs-timeout-deadline-ms'], String(hop1.budget!.deadlineEpochMs), text);

  const bad = await fetch(`${url}/?client=grpc`);
  assert.equal(bad.status, 400);
  assert.match(((await bad.json()) as { error: string }).error, /client must be one of/);

  await stop();
});

test('examples – deadline-chain: Obs-Timeout-Ms 1000, 300 ms per hop: hop3 arrives with at most ~400 ms and its call to the sink is counted as exhausted, for fetch, undici, axios and node:http', async (t) => {
  const { url, stop } = await start(t, { SPEND_MS: '300' });

  for (const client of CLIENTS) {
    const { hop1, hop2, hop3, sink, text } = await chain(
      url,
      { 'Obs-Timeout-Ms': '1000' },
      `?client=${client}`,
    );
    assertChain([hop1, hop2, hop3], 1000, 300, text);
    assert.deepEqual([hop1.call.client, hop2.call.client, hop3.call.client], [client, client, client], text);
    // 1000 less the 50 ms margin, less two hops of 300 ms: 350, never more (a slow machine: less).
    assert.ok(hop3.budget!.remainingMs <= 1000 - SAFETY_MARGIN_MS - 2 * 300, `hop3: ${text}`);
    assert.ok(hop3.budget!.remainingMs < hop2.budget!.remainingMs, text);
    assert.ok(hop2.budget!.remainingMs < hop1.budget!.remainingMs, text);

    // hop3 spent 300 more: about 50 ms left, at or below minimum-budget, whatever the load.
    assert.ok(hop3.call.remainingMs! <= MINIMUM_BUDGET_MS, text);
    assert.equal(hop3.call.exhausted.after, hop3.call.exhausted.before + 1, `counted once: ${text}`);
    assert.equal(await scrapeExhausted(hop3.url, client), hop3.call.exhausted.after, text);
    // Counted, not refused: the call still ran, stamped with what was left.
    assert.equal(hop3.call.outcome, 'reached', text);
    assert.equal(hop3.call.status, 200, text);
    assert.equal(hop3.call.nextHits.after, hop3.call.nextHits.before + 1, text);
    assert.equal(sink?.hop, 'sink', text);
    assert.equal(sink.headers['obs-timeout-deadline-ms'], String(hop1.budget!.deadlineEpochMs), text);
    assert.ok(Number(sink.headers['obs-timeout-ms']) <= MINIMUM_BUDGET_MS, text);
  }

  await stop();
});

test('examples – deadline-chain: with OBS_TIMEOUT_BUDGET_ABORT_ON_EXHAUSTION=true, hop3 call is refused with OBS_ERR_TIMEOUT_BUDGET_EXHAUSTED and never reaches the sink, for fetch, undici, axios and node:http', async (t) => {
  const { url, stop } = await start(t, { SPEND_MS: '300', OBS_TIMEOUT_BUDGET_ABORT_ON_EXHAUSTION: 'true' });

  for (const client of CLIENTS) {
    const { hop1, hop2, hop3, sink, text } = await chain(
      url,
      { 'Obs-Timeout-Ms': '1000' },
      `?client=${client}`,
    );
    assertChain([hop1, hop2, hop3], 1000, 300, text);
    assert.ok(hop3.budget!.remainingMs <= 1000 - SAFETY_MARGIN_MS - 2 * 300, `hop3: ${text}`);
    for (const hop of [hop1, hop2]) {
      // well above minimum-budget unless the machine stalled for hundreds of milliseconds
      if (hop.call.remainingMs! > MINIMUM_BUDGET_MS) assert.equal(hop.call.outcome, 'reached', text);
    }

    assert.equal(hop3.call.client, client, text);
    assert.ok(hop3.call.remainingMs! <= MINIMUM_BUDGET_MS, text);
    assert.equal(hop3.call.outcome, 'refused', text);
    assert.equal(hop3.call.code, 'OBS_ERR_TIMEOUT_BUDGET_EXHAUSTED', text);
    assert.match(hop3.call.message!, new RegExp(`^${client} call refused`), text);
    assert.equal(hop3.call.exhausted.after, hop3.call.exhausted.before + 1, `counted once: ${text}`);
    assert.equal(await scrapeExhausted(hop3.url, client), hop3.call.exhausted.after, text);
    assert.equal(hop3.call.nextHits.after, hop3.call.nextHits.before, `the sink was reached: ${text}`);
    assert.equal(sink, undefined, text);
  }

  // The sink's own count: this is the first request that reaches it.
  const { hop3, sink, text } = await chain(url, { 'Obs-Timeout-Ms': '5000' });
  assert.equal(hop3.call.outcome, 'reached', text);
  assert.equal(sink?.hits, 1, text);

  await stop();
});
