/**
 * For the "nothing stalls it" tests (issue #30): echo-chaos in a child process, as `npm start` runs
 * it, and a liveness-style prober that measures `/health` from this process while an attack runs.
 * The prober must live in another process than the server: a blocked event loop would delay the
 * prober's own timers and hide the stall it is meant to see.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, until } from './runtime.ts';

const MAIN = new URL('../../src/echo/main.ts', import.meta.url).pathname;
const ROOT = new URL('../..', import.meta.url).pathname;

export interface EchoProcess {
  readonly child: ChildProcess;
  readonly port: number;
  readonly url: string;
  /** Everything the server wrote to stdout (its JSON log lines) so far. */
  stdout(): string;
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
  /** The server's resident set size now, from /proc (bytes). */
  rssBytes(): number;
  /** SIGKILLs the server (if still running) and waits for it to exit. */
  stop(): Promise<void>;
}

/**
 * Starts `node src/echo/main.ts` with `npm start`'s node flags on 127.0.0.1 and a free port, with
 * `env` on top of a clean environment (LOG_REQUESTS=false unless given), and waits for `/health`.
 */
export async function startEchoProcess(env: Record<string, string> = {}): Promise<EchoProcess> {
  const port = env['PORT'] === undefined ? await freePort() : Number(env['PORT']);
  const child = spawn(process.execPath, ['--max-semi-space-size=16', '--heap-growing-percent=30', MAIN], {
    cwd: ROOT,
    env: {
      PATH: process.env['PATH'] ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_REQUESTS: 'false',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (c: string) => {
    out += c;
  });
  child.stderr?.setEncoding('utf8').on('data', (c: string) => {
    err += c;
  });
  const exited = once(child, 'exit');
  const echo: EchoProcess = {
    child,
    port,
    url: `http://127.0.0.1:${port}`,
    stdout: () => out,
    stderr: () => err,
    rssBytes: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
      return Number(kb ?? 0) * 1024;
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
  try {
    await until(
      `echo-chaos answers /health on ${port}`,
      async () => {
        if (child.exitCode !== null) throw new Error(`echo-chaos exited with ${child.exitCode}`);
        return (await getHealth(port, 5_000)).status === 200;
      },
      30_000,
      50,
    );
  } catch (error) {
    await echo.stop();
    assert.fail(`echo-chaos did not start on ${port} (${(error as Error).message}): ${err || out}`);
  }
  return echo;
}

/**
 * One GET on a fresh connection with a deadline of its own (a stalled server fails the caller rather
 * than hanging it): its status (0 on an error or past the deadline) and how long it took.
 */
export function timedGet(
  port: number,
  path: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const done = (status: number) => resolve({ status, ms: performance.now() - started });
    const req = http.get(
      { host: '127.0.0.1', port, path, headers, agent: false, timeout: timeoutMs },
      (res) => {
        res.resume();
        res.on('end', () => done(res.statusCode ?? 0));
        res.on('error', () => done(0));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => done(0));
  });
}

/** One `GET /health` on a fresh connection: its status (0 on an error) and how long it took. */
export function getHealth(port: number, timeoutMs: number): Promise<{ status: number; ms: number }> {
  return timedGet(port, '/health', {}, timeoutMs);
}

/** What a prober saw. */
export interface LivenessReport {
  /** Each probe's time in milliseconds, in order. */
  readonly samplesMs: readonly number[];
  /** Probes that did not answer 200 (an error or a timeout counts here, and as its full time). */
  readonly failures: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/** The value at quantile `q` (0-1) of `values` (nearest rank); 0 for none. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/**
 * Probes `/health` every `intervalMs` (each on a new connection, as a kubelet does, one at a time)
 * until `stop()` is called; the report covers every probe sent. A probe gives up after `timeoutMs`.
 */
export function probeLiveness(
  port: number,
  options: { intervalMs?: number; timeoutMs?: number } = {},
): { stop(): Promise<LivenessReport> } {
  const intervalMs = options.intervalMs ?? 25;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const samplesMs: number[] = [];
  let failures = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const answer = await getHealth(port, timeoutMs);
      samplesMs.push(answer.ms);
      if (answer.status !== 200) failures++;
      await sleep(intervalMs); // the probe period, as a kubelet's: the prober's pace, not a wait
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return { samplesMs, failures, p99Ms: quantile(samplesMs, 0.99), maxMs: Math.max(0, ...samplesMs) };
    },
  };
}

/** A one-line summary of a report, for assertion messages. */
export function describeLiveness(report: LivenessReport): string {
  return `${report.samplesMs.length} probes, p99 ${report.p99Ms.toFixed(1)} ms, max ${report.maxMs.toFixed(1)} ms, ${report.failures} failed`;
}

/** The bound of issue #30: `/health` under 100 ms p99 while an attack runs. */
export const LIVENESS_P99_MS = 100;

/**
 * Runs `attempt` (an attack, measured by a prober; it asserts what it checks besides liveness) and
 * holds its report to the bound: no failed probe, p99 under {@link LIVENESS_P99_MS}. A stall of the
 * server's making repeats on every run; a 2-core machine that is busy elsewhere for a moment (CI runs
 * other work beside the test) does not, so an attempt over the bound is run again, up to `attempts`
 * in all, and the test fails with the report of each.
 */
export async function assertLive(
  label: string,
  attempt: (n: number) => Promise<LivenessReport>,
  options: { attempts?: number } = {},
): Promise<LivenessReport> {
  const attempts = options.attempts ?? 3;
  const seen: string[] = [];
  for (let n = 1; n <= attempts; n++) {
    const report = await attempt(n);
    if (report.failures === 0 && report.p99Ms < LIVENESS_P99_MS) return report;
    seen.push(`attempt ${n}: ${describeLiveness(report)}`);
  }
  return assert.fail(
    `/health ${label}, over ${LIVENESS_P99_MS} ms p99 or failing on every attempt: ${seen.join('; ')}`,
  );
}
