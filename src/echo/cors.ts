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

/**
 * Permissive CORS: any origin (reflected, so credentialed requests work too), any method, any
 * header, and every response header exposed to the page, including `X-Echoed-*` and headers set
 * through `X-Echo-Set-Header-*` or scenarios. A request without `Origin` pays one lookup.
 *
 * Written here rather than with `@fastify/cors`: that plugin exposes a fixed header list and does
 * its work (an options merge, `Vary`, three headers) on every request, with or without `Origin`.
 */
export function registerCors(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    const origin = request.headers.origin;
    if (origin === undefined) return done();
    reply.header('access-control-allow-origin', origin);
    reply.header('access-control-allow-credentials', 'true');
    reply.header('vary', 'Origin');
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
    if (request.headers.origin !== undefined && request.method !== 'OPTIONS') {
      const exposed: string[] = [];
      for (const name of Object.keys(reply.getHeaders())) {
        if (!SAFELISTED.has(name) && !name.startsWith('access-control-')) exposed.push(name);
      }
      if (exposed.length > 0) reply.header('access-control-expose-headers', exposed.join(', '));
    }
    done(null, payload);
  });
}
