import type { Server as NetServer, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { rawErrorResponse } from '../error-handler.ts';
import { EchoError } from '../errors.ts';

// The cap on open connections (docs/adr/0016-connection-limits.md): one past `ECHO_MAX_CONNECTIONS`
// is answered and closed, not reset.

/** One log line at most per this interval about refused connections, however many there were. */
export const REFUSAL_LOG_INTERVAL_MS = 10_000;
/** How long a refused connection may take to send its first bytes (answered then) and to go away. */
const REFUSAL_LINGER_MS = 1000;

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
    // node's internals: a TLS socket's handle wraps the handle of the TCP socket it was made on.
    const raw = (socket as TLSSocket & { _handle?: { _parentWrap?: Socket } })._handle?._parentWrap;
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
