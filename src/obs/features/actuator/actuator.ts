/**
 * The actuator routes, under `obs.actuator.base-path` (default `/actuator`):
 *
 * - `GET  /actuator/obs`: the snapshot (every feature, the mode, version, hash, runtime);
 * - `GET  /actuator/obs/effective-config`: the resolved tree and where each key came from;
 * - `GET  /actuator/obs/runtime`: uptime, memory, event-loop lag, in-flight, offenders, drain;
 * - `GET  /actuator/obs/config-hash`: the hash and the flattened entries it was computed over;
 * - `GET|POST /actuator/obs/enforcement`: read and set the mode (seed 4.2);
 * - `GET|POST /actuator/obs/mode`: the deprecated alias, with `Deprecation` and `Link` headers;
 * - `GET  /actuator/obs/slo`: the SLO objectives as a `PrometheusRule` (YAML); 404 when there are none;
 * - `GET  /actuator/health`: the health components and their aggregate (`UP`, `DEGRADED`,
 *   `OUT_OF_SERVICE`, `DOWN`): 200 for UP and DEGRADED, 503 for DOWN and OUT_OF_SERVICE;
 * - `GET  /actuator/obsui`: the snapshot as an HTML page.
 *
 * They live in an encapsulated scope: their body parser and error format do not touch the host
 * application's routes, and the host's do not touch them.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { flattenEffective } from '../../core/config/config-effective.ts';
import { parseEnforcementMode } from '../../core/enforcement.ts';
import { isObsError, OBS_ERRORS, ObsError } from '../../core/errors.ts';
import { healthHttpStatus } from '../../core/health.ts';
import type { ObsCore } from '../../core/obs.ts';
import type { DiagnosticsApi } from '../diagnostics.ts';
import { sloRouteBody } from '../slo.ts';
import { OBSUI_CSP, renderObsUi } from './obsui.ts';

/** Largest body the enforcement routes read, in bytes. */
export const MAX_ACTUATOR_BODY_BYTES = 4096;

/** The `note` of a mode change. */
export const MODE_CHANGE_NOTE =
  'Change is in-memory and per-process: it applies to this process only, from its next request; a restart returns to obs.enforcement.mode.';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

function errorBody(request: FastifyRequest, error: ObsError) {
  return { error: { code: error.code, message: error.message, request_id: request.id } };
}

/**
 * What reaches the actuator's error handler, as the obs error it is answered with: every answer
 * speaks the catalogue, so fastify's own errors (a malformed `Content-Type`, a body over the limit,
 * a bad `Content-Length`) get the obs code of the same problem, and anything else is internal.
 */
function asObsError(error: FastifyError, request: FastifyRequest): ObsError {
  if (isObsError(error)) return error;
  const options = { cause: error };
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ObsError('OBS_ERR_BODY_TOO_LARGE', [MAX_ACTUATOR_BODY_BYTES], options);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ObsError('OBS_ERR_UNSUPPORTED_MEDIA_TYPE', [contentTypeText(request)], options);
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ObsError('OBS_ERR_INVALID_JSON', [error.message], options);
  }
  const status = error.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return new ObsError('OBS_ERR_BAD_REQUEST', [error.message], options);
  }
  return new ObsError('OBS_ERR_INTERNAL', [], options);
}

function contentTypeText(request: FastifyRequest): string {
  const type = request.headers['content-type'];
  return type === undefined ? '(none)' : JSON.stringify(type);
}

