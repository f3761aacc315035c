import { randomUUID } from 'node:crypto';
import { loadObsConfig, obsLoggerOptions, obsPlugin, type ResolvedObsConfig } from '@echo-chaos/obs';
import { maskLogLine } from '@echo-chaos/obs/internal';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyServerOptions,
  LogController,
} from 'fastify';
import pino, { type Logger } from 'pino';
import { Registry } from 'prom-client';
import type { Scenario } from '../scenario/index.ts';
import { lazyChildLoggerFactory } from './access-log.ts';
import { loadAdminToken, registerAdminAuth } from './admin-auth.ts';
import { registerCompletion } from './completion.ts';
import type { EchoConfig } from './config.ts';
import { registerCors } from './cors.ts';
import { registerEchoRoute } from './echo-route.ts';
import { clientErrorHandler, errorHandler, notFoundHandler } from './error-handler.ts';
import { registerGrpc } from './grpc/index.ts';
import { isoTimestamp, stdoutDestination } from './log-destination.ts';
import { offThreadStdout } from './log-thread.ts';
import { registerLogging } from './logging.ts';
import { ECHO_OBS_DEFAULTS } from './metrics.ts';
import { registerOwnRoutes } from './own-routes.ts';
import type { RandomSource } from './random.ts';
import type { ReplayResolver } from './replay-guard.ts';
import { registerRateLimit, registerRequestHooks } from './request-hooks.ts';
import { registerRequestState } from './request-state.ts';
import { createEchoState } from './state.ts';
import { createTransport } from './transport/index.ts';
import { VERSION } from './version.ts';

/** Things a test or an embedding program may supply instead of the defaults. */
export interface BuildOptions {
  /**
   * Randomness of requests without a seed (chaos, distributions, jitter, random errors); default
   * `Math.random`. When given, `ECHO_SEED` is not used.
   */
  readonly random?: RandomSource;
  /** The logger; default a pino logger on stdout at `LOG_LEVEL`. */
  readonly logger?: Logger;
  /** Scenarios to start with instead of `ECHO_SCENARIO_FILE`. */
  readonly scenarios?: readonly Scenario[];
  /** The resolved `obs.*` configuration (main.ts reads it from the environment); default obs's defaults. */
  readonly obs?: ResolvedObsConfig;
  /**
   * More series for `/metrics`, in the Prometheus text format, appended to the registry's: main.ts
   * hands the OpenTelemetry meters' exposition here when the SDK runs.
   */
  readonly metricsText?: () => Promise<string>;
  /** How `POST /replay` resolves a target's name before checking it; default `dns.lookup` (tests pin names). */
  readonly replayResolver?: ReplayResolver;
}

// The live state's types, as the package has always exported them (`app.echo` is an EchoState).
export type { EchoState, UpgradeHandler } from './state.ts';

/**
 * Builds the echo service as a fastify instance, ready to `listen` or `inject`. Reads no
 * environment: everything comes from `config` and `options`.
 */
