/**
 * `npm run soak`: echo-chaos with its defaults under mixed traffic for a bounded time, on 127.0.0.1,
 * sampling its RSS and open file descriptors; reports their least-squares slopes and every malformed
 * response, and writes them under "## Soak" in bench/RESULTS.md.
 *
 *   node bench/soak.ts [--minutes 5] [--concurrency 16] [--sample-seconds 5] [--write|--no-write]
 *
 * The traffic, drawn at random by `--concurrency` workers: echo GET and POST, delays, status and error
 * faults (resets, closes and broken bodies included), generated bodies, SSE streams held a moment,
 * WebSocket round trips, scenario set changes and state moves, and replays of history entries. A
 * response is malformed when it is not what its request asked for (a wrong status, a body that is not
 * the echo, a missing `X-Echo-Fault`); a reset or broken body that was asked for is not.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { slope, table } from './lib.ts';

const argv = process.argv.slice(2);
const value = (name: string, def: number) => {
  const i = argv.indexOf(`--${name}`);
  return i === -1 ? def : Number(argv[i + 1]);
};
const minutes = value('minutes', 5);
const concurrency = value('concurrency', 16);
const sampleSeconds = value('sample-seconds', 5);
const write = argv.includes('--write') || (!argv.includes('--no-write') && minutes >= 5);
const root = new URL('..', import.meta.url).pathname;
const resultsPath = join(root, 'bench', 'RESULTS.md');
const log = (line: string) => process.stdout.write(`${line}\n`);

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
// As `npm start` runs it (its node flags: ADR 0013).
const server: ChildProcess = spawn(process.execPath, ['--max-semi-space-size=16', 'src/echo/main.ts'], {
  cwd: root,
  env: { ...env, PORT: String(port), HOST: '127.0.0.1' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
// stdout (the log lines) is drained, as bench/run.ts does.
server.stdout?.resume();
const pid = server.pid as number;
/** Set when the server ends before the soak does: everything after it fails, and the soak says so. */
let died: string | undefined;
let stopping = false;
server.on('exit', (code, signal) => {
  if (!stopping) died = `the server exited during the soak (code ${code}, signal ${signal})`;
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
  const status = [200, 202, 418, 429, 500, 503][rand(6)] as number;
  const set = [
    { name: 'soak', path: '/soak/scenario', responses: [{ status, body: 'scripted' }, { status: 201 }] },
  ];
  const put = await fetch(`${base}/scenario`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(set),
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
  const entries = (await history.json()) as {
    id: string;
    method: string;
    path: string;
    status: number | null;
  }[];
  const entry = entries
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
const endAt = started + minutes * 60_000;
const samples: { t: number; rssMb: number; fds: number }[] = [];
const takeSample = () => {
  if (died === undefined) samples.push({ t: (Date.now() - started) / 60_000, ...sample() });
};
takeSample();
const sampler = setInterval(takeSample, sampleSeconds * 1000);
const reporter = setInterval(() => {
  const last = samples.at(-1);
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  log(
    `  ${((Date.now() - started) / 1000).toFixed(0)} s: ${total} actions, RSS ${last?.rssMb.toFixed(0)} MB, ${last?.fds} fds, ${malformedCount} malformed`,
  );
}, 30_000);

async function worker(): Promise<void> {
  while (Date.now() < endAt && died === undefined) {
    const [name, fn] = pick();
    try {
      await fn();
    } catch {
      transportErrors++;
    }
    count(name);
  }
}
try {
  await Promise.all(Array.from({ length: concurrency }, worker));
  clearInterval(sampler);
  clearInterval(reporter);
  await sleep(2000);
  takeSample();
} finally {
  clearInterval(sampler);
  clearInterval(reporter);
  stopping = true;
  server.kill('SIGINT'); // the drain without ECHO_DRAIN_DELAY's wait (ADR 0014)
  const timer = setTimeout(() => server.kill('SIGKILL'), 5000);
  if (server.exitCode === null && server.signalCode === null) await once(server, 'exit');
  clearTimeout(timer);
}

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
const total = [...counts.values()].reduce((a, b) => a + b, 0);
const lines = [
  '## Soak',
  '',
  `Written by \`npm run soak\` (\`node bench/soak.ts${argv.length ? ` ${argv.join(' ')}` : ''}\`) on ${new Date(started).toISOString().slice(0, 16).replace('T', ' ')} UTC: echo-chaos with its defaults, ${minutes} min of mixed traffic from ${concurrency} workers on 127.0.0.1, RSS and open descriptors sampled every ${sampleSeconds} s; slopes are least squares over the second half (the first is warm-up).`,
  '',
  table(
    ['', 'start', 'end', 'slope over the second half'],
    [
      [
        'RSS',
        `${first?.rssMb.toFixed(0)} MB`,
        `${last?.rssMb.toFixed(0)} MB`,
        `${rssSlope.toFixed(2)} MB/min`,
      ],
      ['open descriptors', String(first?.fds), String(last?.fds), `${fdSlope.toFixed(2)} /min`],
    ],
  ),
  '',
  ...(died === undefined ? [] : [`**${died}.**`, '']),
  `${total} actions, ${malformedCount} malformed responses, ${transportErrors} transport errors that were not asked for (resets, closes and broken bodies asked for by \`X-Echo-Error\` are not counted).`,
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
process.exit(malformedCount > 0 || died !== undefined ? 1 : 0);
