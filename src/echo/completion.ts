/**
 * The end of a request, recorded in one place: `echo_requests_total`, `echo_request_duration_seconds`
 * and the status and duration of its history entry. Most requests end through fastify's onResponse;
 * the few whose end fastify never sees (a hijacked echo, an `/sse` stream the client left) call
 * {@link recordCompletion} themselves. Either way a request is recorded once.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { completeEntry } from './history.ts';
import type { EchoMetrics } from './metrics.ts';
import { stateOf } from './request-state.ts';

/** Status recorded for a request whose client went away before the answer (nginx's convention). */
export const CLIENT_CLOSED_STATUS = 499;
/** Status recorded for a connection ended on purpose without a response (`reset`, `close`, `blackhole`). */
export const NO_RESPONSE_STATUS = 0;

/**
 * Records the end of a request: its meters, and its history entry's status and duration when it
 * has one. `status` is what the request ended with, the answered status unless told otherwise.
 * A second call for the same request does nothing.
 */
export function recordCompletion(
  request: FastifyRequest,
  reply: FastifyReply,
  metrics: EchoMetrics,
  status: number = reply.statusCode,
): void {
  const state = stateOf(request);
  if (state.recorded) return;
  state.recorded = true;
  const elapsedMs = reply.elapsedTime;
  const entry = state.historyEntry;
  if (entry !== undefined) completeEntry(entry, status, elapsedMs);
  const url = request.url;
  const q = url.indexOf('?');
  metrics.recordRequest(
    request.method,
    q === -1 ? url : url.slice(0, q),
    status,
    elapsedMs / 1000,
    state.fault,
  );
}

/** Records every request that fastify answers, when its response has gone (onResponse). */
export function registerCompletion(app: FastifyInstance, metrics: EchoMetrics): void {
  app.addHook('onResponse', (request, reply, done) => {
    // Over HTTP/2 fastify also runs onResponse when the client has gone before the response ended.
    recordCompletion(
      request,
      reply,
      metrics,
      reply.raw.writableEnded ? reply.statusCode : CLIENT_CLOSED_STATUS,
    );
    done();
  });
}

/**
 * The connection's `close` of a request (request-hooks.ts listens once per request, for this and its own
 * count). fastify runs no onResponse for a response whose client left while its body was still
 * going (a slow or large body): such a request is recorded here, as 499, once fastify had its turn.
 * A request already recorded (almost all) costs nothing more.
 */
export function recordOnClose(request: FastifyRequest, reply: FastifyReply, metrics: EchoMetrics): void {
  if (stateOf(request).recorded) return;
  setImmediate(() =>
    recordCompletion(
      request,
      reply,
      metrics,
      reply.raw.writableEnded ? reply.statusCode : CLIENT_CLOSED_STATUS,
    ),
  );
}