export async function buildApp(config: EchoConfig, options: BuildOptions = {}): Promise<FastifyInstance> {
  // Read before anything starts: a token file that cannot be read stops startup.
  const adminToken = await loadAdminToken(config);
  const obsConfig = options.obs ?? loadObsConfig({ env: {}, defaults: ECHO_OBS_DEFAULTS });
  const { logger, logLinesDropped, close: closeLog } = createLogger(config, obsConfig, options.logger);
  // HTTP/1.1 and h2c on one cleartext port, or h2 and HTTP/1.1 over TLS (may stop startup).
  const transport = await createTransport(config, logger);
  const app = Fastify({ ...fastifyOptions(config, logger), ...transport.fastifyOptions });
  // The log worker ends with the app, once it has written what it was sent.
  if (closeLog !== undefined) {
    app.addHook('onClose', (_instance, done) => {
      closeLog();
      done();
    });
  }
  // The one per-request state of the echo (request-state.ts): first, so every context has its slot.
  registerRequestState(app);
  // Before obs tracks the server's connections: the transport's limits come first on them.
  transport.attach(app);
  // obs first: its firewall guards the echo meters, and one registry holds echo_* and obs_* series.
  const registry = new Registry();
  await app.register(obsPlugin, {
    resolved: obsConfig,
    registry,
    version: VERSION,
    serviceName: 'echo-chaos',
    // The h2c sessions of the one-port server live behind its HTTP/1.1 one: the drain's GOAWAY.
    http2Sessions: () => transport.http2Sessions(),
  });
  const state = await createEchoState(app, config, {
    registry,
    logger,
    transport,
    scenarios: options.scenarios,
    metricsText: options.metricsText,
    logLinesDropped,
  });
  app.decorate('echo', state);

  // The request hooks, one per concern (request-hooks.ts): counting and id, the Host check, the
  // headers every response carries, the route on the server span; then the access lines.
  registerRequestHooks(app, state, config);
  registerLogging(app, config);
  if (config.enableCors) registerCors(app, { admin: config.corsAdmin });
  // Rate limit; probes and scrapes are never limited.
  registerRateLimit(app, state, config);
  // The admin routes behind ECHO_ADMIN_TOKEN, when it is set.
  if (adminToken !== undefined) registerAdminAuth(app, adminToken);
  // Completion: metrics and history of every answered request.
  registerCompletion(app, state.metrics);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(notFoundHandler);
  // The service's own routes (health, info, metrics, history, scenarios, the pages and streams), each
  // answering its own methods only: any other is a 405 naming them (own-routes.ts).
  await registerOwnRoutes(app, state, {
    replayResolver: options.replayResolver,
    openConnections: () => transport.openConnections,
  });
  // Every other path and method: the echo, or the upstream's answer (echo-route.ts).
  await registerEchoRoute(app, state, { random: options.random });
  // The gRPC server of ECHO_GRPC_PORT, on its own port (grpc/index.ts); nothing of it loads when unset.
  await registerGrpc(app, state, config, transport.tls);
  return app;
}

/**
 * The logger: `given`, or pino on stdout at `LOG_LEVEL`. With `LOG_WORKER` (default) the lines are
 * built, masked and written by a worker thread (log-thread.ts). Else, on stdout the lines of one
 * event-loop turn are written in one go, in this thread when stdout takes them at once (log-destination.ts), bounded
 * when it does not keep up (the lines dropped are counted in echo_log_lines_dropped_total), and what
 * is left is written when the process exits. obs's logger options add trace and span ids and mask
 * secrets in every line.
 */
function createLogger(
  config: EchoConfig,
  obsConfig: ResolvedObsConfig,
  given: Logger | undefined,
): { readonly logger: Logger; readonly logLinesDropped?: () => number; readonly close?: () => void } {
  if (given !== undefined) return { logger: given };
  const options = obsLoggerOptions({
    config: obsConfig.config,
    // ISO time reads better, and a 13-digit epoch would look like a card number to the masking.
    base: { level: config.logLevel, timestamp: isoTimestamp },
  });
  if (!config.logWorker) {
    const destination = stdoutDestination();
    return { logger: pino(options, destination), logLinesDropped: () => destination.dropped };
  }
  let logger: Logger | undefined;
  const destination = offThreadStdout({
    mask: options.hooks?.streamWrite === maskLogLine,
    onWorkerExit: ({ code, error, lost }) => {
      logger?.error(
        { err: error, exit_code: code, lines_lost: lost },
        'the log worker stopped: this thread writes the log lines from now on (LOG_WORKER)',
      );
    },
  });
  logger = pino(options, destination);
  return { logger, logLinesDropped: () => destination.dropped, close: () => destination.close() };
}

/** fastify's options but the transport's: the logger, the request id, the limits, the error shapes. */
function fastifyOptions(config: EchoConfig, logger: Logger): FastifyServerOptions {
  return {
    loggerInstance: logger as FastifyBaseLogger,
    // echo-chaos writes its own request lines (LOG_REQUESTS and friends).
    logController: new LogController({ disableRequestLogging: true }),
    // A request's pino child is made only when something logs through `request.log`; the access
    // lines do not (access-log.ts).
    childLoggerFactory: lazyChildLoggerFactory,
    bodyLimit: config.maxBodyBytes,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    return503OnClosing: false,
    clientErrorHandler,
    // fastify's own refusals before routing (a URL that does not decode): the service's JSON shape.
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id);
      errorHandler(error, request, reply);
    },
    forceCloseConnections: 'idle',
    routerOptions: { ignoreDuplicateSlashes: false },
  };
}
