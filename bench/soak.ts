/**
 * `npm run soak`: echo-chaos as `npm start` runs it, under mixed normal traffic and, after a warm-up,
 * the attacks of issue #30 in rotation, on 127.0.0.1 for a bounded time; it probes `/health` as a
 * kubelet does, samples the server's RSS and open descriptors, reads its log, and writes the verdicts
 * of the issue's "Done when" with their figures under "## Soak" in bench/RESULTS.md.
 *
 *   node bench/soak.ts [--minutes 10] [--warmup-seconds 60] [--attack-seconds 8] [--gap-seconds 4]
 *     [--settle-seconds 10] [--attacks 1,2,3,5,6,7,8,9|none] [--rate 150] [--concurrency 16] [--probe-ms 200]
 *     [--sample-seconds 1] [--rss-abort-mb 2048] [--write|--no-write]
 *
 * The normal traffic, drawn at random by `--concurrency` workers at `--rate` actions a second in all:
 * echo GET and POST, delays, status and error faults (resets, closes and broken bodies included),
 * generated bodies, SSE streams held a moment, WebSocket round trips, scenario set changes and state
 * moves, and replays of history entries. A response is malformed when it is not what its request
 * asked for (a wrong status, a body that is not the echo, a missing `X-Echo-Fault`); a reset or
 * broken body that was asked for is not. The attacks: bench/soak-attacks.ts. The verdicts and the
 * figures: bench/soak-report.ts.
 *
 * Bounded against a server without the fixes too: each attack is bounded in count and size, and the
 * run stops (killing the server, writing what it saw) when the server's RSS passes `--rss-abort-mb`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import WebSocket from 'ws';
import { slope, table, targetsSection, verdict } from './lib.ts';
import { ATTACKS, type AttackContext, entriesOf, normalSet, scenarioSet } from './soak-attacks.ts';
import {
  attribute,
  describeAttribution,
  LogScan,
  type LoopReading,
  loopDelayDuring,
  loopDelayMaxMs,
  NORMAL_ONLY,
  type Phase,
  type Probe,
  probeFigures,
  probesByPhase,
  type RssSample,
  rssAfterWarmup,
  rssByPhase,
  slowestProbes,
  soakTargets,
} from './soak-report.ts';

const argv = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`);
  return i === -1 ? undefined : argv[i + 1];
};
const value = (name: string, def: number) => {
  const raw = option(name);
  if (raw === undefined) return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) {
    process.stderr.write(`--${name} ${JSON.stringify(raw)} is invalid: expected a number of at least 0\n`);
    process.exit(2);
  }
  return n;
};
// "A 10-minute soak (`npm run soak`)": issue #30's "Done when".
const minutes = value('minutes', 10);
const runMs = minutes * 60_000;
/** Normal traffic only: JIT, pools, the history filling to its size. Shorter runs keep a fifth of it. */
const warmupMs = value('warmup-seconds', Math.min(60, (minutes * 60) / 5)) * 1000;
const attackMs = value('attack-seconds', 8) * 1000;
/**
 * The warm-up goes on through the first round of attacks and this much normal traffic after it: the
 * RSS the verdict compares with is taken there, once every bounded store has been filled once and
 * every path has run (docs/adr/0032-soak-warm-up.md).
 */
const settleMs = value('settle-seconds', 10) * 1000;
const gapMs = value('gap-seconds', 4) * 1000;
const ratePerSecond = value('rate', 150);
const concurrency = value('concurrency', 16);
const probeIntervalMs = value('probe-ms', 200);
const sampleSeconds = value('sample-seconds', 1);
const rssAbortMb = value('rss-abort-mb', 2048);
const chosen = option('attacks');
const attacks =
  chosen === undefined
    ? ATTACKS
    : chosen === 'none'
      ? []
      : ATTACKS.filter((a) => chosen.split(',').includes(a.item));
const unknown = (chosen ?? 'none')
  .split(',')
  .filter((item) => item !== 'none' && !ATTACKS.some((a) => a.item === item));
if (unknown.length > 0) {
  process.stderr.write(
    `--attacks ${JSON.stringify(chosen)} is invalid: expected item numbers among ${ATTACKS.map((a) => a.item).join(',')} (item 4 is a server setting, not in the soak), or none\n`,
  );
  process.exit(2);
}
const write = argv.includes('--write') || (!argv.includes('--no-write') && minutes >= 5);
const root = new URL('..', import.meta.url).pathname;
const resultsPath = join(root, 'bench', 'RESULTS.md');
const log = (line: string) => process.stdout.write(`${line}\n`);

