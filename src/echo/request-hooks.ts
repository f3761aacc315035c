/**
 * The echo's `onRequest` hooks: one for counting (and the request id on every answer), the Host
 * check of HTTP/1.1, the headers every response carries and the fastify route on the OpenTelemetry
 * server span; then, when `ECHO_RATE_LIMIT_RPS` is set, the rate limit.
 */
import { trace } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';
import { recordOnClose } from './completion.ts';
import type { EchoConfig } from './config.ts';
import { EchoError } from './errors.ts';
import { retryAfterSeconds, takeRateToken } from './rate-limit.ts';
import { UNLIMITED_PATHS } from './routes.ts';
import type { EchoState } from './state.ts';
import { formatUptime, HOSTNAME, VERSION } from './version.ts';

/**
 * Counting, the Host check, the response headers and the route on the span, in that order: one
 * hook (each hook fastify runs costs a request a call chain of its own). A request the Host check
 * refuses is counted and carries its id, and gets none of the later headers.
 */
export function registerRequestHooks(app: FastifyInstance, state: EchoState, config: EchoConfig): void {
  const extraHeaders = config.extraHeaders;
  const startMs = Date.now();
  app.addHook('onRequest', (request, reply, done) => {
    state.requestCount++;
    // One listener a request for the echo's completion (obs counts the requests in flight). `on`,
    // not `once`: a response emits 'close' once (node guards it), and `once` allocates a wrapper.
    reply.raw.on('close', () => recordOnClose(request, reply, state.metrics));
    reply.header('x-request-id', request.id);
    // HTTP/1.1 requires exactly one Host (RFC 9112, 3.2); node's own refusal of none would have no
    // body (transport/cleartext.ts), and node keeps the first of two without a word.
    const raw = request.raw;
    if (raw.httpVersionMajor === 1) {
      const hosts = hostFields(raw.rawHeaders);
      if (hosts !== 1 && (hosts > 1 || raw.httpVersionMinor === 1)) {
        const problem =
          hosts > 1
            ? `a request must have one Host header, not ${hosts}`
            : 'an HTTP/1.1 request needs a Host header';
        done(new EchoError('ECHO_ERR_BAD_REQUEST', [problem]));
        return;
      }
    }
    // The headers every response carries: its number, ECHO_EXTRA_HEADERS, and who answered.
    reply.header('x-echo-request-count', state.requestCount);
    for (const [name, value] of extraHeaders) reply.header(name, value);
    const info = request.headers['x-echo-server-info'];
    if (info === undefined ? config.serverInfo : String(info).toLowerCase() === 'true') {
      reply.header('x-echo-server', HOSTNAME);
      reply.header('x-echo-version', VERSION);
      reply.header('x-echo-uptime', formatUptime((Date.now() - startMs) / 1000));
    }
    // The fastify route on the HTTP server span, when an OpenTelemetry SDK traces the request (the
    // http instrumentation knows only the URL): `http.route` and the span name `METHOD route`.
    const span = trace.getActiveSpan();
    if (span !== undefined) {
      const route = request.routeOptions.url;
      if (route !== undefined) {
        span.setAttribute('http.route', route);
        span.updateName(`${request.method} ${route}`);
      }
    }
    done();
  });
}

/** The rate limit (`ECHO_RATE_LIMIT_RPS`): a 429 with Retry-After past it; probes and scrapes are never limited. */
export function registerRateLimit(app: FastifyInstance, state: EchoState, config: EchoConfig): void {
  if (state.rateLimit === undefined) return;
  app.addHook('onRequest', (request, reply, done) => {
    if (UNLIMITED_PATHS.has(request.routeOptions.url ?? '')) return done();
    const answer = (waitMs: number) => {
      if (waitMs === 0) return done();
      reply.header('retry-after', retryAfterSeconds(waitMs));
      done(new EchoError('ECHO_ERR_RATE_LIMITED', [config.rateLimitRps]));
    };
    // The process's own bucket answers at once; the fleet's (ECHO_STATE_URL) after a round trip.
    const waitMs = takeRateToken(state) ?? 0;
    if (typeof waitMs === 'number') answer(waitMs);
    else void waitMs.then(answer);
  });
}

/** How many Host field lines a request head has (node keeps only the first in `headers`). */
function hostFields(rawHeaders: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') n++;
  }
  return n;
}
