#!/usr/bin/env node
import type { Server } from 'node:http';
import { loadObsConfig, ObsConfigError } from '../obs/index.ts';
import { buildApp } from './app.ts';
import { loadConfig } from './config.ts';
import { ConfigError } from './errors.ts';

/** How long in-flight requests may take to finish after SIGTERM/SIGINT (decisions.md 2). */
const DRAIN_TIMEOUT_MS = 30_000;
/** How often connections that turned idle during the drain are closed. */
const IDLE_SWEEP_MS = 50;

/** The echo-chaos entry point: configuration from the environment, then listen. */
async function main(): Promise<void> {
  let app: Awaited<ReturnType<typeof buildApp>>;
  try {
    const config = loadConfig(process.env);
    const obs = loadObsConfig({ env: process.env });
    app = await buildApp(config, { obs });
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const line of err.problems) process.stderr.write(`echo-chaos: ${line}\n`);
    } else if (err instanceof ObsConfigError) {
      for (const problem of err.problems) process.stderr.write(`echo-chaos: ${problem.message}\n`);
    } else {
      process.stderr.write(`echo-chaos: cannot start: ${err instanceof Error ? err.message : String(err)}\n`);
    }
    process.exit(1);
  }

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) process.exit(1);
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    app.echo.drain.abort();
    // `close` ends the connections idle at that moment only. A keep-alive connection whose request
    // was in flight turns idle later and would hold the process open until the client lets go:
    // sweep such connections as they turn idle, and end every connection at the drain timeout.
    const server = app.server as Partial<Pick<Server, 'closeIdleConnections' | 'closeAllConnections'>>;
    const sweep = setInterval(() => server.closeIdleConnections?.(), IDLE_SWEEP_MS);
    const deadline = setTimeout(() => {
      app.log.warn({ drain_timeout_ms: DRAIN_TIMEOUT_MS }, 'drain timeout: closing every connection');
      server.closeAllConnections?.();
    }, DRAIN_TIMEOUT_MS);
    sweep.unref();
    deadline.unref();
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

await main();
