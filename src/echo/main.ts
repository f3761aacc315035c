#!/usr/bin/env node
import {
  createErrorUpgradeSpanProcessor,
  createObsSampler,
  isObsError,
  loadObsConfig,
  type ObsConfigError,
} from '@echo-chaos/obs';
import type { FastifyInstance } from 'fastify';
import { nodeSupportWarning } from '../telemetry/node-support.ts';
import { watchNpmParent } from '../telemetry/npm-parent.ts';
import { loadTelemetry } from '../telemetry/optional-packages.ts';
import type { Telemetry } from '../telemetry/otel.ts';
import { otelSettings, otelWanted } from '../telemetry/otel-config.ts';
import { helpText, parseCommandLine } from './cli.ts';
import { type EchoConfig, loadConfig } from './config.ts';
import { type EchoConfigError, isEchoError } from './errors.ts';
import { drainGrpc } from './grpc/index.ts';
import { startIdleReclaim } from './memory-reclaim.ts';
import { ECHO_OBS_DEFAULTS } from './metrics.ts';
import { VERSION } from './version.ts';

const mb = (bytes: number): number => Math.round(bytes / 1024 / 102.4) / 10;

/** A repeat of the signal being handled within this long is the same press (see `stop`). */
const SAME_SIGNAL_MS = 1_000;

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
  const unsupported = nodeSupportWarning('echo-chaos', process.versions.node);
  if (unsupported !== undefined) process.stderr.write(`${unsupported}\n`);
  let app: FastifyInstance;
  let config: EchoConfig;
  try {
    // Every bad setting at once, the service's, obs's and OpenTelemetry's: one line each.
    const problems: string[] = [];
    const read = <T>(load: () => T): T | undefined => {
      try {
        return load();
      } catch (err) {
        // Matched on the code, not the class (STYLE.md).
        if (isEchoError(err) && err.code === 'ECHO_ERR_CONFIG')
          problems.push(...(err as EchoConfigError).problems);
        else if (isObsError(err) && err.code === 'OBS_ERR_CONFIG')
          problems.push(...(err as ObsConfigError).problems.map((problem) => problem.message));
        else throw err;
        return undefined;
      }
    };
    const loaded = read(() => loadConfig(process.env));
    const obsRead = read(() => loadObsConfig({ env: process.env, defaults: ECHO_OBS_DEFAULTS }));
    const otel = otelSettings(process.env);
    if (!otel.ok) problems.push(...otel.problems);
    if (loaded === undefined || obsRead === undefined || !otel.ok) {
      for (const line of problems) process.stderr.write(`echo-chaos: ${line}\n`);
      process.exit(1);
    }
    config = loaded;
    const obs = obsRead;
    let telemetry: Telemetry | undefined;
    if (otelWanted(otel.settings)) {
      const { startTelemetry } = await loadTelemetry(() => import('../telemetry/otel.ts'));
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
    if (config.upstream !== undefined) {
      app.log.info(
        { proxy: { upstream: config.upstream.href, timeout_ms: config.upstreamTimeoutMs } },
        `reverse proxy: what no scenario answers is forwarded to ${config.upstream.href}`,
      );
    }
    if (config.idleReclaimMs > 0) {
      const { echo, log } = app;
      const reclaim = startIdleReclaim(
        config.idleReclaimMs,
        () => echo.requestCount,
        ({ rssBeforeBytes, rssAfterBytes, gcMs }) =>
          log.info(
            { rss_before_mb: mb(rssBeforeBytes), rss_after_mb: mb(rssAfterBytes), gc_ms: Math.round(gcMs) },
            'idle after traffic: memory given back to the operating system',
          ),
      );
      echo.drain.signal.addEventListener('abort', () => reclaim.stop(), { once: true });
    }
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
  let first: { signal: string; atMs: number } | undefined;
  const stop = async (signal: 'SIGTERM' | 'SIGINT') => {
    if (stopping) {
      // Ctrl-C signals the terminal's whole process group, and npm passes its own copy on: the same
      // signal again within a moment is that one press, not a second.
      if (first !== undefined && first.signal === signal && performance.now() - first.atMs < SAME_SIGNAL_MS)
        return;
      app.log.warn({ signal }, 'second signal: exiting at once');
      process.exit(1);
    }
    stopping = true;
    first = { signal, atMs: performance.now() };
    const startedMs = Date.now();
    // SIGINT is a person at a terminal: no endpoint controller to wait for (docs/adr/0014-drain-delay.md).
    const delayMs = signal === 'SIGTERM' ? config.drainDelayMs : 0;
    if (app.obs.config.shutdown.enabled) {
      app.log.info(
        { signal, drain_delay_ms: delayMs, drain_timeout_ms: config.drainTimeoutMs },
        'draining: /ready answers 503',
      );
    } else {
      app.log.info(
        { signal },
        'closing at once (OBS_SHUTDOWN_ENABLED=false): waiting requests are answered now',
      );
    }
    // obs's drain (docs/adr/0041-one-drain.md), with the service's delay and timeout:
    // 1. /ready answers 503 at once and until the end; SSE streams and WebSockets are closed (1001).
    // 2. The drain delay: the port stays open and every connection is served as usual, so probes
    //    see the 503 and clients routed here before the endpoint controller noticed are answered.
    // 3. The port closes; responses from now on carry `Connection: close`, idle connections are
    //    closed, HTTP/2 sessions get a GOAWAY. In-flight requests (delays included) run their
    //    course, for at most ECHO_DRAIN_TIMEOUT.
    // The gRPC server (ECHO_GRPC_PORT) drains beside it, with the same delay and timeout: health
    // NOT_SERVING at once, calls taken as usual for the delay, then in-flight ones finish or are ended.
    const [result, grpcCompleted] = await Promise.all([
      app.obs.drain({ timeoutMs: config.drainTimeoutMs, delayMs, closeListener: true }),
      drainGrpc(app, { delayMs, timeoutMs: config.drainTimeoutMs }),
    ]);
    if (!grpcCompleted) app.log.warn('drain timeout: gRPC calls still in flight were ended');
    if (!result.completed) {
      // 4. Out of time: closing answers waiting requests now (state.ts), and obs cuts whatever is
      //    still open a moment later.
      app.log.warn({ in_flight: result.dropped }, 'drain timeout: answering waiting requests now');
    }
    // 5. Close what is left, flush telemetry, exit.
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
  // Started by npm (`npx echo-chaos`): stop as on SIGTERM once npm has gone (npm-parent.ts).
  watchNpmParent(process.env, (parent) => {
    // Already stopping (npm passed the signal on, then left): the drain goes on.
    if (stopping) return;
    app.log.warn({ parent }, 'the npm process that started this one has gone: stopping as on SIGTERM');
    void stop('SIGTERM');
  });
}

await main();
