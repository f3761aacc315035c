import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { activeTraceFields, fingerprint } from '@echo-chaos/obs';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ECHO_ERRORS, EchoError, type EchoErrorCode, type ErrorDetail, isEchoError } from './errors.ts';

/** Fastify's own error codes, mapped onto ours so every error body speaks one catalogue. */
const FASTIFY_CODES: Readonly<Record<string, EchoErrorCode>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'ECHO_ERR_BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_JSON_BODY: 'ECHO_ERR_INVALID_JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'ECHO_ERR_INVALID_JSON',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'ECHO_ERR_UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'ECHO_ERR_BAD_REQUEST',
  FST_ERR_CTP_INVALID_TYPE: 'ECHO_ERR_BAD_REQUEST',
  FST_ERR_BAD_URL: 'ECHO_ERR_BAD_REQUEST',
};

/** The JSON body of every error the service itself answers with. */
export interface ErrorBody {
  error: {
    code: string;
    message: string;
    request_id: string;
    details?: readonly ErrorDetail[];
    /** On internal errors: the stable fingerprint of the bug (obs) and the trace it happened in. */
    fingerprint?: string;
    trace_id?: string;
  };
}

/** What an internal error adds to its body, so a report can be matched to logs and traces. */
export interface InternalErrorRef {
  readonly fingerprint: string;
  readonly trace_id?: string;
}

export function errorBody(
  code: string,
  message: string,
  requestId: string,
  details?: readonly ErrorDetail[],
  internal?: InternalErrorRef,
): ErrorBody {
  return { error: { code, message, request_id: requestId, ...(details ? { details } : {}), ...internal } };
}

export function errorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  let code = error.code as string | undefined;
  let status = error.statusCode ?? 500;
  let message = error.message;
  let internal: InternalErrorRef | undefined;
  if (code !== undefined && Object.hasOwn(FASTIFY_CODES, code)) {
    code = FASTIFY_CODES[code];
    // In the catalogue's words where it has some; fastify's own message otherwise.
    // The control routes take small bodies only (`config.controlBody`), `POST /scenario` a limit
    // of its own (`config.scenarioBody`), see routes.ts.
    const routeConfig = request.routeOptions.config as
      | { controlBody?: unknown; scenarioBody?: unknown }
      | undefined;
    if (code === 'ECHO_ERR_BODY_TOO_LARGE' && routeConfig?.controlBody === true)
      code = 'ECHO_ERR_CONTROL_BODY_TOO_LARGE';
    if (code === 'ECHO_ERR_BODY_TOO_LARGE' && routeConfig?.scenarioBody === true)
      code = 'ECHO_ERR_SCENARIO_BODY_TOO_LARGE';
    if (
      code === 'ECHO_ERR_BODY_TOO_LARGE' ||
      code === 'ECHO_ERR_CONTROL_BODY_TOO_LARGE' ||
      code === 'ECHO_ERR_SCENARIO_BODY_TOO_LARGE'
    )
      message = new EchoError(code, [request.routeOptions.bodyLimit]).message;
    if (code === 'ECHO_ERR_BAD_REQUEST') message = new EchoError(code, [error.message]).message;
    if (code === 'ECHO_ERR_UNSUPPORTED_MEDIA_TYPE')
      message = new EchoError(code, [request.headers['content-type'] ?? '(none)']).message;
  } else if (!isEchoError(error)) {
    if (status >= 500 || status < 400) {
      // obs logs the error once, with this fingerprint, and counts it (obs_errors_unhandled_total);
      // with its exception handler off, the line is ours to write.
      if (!request.server.obs.config['exception-handler'].enabled)
        request.log.error({ err: error }, 'unhandled error');
      const trace = activeTraceFields().trace_id;
      internal = { fingerprint: fingerprint(error), ...(trace ? { trace_id: trace } : {}) };
      code = 'ECHO_ERR_INTERNAL';
      status = 500;
      message = ECHO_ERRORS.ECHO_ERR_INTERNAL.message;
    } else {
      code = 'ECHO_ERR_BAD_REQUEST';
    }
  }
  const details = isEchoError(error) ? error.details : undefined;
  // Injected-fault headers must not leak onto the service's own errors.
  reply.removeHeader('content-encoding');
  // Refused before its body has all arrived (a 415 on the content type or encoding): node would read
  // on to find the next request, and a client that stalls would get a second answer, its 408, on a
  // connection it may reuse. The connection ends with this answer instead, as it does on a 413.
  if (request.raw.httpVersionMajor === 1 && !request.raw.complete) reply.header('connection', 'close');
  try {
    reply
      .code(status)
      .type('application/json; charset=utf-8')
      .send(errorBody(code ?? 'ECHO_ERR_INTERNAL', message, request.id, details, internal));
  } catch (sendError) {
    // The error path never throws: if even this answer cannot be sent (a header the transport
    // refuses), the request's stream or connection is ended instead of the process.
    request.log.error({ err: sendError }, 'could not send the error response');
    reply.raw.destroy();
  }
}

export function notFoundHandler(request: FastifyRequest, reply: FastifyReply): void {
  reply
    .code(404)
    .type('application/json; charset=utf-8')
    .send(
      errorBody(
        'ECHO_ERR_NOT_FOUND',
        new EchoError('ECHO_ERR_NOT_FOUND', [request.method, request.url]).message,
        request.id,
      ),
    );
}

/**
 * Errors of the HTTP parser, before any request exists (fastify's `clientErrorHandler`): answered
 * in the documented JSON shape with an `X-Request-ID`, then the connection is closed, as Node does.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Duplex): void {
  // A reset connection, or one already gone: nothing to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  try {
    const code: EchoErrorCode =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? 'ECHO_ERR_HEADERS_TOO_LARGE'
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? 'ECHO_ERR_REQUEST_TIMEOUT'
          : 'ECHO_ERR_BAD_REQUEST';
    const reason = (error.code ?? 'malformed request')
      .replace(/^HPE_/, '')
      .toLowerCase()
      .replaceAll('_', ' ');
    writeRawError(socket, new EchoError(code, code === 'ECHO_ERR_BAD_REQUEST' ? [reason] : []));
  } finally {
    // Whatever happened above, the connection ends here and the error goes no further.
    socket.destroy();
  }
}

/**
 * `error` as a whole HTTP/1.1 response, for a socket no request object speaks for (a parser
 * refusal, CONNECT, a connection over the cap): the JSON error shape, a fresh `X-Request-ID`,
 * `Connection: close`, and `extraHeaders` (`Name: value\r\n` lines).
 */
export function rawErrorResponse(error: EchoError, extraHeaders = ''): string {
  const requestId = randomUUID();
  const body = JSON.stringify(errorBody(error.code, error.message, requestId));
  return (
    `HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode]}\r\n` +
    `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `${extraHeaders}X-Request-ID: ${requestId}\r\nConnection: close\r\n\r\n${body}`
  );
}

/** Writes {@link rawErrorResponse} when the socket still takes it; the caller ends the socket. */
export function writeRawError(socket: Duplex, error: EchoError): void {
  if (socket.writable) socket.write(rawErrorResponse(error));
}

/**
 * `error` on a connection node has handed over (an upgrade, CONNECT), then the connection ends: the
 * client has a second to read the answer and go before the socket is destroyed.
 */
export function refuseSocket(socket: Duplex, error: EchoError, extraHeaders = ''): void {
  try {
    if (socket.writable) socket.write(rawErrorResponse(error, extraHeaders));
  } finally {
    socket.end();
    setTimeout(() => socket.destroy(), 1000).unref();
  }
}
