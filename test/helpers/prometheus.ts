/**
 * A real, throwaway Prometheus server for tests, from Debian's `prometheus` package
 * (`/usr/bin/prometheus`): {@link startPrometheus} writes a scrape configuration into a fresh
 * temporary directory (the TSDB goes there too) and starts the server on 127.0.0.1 and a free port,
 * scraping the given targets' `/metrics` every second. `stop()` kills it (SIGTERM, then SIGKILL),
 * waits and removes the directory.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { freePort, until } from './runtime.ts';

export const PROMETHEUS_BIN = process.env['PROMETHEUS_BIN'] || '/usr/bin/prometheus';

/** What a test says when the server is missing. */
export const PROMETHEUS_MISSING = `${PROMETHEUS_BIN} not found: install the Debian package prometheus (apt-get install -y prometheus)`;

/** True when the test can start Prometheus; when it is missing, fails under CI and skips elsewhere. */
export function requirePrometheus(t: TestContext): boolean {
  if (existsSync(PROMETHEUS_BIN)) return true;
  if (process.env['CI']) assert.fail(`${PROMETHEUS_MISSING}: required in CI`);
  t.skip(PROMETHEUS_MISSING);
  return false;
}

export interface Prometheus {
  readonly url: string;
  /** An instant query's `data` (throws on a failed query). */
  query(promql: string): Promise<{ resultType: string; result: Array<{ value: [number, string] }> }>;
  stop(): Promise<void>;
}

/** Starts Prometheus scraping `targets` (`host:port`) every second; resolves once it is ready (≤ 30 s). */
export async function startPrometheus(targets: readonly string[]): Promise<Prometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'echo-chaos-prometheus-'));
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global:',
      '  scrape_interval: 1s',
      '  evaluation_interval: 1s',
      'scrape_configs:',
      '  - job_name: echo',
      '    scrape_timeout: 1s',
      '    static_configs:',
      `      - targets: [${targets.map((t) => JSON.stringify(t)).join(', ')}]`,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    PROMETHEUS_BIN,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    if (stderr.length < 16_384) stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until(
      'prometheus answers /-/ready',
      async () => {
        if (child.exitCode !== null) throw new Error(`prometheus exited with ${child.exitCode}`);
        return fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(1000) }).then(
          (r) => r.ok,
          () => false,
        );
      },
      30_000,
      200,
    );
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}: ${stderr}`);
  }
  return {
    url,
    async query(promql) {
      const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(promql)}`, {
        signal: AbortSignal.timeout(5000),
      });
      const body = (await res.json()) as { status: string; data: never; error?: string };
      if (body.status !== 'success') throw new Error(`query ${promql}: ${body.error}`);
      return body.data;
    },
    stop,
  };
}
