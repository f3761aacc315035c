import { randomUUID } from 'node:crypto';
import type { RequestListener } from 'node:http';
import http2, {
  type Http2SecureServer,
  type Http2Server,
  type Http2ServerRequest,
  type ServerHttp2Stream,
} from 'node:http2';
import type { Server as NetServer, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import type { EchoConfig } from './config.ts';
import { errorBody, rawErrorResponse } from './error-handler.ts';
import { EchoError } from './errors.ts';

// Connection limits (docs/adr/0016-connection-limits.md): the cap on open connections, the HTTP/2
// settings every session advertises, and the request timeout of an HTTP/2 stream. The HTTP/1.1
// timeouts are Node's own (`headersTimeout`, `requestTimeout`, `keepAliveTimeout`), set in server.ts.

export const MAX_CONNECTIONS_CHECKING_INTERVAL_MS = 1000;
export const MIN_CONNECTIONS_CHECKING_INTERVAL_MS = 50;
/**
 * How often node looks for HTTP/1.1 requests past their headers or request timeout (its
 * `connectionsCheckingInterval`, 30 s by default: a 3 s timeout then cut a stalled body after 3 to
 * 33 s). A quarter of the smaller timeout, so a slow client is cut within a quarter of its timeout
 * late, and within a second at most; not more often than `MIN_CONNECTIONS_CHECKING_INTERVAL_MS`
 * (each check walks the connections with a request in progress).
 */
export function connectionsCheckingIntervalMs(config: {
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
}): number {
  const smallest = Math.min(config.headersTimeoutMs, config.requestTimeoutMs);
  return Math.min(
    MAX_CONNECTIONS_CHECKING_INTERVAL_MS,
    Math.max(MIN_CONNECTIONS_CHECKING_INTERVAL_MS, Math.floor(smallest / 4)),
  );
}

/** One log line at most per this interval about refused connections, however many there were. */
export const REFUSAL_LOG_INTERVAL_MS = 10_000;
/** How long a refused connection may take to send its first bytes (answered then) and to go away. */
const REFUSAL_LINGER_MS = 1000;
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
 * `handler` with HTTP/2 requests whose header list is above `H2_MAX_HEADER_LIST_BYTES` refused:
 * the stream is reset with `ENHANCE_YOUR_CALM` and the app never sees the request, the session
 * goes on. nghttp2 does so itself, but only once the client has acknowledged the SETTINGS that
 * advertise the limit; the requests of a client's first flight, sent before, were taken up to
 * about 150 KB. HTTP/1.1 requests go straight through (node's parser bounds their head).
 */
export function limitHeaderList(handler: RequestListener): RequestListener {
  return (request, response) => {
    if (request.httpVersionMajor === 2 && headerListBytes(request.rawHeaders) > H2_MAX_HEADER_LIST_BYTES) {
      const stream = (request as unknown as Http2ServerRequest).stream;
      return void stream.close(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    }
    handler(request, response);
  };
}

/** The SETTINGS every HTTP/2 session (h2 and h2c) advertises. */
export function h2Settings(config: EchoConfig): http2.Settings {
  return {
    maxConcurrentStreams: config.h2MaxConcurrentStreams,
    maxHeaderListSize: H2_MAX_HEADER_LIST_BYTES,
  };
}

/** What `/info` shows of the limits in effect. */
export function limitsInfo(config: EchoConfig, limiter: ConnectionLimiter | undefined) {
  return {
    headers_timeout_ms: config.headersTimeoutMs,
    request_timeout_ms: config.requestTimeoutMs,
    keep_alive_timeout_ms: config.keepAliveTimeoutMs,
    max_connections: config.maxConnections,
    open_connections: limiter?.open ?? 0,
    h2_max_concurrent_streams: config.h2MaxConcurrentStreams,
    max_concurrent_compression: config.maxConcurrentCompression,
    history_max_entries: config.historySize,
    history_max_body_bytes: config.historyMaxBodyBytes,
    history_max_bytes: config.historyMaxBytes,
  };
}

/**
 * Counts a server's open connections and refuses those past `ECHO_MAX_CONNECTIONS`: instead of a
 * silent reset at the file-descriptor limit, a refused connection is answered (an HTTP/1.1 503 with
 * `Connection: close`, or an HTTP/2 SETTINGS and GOAWAY) and closed, counted in
 * `echo_connections_refused_total`, and logged once per interval.
 */
export class ConnectionLimiter {
  readonly max: number;
  #open = 0;
  /** Refused connections not yet gone; past `max` of them, one more is closed without an answer. */
  #lingering = 0;
  #refusedSinceLog = 0;
  #lastLogMs = Number.NEGATIVE_INFINITY;
  readonly #logger: Logger;
  readonly #now: () => number;
  /** Called for each refused connection (the metric, once the app's meters exist). */
  onRefused: () => void = () => {};

  constructor(max: number, logger: Logger, now: () => number = Date.now) {
    this.max = max;
    this.#logger = logger;
    this.#now = now;
  }

  get open(): number {
    return this.#open;
  }

  /** Takes a new connection: true when it may be served, false when it has been refused. */
  admit(socket: Socket): boolean {
    if (this.#open < this.max) {
      this.#open++;
      socket.once('close', () => this.#open--);
      return true;
    }
    this.#refused();
    return false;
  }

  /**
   * Answers a refused connection once its first bytes show the protocol (an HTTP/2 preface gets
   * SETTINGS and GOAWAY, anything else an HTTP/1.1 503), then closes it; waits `REFUSAL_LINGER_MS`
   * at most for those bytes and for the client to go, reading and dropping whatever it sends so the
   * close is a FIN, not a reset.
   */
  refuse(socket: Socket | TLSSocket): void {
    if (this.#lingering >= this.max) return void socket.destroy();
    this.#lingering++;
    socket.once('close', () => this.#lingering--);
    socket.on('error', () => {});
    socket.setTimeout(REFUSAL_LINGER_MS, () => socket.destroy());
    let answered = false;
    socket.on('data', (chunk: Buffer) => {
      if (answered) return;
      answered = true;
      socket.end(startsWithPreface(chunk) ? GOAWAY : refusal503(this.max));
    });
    socket.once('end', () => socket.destroy());
    socket.resume();
  }

  #refused(): void {
    this.onRefused();
    this.#refusedSinceLog++;
    const now = this.#now();
    if (now - this.#lastLogMs < REFUSAL_LOG_INTERVAL_MS) return;
    this.#logger.warn(
      { refused: this.#refusedSinceLog, open_connections: this.#open, max_connections: this.max },
      `refused ${this.#refusedSinceLog} connection(s): ECHO_MAX_CONNECTIONS=${this.max} connections are open`,
    );
    this.#refusedSinceLog = 0;
    this.#lastLogMs = now;
  }
}

/**
 * Puts the limiter in front of a server's connection listeners: the cleartext server's
 * `connection` (each refused connection is answered on the raw socket), or, for TLS, counts at
 * `connection` (a handshake in progress holds a descriptor too) and answers at `secureConnection`,
 * over TLS, after the handshake that the client needs to read the answer.
 */
export function limitConnections(server: NetServer, limiter: ConnectionLimiter, tls: boolean): void {
  const refused = new WeakSet<Socket>();
  const connection = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    if (!limiter.admit(socket)) {
      if (!tls) return limiter.refuse(socket);
      refused.add(socket);
    }
    for (const listener of connection) listener.call(server, socket);
  });
  if (!tls) return;
  const secure = server.listeners('secureConnection') as Array<(socket: TLSSocket) => void>;
  server.removeAllListeners('secureConnection');
  server.on('secureConnection', (socket: TLSSocket) => {
    const raw = (socket as unknown as { _handle?: { _parentWrap?: Socket } })._handle?._parentWrap;
    if (raw !== undefined && refused.has(raw)) return limiter.refuse(socket);
    for (const listener of secure) listener.call(server, socket);
  });
}

/** The client connection preface of HTTP/2 starts `PRI * HTTP/2.0`. */
function startsWithPreface(chunk: Buffer): boolean {
  return chunk.length >= 3 && chunk.toString('latin1', 0, 3) === 'PRI';
}

/** An empty SETTINGS frame (the server's preface) and a GOAWAY: no stream processed, ENHANCE_YOUR_CALM. */
const GOAWAY = Buffer.from([
  ...[0, 0, 0, 0x4, 0, 0, 0, 0, 0],
  ...[0, 0, 8, 0x7, 0, 0, 0, 0, 0],
  ...[0, 0, 0, 0],
  ...[0, 0, 0, 0xb],
]);

function refusal503(max: number): string {
  return rawErrorResponse(new EchoError('ECHO_ERR_TOO_MANY_CONNECTIONS', [max]), 'Retry-After: 1\r\n');
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
