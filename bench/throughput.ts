/**
 * Throughput of echo-chaos with its defaults, as a ratio of a bare node:http echo measured in the
 * same run (these machines are shared and noisy: only the ratio means anything).
 *
 *   node bench/throughput.ts [--seconds 5] [--rounds 3] [--write]
 *
 * Needs `wrk` (Debian package). Each server runs in its own process on 127.0.0.1; rounds alternate
 * baseline and candidate so drift hits both. `--write` records the result in bench/results.json.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
const opt = (name: string, def: number) => {
  const i = args.indexOf(`--${name}`);
  return i === -1 ? def : Number(args[i + 1]);
};
const seconds = opt('seconds', 5);
const rounds = opt('rounds', 3);
const connections = opt('connections', 32);
const root = new URL('..', import.meta.url);

async function start(
  script: string,
  env: Record<string, string>,
): Promise<{ child: ChildProcess; port: number }> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(process.execPath, [script], {
    cwd: root,
    env: { ...process.env, ECHO_DRAIN_DELAY: '0', ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/warmup`);
      await res.arrayBuffer();
      return { child, port };
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  child.kill();
  throw new Error(`${script} did not start`);
}

function wrk(port: number): number {
  const out = execFileSync(
    'wrk',
    ['-t1', `-c${connections}`, `-d${seconds}s`, `http://127.0.0.1:${port}/bench/path?x=1`],
    {
      encoding: 'utf8',
    },
  );
  const m = /Requests\/sec:\s+([\d.]+)/.exec(out);
  if (!m) throw new Error(`cannot read wrk output:\n${out}`);
  return Number(m[1]);
}

async function measure(script: string, env: Record<string, string>): Promise<number> {
  const { child, port } = await start(script, env);
  try {
    wrk(port); // warm-up: JIT and connection pools
    return wrk(port);
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

const baseline: number[] = [];
const candidate: number[] = [];
for (let r = 0; r < rounds; r++) {
  baseline.push(await measure('bench/bare-echo.ts', {}));
  candidate.push(await measure('src/echo/main.ts', {}));
  process.stdout.write(
    `round ${r + 1}: bare ${baseline.at(-1)?.toFixed(0)} rps, echo-chaos ${candidate.at(-1)?.toFixed(0)} rps\n`,
  );
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const result = {
  date: new Date().toISOString(),
  node: process.version,
  seconds,
  rounds,
  connections,
  bare_rps: Math.round(median(baseline)),
  echo_chaos_rps: Math.round(median(candidate)),
  ratio: Math.round((median(candidate) / median(baseline)) * 1000) / 1000,
};
process.stdout.write(`${JSON.stringify(result)}\n`);
if (args.includes('--write')) {
  const path = new URL('results.json', import.meta.url);
  let all: Record<string, unknown> = {};
  try {
    all = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    // first run
  }
  all['throughput'] = result;
  writeFileSync(path, `${JSON.stringify(all, null, 2)}\n`);
}