/** The issue's bounds. */
const PROBE_LIMIT_MS = 100;
const RSS_FACTOR_LIMIT = 1.5;
/** A probe gives up after this long (the chart's liveness probe: 3 s). */
const PROBE_TIMEOUT_MS = 3_000;
/** How often the server's event-loop delay is read from its /metrics. */
const LOOP_READ_MS = 2_000;
/** The request timeout the soak's server runs with, so that item 7's stalled bodies are cut in the run. */
const REQUEST_TIMEOUT = '5s';

// ---------------------------------------------------------------------------------------------------
// The server

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  return typeof address === 'object' && address ? address.port : 0;
}

const port = await freePort();
const env: NodeJS.ProcessEnv = {};
for (const [k, v] of Object.entries(process.env))
  if (!/^(ECHO_|OBS_|OTEL_|LOG_|MAX_BODY|ENABLE_|NODE_OPTIONS$|npm_)/.test(k)) env[k] = v;
// As `npm start` runs it (its node flags: ADR 0013), with its defaults but for the request timeout;
// `--node-flags "<flags>"` adds node or V8 flags after npm start's, to compare memory settings.
const nodeFlags = (option('node-flags') ?? '').split(' ').filter((f) => f !== '');
const server: ChildProcess = spawn(
  process.execPath,
  ['--max-semi-space-size=16', '--heap-growing-percent=30', ...nodeFlags, 'src/echo/main.ts'],
  {
    cwd: root,
    env: { ...env, PORT: String(port), HOST: '127.0.0.1', ECHO_REQUEST_TIMEOUT: REQUEST_TIMEOUT },
    stdio: ['ignore', 'pipe', 'pipe'],
  },
);
// Its log: pino's JSON lines on stdout, read as they come (nothing is kept but the error lines).
const stdoutScan = new LogScan();
const stderrScan = new LogScan();
server.stdout?.setEncoding('utf8').on('data', (c: string) => stdoutScan.feed(c));
server.stderr?.setEncoding('utf8').on('data', (c: string) => {
  stderrScan.feed(c);
  process.stderr.write(c);
});
const pid = server.pid as number;
/** Set when the server ends before the soak does: everything after it fails, and the soak says so. */
let died: string | undefined;
/** Set when the soak stops early on its own bound (the server's RSS). */
let aborted: string | undefined;
let stopping = false;
const stopAll = new AbortController();
server.on('exit', (code, signal) => {
  if (!stopping) {
    died = `the server exited during the soak (code ${code}, signal ${signal})`;
    stopAll.abort();
  }
});
const base = `http://127.0.0.1:${port}`;

async function waitForPort(): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(100);
  }
  throw new Error('echo-chaos did not start');
}

function sample(): { rssMb: number; fds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? Number.NaN);
  return { rssMb: (kb * 1024) / 1e6, fds: readdirSync(`/proc/${pid}/fd`).length };
}

// ---------------------------------------------------------------------------------------------------
// The traffic

const counts = new Map<string, number>();
const malformed: string[] = [];
let malformedCount = 0;
let transportErrors = 0;
const count = (kind: string) => counts.set(kind, (counts.get(kind) ?? 0) + 1);
const bad = (kind: string, what: string) => {
  malformedCount++;
  if (malformed.length < 20) malformed.push(`${kind}: ${what}`);
};

const rand = (n: number) => Math.floor(Math.random() * n);
const timeout = () => AbortSignal.timeout(15_000);

async function echoGet(): Promise<void> {
  const path = `/soak/${rand(50)}?q=${rand(1000)}`;
  const res = await fetch(base + path, { signal: timeout() });
  const body = await res.text();
  if (res.status !== 200 || !body.startsWith(`GET ${path} `))
    bad('echo GET', `${res.status} ${body.slice(0, 80)}`);
}

async function echoPost(): Promise<void> {
  const body = 'x'.repeat(rand(4096)) + String(rand(1e9));
  const res = await fetch(`${base}/soak/post`, { method: 'POST', body, signal: timeout() });
  const text = await res.text();
  if (res.status !== 200 || text !== body)
    bad('echo POST', `${res.status}, ${text.length} bytes for ${body.length}`);
}

