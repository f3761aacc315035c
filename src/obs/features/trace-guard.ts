/**
 * The trace-context guard (`obs.trace-guard`): per route, counts requests that arrive with a valid
 * W3C `traceparent` header (`obs_trace_received_total{route}`) and those without one
 * (`obs_trace_missing_total{route}`). With `fail-on-missing`, a request without trace context is
 * answered 400 `OBS_ERR_TRACE_CONTEXT_MISSING` in ENFORCING mode, and only logged (and counted) in
 * DRY_RUN. The mode is read on every request, so a switch through the enforcement endpoint applies
 * to the next one.
 *
 * The `route` label is the route pattern (`/orders/:id`), never the raw path, and passes the
 * cardinality firewall; a request that matches no route counts as `unmatched`. Never checked:
 * paths under `exclude-path-prefixes` (a plain prefix match: `/health` also covers `/healthz`),
 * the actuator routes (`obs.actuator.base-path`, whatever the prefixes say), CORS preflight requests
 * (a browser cannot add `traceparent` to them) and requests that `enabled-when` skips.
 */

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Counter } from 'prom-client';
import { CounterBatch } from '../core/batch.ts';
import { OBS_ERRORS, type ObsErrorCode } from '../core/errors.ts';
import { registryGuard } from '../core/meters.ts';
import type { ObsCore } from '../core/obs.ts';
import { routeOf } from '../core/route.ts';

/** Names of the meters of this feature. */
export const TRACE_GUARD_METRICS = {
  received: 'obs_trace_received_total',
  missing: 'obs_trace_missing_total',
} as const;
/** The error code of a rejected request. */
export const TRACE_CONTEXT_MISSING_CODE = 'OBS_ERR_TRACE_CONTEXT_MISSING' satisfies ObsErrorCode;
/** The HTTP status of a rejected request. */
export const TRACE_CONTEXT_MISSING_STATUS = OBS_ERRORS[TRACE_CONTEXT_MISSING_CODE].status;
/** The `route` label of a request that matches no route. */
export { UNMATCHED_ROUTE } from '../core/route.ts';

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);

/**
 * Whether a `traceparent` header value is valid W3C Trace Context: version, 32-hex trace id and
 * 16-hex parent id (neither all zeros) and flags, lower case; version `ff` is invalid, version
 * `00` has nothing after the flags, a later version may. A repeated header (an array, or values
 * joined with a comma) is invalid.
 */
export function isValidTraceparent(value: unknown): boolean {
  return traceIdOfTraceparent(value) !== undefined;
}

/** The trace id of a valid `traceparent` value (see {@link isValidTraceparent}), else undefined. */
export function traceIdOfTraceparent(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > 512) return undefined;
  const m = TRACEPARENT.exec(value.trim());
  if (m === null) return undefined;
  const [, version, traceId, spanId, , rest] = m;
  if (version === 'ff' || traceId === ZERO_TRACE_ID || spanId === ZERO_SPAN_ID) return undefined;
  if (version === '00' && rest !== undefined) return undefined;
  return traceId;
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

function isUnder(path: string, base: string): boolean {
  return path === base || (path.startsWith(base) && path.charCodeAt(base.length) === 47);
}

/** The JSON body of a rejection, in the format of the actuator's errors. */
export function traceContextMissingBody(request: FastifyRequest) {
  return {
    error: {
      code: TRACE_CONTEXT_MISSING_CODE,
      message: OBS_ERRORS[TRACE_CONTEXT_MISSING_CODE].message,
      request_id: String(request.id),
    },
  };
}

/**
 * Adds the guard's `onRequest` hook and its snapshot section to a fastify app (a no-op hook-wise
 * when `obs.trace-guard.enabled` is false).
 */
export function registerTraceGuard(app: FastifyInstance, obs: ObsCore): void {
  const guard = obs.config['trace-guard'];
  const base = obs.config.actuator['base-path'];
  const prefixes = guard['exclude-path-prefixes'];
  obs.addSnapshotSection('trace-guard', () => ({
    enabled: guard.enabled,
    header: 'traceparent',
    fail_on_missing: guard['fail-on-missing'],
    effect: !guard.enabled
      ? 'off'
      : !guard['fail-on-missing']
        ? 'counts'
        : obs.mode.get() === 'ENFORCING'
          ? 'counts; rejects requests without trace context with 400'
          : 'counts; logs requests without trace context (DRY_RUN, never rejects)',
    // The base path once, also when it is one of the prefixes (it is by default).
    never_checked: [...new Set([...prefixes, base])],
    metrics: [TRACE_GUARD_METRICS.received, TRACE_GUARD_METRICS.missing],
  }));
  if (!guard.enabled) return;

  const received = new Counter({
    name: TRACE_GUARD_METRICS.received,
    help: 'Requests that arrived with a valid W3C traceparent header, by route pattern',
    labelNames: ['route'],
    registers: [obs.registry],
  });
  const missing = new Counter({
    name: TRACE_GUARD_METRICS.missing,
    help: 'Requests that arrived without a valid W3C traceparent header, by route pattern',
    labelNames: ['route'],
    registers: [obs.registry],
  });

  const firewall = registryGuard(obs.registry);
  const receivedBatch = new CounterBatch(received, { firewall });
  const missingBatch = new CounterBatch(missing, { firewall });

  const checked = (request: FastifyRequest): boolean => {
    const path = pathOf(request.url);
    if (isUnder(path, base)) return false;
    for (const prefix of prefixes) if (path.startsWith(prefix)) return false;
    if (request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined) {
      return false;
    }
    return obs.isEnabledFor('trace-guard', request);
  };

  app.addHook('onRequest', (request, reply, done) => {
    let reject = false;
    try {
      if (checked(request)) {
        const route = routeOf(request);
        const valid = isValidTraceparent(request.headers.traceparent);
        // The registry's guard admits the route once per route (batch.ts).
        (valid ? receivedBatch : missingBatch).inc(route, { route });
        if (!valid && guard['fail-on-missing']) {
          const mode = obs.mode.get();
          reject = mode === 'ENFORCING';
          try {
            obs.logger.warn(
              {
                obs: 'trace-guard',
                request_id: request.id,
                method: request.method,
                route,
                mode,
                rejected: reject,
              },
              reject
                ? `rejected ${request.method} ${route}: no trace context`
                : `${request.method} ${route} has no trace context (DRY_RUN: not rejected)`,
            );
          } catch {
            // a broken logger changes nothing about the decision
          }
        }
      }
    } catch {
      // telemetry never fails a request: a guard that broke lets the request through
    }
    if (reject) {
      // Answering from an onRequest hook ends the request here: `done` is not called.
      reply
        .code(TRACE_CONTEXT_MISSING_STATUS)
        .type('application/json; charset=utf-8')
        .send(JSON.stringify(traceContextMissingBody(request)));
      return;
    }
    done();
  });
}
