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
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { registerActuator } from './actuator.ts';
import { registerCache } from './cache.ts';
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

/** Options of {@link obsPlugin}; see {@link CreateObsOptions}. The logger defaults to the app's. */
export type ObsPluginOptions = Omit<CreateObsOptions, 'logger'> & {
  readonly logger?: ObsLogger;
} & ObsRequestFeatureOptions;

/**
 * On an HTTP/1.1 connection's socket: the response of the latest request received on it, until
 * that response closes. Pipelined requests are answered in order, so while draining only this
 * one may say `Connection: close`: said on an earlier one, the connection would end before the
 * later requests it has already received are answered.
 */
const LATEST_RESPONSE = Symbol('obs.latestResponse');
type ConnectionSocket = { [LATEST_RESPONSE]?: unknown };
/** What the shared `close` listener sees of a response (`this`). */
type ClosedResponse = { readonly req?: { readonly httpVersionMajor: number; readonly socket: unknown } };

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

  // One listener function for every response (`this`), not a closure per request.
  const requestFinished = function (this: ClosedResponse) {
    obs.requestFinished();
    const request = this.req;
    if (request?.httpVersionMajor !== 1) return;
    const socket = request.socket as ConnectionSocket | null;
    if (socket != null && socket[LATEST_RESPONSE] === this) socket[LATEST_RESPONSE] = undefined;
  };
  // Only the drain's Connection: close (below) reads the latest response of a connection.
  const shutdown = obs.config.shutdown.enabled;
  app.addHook('onRequest', (request, reply, done) => {
    obs.requestStarted();
    if (shutdown && request.raw.httpVersionMajor === 1)
      (request.raw.socket as ConnectionSocket)[LATEST_RESPONSE] = reply.raw;
    // 'close' fires once per response, whether it completed or the client went away (node guards
    // it), so `on`: `once` would allocate a wrapper per request.
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
    // While draining, an HTTP/1.1 response ends its connection: a keep-alive connection would
    // otherwise stay open after its last request and hold the server's close until it times out.
    // With pipelining, the response of the latest request received on it does: the ones before go
    // out first and keep the connection open for it.
    app.addHook('onSend', (request, reply, payload, done) => {
      if (obs.drainState.phase !== 'idle' && request.raw.httpVersionMajor === 1) {
        const latest = (request.raw.socket as ConnectionSocket | null)?.[LATEST_RESPONSE];
        if (latest === undefined || latest === reply.raw) reply.header('connection', 'close');
      }
      done(null, payload);
    });
  }
  // Closing begins the drain (readiness fails) unless `obs.drain()` did already; fastify then waits
  // for the requests in flight, and the flush hooks push the last telemetry out.
  app.addHook('preClose', (done) => {
    if (shutdown) obs.drainState.begin();
    done();
  });
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