async function delayed(): Promise<void> {
  const started = performance.now();
  const res = await fetch(`${base}/soak/delay`, { headers: { 'X-Echo-Delay': '50ms' }, signal: timeout() });
  await res.arrayBuffer();
  const took = performance.now() - started;
  if (res.status !== 200 || !res.headers.get('x-echo-fault')?.includes('delay') || took < 49)
    bad('delay', `${res.status} fault=${res.headers.get('x-echo-fault')} after ${took.toFixed(0)} ms`);
}

async function statusFault(): Promise<void> {
  const res = await fetch(`${base}/soak/status`, { headers: { 'X-Echo-Status': '503' }, signal: timeout() });
  await res.arrayBuffer();
  if (res.status !== 503 || !res.headers.get('x-echo-fault')?.includes('status'))
    bad('status fault', `${res.status} fault=${res.headers.get('x-echo-fault')}`);
}

async function errorFault(): Promise<void> {
  const kind = ['reset', 'close', 'empty', 'truncate', 'malformed', 'garbage', 'bad-gateway'][
    rand(7)
  ] as string;
  try {
    const res = await fetch(`${base}/soak/error`, { headers: { 'X-Echo-Error': kind }, signal: timeout() });
    await res.arrayBuffer();
    if (kind === 'bad-gateway' && res.status !== 502)
      bad('error fault', `bad-gateway answered ${res.status}`);
  } catch {
    // a reset, a close or a broken body was asked for; bad-gateway must not fail
    if (kind === 'bad-gateway') bad('error fault', 'bad-gateway failed in transport');
  }
}

async function generated(): Promise<void> {
  const size = rand(200_000);
  const res = await fetch(`${base}/soak/bytes`, {
    headers: { 'X-Echo-Response-Size': String(size) },
    signal: timeout(),
  });
  const body = await res.arrayBuffer();
  if (res.status !== 200 || body.byteLength !== size)
    bad('generated body', `${res.status}, ${body.byteLength} of ${size} bytes`);
}

function sse(): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/sse', agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
      });
      res.on('error', () => {});
      setTimeout(() => {
        req.destroy();
        if (res.statusCode !== 200 || !/^id: \d+\ndata: \{/m.test(text))
          bad('SSE', `${res.statusCode} ${JSON.stringify(text.slice(0, 80))}`);
        resolve();
      }, 200 + rand(1500));
    });
    req.on('error', reject);
    req.end();
  });
}

function websocket(): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
    const message = `soak ${rand(1e9)}`;
    const timer = setTimeout(() => {
      ws.terminate();
      bad('WebSocket', 'no echo in 15 s');
      resolve();
    }, 15_000);
    ws.on('open', () => ws.send(message));
    ws.on('message', (data) => {
      clearTimeout(timer);
      if (String(data) !== message) bad('WebSocket', `echo ${JSON.stringify(String(data).slice(0, 80))}`);
      ws.close();
      resolve();
    });
    ws.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

async function scenarioChange(): Promise<void> {
  // An attack holds the set (its pattern must stay in place while it runs): a plain echo instead.
  if (scenarioSet.held) return echoGet();
  scenarioSet.changesInFlight++;
  try {
    await changeScenarios();
  } finally {
    scenarioSet.changesInFlight--;
  }
}

async function changeScenarios(): Promise<void> {
  const status = [200, 202, 418, 429, 500, 503][rand(6)] as number;
  const put = await fetch(`${base}/scenario`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(normalSet(status)),
    signal: timeout(),
  });
  await put.arrayBuffer();
  if (put.status !== 200) return bad('scenario change', `POST /scenario ${put.status}`);
  // Other workers may replace or move it meanwhile: only the shape of the answer is checked.
  const res = await fetch(`${base}/soak/scenario`, { signal: timeout() });
  await res.arrayBuffer();
  if (res.headers.get('x-echo-fault')?.includes('scenario') !== true && res.status === 200)
    bad('scenario change', `served ${res.status} without X-Echo-Fault: scenario`);
  const reset = await fetch(`${base}/scenario/reset`, { method: 'POST', signal: timeout() });
  await reset.arrayBuffer();
}

