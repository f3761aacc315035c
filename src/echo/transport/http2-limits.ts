import { randomUUID } from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import http2, {
  type Http2SecureServer,
  type Http2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type Http2Session,
  type ServerHttp2Stream,
} from 'node:http2';
import { errorBody } from '../error-handler.ts';
import { EchoError } from '../errors.ts';

// HTTP/2's limits (docs/adr/0016-connection-limits.md): the SETTINGS every session (h2 and h2c)
// advertises, the header list checked on every request, the request timeout of a stream, and the
// idle timeout of a session.

/** `SETTINGS_MAX_HEADER_LIST_SIZE` advertised: 64 KiB of header fields per request (RFC 9113, 6.5.2). */
export const H2_MAX_HEADER_LIST_BYTES = 65_536;

/**
 * What a header field counts towards `SETTINGS_MAX_HEADER_LIST_SIZE` beyond its name and value
 * (RFC 9113, section 6.5.2: the uncompressed size plus 32 bytes a field).
 */
const HEADER_FIELD_OVERHEAD_BYTES = 32;

/** The size of a request's header list as RFC 9113 counts it, pseudo-header fields included. */
export function headerListBytes(rawHeaders: readonly string[]): number {
  let bytes = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    bytes += rawHeaders[i]!.length + rawHeaders[i + 1]!.length + HEADER_FIELD_OVERHEAD_BYTES;
  }
  return bytes;
}

/**
 * The HTTP/2 stream of a request or response of node's HTTP/2 compatibility API, undefined for
 * HTTP/1.1. The app's `request.raw` and `reply.raw` are typed for HTTP/1.1 and are either.
 */
export function http2StreamOf(
  raw: IncomingMessage | ServerResponse | Http2ServerRequest | Http2ServerResponse,
): ServerHttp2Stream | undefined {
  return 'stream' in raw ? raw.stream : undefined;
}

/**
 * `handler` with HTTP/2 requests whose header list is above `H2_MAX_HEADER_LIST_BYTES` refused:
 * the stream is reset with `ENHANCE_YOUR_CALM` and the app never sees the request, the session
 * goes on. nghttp2 does so itself, but only once the client has acknowledged the SETTINGS that
 * advertise the limit; the requests of a client's first flight, sent before, were taken up to
 * about 150 KB. HTTP/1.1 requests go straight through (node's parser bounds their head).
 */
export function limitHeaderList(handler: RequestListener): RequestListener {
  return (request, response) => {
    if (request.httpVersionMajor === 2 && headerListBytes(request.rawHeaders) > H2_MAX_HEADER_LIST_BYTES) {
      return void http2StreamOf(request)?.close(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    }
    handler(request, response);
  };
}

/** The SETTINGS every HTTP/2 session (h2 and h2c) advertises. */
export function h2Settings(maxConcurrentStreams: number): http2.Settings {
  return { maxConcurrentStreams, maxHeaderListSize: H2_MAX_HEADER_LIST_BYTES };
}

/**
 * `ECHO_REQUEST_TIMEOUT` for HTTP/2: a stream whose client is still sending its request when the
 * timeout passes is answered 408 (`ECHO_ERR_REQUEST_TIMEOUT`) when nothing was sent yet, and closed.
 * A stream whose request is complete is never cut: its answer may be held by an injected delay.
 */
export function limitStreams(server: Http2Server | Http2SecureServer, requestTimeoutMs: number): void {
  server.on('stream', (stream: ServerHttp2Stream) => {
    if (stream.endAfterHeaders) return;
    const timer = setTimeout(() => {
      if (stream.destroyed || !receiving(stream)) return;
      if (!stream.headersSent) {
        const error = new EchoError('ECHO_ERR_REQUEST_TIMEOUT', []);
        const id = randomUUID();
        stream.respond({
          ':status': error.statusCode,
          'content-type': 'application/json; charset=utf-8',
          'x-request-id': id,
        });
        stream.end(JSON.stringify(errorBody('ECHO_ERR_REQUEST_TIMEOUT', error.message, id)));
      }
      // Whatever the handler still waits for never comes: end the stream for both sides.
      stream.close(http2.constants.NGHTTP2_NO_ERROR);
    }, requestTimeoutMs);
    timer.unref();
    stream.once('close', () => clearTimeout(timer));
  });
}

/** Whether the client may still send on this stream (it has not ended its side). */
function receiving(stream: ServerHttp2Stream): boolean {
  const state = stream.state?.state;
  return (
    state === http2.constants.NGHTTP2_STREAM_STATE_OPEN ||
    state === http2.constants.NGHTTP2_STREAM_STATE_HALF_CLOSED_LOCAL
  );
}

/** Keeps the open sessions of an http2 server, closing each after `idleMs` without activity. */
export function trackSessions(server: Http2Server | Http2SecureServer, idleMs: number): Set<Http2Session> {
  const sessions = new Set<Http2Session>();
  server.on('session', (session: Http2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    if (idleMs > 0) session.setTimeout(idleMs, () => session.close());
  });
  return sessions;
}
