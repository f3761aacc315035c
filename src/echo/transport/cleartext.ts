import http, { type IncomingMessage, type Server } from 'node:http';
import http2, { type Http2Session } from 'node:http2';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type ConnectionLimiter, limitConnections } from './connection-limits.ts';
import { upgradeToH2c } from './h2c-upgrade.ts';
import { limitHeaderList, limitStreams, trackSessions } from './http2-limits.ts';
import { takeTurns } from './pipelining.ts';
import { sniffPreface } from './preface.ts';
import type { ServerSettings } from './server-settings.ts';

// The cleartext port (docs/adr/0003-one-port-for-h1-h2c.md): an http.Server whose connections are
// sniffed for the HTTP/2 client preface; a connection that starts with it goes to an http2 server
// that never listens itself, any other to the HTTP/1.1 server. `Upgrade: h2c` is answered with 101
// and the connection is handed to the same http2 server, with the upgraded request as stream 1.

/** fastify's default, used when fastify does not pass one (it applies it only to servers it makes). */
const DEFAULT_HTTP2_SESSION_TIMEOUT_MS = 72_000;

/** What a connection handed over to a protocol looks like to the code that takes it. */
type ConnectionListener = (socket: Socket) => void;

/** The server fastify listens on, and what the transport reaches behind it. */
export interface CleartextServer {
  readonly server: Server;
  /** The h2c sessions open now (the drain's GOAWAY, the deadline's destroy). */
  readonly sessions: ReadonlySet<Http2Session>;
  /** Answers an `Upgrade: h2c` request (101) and hands its connection to the http2 server. */
  upgradeToH2c(request: IncomingMessage, socket: Duplex, head: Buffer): void;
}

/**
 * fastify's server factory for cleartext: an http.Server that fastify listens on and closes, with
 * an http2 server behind it that takes the connections speaking HTTP/2. `options` are the fastify
 * options it passes to a factory.
 */
export function createCleartextServer(
  handler: http.RequestListener,
  options: Record<string, unknown>,
  settings: ServerSettings,
  limiter: ConnectionLimiter,
): CleartextServer {
  const h1 = http.createServer(
    {
      connectionsCheckingInterval: settings.connectionsCheckingIntervalMs,
      // An HTTP/1.1 request without Host is refused by request-hooks.ts in the service's JSON
      // shape; node's own refusal is a bare 400 without a body or an X-Request-ID.
      requireHostHeader: false,
      ...((options['http'] ?? {}) as http.ServerOptions),
    },
    takeTurns(handler),
  );
  // What fastify sets on a server it makes itself.
  h1.keepAliveTimeout = numberOr(options['keepAliveTimeout'], h1.keepAliveTimeout);
  h1.requestTimeout = numberOr(options['requestTimeout'], h1.requestTimeout);
  h1.setTimeout(numberOr(options['connectionTimeout'], 0));
  const maxRequestsPerSocket = numberOr(options['maxRequestsPerSocket'], 0);
  if (maxRequestsPerSocket > 0) h1.maxRequestsPerSocket = maxRequestsPerSocket;

  const h2 = http2.createServer(
    { settings: settings.h2 },
    // fastify's handler serves HTTP/2's compatibility API too; its type names HTTP/1.1's only.
    limitHeaderList(handler) as (...args: unknown[]) => void,
  );
  limitStreams(h2, settings.requestTimeoutMs);
  h2.setTimeout(numberOr(options['connectionTimeout'], 0));
  const sessions = trackSessions(
    h2,
    numberOr(options['http2SessionTimeout'], DEFAULT_HTTP2_SESSION_TIMEOUT_MS),
  );
  // The connection was accepted by the HTTP/1.1 server, which keeps sockets half-open; HTTP/2 does
  // not: without this, a client that closes its side is never noticed (its streams wait on).
  const serveHttp2: ConnectionListener = (socket) => {
    socket.allowHalfOpen = false;
    h2.emit('connection', socket);
  };

  // The HTTP/1.1 server's own connection listener: it is called with the connections that are not
  // HTTP/2, instead of with every connection.
  const serveHttp1Listeners = h1.listeners('connection') as ConnectionListener[];
  h1.removeAllListeners('connection');
  const serveHttp1: ConnectionListener = (socket) => {
    for (const listener of serveHttp1Listeners) listener.call(h1, socket);
  };

  // Connections whose first bytes have not decided the protocol yet: idle, for shutdown's purposes.
  const undecided = new Set<Socket>();
  h1.on('connection', (socket: Socket) => {
    undecided.add(socket);
    sniffPreface(socket, h1.headersTimeout, (isHttp2) => {
      undecided.delete(socket);
      if (isHttp2 === undefined) return;
      (isHttp2 ? serveHttp2 : serveHttp1)(socket);
    });
  });

  const closeIdle = h1.closeIdleConnections.bind(h1);
  h1.closeIdleConnections = () => {
    closeIdle();
    for (const socket of undecided) socket.destroy();
  };
  const closeAll = h1.closeAllConnections.bind(h1);
  h1.closeAllConnections = () => {
    closeAll();
    for (const socket of undecided) socket.destroy();
    for (const session of sessions) session.destroy();
  };
  // fastify calls this on close, after closeIdleConnections: each session sends GOAWAY and ends
  // when its open streams have.
  (h1 as Server & { closeHttp2Sessions(): void }).closeHttp2Sessions = () => {
    for (const session of sessions) session.close();
  };

  limitConnections(h1, limiter, false);

  return {
    server: h1,
    sessions,
    upgradeToH2c: (request, socket, head) => {
      // Until the client's preface is in, the upgraded connection is idle too.
      undecided.add(socket as Socket);
      upgradeToH2c(request, socket as Socket, head, h1.headersTimeout, (ok) => {
        undecided.delete(socket as Socket);
        if (ok) serveHttp2(socket as Socket);
      });
    },
  };
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}