async function replay(): Promise<void> {
  const history = await fetch(`${base}/history`, { signal: timeout() });
  // An array today; a page (an object holding the array) once history is paged (issue #30, item 3).
  const entry = entriesOf(await history.json())
    .filter((e) => e.method === 'POST' && e.path === '/soak/post' && e.status === 200)
    .at(-1);
  if (entry === undefined) return;
  const res = await fetch(`${base}/replay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: entry.id }),
    signal: timeout(),
  });
  await res.arrayBuffer();
  // 404: the entry left the history (100 entries) between the two calls.
  if (res.status !== 200 && res.status !== 404) bad('replay', `${res.status}`);
  else if (res.status === 200 && res.headers.get('x-echo-replay-of') === null)
    bad('replay', 'no X-Echo-Replay-Of');
}

/** Weighted: mostly plain echo, as real load is. */
const ACTIONS: readonly [string, number, () => Promise<void>][] = [
  ['echo GET', 30, echoGet],
  ['echo POST', 20, echoPost],
  ['delay', 10, delayed],
  ['status fault', 8, statusFault],
  ['error fault', 8, errorFault],
  ['generated body', 6, generated],
  ['SSE', 4, sse],
  ['WebSocket', 6, websocket],
  ['scenario change', 3, scenarioChange],
  ['replay', 5, replay],
];
const totalWeight = ACTIONS.reduce((s, a) => s + a[1], 0);
function pick(): [string, () => Promise<void>] {
  let r = Math.random() * totalWeight;
  for (const [name, weight, fn] of ACTIONS) {
    r -= weight;
    if (r < 0) return [name, fn];
  }
  return [ACTIONS[0]?.[0] as string, ACTIONS[0]?.[2] as () => Promise<void>];
}

// ---------------------------------------------------------------------------------------------------
// The run

await waitForPort();
const started = Date.now();
const endAt = started + runMs;
/** The end of the warm-up's normal traffic: the attacks start here, and so do the probes' verdicts. */
const warmupEnd = started + warmupMs;
/** The end of the warm-up: the first round of attacks and `settleMs` after it. */
let roundWarmupEnd: number | undefined;
const secondsIn = (atMs: number) => ((atMs - started) / 1000).toFixed(0);

// RSS and descriptors, and the bound that stops a server without the fixes from taking the machine.
const samples: { atMs: number; t: number; rssMb: number; fds: number }[] = [];
let ownRssMaxMb = 0;
const takeSample = () => {
  ownRssMaxMb = Math.max(ownRssMaxMb, process.memoryUsage.rss() / 1e6);
  if (died !== undefined || stopping) return;
  try {
    const s = sample();
    samples.push({ atMs: Date.now(), t: (Date.now() - started) / 60_000, ...s });
    if (s.rssMb > rssAbortMb && aborted === undefined) {
      aborted = `the soak stopped at ${secondsIn(Date.now())} s: the server's RSS reached ${s.rssMb.toFixed(0)} MB, over --rss-abort-mb ${rssAbortMb}`;
      log(`  ${aborted}`);
      stopAll.abort();
    }
  } catch {
    // the server is gone: its exit says why
  }
};
takeSample();
const sampler = setInterval(takeSample, sampleSeconds * 1000);

// The prober, in a thread of its own.
const probes: Probe[] = [];
let proberLoopDelayMaxMs = Number.NaN;
const prober = new Worker(new URL('./soak-prober.ts', import.meta.url), {
  workerData: { port, intervalMs: probeIntervalMs, timeoutMs: PROBE_TIMEOUT_MS },
});
const proberDone = new Promise<void>((resolve) => {
  prober.on('message', (m: Probe | { done: true; loopDelayMaxMs: number }) => {
    if ('done' in m) {
      proberLoopDelayMaxMs = m.loopDelayMaxMs;
      resolve();
    } else probes.push(m);
  });
  prober.on('error', (error) => {
    log(`  the prober failed: ${error.message}`);
    resolve();
  });
  prober.on('exit', () => resolve());
});
const ownLoopDelay = monitorEventLoopDelay({ resolution: 10 });
ownLoopDelay.enable();

// The server's own event-loop delay, from its /metrics (the largest since the reading before): a
// slow probe with a quiet loop was slowed on its way (the machine, the client), not by the server.
const loopReadings: LoopReading[] = [];
let loopReadingsFailed = 0;
const readServerLoop = async () => {
  if (died !== undefined || stopping) return;
  try {
    const res = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    const maxMs = loopDelayMaxMs(await res.text());
    if (Number.isNaN(maxMs)) loopReadingsFailed++;
    else loopReadings.push({ atMs: Date.now(), maxMs });
  } catch {
    loopReadingsFailed++;
  }
};
const loopReader = setInterval(readServerLoop, LOOP_READ_MS);

