import type { FastifyInstance } from 'fastify';

/** Methods a preflight always allows, plus whatever method it asks for. */
const ALLOWED_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';
const PREFLIGHT_MAX_AGE_SECONDS = '86400';
/** Response headers a browser may read without being told (the CORS-safelisted ones). */
const SAFELISTED = new Set([
  'cache-control',
  'content-language',
  'content-length',
  'content-type',
  'expires',
  'last-modified',
  'pragma',
]);

const ADMIN_PATH = /^\/(?:scenario|control|replay|history)(?:\/|$)/;

/**
 * Whether a request belongs to the admin routes (`/scenario*`, `/control*`, `/replay`, `/history*`,
 * the actuator's base path): by the route it matched, or, for a preflight (which the echo route
 * answers), by its decoded path, so `/%73cenario` is judged as the router will route it.
 */
export function isAdminRequest(route: string | undefined, url: string, actuatorBase: string): boolean {
  const q = url.indexOf('?');
  let path = q === -1 ? url : url.slice(0, q);
  try {
    path = decodeURIComponent(path);
  } catch {
    // Not percent-decodable: the router does not route it to an admin route either.
  }
  return [route ?? '', path].some(
    (p) => ADMIN_PATH.test(p) || p === actuatorBase || p.startsWith(`${actuatorBase}/`),
  );
}

/**
 * Permissive CORS on echo paths: any origin (reflected, so credentialed requests work too), any
 * method, any header, and every response header exposed to the page, including `X-Echoed-*` and
 * headers set through `X-Echo-Set-Header-*` or scenarios. A request without `Origin` pays one lookup.
 *
 * The admin routes ({@link isAdminRequest}) get none of it unless `admin` (`ECHO_CORS_ADMIN=true`):
 * no reflected origin, no `Access-Control-Allow-Credentials`, and a preflight answered without any
 * `Access-Control-Allow-*`, so a page on another origin can neither send them a non-simple request
 * nor read what they answer. (Simple requests still arrive, as they would without CORS: the
 * service's own routes parse JSON and YAML only, and `ECHO_ADMIN_TOKEN` is the lock.)
 *
 * Written here rather than with `@fastify/cors`: that plugin exposes a fixed header list and does
 * its work (an options merge, `Vary`, three headers) on every request, with or without `Origin`.
 */
export function registerCors(app: FastifyInstance, options: { readonly admin: boolean }): void {
  const actuatorBase = app.obs.config.actuator['base-path'];
  const refused = new WeakSet<object>();
  app.addHook('onRequest', (request, reply, done) => {
    const origin = request.headers.origin;
    if (origin === undefined) return done();
    reply.header('vary', 'Origin');
    if (!options.admin && isAdminRequest(request.routeOptions.url, request.url, actuatorBase)) {
      refused.add(request);
      if (request.method !== 'OPTIONS') return done();
      reply.header('content-length', '0');
      reply.code(204).send();
      return;
    }
    reply.header('access-control-allow-origin', origin);
    reply.header('access-control-allow-credentials', 'true');
    if (request.method !== 'OPTIONS') return done();
    const method = request.headers['access-control-request-method'];
    const headers = request.headers['access-control-request-headers'];
    reply.header(
      'access-control-allow-methods',
      method === undefined ? ALLOWED_METHODS : `${ALLOWED_METHODS}, ${method}`,
    );
    if (headers !== undefined) reply.header('access-control-allow-headers', headers);
    reply.header('access-control-max-age', PREFLIGHT_MAX_AGE_SECONDS);
    reply.header('content-length', '0');
    reply.code(204).send();
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    if (request.headers.origin !== undefined && request.method !== 'OPTIONS' && !refused.has(request)) {
      const exposed: string[] = [];
      for (const name of Object.keys(reply.getHeaders())) {
        if (!SAFELISTED.has(name) && !name.startsWith('access-control-')) exposed.push(name);
      }
      if (exposed.length > 0) reply.header('access-control-expose-headers', exposed.join(', '));
    }
    done(null, payload);
  });
}
