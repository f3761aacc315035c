/**
 * `obsPlugin`: obs for a fastify app. Wrapped with `fastify-plugin`, so its hooks see every route
 * of the app and `app.obs` is visible everywhere. It resolves the configuration (an invalid one
 * makes `register` reject, so the app does not start), counts in-flight requests, moves the drain
 * state on close and registers the actuator routes.
 *
 * ```ts
 * const app = Fastify();
 * await app.register(obsPlugin, { env: process.env, version: '1.2.3' });
 * app.obs.mode.set('DRY_RUN');
 * ```
 */
import type { Http2Session } from 'node:http2';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { registerActuator } from './actuator.ts';
import { registerCache } from './cache.ts';
import { trackConnections } from './connections.ts';
import { contextKit, registerRequestContext } from './context-hook.ts';
// --- request-level features: structured logs, exception fingerprints, trace guard, sampling ---
import { registerDb } from './db.ts';
import { registerDependencies } from './dependencies.ts';
import { registerExceptionHandler } from './exception-handler.ts';
import { registerFanOut } from './fan-out.ts';
import { registerFeatureFlags } from './feature-flags.ts';
import { useJobsPropagation } from './jobs.ts';
import { addLoggingSnapshot } from './logging.ts';
// --- end ---
import { guardRegistry } from './meters.ts';
import { type CreateObsOptions, createObs, OBS_METRICS, type Obs, type ObsLogger } from './obs.ts';
import { registerPriority } from './priority.ts';
import { registerProfiling } from './profiling.ts';
import { registerResilience } from './resilience.ts';
import { registerRetry } from './retry.ts';
import { addSamplingSnapshot } from './sampling.ts';
import { registerSlo } from './slo.ts';
import { registerTenant } from './tenant.ts';
import { registerTimeoutBudget } from './timeout-budget-hook.ts';
import { registerTraceGuard } from './trace-guard.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The obs instance of this app (see {@link Obs}). */
    obs: Obs;
  }
}

/** Options of the plugin's request-level features. */
export interface ObsRequestFeatureOptions {
  /**
   * Answer errors with RFC 7807 problems (`application/problem+json` with `request_id`, `trace_id`
   * and `fingerprint`): installs `problemErrorHandler` as the app's error handler. Default false,
   * since many apps have their own; such an app calls `problemErrorHandler(error, request, reply)`
   * from its handler instead. obs never replaces a handler set before it; one set after replaces
   * obs's (fastify warns FSTWRN004, or refuses with `allowErrorHandlerOverride: false`, so such an
   * app delegates rather than use this option). Fingerprints are recorded (log line, span, metric)
   * either way.
   */
  readonly problemErrorHandler?: boolean;
}

/** Options of the plugin's drain (`obs.shutdown`). */
export interface ObsDrainOptions {
  /**
   * HTTP/2 sessions open now that the app's server does not announce with its `session` event (an
   * h2c server behind the HTTP/1.1 one a `serverFactory` returns); the drain sends them a GOAWAY
   * too. The sessions of an HTTP/2 server fastify made are found without it.
   */
  readonly http2Sessions?: () => Iterable<Http2Session>;
}

/** Options of {@link obsPlugin}; see {@link CreateObsOptions}. The logger defaults to the app's. */
export type ObsPluginOptions = Omit<CreateObsOptions, 'logger'> & {
  readonly logger?: ObsLogger;
} & ObsRequestFeatureOptions &
  ObsDrainOptions;

/**
 * Once the drain has closed the listener, how long an HTTP/1.1 connection with no request in
 * progress must stay quiet before it is closed (a busy one is told by its next response instead).
 */
const DRAIN_IDLE_MS = 1_000;
/**
 * When the drain timed out, how long `app.close()` gives the requests still in flight (a host may
 * answer them at once from its `preClose`) before it cuts every connection left.
 */
const CLOSE_GRACE_MS = 1_000;

