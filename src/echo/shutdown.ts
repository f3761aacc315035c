import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2Session } from 'node:http2';
import net, { type Socket } from 'node:net';

// The connection side of the shutdown drain (docs/adr/0013-drain-delay.md). Until the drain proper
// begins nothing changes: connections are served as usual (keep-alive included, so clients do not
// reconnect while the listener is about to close). Then, in this order:
// 1. the listener stops accepting, without touching any connection (`http.Server#close` would also
//    close the "idle" keep-alive connections, among them those whose next request is still in the
//    kernel's buffer: the client gets EOF instead of an answer);
// 2. every HTTP/1.1 response not yet started says `Connection: close` and its socket closes after it;
// 3. HTTP/2 sessions get a GOAWAY (`Http2Session#close`): open streams finish, no new ones start;
// 4. an HTTP/1.1 connection with no request in progress is closed only once it has been quiet for
//    `idleMs` and nothing more has arrived on it, checked after the event loop has read what is
//    pending; a busy client is told by its next response instead.

/** What `main.ts` needs for the connections of the server fastify listens on. */
export interface ConnectionDrain {
  /**
   * Stops accepting connections and starts closing the open ones as they turn idle.
   * @returns a promise that settles once every connection has closed.
   */
  closeListener(): Promise<void>;
  /** Destroys every connection still open (after the drain timeout and its final grace). */
  destroyAll(): void;
  /** Connections open now. */
  readonly open: number;
}

/** What is known of one connection. */
interface Connection {
  /** HTTP/1.1 requests received whose responses have not closed yet. */
  busy: number;
  /** HTTP/1.1 requests received on it so far. */
  requests: number;
  /** When it last turned idle (accepted, or its last response closed), in `Date.now()` ms. */
  idleSince: number;
  /** `socket.bytesRead` at that moment: more since then means a request is on its way. */
  bytesAtIdle: number;
}

/** How often connections are checked for idleness once the listener has closed. */
const SWEEP_MS = 50;

/**
 * Tracks the connections of `server` (cleartext `http.Server` or TLS `Http2SecureServer`) from now
 * on; call before `listen`. `sessions` gives the open HTTP/2 sessions when the drain begins.
 */
export function trackConnections(
  server: net.Server,
  sessions: () => readonly Http2Session[],
  options: { readonly idleMs: number },
): ConnectionDrain {
  // Keyed by the socket HTTP/1.1 requests arrive on: the TCP socket, or with TLS the TLS socket.
  const connections = new Map<Socket, Connection>();
  // Every accepted TCP socket, for destroyAll (a TLS handshake that never ends included).
  const sockets = new Set<Socket>();
  const pending = new Set<ServerResponse>();
  let draining = false;
  const tls = typeof (server as { addContext?: unknown }).addContext === 'function';

  const add = (socket: Socket) => {
    connections.set(socket, { busy: 0, requests: 0, idleSince: Date.now(), bytesAtIdle: socket.bytesRead });
    socket.once('close', () => connections.delete(socket));
  };
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    if (!tls) add(socket);
  });
  if (tls) server.on('secureConnection', add);

  // Prepended, so it runs before fastify's handler can answer (and finish) the request.
  server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
    if (request.httpVersionMajor !== 1) return;
    const connection = connections.get(request.socket);
    if (draining) response.shouldKeepAlive = false;
    pending.add(response);
    if (connection !== undefined) {
      connection.busy++;
      connection.requests++;
    }
    response.once('close', () => {
      pending.delete(response);
      if (connection === undefined) return;
      connection.busy--;
      connection.idleSince = Date.now();
      connection.bytesAtIdle = request.socket.bytesRead;
    });
  });

  const sweep = () => {
    const now = Date.now();
    for (const [socket, connection] of connections) {
      if (connection.busy > 0 || now - connection.idleSince < options.idleMs) continue;
      if (socket.bytesRead !== connection.bytesAtIdle) continue;
      // Spoke HTTP/1.1 and went quiet, or never said anything. A connection that sent bytes but no
      // HTTP/1.1 request is HTTP/2 (its session's GOAWAY ends it), a WebSocket (closed with 1001
      // by the drain) or a request head in progress (answered with `Connection: close`).
      if (connection.requests > 0 || socket.bytesRead === 0) socket.destroy();
    }
  };

  return {
    get open() {
      return sockets.size;
    },
    closeListener() {
      draining = true;
      for (const response of pending) if (!response.headersSent) response.shouldKeepAlive = false;
      const closed = new Promise<void>((resolve) => {
        if (!server.listening && sockets.size === 0) return resolve();
        // net.Server's close, not http.Server's: that one closes "idle" connections at once.
        net.Server.prototype.close.call(server, () => resolve());
      });
      for (const session of sessions()) if (!session.closed && !session.destroyed) session.close();
      // Checked after the poll phase (setImmediate), so bytes already sent by a client are counted.
      const timer = setInterval(() => setImmediate(sweep), SWEEP_MS);
      timer.unref();
      void closed.then(() => clearInterval(timer));
      return closed;
    },
    destroyAll() {
      for (const session of sessions()) session.destroy();
      for (const socket of sockets) socket.destroy();
      for (const socket of connections.keys()) socket.destroy();
    },
  };
}