// The attacks, one at a time, after the warm-up.
const phases: Phase[] = [];
let current: string | undefined;
const attackRecords = new Map(
  attacks.map((a) => [a.name, { runs: 0, outcomes: new Map<string, number>(), notes: [] as string[] }]),
);
const background: Promise<void>[] = [];
async function rotation(): Promise<void> {
  await sleep(warmupMs, undefined, { signal: stopAll.signal }).catch(() => {});
  for (let round = 1; attacks.length > 0 && Date.now() < endAt && !stopAll.signal.aborted; round++) {
    if (round === 2) {
      await sleep(settleMs, undefined, { signal: stopAll.signal }).catch(() => {});
      roundWarmupEnd = Date.now();
      log(
        `  ${secondsIn(roundWarmupEnd)} s: warm-up over (the first round of attacks and ${settleMs / 1000} s after it)`,
      );
      if (Date.now() >= endAt) return;
    }
    for (const attack of attacks) {
      if (Date.now() >= endAt || stopAll.signal.aborted) return;
      const record = attackRecords.get(attack.name)!;
      const startMs = Date.now();
      const ctx: AttackContext = {
        base,
        port,
        deadlineMs: Math.min(startMs + attackMs, endAt),
        seen: (outcome) => record.outcomes.set(outcome, (record.outcomes.get(outcome) ?? 0) + 1),
        note: (text) => {
          if (record.notes.length < 8) record.notes.push(text);
        },
        background: (work) => background.push(work),
        signal: stopAll.signal,
      };
      current = attack.name;
      record.runs++;
      record.notes.length = 0; // the report shows the figures of the last run
      try {
        await attack.run(ctx);
      } catch (error) {
        ctx.seen(`failed: ${(error as Error).message}`);
      }
      current = undefined;
      phases.push({ name: attack.name, startMs, endMs: Date.now() });
      log(
        `  ${secondsIn(Date.now())} s: ${attack.name} (item ${attack.item}) took ${((Date.now() - startMs) / 1000).toFixed(1)} s`,
      );
      await sleep(gapMs, undefined, { signal: stopAll.signal }).catch(() => {});
    }
  }
}

const reporter = setInterval(() => {
  const last = samples.at(-1);
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  const recent = probes.filter((p) => p.atMs >= Date.now() - 30_000);
  const max = recent.length === 0 ? Number.NaN : Math.max(...recent.map((p) => p.ms));
  log(
    `  ${secondsIn(Date.now())} s: ${total} actions, ${malformedCount} malformed, RSS ${last?.rssMb.toFixed(0)} MB, ${last?.fds} fds, /health max ${max.toFixed(0)} ms over the last 30 s${current ? `, now: ${current}` : Date.now() < warmupEnd ? ', warm-up' : ''}`,
  );
}, 30_000);

// The normal traffic: `concurrency` workers sharing `ratePerSecond` slots.
const slotMs = ratePerSecond > 0 ? 1000 / ratePerSecond : 0;
let nextSlotMs = performance.now();
async function worker(): Promise<void> {
  while (Date.now() < endAt && !stopAll.signal.aborted) {
    const now = performance.now();
    const at = Math.max(nextSlotMs, now);
    nextSlotMs = at + slotMs;
    if (at > now) await sleep(at - now);
    const [name, fn] = pick();
    try {
      await fn();
    } catch {
      if (!stopAll.signal.aborted) transportErrors++;
    }
    count(name);
  }
}

try {
  log(
    `soak: ${minutes} min on ${base}, warm-up ${warmupMs / 1000} s, attacks ${attacks.map((a) => a.item).join(',') || 'none'}`,
  );
  await Promise.all([...Array.from({ length: concurrency }, worker), rotation()]);
  stopAll.abort(); // ends what the attacks left in the background (held sockets)
  await Promise.allSettled(background);
  prober.postMessage('stop');
  await Promise.race([proberDone, sleep(PROBE_TIMEOUT_MS + 2000)]);
  await prober.terminate();
  clearInterval(reporter);
  await readServerLoop(); // covers the last probes
  await sleep(2000);
  takeSample();
} finally {
  clearInterval(sampler);
  clearInterval(reporter);
  clearInterval(loopReader);
  ownLoopDelay.disable();
  await prober.terminate();
  stopping = true;
  const closed = once(server, 'close'); // after its stdout and stderr are read to the end
  server.kill('SIGINT'); // the drain without ECHO_DRAIN_DELAY's wait (ADR 0014)
  const timer = setTimeout(() => server.kill('SIGKILL'), 5000);
  if (server.exitCode === null && server.signalCode === null) await closed;
  clearTimeout(timer);
  stdoutScan.end();
  stderrScan.end();
}

