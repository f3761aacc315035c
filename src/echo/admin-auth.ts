import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ADMIN_TOKEN, type EchoConfig } from './config.ts';
import { errorBody } from './error-handler.ts';
import { EchoConfigError, EchoError } from './errors.ts';

/** The challenge of every 401 (RFC 6750). */
export const ADMIN_CHALLENGE = 'Bearer realm="echo-chaos"';

/**
 * The admin token in effect: `ECHO_ADMIN_TOKEN`, or the content of `ECHO_ADMIN_TOKEN_FILE` read
 * once here (surrounding whitespace, such as a Secret's trailing newline, removed); `undefined`
 * when neither is set. A file that cannot be read, is empty or holds what a header cannot carry
 * stops startup with an `EchoConfigError` (`ECHO_ERR_CONFIG`) that never quotes its content.
 */
export async function loadAdminToken(config: EchoConfig): Promise<string | undefined> {
  if (config.adminTokenFile === undefined) return config.adminToken;
  const file = config.adminTokenFile;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as { code?: string }).code ?? (err as Error).message;
    throw new EchoConfigError([
      `ECHO_ADMIN_TOKEN_FILE=${JSON.stringify(file)} is invalid: cannot read it (${code})`,
    ]);
  }
  const token = text.trim();
  if (token === '')
    throw new EchoConfigError([
      `ECHO_ADMIN_TOKEN_FILE=${JSON.stringify(file)} is invalid: the file is empty`,
    ]);
  if (!ADMIN_TOKEN.test(token)) {
    throw new EchoConfigError([
      `ECHO_ADMIN_TOKEN_FILE=${JSON.stringify(file)} is invalid: expected a token of visible ASCII characters without spaces`,
    ]);
  }
  return token;
}

/**
 * Whether a request to `route` (the fastify route it matched, not the raw path, so `/%73cenario`
 * is `/scenario` here as in the router) needs the admin token: writes to scenarios and controls,
 * replays, history reads, the console's API, and every write under the actuator's base path. Echo paths (`*`), probes,
 * `/metrics` and `/info` never do.
 */
export function needsAdminToken(method: string, route: string | undefined, actuatorBase: string): boolean {
  if (route === undefined || route === '*') return false;
  const write = method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS';
  if (route === '/history' || route.startsWith('/history/')) return true;
  // The console's API reads history too; its page and files hold no data (console/index.ts).
  if (route.startsWith('/console/api/')) return true;
  if (route === '/replay') return write;
  if (/^\/(?:scenario|control)(?:\/|$)/.test(route)) return write;
  if (route === actuatorBase || route.startsWith(`${actuatorBase}/`)) return write;
  return false;
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/** The token of `Authorization: Bearer <token>`, or undefined. */
function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer +(\S+) *$/i.exec(header);
  return match?.[1];
}

/**
 * Locks the admin routes behind `token` (see {@link needsAdminToken}). The comparison is over
 * SHA-256 digests of equal length with `timingSafeEqual`, so neither the content nor the length of
 * the token leaks through timing. A refusal is answered here, in the service's JSON error shape, not
 * thrown: the actuator routes live in obs's scope, whose error handler speaks obs's catalogue.
 */
export function registerAdminAuth(app: FastifyInstance, token: string): void {
  const expected = digest(token);
  const actuatorBase = app.obs.config.actuator['base-path'];
  app.addHook('onRequest', (request, reply, done) => {
    const route = request.routeOptions.url;
    if (!needsAdminToken(request.method, route, actuatorBase)) return done();
    const given = bearerToken(request);
    if (given !== undefined && timingSafeEqual(digest(given), expected)) return done();
    const error = new EchoError('ECHO_ERR_UNAUTHORIZED', [`${request.method} ${route}`]);
    reply
      .code(error.statusCode)
      .header('www-authenticate', ADMIN_CHALLENGE)
      .type('application/json; charset=utf-8')
      .send(errorBody(error.code, error.message, request.id));
  });
}