const plugin: FastifyPluginAsync<ObsPluginOptions> = async (app: FastifyInstance, options) => {
  const obs = createObs({ ...options, logger: options.logger ?? app.log });
  app.decorate('obs', obs);
  // --- cardinality firewall over every metric of the registry, present and future ---
  if (obs.config.cardinality.enabled) {
    guardRegistry(obs.registry, obs.firewall, {
      exempt: [OBS_METRICS.enforcementMode, OBS_METRICS.configInfo],
      onUnguarded: (meter) =>
        obs.logger.warn(
          { obs: 'cardinality', meter },
          `obs cannot guard the labels of metric ${meter}: it is not a prom-client 15 metric (another major version of prom-client?); it records unguarded`,
        ),
    });
  }
  // --- end ---

  // The one count of requests in flight. One listener function for every response, not a closure
  // per request; 'close' fires once per response, whether it completed or the client went away
  // (node guards it), so `on`: `once` would allocate a wrapper per request.
  const requestFinished = () => obs.requestFinished();
  const shutdown = obs.config.shutdown.enabled;
  app.addHook('onRequest', (_request, reply, done) => {
    obs.requestStarted();
    reply.raw.on('close', requestFinished);
    done();
  });
  // --- the request context: first, so later hooks and the handler run inside it; then the ---
  // --- features that contribute to it (their contributors run in this order) ---
  registerRequestContext(app, obs);
  registerTimeoutBudget(obs);
  registerRetry(obs);
  registerFanOut(app, obs);
  const stopDependencies = registerDependencies(obs);
  app.addHook('onClose', async () => stopDependencies());
  registerPriority(obs);
  registerTenant(obs);
  registerDb(app, obs);
  useJobsPropagation(obs, contextKit(obs).propagation);
  registerFeatureFlags(obs);
  registerProfiling(app, obs);
  // --- end ---
  // --- request-level features: trace guard, exception fingerprints, logging and sampling sections ---
  registerTraceGuard(app, obs);
  registerExceptionHandler(app, obs, { problemErrorHandler: options.problemErrorHandler === true });
  addLoggingSnapshot(obs);
  addSamplingSnapshot(obs);
  registerResilience(obs);
  registerCache(obs);
  registerSlo(app, obs);
  // --- end ---
  // --- graceful drain and telemetry flush (obs.shutdown) ---
  if (shutdown) {
    obs.drainState.onChange((phase) => {
      const result = obs.drainState.result;
      if (phase !== 'drained' || result === undefined) return;
      if (result.completed) {
        obs.logger.info({ obs: 'drain', ...result }, 'obs drain ended: no request in flight');
      } else {
        obs.logger.warn(
          { obs: 'drain', ...result },
          `obs drain timed out with ${result.dropped} requests in flight`,
        );
      }
    });
    // The connections of the server the app listens on: the drain closes its listener, ends
    // keep-alive and closes idle connections (connections.ts); fastify's close does the rest.
    const connections = trackConnections(app.server, {
      idleMs: DRAIN_IDLE_MS,
      http2Sessions: options.http2Sessions,
    });
    obs.drainState.useConnections({
      get open() {
        return connections.open;
      },
      endKeepAlive: () => connections.endKeepAlive(),
      allClosed: () => connections.allClosed(),
      destroyAll: () => connections.destroyAll(),
      async closeListener() {
        await connections.closeListener();
        obs.logger.info(
          { obs: 'drain', open_connections: connections.open, in_flight: obs.drainState.inFlight },
          'obs drain: the listener has closed',
        );
      },
    });
    // Closing begins the drain (readiness fails, keep-alive ends) unless `obs.drain()` did
    // already; fastify then closes the listener and waits for the requests in flight, and the
    // flush hooks push the last telemetry out. A drain that timed out left requests in flight:
    // they get a moment (a host may answer them at once from its own preClose), then every
    // connection left is cut, so that the close ends.
    app.addHook('preClose', (done) => {
      obs.drainState.begin();
      if (obs.drainState.result?.completed === false)
        setTimeout(() => connections.destroyAll(), CLOSE_GRACE_MS).unref();
      done();
    });
  }
  app.addHook('onClose', async () => {
    try {
      if (shutdown) {
        obs.drainState.finish();
        const report = await obs.flush();
        if (!report.ok) obs.logger.warn({ obs: 'flush', ...report }, 'obs telemetry flush incomplete');
      }
    } finally {
      obs.close();
    }
  });
  // --- end ---

  if (obs.config.actuator.enabled) await registerActuator(app, obs);
};

/** The obs fastify plugin. */
export const obsPlugin = fp(plugin, { name: 'echo-chaos-obs', fastify: '5.x' });