// ---------------------------------------------------------------------------------------------------
// The report

const ms = (x: number) => (Number.isNaN(x) ? 'n/a' : `${x.toFixed(1)} ms`);
const mb = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? 'n/a' : `${x.toFixed(0)} MB`);
const after = probes.filter((p) => p.atMs >= warmupEnd);
const during = probes.filter((p) => p.atMs < warmupEnd);
const figures = probeFigures(after, PROBE_LIMIT_MS);
const warmFigures = probeFigures(during, PROBE_LIMIT_MS);
const rssSamples: RssSample[] = samples;
// Without attacks (or a run too short for a second round) the warm-up is its normal traffic alone.
const rssWarmupEnd = roundWarmupEnd ?? warmupEnd;
const rssBaselineMb = rssAfterWarmup(rssSamples, rssWarmupEnd, 10_000);
const afterSamples = samples.filter((s) => s.atMs > rssWarmupEnd);
const rssMaxMb = afterSamples.length === 0 ? Number.NaN : Math.max(...afterSamples.map((s) => s.rssMb));
// For comparison: against the RSS after normal traffic alone, the first round included.
const normalBaselineMb = rssAfterWarmup(rssSamples, warmupEnd, 10_000);
const attackSamples = samples.filter((s) => s.atMs > warmupEnd);
const attackRssMaxMb =
  attackSamples.length === 0 ? Number.NaN : Math.max(...attackSamples.map((s) => s.rssMb));
const rssNote =
  roundWarmupEnd === undefined || !(normalBaselineMb > 0)
    ? undefined
    : `${(attackRssMaxMb / normalBaselineMb).toFixed(2)}x of the RSS after normal traffic alone (${normalBaselineMb.toFixed(0)} MB), the first round included`;
const loopAfter = loopReadings.filter((r) => r.atMs > warmupEnd + LOOP_READ_MS);
const loopMaxMs = loopAfter.length === 0 ? Number.NaN : Math.max(...loopAfter.map((r) => r.maxMs));
const loopOver = loopAfter.filter((r) => r.maxMs > PROBE_LIMIT_MS).length;
const targets = soakTargets({
  probes: figures,
  probeSpan: attacks.length > 0 ? 'from the first attack on' : 'after warm-up',
  probeLimitMs: PROBE_LIMIT_MS,
  rssBaselineMb,
  rssMaxMb,
  ...(rssNote === undefined ? {} : { rssNote }),
  rssFactorLimit: RSS_FACTOR_LIMIT,
  errorLines: stdoutScan.errorCount + stdoutScan.notJsonCount,
  stderrLines: stderrScan.lines,
});
const rssHighest = rssByPhase(rssSamples, phases, warmupEnd);
const rssPeak = afterSamples.find((s) => s.rssMb === rssMaxMb);
const failed = targets.filter((t) => verdict(t).met !== true).length;

// Slopes over the second half: the first is warm-up (JIT, pools, history filling to its size).
const steady = samples.filter((s) => s.t >= minutes / 2);
const rssSlope = slope(
  steady.map((s) => s.t),
  steady.map((s) => s.rssMb),
);
const fdSlope = slope(
  steady.map((s) => s.t),
  steady.map((s) => s.fds),
);
const first = samples[0];
const last = samples.at(-1);
const fdsAfterWarmup = samples.find((s) => s.atMs >= rssWarmupEnd)?.fds;
const fdsMax = afterSamples.length === 0 ? undefined : Math.max(...afterSamples.map((s) => s.fds));
const total = [...counts.values()].reduce((a, b) => a + b, 0);
const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');
const levelNames: Record<number, string> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
};

