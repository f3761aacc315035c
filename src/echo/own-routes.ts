/**
 * The service's own routes: health, info, metrics, history, scenarios and replay (routes.ts), the
 * pages and streams (pages.ts). Each answers its own methods only: any other method is a 405 naming
 * the allowed ones, never an echo (a `POST /control/faults` that echoed would look as if it had worked).
 */
import type { FastifyInstance } from 'fastify';
import { EchoError } from './errors.ts';
import { registerStreamEndpoints } from './pages.ts';
import { registerServiceRoutes, type ServiceRouteOptions } from './routes.ts';
import type { EchoState } from './state.ts';

export async function registerOwnRoutes(
  app: FastifyInstance,
  state: EchoState,
  options: ServiceRouteOptions,
): Promise<void> {
  // The service's own routes answer their own methods only: any other is a 405 naming them, never
  // an echo (a `POST /control/faults` that echoed would look as if it had worked).
  const ownRoutes = new Map<string, Set<string>>();
  let collecting = true;
  app.addHook('onRoute', (route) => {
    if (!collecting) return;
    const methods = ownRoutes.get(route.url) ?? new Set<string>();
    for (const method of [route.method].flat()) methods.add(method);
    if (methods.has('GET')) methods.add('HEAD');
    ownRoutes.set(route.url, methods);
  });
  await app.register(async (service) => registerServiceRoutes(service, state, options));
  await app.register(async (streams) => registerStreamEndpoints(streams, state));
  collecting = false;
  // Any body is accepted (and ignored) here, so the answer names the method, not the body's type.
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    for (const [url, methods] of ownRoutes) {
      const allow = [...methods].join(', ');
      const others = scope.supportedMethods.filter((m) => !methods.has(m) && m !== 'OPTIONS');
      scope.route({
        method: others,
        url,
        handler: async (request, reply) => {
          reply.header('allow', allow);
          throw new EchoError('ECHO_ERR_METHOD_NOT_ALLOWED', [request.method, url, allow]);
        },
      });
    }
  });
}
