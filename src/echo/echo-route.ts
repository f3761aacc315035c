/**
 * The echo route: every path and method the service's own routes do not answer, through the
 * pipeline (pipeline.ts). With `ECHO_UPSTREAM` it forwards to the upstream instead of echoing, and
 * WebSocket upgrades of any path but the service's own `/ws` are tunnelled there (proxy-upgrade.ts).
 */
import type { FastifyInstance } from 'fastify';
import { CompressionSlots } from './bodies.ts';
import { createSlowCloseSender } from './connection-faults.ts';
import { refuseSocket } from './error-handler.ts';
import { EchoError } from './errors.ts';
import { createBodylessMethodReader, createEchoHandler } from './pipeline.ts';
import { peekBody, type Upstream, Upstreams } from './proxy.ts';
import { createUpgradeForwarder } from './proxy-upgrade.ts';
import { type RandomSource, seededRandom } from './random.ts';
import { takeRateToken } from './rate-limit.ts';
import type { EchoState } from './state.ts';

/**
 * Registers the echo route, last: bodies arrive as raw bytes, whatever their type. `random` is the
 * randomness of requests without a seed (default `Math.random`; when given, `ECHO_SEED` is not used).
 */
export async function registerEchoRoute(
  app: FastifyInstance,
  state: EchoState,
  options: { readonly random?: RandomSource | undefined } = {},
): Promise<void> {
  const { config } = state;
  const random = options.random ?? Math.random;
  // ECHO_SEED: one seeded sequence hands each echoed request a seed of its own (X-Echo-Seed).
  const seeds =
    options.random === undefined && config.seed !== undefined ? seededRandom(config.seed) : undefined;
  // Reverse proxy (`ECHO_UPSTREAM`, a scenario's `upstream`): one connection pool, closed with the app.
  const upstreams = new Upstreams(config.upstreamTimeoutMs, config.upstreamHostHeader);
  app.addHook('onClose', () => upstreams.close());
  const upstream = config.upstream === undefined ? undefined : await upstreams.get(config.upstream);
  if (upstream !== undefined) tunnelUpgrades(state, random, upstream, upstreams);

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
}

/**
 * WebSocket upgrades of any path but the service's own `/ws` are tunnelled to the upstream, with the
 * faults a forwarded request gets (proxy-upgrade.ts), after a token of the rate limit.
 */
function tunnelUpgrades(
  state: EchoState,
  random: RandomSource,
  upstream: Upstream,
  upstreams: Upstreams,
): void {
  const { config } = state;
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
