import type { FastifyInstance, FastifyRequest } from 'fastify';
import { accessLog } from './access-log.ts';
import type { EchoConfig } from './config.ts';
import { type LoggedBody, stateOf } from './request-state.ts';

export type { LoggedBody } from './request-state.ts';

/** Streaming endpoints whose bodies are never logged. */
const UNLOGGED_BODY_PATHS = new Set(['/sse']);

/** The first `maxBytes` bytes as text, without a character split in two at the cut. */
function cut(bytes: Buffer, maxBytes: number): string {
  // In streaming mode the decoder holds back an incomplete sequence at the end instead of
  // writing U+FFFD for it.
  return new TextDecoder('utf-8').decode(bytes.subarray(0, maxBytes), { stream: true });
}

/** Cuts a body for logging; a stream is described, never read (it is the client's to consume). */
export function logBody(payload: unknown, maxBytes: number): LoggedBody {
  if (typeof payload === 'string') {
    const size = Buffer.byteLength(payload);
    if (size <= maxBytes) return { text: payload, size, truncated: false };
    return { text: cut(Buffer.from(payload), maxBytes), size, truncated: true };
  }
  if (Buffer.isBuffer(payload)) {
    return {
      text: cut(payload, maxBytes),
      size: payload.length,
      truncated: payload.length > maxBytes,
    };
  }
  if (payload === undefined || payload === null) return { text: '', size: 0, truncated: false };
  return { text: '[stream]', size: null, truncated: false };
}

/** `Content-Length` as a number (fastify keeps it as a number or a string), or null when absent. */
function contentLengthOf(header: unknown): number | null {
  if (header === undefined || header === null || header === '') return null;
  const n = Number(header);
  return Number.isFinite(n) ? n : null;
}

function pathOf(request: FastifyRequest): string {
  const q = request.url.indexOf('?');
  return q === -1 ? request.url : request.url.slice(0, q);
}

/**
 * Request and response logging as the `LOG_*` settings ask. Each hook is registered only when a
 * setting needs it, so the defaults pay for two lines and nothing else.
 */
export function registerLogging(app: FastifyInstance, config: EchoConfig): void {
  const max = config.maxLogBodyBytes;
  const wantsResponseBody = config.logResponseBody || (config.logTransaction && config.logBody);

  // The client address is read when the request arrives: once the socket is gone (a 413 closes it)
  // `request.ip` is undefined, and the completion line would name no one.
  const remoteOf = (request: FastifyRequest) => stateOf(request).remote ?? request.ip ?? '-';
  const logsRequestLine = config.logRequests || config.logHeaders;
  const access = accessLog(app.log);
  if (logsRequestLine || config.logTransaction) {
    app.addHook('onRequest', (request, _reply, done) => {
      const remote = request.ip ?? '-';
      stateOf(request).remote = remote;
      if (logsRequestLine) {
        const line = `${remote} ${request.method} ${request.url}`;
        if (config.logHeaders) request.log.info({ headers: request.headers }, line);
        else access.info(request, line);
      }
      done();
    });
  }

  if (config.logBody && !config.logTransaction) {
    app.addHook('preHandler', (request, _reply, done) => {
      if (request.body !== undefined && !UNLOGGED_BODY_PATHS.has(pathOf(request))) {
        request.log.info({ body: logBody(request.body, max) }, 'request body');
      }
      done();
    });
  }

  if (wantsResponseBody) {
    app.addHook('onSend', (request, _reply, payload, done) => {
      if (!UNLOGGED_BODY_PATHS.has(pathOf(request)))
        stateOf(request).loggedResponseBody = logBody(payload, max);
      done(null, payload);
    });
  }

  if (
    config.logRequests ||
    config.logResponse ||
    config.logResponseHeaders ||
    config.logResponseBody ||
    config.logTransaction
  ) {
    app.addHook('onResponse', (request, reply, done) => {
      const status = reply.statusCode;
      const durationMs = Math.round(reply.elapsedTime * 1000) / 1000;
      if (config.logRequests) {
        access.info(
          request,
          `${remoteOf(request)} ${request.method} ${request.url} - ${status} ${durationMs}ms`,
        );
      }
      if (config.logTransaction) {
        const sse = UNLOGGED_BODY_PATHS.has(pathOf(request));
        const loggedResponse = stateOf(request).loggedResponseBody;
        request.log.info(
          {
            request: {
              method: request.method,
              url: request.url,
              remote: remoteOf(request),
              headers: request.headers,
              ...(config.logBody && !sse && request.body !== undefined
                ? { body: logBody(request.body, max) }
                : {}),
            },
            response: {
              status,
              headers: reply.getHeaders(),
              ...(config.logResponseBody && !sse && loggedResponse !== undefined
                ? { body: loggedResponse }
                : {}),
            },
            duration_ms: durationMs,
          },
          'transaction',
        );
        return done();
      }
      const fields: Record<string, unknown> = {};
      if (config.logResponse)
        Object.assign(fields, {
          status,
          duration_ms: durationMs,
          content_length: contentLengthOf(reply.getHeader('content-length')),
        });
      if (config.logResponseHeaders) fields['headers'] = reply.getHeaders();
      const logged = stateOf(request).loggedResponseBody;
      if (config.logResponseBody && logged !== undefined) fields['body'] = logged;
      if (Object.keys(fields).length > 0) request.log.info(fields, 'response');
      done();
    });
  }
}
