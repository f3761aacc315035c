/**
 * `obsPlugin`: obs for a fastify app. Registered in the app's own scope (`sharedPlugin`), so its hooks see every route
 * of the app and `app.obs` is visible everywhere. It registers obs's core (the configuration, whose
 * problems make `register` reject so the app does not start; the in-flight count; the flush on
 * close), then each feature as a plugin of its own that names what it needs (feature-plugins.ts).
 *
 * ```ts
 * const app = Fastify();
 * await app.register(obsPlugin, { env: process.env, version: '1.2.3' });
 * app.obs.mode.set('DRY_RUN');
 * ```
 */
import type { Http2Session } from 'node:http2';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { guardRegistry } from './core/meters.ts';
import { type CreateObsOptions, OBS_METRICS, type ObsLogger } from './core/obs.ts';
import { CORE_PLUGIN, FEATURE_PLUGINS } from './feature-plugins.ts';
import { createObs, type Obs } from './obs.ts';
import { sharedPlugin } from './plugin-meta.ts';

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
 * obs's core on a fastify app: `app.obs` (config, lever, registry, logger, drain and snapshot
 * seams), the cardinality firewall over the registry, the one count of requests in flight, and on
 * close the end of the drain, the flush and obs's own close. Every feature plugin needs it.
 */
const core: FastifyPluginAsync<ObsPluginOptions> = async (app: FastifyInstance, options) => {
  const obs = createObs({ ...options, logger: options.logger ?? app.log });
  app.decorate('obs', obs);
  // The cardinality firewall over every metric of the registry, present and future.
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
  // The one count of requests in flight. One listener function for every response, not a closure
  // per request; 'close' fires once per response, whether it completed or the client went away
  // (node guards it), so `on`: `once` would allocate a wrapper per request.
  const drainState = obs.drainState;
  const requestFinished = () => drainState.requestFinished();
  app.addHook('onRequest', (_request, reply, done) => {
    drainState.requestStarted();
    reply.raw.on('close', requestFinished);
    done();
  });
  // Once the server is closed: the drain ends (what is in flight counts as dropped), the flush
  // hooks push the last telemetry out, and obs closes.
  const shutdown = obs.config.shutdown.enabled;
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
};

/** obs's core alone (the feature plugins need it); not exported by the package. */
export const obsCore = sharedPlugin(core, { name: CORE_PLUGIN, fastify: '5.x' });

const plugin: FastifyPluginAsync<ObsPluginOptions> = async (app: FastifyInstance, options) => {
  await app.register(obsCore, options);
  // The features, each a plugin that names what it needs (feature-plugins.ts), in their order.
  for (const feature of FEATURE_PLUGINS) {
    await app.register(feature, {
      problemErrorHandler: options.problemErrorHandler,
      http2Sessions: options.http2Sessions,
    });
  }
};

/** The obs fastify plugin: its core, then every feature. */
export const obsPlugin = sharedPlugin(plugin, { name: 'echo-chaos-obs', fastify: '5.x' });