const lines = [
  '## Soak',
  '',
  `Written by \`npm run soak\` (\`node bench/soak.ts${argv.length ? ` ${argv.join(' ')}` : ''}\`) on ${new Date(started).toISOString().slice(0, 16).replace('T', ' ')} UTC: echo-chaos as \`npm start\` runs it, with its defaults but \`ECHO_REQUEST_TIMEOUT=${REQUEST_TIMEOUT}\` (so that item 7's stalled bodies are cut within the run), for ${minutes} min on 127.0.0.1. Normal traffic throughout (${ratePerSecond > 0 ? `${ratePerSecond} actions a second` : 'as fast as they go'} from ${concurrency} workers); the first ${warmupMs / 1000} s normal traffic alone; then the attacks of issue #30 one at a time in rotation, each for up to ${attackMs / 1000} s with ${gapMs / 1000} s of normal traffic between. The warm-up is the first ${warmupMs / 1000} s, the first round of attacks and ${settleMs / 1000} s of normal traffic after it${roundWarmupEnd === undefined ? '' : ` (${secondsIn(roundWarmupEnd)} s in this run)`}: the RSS the verdict compares with is taken at its end, once each bounded store (the history, the scenario set) has been filled and each path has run once (docs/adr/0032-soak-warm-up.md); the \`/health\` verdicts count every probe from the first attack on. \`/health\` is probed every ${probeIntervalMs} ms, one probe at a time on a new connection as a kubelet does (timeout ${PROBE_TIMEOUT_MS / 1000} s), from a thread of the soak of its own; RSS and open descriptors are sampled every ${sampleSeconds} s.`,
  '',
  ...(died === undefined ? [] : [`**${died}.**`, '']),
  ...(aborted === undefined ? [] : [`**${aborted}.**`, '']),
  `**Issue #30, "Done when":** ${targetsSection(targets)}`,
  '',
  '### `/health` probes',
  '',
  `From the first attack on: ${figures.count} probes, ${figures.failures} failed, p50 ${ms(figures.p50Ms)}, p99 ${ms(figures.p99Ms)}, max ${ms(figures.maxMs)}, ${figures.over} over ${PROBE_LIMIT_MS} ms. During the normal traffic before it: ${warmFigures.count} probes, max ${ms(warmFigures.maxMs)}. The prober thread's own timers ran at most ${ms(proberLoopDelayMaxMs)} late (a probe's time includes at most that much of the client's delay); the soak's main thread, which sends the traffic, at most ${ms(ownLoopDelay.max / 1e6)}.`,
  '',
  `The server's own event loop (\`nodejs_eventloop_lag_max_seconds\` of its \`/metrics\`, read every ${LOOP_READ_MS / 1000} s: the largest delay since the reading before, at prom-client's 10 ms resolution, so at least about 10 ms): from the first attack on at most ${ms(loopMaxMs)} late over ${loopAfter.length} readings, ${loopOver} over ${PROBE_LIMIT_MS} ms${loopReadingsFailed > 0 ? `; ${loopReadingsFailed} readings failed` : ''}. A probe slower than the loop was ever late was slowed outside the server's event loop (the kernel, the client, the machine's other work).`,
  '',
  'By what ran when the probe was out (a probe that overlapped two counts in both), with the highest RSS sampled meanwhile:',
  '',
  table(
    ['what ran', 'probes', 'failed', 'p50', 'p99', 'max', `over ${PROBE_LIMIT_MS} ms`, 'highest RSS'],
    probesByPhase(
      after,
      phases,
      attacks.map((a) => a.name),
      PROBE_LIMIT_MS,
    ).map(({ name, figures: f }) => [
      name === NORMAL_ONLY ? name : `${name} (item ${attacks.find((a) => a.name === name)?.item})`,
      String(f.count),
      String(f.failures),
      ms(f.p50Ms),
      ms(f.p99Ms),
      ms(f.maxMs),
      String(f.over),
      mb(rssHighest.get(name)),
    ]),
  ),
  '',
  'The slowest probes from the first attack on:',
  '',
  table(
    ['sent at', 'time', 'answer', "server's event loop, most late meanwhile", 'what ran'],
    slowestProbes(after, phases, 10).map(({ probe, attribution }) => [
      `${secondsIn(probe.atMs)} s`,
      ms(probe.ms),
      probe.ok ? '200' : 'failed',
      ms(loopDelayDuring(probe, loopReadings)),
      describeAttribution(attribution),
    ]),
  ),
  '',
  '### RSS and open descriptors',
  '',
  table(
    ['', 'start', 'after warm-up', 'highest after warm-up', 'end', 'slope over the second half'],
    [
      [
        'RSS',
        mb(first?.rssMb),
        mb(rssBaselineMb),
        mb(rssMaxMb),
        mb(last?.rssMb),
        `${rssSlope.toFixed(2)} MB/min`,
      ],
      [
        'open descriptors',
        String(first?.fds),
        String(fdsAfterWarmup),
        String(fdsMax),
        String(last?.fds),
        `${fdSlope.toFixed(2)} /min`,
      ],
    ],
  ),
  '',
  `RSS after warm-up is the median of the samples of the warm-up's last 10 s${rssNote === undefined ? '' : `; after its first ${warmupMs / 1000} s of normal traffic alone it was ${mb(normalBaselineMb)}, and the highest from the first attack on ${mb(attackRssMaxMb)}`}.${rssPeak === undefined ? '' : ` The highest was sampled at ${secondsIn(rssPeak.atMs)} s, ${describeAttribution(attribute({ atMs: rssPeak.atMs, ms: 0, ok: true }, phases))}.`} The soak process's own RSS peaked at ${mb(ownRssMaxMb)}.`,
  '',
  '### The attacks',
  '',
  table(
    ['item', 'attack', 'what it sends', 'runs', 'what the server answered'],
    [
      ...attacks.map((a) => {
        const record = attackRecords.get(a.name)!;
        const answered = [
          ...[...record.outcomes].map(([outcome, n]) => `${outcome} ×${n}`),
          ...record.notes.map((n) => `last run: ${n}`),
        ].join('; ');
        return [a.item, a.name, cell(a.what), String(record.runs), cell(answered || '-')];
      }),
      [
        '4',
        '`ECHO_HISTORY_MAX_BODY` at its maximum',
        "not run: a setting of the server, not a request (today it takes RSS to 2.8 GB, over the soak's abort bound); its own test covers it",
        '0',
        '-',
      ],
    ],
  ),
  '',
  '### The log',
  '',
  `${stdoutScan.lines} lines on stdout: ${
    [...stdoutScan.byLevel]
      .sort((a, b) => a[0] - b[0])
      .map(([level, n]) => `${n} ${levelNames[level] ?? `level ${level}`}`)
      .join(', ') || 'none'
  }${stdoutScan.notJsonCount > 0 ? `, ${stdoutScan.notJsonCount} not pino's` : ''}; ${stderrScan.lines} lines on stderr.`,
  ...(stdoutScan.errors.length > 0
    ? [
        '',
        `The first ${stdoutScan.errors.length} at \`error\` or above:`,
        '',
        '```',
        ...stdoutScan.errors,
        '```',
      ]
    : []),
  ...(stdoutScan.notJson.length > 0
    ? ['', "Lines on stdout that are not pino's:", '', '```', ...stdoutScan.notJson, '```']
    : []),
  ...(stderrScan.notJson.length + stderrScan.errors.length > 0
    ? ['', 'The first lines on stderr:', '', '```', ...stderrScan.errors, ...stderrScan.notJson, '```']
    : []),
  '',
  '### Normal traffic',
  '',
  `${total} actions, ${malformedCount} malformed responses, ${transportErrors} transport errors that were not asked for (resets, closes and broken bodies asked for by \`X-Echo-Error\` are not counted). A scenario change while an attack holds the scenario set is a plain echo GET instead.`,
  '',
  table(
    ['action', 'count'],
    ACTIONS.map(([name]) => [name, String(counts.get(name) ?? 0)]),
  ),
  ...(malformed.length > 0 ? ['', 'Malformed (first 20):', '', ...malformed.map((m) => `- ${m}`)] : []),
];
const section = `${lines.join('\n')}\n`;
if (write) {
  let previous = '';
  try {
    previous = readFileSync(resultsPath, 'utf8');
  } catch {
    previous = '# Benchmark results\n';
  }
  const i = previous.indexOf('\n## Soak');
  const kept = (i === -1 ? previous : previous.slice(0, i + 1)).trimEnd();
  writeFileSync(resultsPath, `${kept}\n\n${section}`);
  log(`wrote ${resultsPath}`);
} else process.stdout.write(`\n${section}`);
log(
  failed === 0 && malformedCount === 0 && died === undefined && aborted === undefined
    ? 'soak: every verdict met'
    : `soak: ${failed} verdicts not met, ${malformedCount} malformed responses${died ? `; ${died}` : ''}${aborted ? `; ${aborted}` : ''}`,
);
process.exit(failed > 0 || malformedCount > 0 || died !== undefined || aborted !== undefined ? 1 : 0);
