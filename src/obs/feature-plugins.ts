/**
 * obs's features as fastify plugins (docs/adr/0044-obs-feature-plugins.md): each one a plugin with a
 * name and the plugins it needs (`dependencies`), checked by fastify when it is registered, so a
 * feature registered before what it builds on fails at startup with the missing name instead of
 * misbehaving on a request. {@link obsPlugin} registers them all, in {@link FEATURE_PLUGINS}' order:
 * the order of the `onRequest` hooks and of the request-context contributors.
 *
 * Each shares the app's scope (`sharedPlugin`): its hooks apply to every route of the app, and its state
 * stays inside its module, reached through `app.obs` (the core: config, lever, registry, logger,
 * drain, snapshot and health seams).
 */
import type { Http2Session } from 'node:http2';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { trackConnections } from './core/connections.ts';
import { registerActuator } from './features/actuator/actuator.ts';
import { registerDependencies } from './features/dependencies.ts';
import { registerExceptionHandler } from './features/exception-handler/exception-handler.ts';
import { registerFanOut } from './features/fan-out.ts';
import { addLoggingSnapshot } from './features/logging/logging.ts';
import { registerPriority } from './features/priority.ts';
import { contextKit, registerRequestContext } from './features/request-context/context-hook.ts';
import { registerRetry } from './features/retry/retry.ts';
import { addSamplingSnapshot } from './features/sampling.ts';
import { registerSlo } from './features/slo.ts';
import { registerTenant } from './features/tenant.ts';
import { registerTimeoutBudget } from './features/timeout-budget/timeout-budget-hook.ts';
import { registerTraceGuard } from './features/trace-guard.ts';
import { registerCache } from './integrations/cache.ts';
import { registerDb } from './integrations/db.ts';
import { registerFeatureFlags } from './integrations/feature-flags.ts';
import { useJobsPropagation } from './integrations/jobs.ts';
import { registerProfiling } from './integrations/profiling.ts';
import { registerResilience } from './integrations/resilience.ts';
import type { Obs } from './obs.ts';
import { sharedPlugin } from './plugin-meta.ts';

/** The name of obs's core plugin: `app.obs`, the firewall over the registry, the in-flight count. */
export const CORE_PLUGIN = 'echo-chaos-obs-core';
const PREFIX = 'echo-chaos-obs-';

/** What the feature plugins take: the options of {@link obsPlugin} they read. */
export interface FeaturePluginOptions {
  readonly problemErrorHandler?: boolean | undefined;
  readonly http2Sessions?: (() => Iterable<Http2Session>) | undefined;
}

/** One feature: its name (without the prefix), what it needs besides the core, and its setup. */
interface Feature {
  readonly name: string;
  readonly needs: readonly string[];
  readonly setup: (app: FastifyInstance, obs: Obs, options: FeaturePluginOptions) => void | Promise<void>;
}

/** The request context's hook: first, so the other hooks and the handler run inside it. */
const CONTEXT = 'request-context';

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

/** The drain (`obs.shutdown`): the server's connections, the log of its end, the close's part. */
function setupShutdown(app: FastifyInstance, obs: Obs, options: FeaturePluginOptions): void {
  if (!obs.config.shutdown.enabled) return;
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
  // Closing begins the drain (readiness fails, keep-alive ends) unless `obs.drain()` did already;
  // fastify then closes the listener and waits for the requests in flight, and the flush hooks push
  // the last telemetry out. A drain that timed out left requests in flight: they get a moment (a
  // host may answer them at once from its own preClose), then every connection left is cut, so
  // that the close ends.
  app.addHook('preClose', (done) => {
    obs.drainState.begin();
    if (obs.drainState.result?.completed === false)
      setTimeout(() => connections.destroyAll(), CLOSE_GRACE_MS).unref();
    done();
  });
  // The flush on close is the core's (plugin.ts): it runs before obs closes, in one hook.
}

/**
 * Every feature, in the order {@link obsPlugin} registers them. The features that contribute to the
 * request context run their contributors in this order.
 */
const FEATURES: readonly Feature[] = [
  { name: CONTEXT, needs: [], setup: (app, obs) => registerRequestContext(app, obs) },
  { name: 'timeout-budget', needs: [CONTEXT], setup: (_app, obs) => registerTimeoutBudget(obs) },
  { name: 'retry', needs: [CONTEXT], setup: (_app, obs) => registerRetry(obs) },
  { name: 'fan-out', needs: [CONTEXT], setup: (app, obs) => registerFanOut(app, obs) },
  {
    name: 'dependencies',
    needs: [],
    setup: (app, obs) => {
      const stop = registerDependencies(obs);
      app.addHook('onClose', async () => stop());
    },
  },
  { name: 'priority', needs: [CONTEXT], setup: (_app, obs) => registerPriority(obs) },
  { name: 'tenant', needs: [CONTEXT], setup: (_app, obs) => registerTenant(obs) },
  { name: 'db', needs: [CONTEXT], setup: (app, obs) => registerDb(app, obs) },
  {
    name: 'jobs',
    needs: [CONTEXT],
    setup: (_app, obs) => useJobsPropagation(obs, contextKit(obs).propagation),
  },
  { name: 'feature-flags', needs: [CONTEXT], setup: (_app, obs) => registerFeatureFlags(obs) },
  { name: 'profiling', needs: [CONTEXT], setup: (app, obs) => registerProfiling(app, obs) },
  { name: 'trace-guard', needs: [CONTEXT], setup: (app, obs) => registerTraceGuard(app, obs) },
  {
    name: 'exception-handler',
    needs: [CONTEXT],
    setup: (app, obs, options) =>
      registerExceptionHandler(app, obs, { problemErrorHandler: options.problemErrorHandler === true }),
  },
  { name: 'logging', needs: [], setup: (_app, obs) => addLoggingSnapshot(obs) },
  { name: 'sampling', needs: [], setup: (_app, obs) => addSamplingSnapshot(obs) },
  { name: 'resilience', needs: [CONTEXT], setup: (_app, obs) => registerResilience(obs) },
  { name: 'cache', needs: [CONTEXT], setup: (_app, obs) => registerCache(obs) },
  { name: 'slo', needs: [], setup: (app, obs) => registerSlo(app, obs) },
  { name: 'shutdown', needs: [], setup: setupShutdown },
  {
    name: 'actuator',
    needs: [],
    setup: async (app, obs) => {
      if (obs.config.actuator.enabled) await registerActuator(app, obs);
    },
  },
];

function featurePlugin(feature: Feature) {
  const plugin: FastifyPluginAsync<FeaturePluginOptions> = async (app, options) => {
    await feature.setup(app, app.obs, options);
  };
  return sharedPlugin(plugin, {
    name: PREFIX + feature.name,
    fastify: '5.x',
    dependencies: [CORE_PLUGIN, ...feature.needs.map((name) => PREFIX + name)],
  });
}

/** The feature plugins, in registration order, each with its name and dependencies. */
export const FEATURE_PLUGINS = FEATURES.map(featurePlugin);
