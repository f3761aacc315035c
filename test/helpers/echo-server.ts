import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { type BuildOptions, buildApp } from '../../src/echo/app.ts';
import { loadConfig } from '../../src/echo/config.ts';
import { ECHO_OBS_DEFAULTS } from '../../src/echo/metrics.ts';
import { loadObsConfig, obsLoggerOptions } from '../../src/obs/index.ts';

export interface RunningEcho {
  readonly app: FastifyInstance;
  readonly url: string;
  readonly port: number;
  /** Log records written so far (only when `captureLogs` was asked for). */
  readonly logs: Array<Record<string, unknown>>;
  close(): Promise<void>;
}

/**
 * Starts a real echo server on 127.0.0.1 (or `env.HOST`) and a free port (or `options.port`). `env` is the environment
 * the config is read from; scenarios start empty unless `ECHO_SCENARIO_FILE` is given.
 */
export async function startEcho(
  env: Record<string, string> = {},
  options: BuildOptions & { captureLogs?: boolean; port?: number } = {},
): Promise<RunningEcho> {
  const config = loadConfig({
    LOG_LEVEL: options.captureLogs ? 'info' : 'silent',
    PORT: '0',
    HOST: '127.0.0.1',
    ...env,
  });
  const obs = options.obs ?? loadObsConfig({ env, defaults: ECHO_OBS_DEFAULTS });
  const logs: Array<Record<string, unknown>> = [];
  const logger =
    options.logger ??
    pino(
      obsLoggerOptions({ config: obs.config, base: { level: config.logLevel } }),
      new Writable({
        write(chunk, _enc, cb) {
          for (const line of String(chunk).split('\n')) if (line.trim() !== '') logs.push(JSON.parse(line));
          cb();
        },
      }),
    );
  const app = await buildApp(config, {
    ...options,
    obs,
    logger,
    ...(env['ECHO_SCENARIO_FILE'] === undefined && options.scenarios === undefined ? { scenarios: [] } : {}),
  });
  // `port`: a fixed one, e.g. the same pod's container restarted (test/operator/resync.integration.test.ts).
  await app.listen({ port: options.port ?? 0, host: config.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return { app, url: `http://${host}:${port}`, port, logs, close: () => app.close() };
}

/** Runs `fn` against a fresh echo server (started with `env`), closing it afterwards. */
export async function withEcho(
  fn: (echo: RunningEcho) => Promise<void>,
  env: Record<string, string> = {},
): Promise<void> {
  const echo = await startEcho(env);
  try {
    await fn(echo);
  } finally {
    await echo.close();
  }
}
