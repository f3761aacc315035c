#!/usr/bin/env node
import type { Server } from 'node:http';
import {
  createErrorUpgradeSpanProcessor,
  createObsSampler,
  isObsError,
  loadObsConfig,
  type ObsConfigError,
} from '@echo-chaos/obs';
import type { FastifyInstance } from 'fastify';
import type { Telemetry } from '../telemetry/otel.ts';
import { otelSettings, otelWanted } from '../telemetry/otel-config.ts';
import { helpText, parseCommandLine } from './cli.ts';
import { type EchoConfig, loadConfig } from './config.ts';
import { type EchoConfigError, isEchoError } from './errors.ts';
import { ECHO_OBS_DEFAULTS } from './metrics.ts';
import { VERSION } from './version.ts';

/** How often connections that turned idle during the drain are closed. */
const IDLE_SWEEP_MS = 50;
/** After the drain timeout, how long answered-at-once requests get before every connection is cut. */
const FINAL_GRACE_MS = 1_000;

/**
 * The echo-chaos entry point: configuration from the environment, then the OpenTelemetry SDK when
 * the `OTEL_*` variables ask for it, then the application, then listen. The application (fastify,
 * node:http) is imported only after the SDK started, so the HTTP instrumentation patches it.
 */
async function main(): Promise<void> {
  const command = parseCommandLine(process.argv.slice(2));
  if (command.kind === 'help') {
    process.stdout.write(helpText(VERSION));
    return;
  }
  if (command.kind === 'version') {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  if (command.kind === 'usage-error') {
    process.stderr.write(`echo-chaos: ${command.message}\n`);
    process.exit(2);
  }
  let app: FastifyInstance;
  let config: EchoConfig;
  try {
    config = loadConfig(process.env);
    const obs = loadObsConfig({ env: process.env, defaults: ECHO_OBS_DEFAULTS });
    const otel = otelSettings(process.env);
    if (!otel.ok) {
      for (const line of otel.problems) process.stderr.write(`echo-chaos: ${line}\n`);
      process.exit(1);
    }
    let telemetry: Telemetry | undefined;
    if (otelWanted(otel.settings)) {
      const { startTelemetry } = await import('../telemetry/otel.ts');
      telemetry = startTelemetry(otel.settings, {
        serviceName: 'echo-chaos',
        version: VERSION,
        sampler: createObsSampler(obs.config),
        wrapProcessor: (processor) => createErrorUpgradeSpanProcessor(processor),
      });
    }
    const { buildApp } = await import('./app.ts');
    app = await buildApp(config, {
      obs,
      ...(telemetry === undefined ? {} : { metricsText: () => telemetry.metricsText() }),
    });
    if (telemetry !== undefined) {
      const started = telemetry;
      started.registerMeterProvider((provider) => app.obs.guardMeterProvider(provider));
      app.obs.addFlushHook('opentelemetry', () => started.flush());
    }
    app.log.info(
      { otel: { traces: telemetry?.traces ?? false, metrics: telemetry?.metrics ?? false } },
      telemetry === undefined
        ? 'OpenTelemetry SDK off (no OTEL_* variable asks for it)'
        : 'OpenTelemetry SDK started',
    );
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    // Matched on the code, not the class (STYLE.md): one line per problem, naming the setting.
    if (isEchoError(err) && err.code === 'ECHO_ERR_CONFIG') {
      for (const line of (err as EchoConfigError).problems) process.stderr.write(`echo-chaos: ${line}\n`);
    } else if (isObsError(err) && err.code === 'OBS_ERR_CONFIG') {
      for (const problem of (err as ObsConfigError).problems)
        process.stderr.write(`echo-chaos: ${problem.message}\n`);
    } else {
      process.stderr.write(`echo-chaos: cannot start: ${err instanceof Error ? err.message : String(err)}\n`);
    }
    process.exit(1);
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      app.log.warn({ signal }, 'second signal: exiting at once');
      process.exit(1);
    }
    stopping = true;
    const startedMs = Date.now();
    app.log.info({ signal, drain_timeout_ms: config.drainTimeoutMs }, 'draining');
    // 1. /ready answers 503 at once; SSE streams and WebSockets are closed (1001). The port stays
    //    open, so probes see the 503 and in-flight requests (delays included) run their course.
    app.echo.drain.abort();
    // Connections that turn idle are closed as they do (responses carry `Connection: close`).
    const server = app.server as Partial<Pick<Server, 'closeIdleConnections' | 'closeAllConnections'>>;
    const sweep = setInterval(() => server.closeIdleConnections?.(), IDLE_SWEEP_MS);
    sweep.unref();
    // 2. Wait for in-flight requests, at most ECHO_DRAIN_TIMEOUT.
    const result = await app.obs.drain({ timeoutMs: config.drainTimeoutMs });
    if (!result.completed) {
      // 3. Out of time: waiting requests are answered now; whatever is still open is cut shortly.
      app.log.warn({ in_flight: result.dropped }, 'drain timeout: answering waiting requests now');
      app.echo.drainDeadline.abort();
      setTimeout(() => server.closeAllConnections?.(), FINAL_GRACE_MS).unref();
    }
    // 4. Stop listening, close what is left, flush telemetry, exit.
    try {
      await app.close();
      app.log.info({ drain_ms: Date.now() - startedMs, completed: result.completed }, 'drained');
      process.exit(0);
    } catch (err) {
      app.log.error({ err }, 'close failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

await main();
