/**
 * What scenario matching costs a request with a large set (issue #30, item 8: 1,000 regex
 * scenarios cut throughput from 3,970 to 1,430 req/s when every request tried every scenario).
 *
 *   node bench/scenario-match.ts               # in-process: µs a ScenarioStore.match, per set
 *   node bench/scenario-match.ts --http        # and req/s of echo-chaos (npm start) over HTTP
 *   node bench/scenario-match.ts --seconds 5   # length of each HTTP measurement
 *
 * Prints a markdown table; writes nothing. Everything runs on 127.0.0.1 and every step is bounded.
 * Only the ratios within one run mean anything on a shared machine.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Scenario, type ScenarioRequest, ScenarioStore } from '../src/scenario/index.ts';

const args = process.argv.slice(2);
const withHttp = args.includes('--http');
const secondsAt = args.indexOf('--seconds');
const seconds = secondsAt >= 0 ? Number(args[secondsAt + 1]) : 5;
if (!(seconds > 0 && seconds <= 60)) throw new Error(`--seconds must be 1-60, got ${args[secondsAt + 1]}`);

const SET_SIZE = 1000;
const response = [{ status: 503 }];
/** The sets measured: what the index can narrow (literal prefixes) and what it cannot. */
const SETS: ReadonlyArray<{ id: string; what: string; scenarios: Scenario[] }> = [
  {
    id: 're-prefixed',
    what: `${SET_SIZE} \`re:/svc<i>/v[0-9]+/.*\``,
    scenarios: Array.from({ length: SET_SIZE }, (_, i) => ({
      pathPattern: `re:/svc${i}/v[0-9]+/.*`,
      responses: response,
    })),
  },
  {
    id: 'glob',
    what: `${SET_SIZE} \`/svc<i>/*/items/**\``,
    scenarios: Array.from({ length: SET_SIZE }, (_, i) => ({
      pathPattern: `/svc${i}/*/items/**`,
      responses: response,
    })),
  },
  {
    id: 're-no-prefix',
    what: `${SET_SIZE} \`re:.*/svc<i>/[0-9]+\` (no literal prefix: every one is tried)`,
    scenarios: Array.from({ length: SET_SIZE }, (_, i) => ({
      pathPattern: `re:.*/svc${i}/[0-9]+`,
      responses: response,
    })),
  },
];
const PATHS = { miss: '/bench/path', hit: `/svc${SET_SIZE - 1}/v2/items/7` };

function request(path: string): ScenarioRequest {
  return { method: 'GET', path, query: '', headers: {}, body: undefined };
}

/** Mean µs of one `match`, the best of five batches. */
function matchMicros(store: ScenarioStore, path: string): number {
  const req = request(path);
  const batch = 2000;
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 6; round++) {
    const started = performance.now();
    for (let i = 0; i < batch; i++) store.match(req);
    const us = ((performance.now() - started) * 1000) / batch;
    if (round > 0) best = Math.min(best, us);
  }
  return best;
}

console.log('### In process: µs a `ScenarioStore.match` (best of 5 batches)\n');
console.log('| set | miss (`/bench/path`) | last scenario (`/svc999/v2/items/7`) |');
console.log('|---|---|---|');
for (const set of SETS) {
  const store = new ScenarioStore();
  store.replace(set.scenarios);
  const miss = matchMicros(store, PATHS.miss);
  const hit = matchMicros(store, PATHS.hit);
  console.log(`| ${set.what} | ${miss.toFixed(2)} | ${hit.toFixed(2)} |`);
}

if (withHttp) {
  console.log(
    '\n### Over HTTP: req/s of `GET /bench/path` (50 keep-alive connections, client in this process)\n',
  );
  console.log('| set | req/s |');
  console.log('|---|---|');
  for (const set of [{ id: 'none', what: 'no scenarios', scenarios: [] as Scenario[] }, ...SETS]) {
    console.log(`| ${set.what} | ${(await httpRate(set.scenarios)).toFixed(0)} |`);
  }
}

async function httpRate(scenarios: readonly Scenario[]): Promise<number> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const child = spawn(
    process.execPath,
    ['--max-semi-space-size=16', '--heap-growing-percent=30', 'src/echo/main.ts'],
    {
      cwd: new URL('..', import.meta.url).pathname,
      env: { PATH: process.env['PATH'] ?? '', PORT: String(port), HOST: '127.0.0.1', LOG_REQUESTS: 'false' },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const exited = once(child, 'exit');
  try {
    const base = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      if (i > 300) throw new Error('echo-chaos did not start within 30 s');
      const ok = await fetch(`${base}/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      await sleep(100);
    }
    const posted = await fetch(`${base}/scenario`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(scenarios),
    });
    if (!posted.ok) throw new Error(`POST /scenario: ${posted.status} ${await posted.text()}`);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 50 });
    const get = () =>
      new Promise<void>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path: PATHS.miss, agent }, (res) => {
            res.resume();
            res.on('end', resolve);
          })
          .on('error', reject);
      });
    const run = async (ms: number) => {
      let count = 0;
      const until = performance.now() + ms;
      await Promise.all(
        Array.from({ length: 50 }, async () => {
          while (performance.now() < until) {
            await get();
            count++;
          }
        }),
      );
      return count;
    };
    await run(1000);
    const started = performance.now();
    const count = await run(seconds * 1000);
    agent.destroy();
    return count / ((performance.now() - started) / 1000);
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
}