/** Registers the actuator routes of `obs` on `app` (in a scope of their own). */
export async function registerActuator(app: FastifyInstance, obs: ObsCore & DiagnosticsApi): Promise<void> {
  const base = obs.config.actuator['base-path'];
  const successor = `${base}/obs/enforcement`;
  let aliasWarned = false;

  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      '*',
      { parseAs: 'string', bodyLimit: MAX_ACTUATOR_BODY_BYTES },
      (_req, body, done) => done(null, body),
    );
    scope.setErrorHandler((error: FastifyError, request, reply) => {
      const answer = asObsError(error, request);
      if (answer.code === 'OBS_ERR_INTERNAL') {
        obs.logger.warn({ obs: 'actuator', err: error }, 'obs actuator route failed');
      }
      return reply.code(OBS_ERRORS[answer.code].status).send(errorBody(request, answer));
    });

    scope.get(`${base}/obs`, async () => obs.snapshot());
    scope.get(`${base}/obs/effective-config`, async () => ({
      obs: obs.resolved.effective,
      origins: obs.resolved.origins,
      profile: { name: obs.resolved.profile.name ?? null, applied: obs.resolved.profile.applied },
      config_file: obs.resolved.configFile ?? null,
    }));
    scope.get(`${base}/obs/runtime`, async () => obs.runtime());
    scope.get(`${base}/obs/slo`, async (_request, reply) =>
      reply.header('content-type', 'application/yaml; charset=utf-8').send(sloRouteBody(obs)),
    );
    scope.get(`${base}/obs/config-hash`, async () => ({
      hash: obs.resolved.hash,
      algorithm: 'sha256',
      entries: flattenEffective(obs.resolved.effective),
    }));
    scope.get(`${base}/health`, async (_request, reply) => {
      const report = await obs.health();
      return reply.code(healthHttpStatus(report.status)).send(report);
    });

    if (obs.config.enforcement.enabled) {
      const read = async () => ({ mode: obs.mode.get() });
      const write = async (request: FastifyRequest) => {
        const type = request.headers['content-type'];
        if (type === undefined || !JSON_TYPE.test(type)) {
          throw new ObsError('OBS_ERR_UNSUPPORTED_MEDIA_TYPE', [contentTypeText(request)]);
        }
        let body: unknown;
        try {
          body = JSON.parse(typeof request.body === 'string' ? request.body : '');
        } catch (error) {
          throw new ObsError('OBS_ERR_INVALID_JSON', [(error as Error).message]);
        }
        const value =
          typeof body === 'object' && body !== null && !Array.isArray(body)
            ? (body as { value?: unknown }).value
            : undefined;
        // The rule of OBS_ENFORCEMENT_MODE: case and `-`/`_` do not matter; the answer is canonical.
        const mode = parseEnforcementMode(value);
        if (mode === undefined) {
          throw new ObsError('OBS_ERR_INVALID_MODE', [
            value === undefined ? '(no "value" field)' : JSON.stringify(value),
          ]);
        }
        const { previous, current } = obs.mode.set(mode);
        return { previous, current, note: MODE_CHANGE_NOTE };
      };
      scope.get(successor, read);
      scope.post(successor, write);

      // The deprecated alias: same behaviour, and headers that say where to go instead.
      const deprecated = async (_request: FastifyRequest, reply: FastifyReply) => {
        reply.header('deprecation', 'true');
        reply.header('link', `<${successor}>; rel="successor-version"`);
        if (!aliasWarned) {
          aliasWarned = true;
          obs.logger.warn(
            { obs: 'actuator', path: `${base}/obs/mode` },
            `${base}/obs/mode is deprecated and will be removed in a future minor release; use ${successor}`,
          );
        }
      };
      scope.get(`${base}/obs/mode`, { onRequest: deprecated }, read);
      scope.post(`${base}/obs/mode`, { onRequest: deprecated }, write);
    }

    if (obs.config.actuator['ui-enabled']) {
      scope.get(`${base}/obsui`, async (_request, reply) =>
        reply
          .header('content-type', 'text/html; charset=utf-8')
          .header('content-security-policy', OBSUI_CSP)
          .header('x-content-type-options', 'nosniff')
          .header('referrer-policy', 'no-referrer')
          .header('cache-control', 'no-store')
          .send(renderObsUi(obs.snapshot(), base)),
      );
    }
  });
}
