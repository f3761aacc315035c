import { randomUUID } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { loadObsConfig, obsLoggerOptions, obsPlugin, type ResolvedObsConfig } from '@echo-chaos/obs';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import pino, { type Logger } from 'pino';
import { Registry } from 'prom-client';
import { type Scenario, ScenarioStore } from '../scenario/index.ts';
import { lazyChildLoggerFactory } from './access-log.ts';
import { loadAdminToken, registerAdminAuth } from './admin-auth.ts';
import { FaultGate } from './applied.ts';
import { CompressionSlots } from './bodies.ts';
import { registerCompletion } from './completion.ts';
import { type EchoConfig, scenarioLimits } from './config.ts';
import { createSlowCloseSender } from './connection-faults.ts';
import { registerCors } from './cors.ts';
import { clientErrorHandler, errorHandler, notFoundHandler, refuseSocket } from './error-handler.ts';
import { EchoError } from './errors.ts';
import { History } from './history.ts';
import { maskedEntry, maskedPath } from './history-secrets.ts';
import { isoTimestamp, stdoutDestination } from './log-destination.ts';
import { registerLogging } from './logging.ts';
import { ECHO_OBS_DEFAULTS, EchoMetrics } from './metrics.ts';
import { registerOwnRoutes } from './own-routes.ts';
import { createBodylessMethodReader, createEchoHandler } from './pipeline.ts';
import { peekBody, Upstreams } from './proxy.ts';
import { createUpgradeForwarder } from './proxy-upgrade.ts';
import { type RandomSource, seededRandom } from './random.ts';
import { TokenBucket, takeRateToken } from './rate-limit.ts';
import type { ReplayResolver } from './replay-guard.ts';
import { registerRateLimit, registerRequestHooks } from './request-hooks.ts';
import { registerRequestState } from './request-state.ts';
import { EVENT_LOOP_RESOLUTION_MS } from './routes.ts';
import { startScenarioFile } from './scenario-file.ts';
import type { EchoState } from './state.ts';
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
  // stdout: the lines of one event-loop turn are written in one go, in this thread when stdout takes
  // them at once (log-destination.ts), bounded when it does not keep up (the lines dropped are
  // counted in echo_log_lines_dropped_total), and what is left is written when the process exits.
  // obs's logger options add trace and span ids and mask secrets in every line.
  const obsConfig = options.obs ?? loadObsConfig({ env: {}, defaults: ECHO_OBS_DEFAULTS });
  const destination = options.logger === undefined ? stdoutDestination() : undefined;
  const logger =
    options.logger ??
    pino(
      obsLoggerOptions({
        config: obsConfig.config,
        // ISO time reads better, and a 13-digit epoch would look like a card number to the masking.
        base: { level: config.logLevel, timestamp: isoTimestamp },
      }),
      destination,
    );
  // HTTP/1.1 and h2c on one cleartext port, or h2 and HTTP/1.1 over TLS (may stop startup).
  const transport = await createTransport(config, logger);
  const app = Fastify({
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
    ...transport.fastifyOptions,
  });
  // The one per-request state of the echo (request-state.ts): first, so every context has its slot.
  registerRequestState(app);
  transport.attach(app);

  const random = options.random ?? Math.random;
  // ECHO_SEED: one seeded sequence hands each echoed request a seed of its own (X-Echo-Seed).
  const seeds =
    options.random === undefined && config.seed !== undefined ? seededRandom(config.seed) : undefined;
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
  const eventLoopDelay = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
  eventLoopDelay.enable();
  const state: EchoState = {
    config,
    history: new History(config.historySize, config.historyMaxBodyBytes, {
      maxBytes: config.historyMaxBytes,
      ...(config.historySecrets === 'mask' ? { view: maskedEntry, pathView: maskedPath } : {}),
    }),
    scenarios: new ScenarioStore(),
    metrics: new EchoMetrics(registry),
    ...(options.metricsText === undefined ? {} : { metricsText: options.metricsText }),
    startedAt: new Date(),
    requestCount: 0,
    openStreams: { ws: 0, sse: 0 },
    eventLoopDelay,
    drain: new AbortController(),
    drainDeadline: new AbortController(),
    lifecycle: { ready: true, healthy: true },
    faults: new FaultGate(config.faultsEnabled, config.maxActiveFaults),
    ...(config.rateLimitRps > 0
      ? { rateLimit: new TokenBucket(config.rateLimitRps, config.rateLimitBurst) }
      : {}),
    upgradeHandlers: transport.upgradeHandlers,
  };
  app.decorate('echo', state);
  transport.meter(state.metrics);
  state.metrics.watchActiveFaults(() => state.faults.active);
  state.metrics.watchScenarios(() => state.scenarios.counts());
  if (destination !== undefined) state.metrics.watchLogLinesDropped(() => destination.dropped);

  let scenarioFile: { close(): void } | undefined;
  if (options.scenarios !== undefined) state.scenarios.replace([...options.scenarios]);
  else scenarioFile = startScenarioFile(config, state.scenarios, logger);
  // Replicas that agree (`ECHO_STATE_URL`): the scenario set shared on Redis. Loaded only then.
  if (config.stateUrl !== undefined) {
    const { startSharedState } = await import('./shared-state.ts');
    const shared = await startSharedState({
      url: config.stateUrl,
      password: config.statePassword,
      scenarios: state.scenarios,
      history: state.history,
      adopt: (set) => state.scenarios.replace(set, scenarioLimits(config)),
      logger,
    });
    state.shared = shared;
    const fleetHistory = shared.history;
    state.metrics.watchStateStore(
      () => shared.up,
      fleetHistory === undefined ? undefined : () => fleetHistory.dropped,
    );
    app.addHook('onClose', () => shared.close());
  }
  // obs's drain (main.ts) begins: /ready turns 503, SSE streams and WebSockets are closed.
  app.obs.drainState.onChange((phase) => {
    if (phase !== 'idle') state.drain.abort();
  });
  // Closing drains: waiting requests are answered at once instead of holding close() for their delay.
  app.addHook('preClose', (done) => {
    state.drain.abort();
    state.drainDeadline.abort();
    done();
  });
  app.addHook('onClose', async () => {
    scenarioFile?.close();
    eventLoopDelay.disable();
  });

  // 1. The request hooks, one per concern (request-hooks.ts): counting and id, the Host check, the
  //    headers every response carries, the route on the server span.
  registerRequestHooks(app, state, config);
  registerLogging(app, config);

  // 2. CORS.
  if (config.enableCors) registerCors(app, { admin: config.corsAdmin });

  // 3. Rate limit; probes and scrapes are never limited.
  registerRateLimit(app, state, config);

  // 4. The admin routes behind ECHO_ADMIN_TOKEN, when it is set.
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

  // Reverse proxy (`ECHO_UPSTREAM`, a scenario's `upstream`): one connection pool, closed with the app.
  const upstreams = new Upstreams(config.upstreamTimeoutMs, config.upstreamHostHeader);
  app.addHook('onClose', () => upstreams.close());
  const upstream = config.upstream === undefined ? undefined : await upstreams.get(config.upstream);
  if (upstream !== undefined) {
    // WebSocket upgrades of any path but the service's own `/ws` are tunnelled to the upstream,
    // with the faults a forwarded request gets (proxy-upgrade.ts).
    const tunnel = createUpgradeForwarder({
      config,
      random,
      history: state.history,
      scenarios: state.scenarios,
      metrics: state.metrics,
      faults: state.faults,
      drainSignal: state.drainDeadline.signal,
      upstream,
      upstreams,
    });
    state.upgradeHandlers.set('*', (request, socket, head) => {
      const go = (waitMs: number) => {
        if (waitMs > 0) {
          const error = new EchoError('ECHO_ERR_RATE_LIMITED', [config.rateLimitRps]);
          return refuseSocket(socket, error);
        }
        tunnel(request, socket, head);
      };
      const waitMs = takeRateToken(state) ?? 0;
      if (typeof waitMs === 'number') go(waitMs);
      else void waitMs.then(go);
    });
  }

  // The echo route: every other path and method. Bodies arrive as raw bytes, whatever their type.
  const echo = createEchoHandler({
    ...(upstream === undefined ? {} : { upstream }),
    upstreams,
    config,
    random,
    ...(seeds === undefined ? {} : { seeds }),
    history: state.history,
    scenarios: state.scenarios,
    metrics: state.metrics,
    faults: state.faults,
    drainSignal: state.drainDeadline.signal,
    compression: new CompressionSlots(config.maxConcurrentCompression),
  });
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    // In proxy mode a long body streams to the upstream rather than being read whole (proxy.ts).
    if (upstream === undefined)
      scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    else scope.addContentTypeParser('*', (_req, payload, done) => peekBody(payload, done));
    scope.addHook('preValidation', createBodylessMethodReader(config.maxBodyBytes));
    // Last of the onSend hooks: a `slow-close` answer is sent by it, with the close held back.
    scope.addHook(
      'onSend',
      createSlowCloseSender({
        lingerMs: config.errorTimeoutMs,
        metrics: state.metrics,
        drainSignal: state.drainDeadline.signal,
      }),
    );
    // A CORS preflight is answered in onRequest; any other OPTIONS is echoed like every method.
    scope.route({ method: scope.supportedMethods, url: '*', handler: echo });
  });
  return app;
}
