/**
 * The connection side of obs's drain (docs/adr/0014-drain-delay.md, docs/adr/0041-one-drain.md).
 * Until the listener closes nothing changes: connections are served as usual (keep-alive included,
 * so clients do not reconnect while the listener is about to close). Then, in this order:
 * 1. the listener stops accepting, without touching any connection (`http.Server#close` would also
 *    close the "idle" keep-alive connections, among them those whose next request is still in the
 *    kernel's buffer: the client gets EOF instead of an answer);
 * 2. every HTTP/1.1 response not yet started says `Connection: close` and its socket closes after it;
 * 3. HTTP/2 sessions get a GOAWAY (`Http2Session#close`): open streams finish, no new ones start;
 * 4. an HTTP/1.1 connection with no request in progress is closed only once it has been quiet for
 *    `idleMs` and nothing more has arrived on it, checked after the event loop has read what is
 *    pending; a busy client is told by its next response instead.
 *
 * Only public APIs: a response is told to end its connection with the `Connection: close` header
 * (`setHeader`; node then closes the connection after it), and told otherwise with `keep-alive`.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2Session } from 'node:http2';
import net, { type Socket } from 'node:net';

/** The connections of the server an app listens on, as obs's drain closes them. */
export interface ConnectionDrain {
  /**
   * Stops accepting connections and starts closing the open ones as they turn idle.
   * @returns a promise that settles once the listener has closed (connections may still be open).
   */
  closeListener(): Promise<void>;
  /**
   * From now on every HTTP/1.1 response ends its connection (with pipelining, the response of the
   * latest request received on it); {@link closeListener} does this too.
   */
  endKeepAlive(): void;
  /** A promise that settles once the listener has closed and every connection with it. */
  allClosed(): Promise<void>;
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
  /**
   * The response of its latest request; with pipelining earlier ones are answered first, so this
   * one is the last to start, and `Connection: close` on it ends the connection after it.
   */
  latest: ServerResponse | undefined;
  /**
   * The response the drain told to end the connection (`Connection: close`, set by the drain), so
   * that a request pipelined behind it can take that over: the earlier response then keeps the
   * connection open for the later one, which would otherwise never be answered.
   */
  closing: ServerResponse | undefined;
}

/** How often connections are checked for idleness once the listener has closed. */
const SWEEP_MS = 50;
/** Turns of the event loop the listener's close waits for the kernel's accept queue to empty. */
const MAX_ACCEPT_WAITS = 20;

function listeningPort(server: net.Server): number | undefined {
  const address = server.address();
  return typeof address === 'object' && address !== null ? address.port : undefined;
}

/**
 * Connections waiting in the kernel's accept queue of the listening TCP socket on `port`: the
 * `rx_queue` of its LISTEN line in /proc/net/tcp{,6} (Linux; 0 elsewhere). The kernel lists
 * listening sockets first, so reading stops at the first line in another state.
 */
export function acceptQueueLength(port: number): number {
  const local = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let waiting = 0;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch {
      continue;
    }
    try {
      const chunk = Buffer.alloc(16_384);
      let rest = '';
      let header = true;
      reading: for (;;) {
        const n = readSync(fd, chunk, 0, chunk.length, null);
        if (n === 0) break;
        const lines = (rest + chunk.toString('latin1', 0, n)).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) {
          if (header) {
            header = false;
            continue;
          }
          // "sl local_address rem_address st tx_queue:rx_queue ...": LISTEN is st 0A.
          const fields = line.trim().split(/\s+/);
          if (fields[3] !== '0A') break reading;
          if (fields[1]?.endsWith(local))
            waiting += Number.parseInt(fields[4]?.split(':')[1] ?? '0', 16) || 0;
        }
      }
    } catch {
      // unreadable: unknown
    } finally {
      closeSync(fd);
    }
  }
  return waiting;
}

/** What {@link trackConnections} takes. */
export interface TrackConnectionsOptions {
  /** How long an HTTP/1.1 connection with no request in progress must stay quiet before it is closed. */
  readonly idleMs: number;
  /**
   * HTTP/2 sessions open now that the server does not announce with its own `session` event (an
   * h2c server behind an HTTP/1.1 one); they get the GOAWAY too.
   */
  readonly http2Sessions?: (() => Iterable<Http2Session>) | undefined;
}

/**
 * Tracks the connections of `server` (`http.Server`, `https.Server`, or an HTTP/2 server, with or
 * without `allowHTTP1`) from now on; call before `listen`.
 */
export function trackConnections(server: net.Server, options: TrackConnectionsOptions): ConnectionDrain {
  // Keyed by the socket HTTP/1.1 requests arrive on: the TCP socket, or with TLS the TLS socket.
  const connections = new Map<Socket, Connection>();
  // Every accepted TCP socket, for destroyAll (a TLS handshake that never ends included).
  const sockets = new Set<Socket>();
  // Responses of requests on a socket that is not in `connections` (none is expected: a safety net).
  const pending = new Set<ServerResponse>();
  // Sessions the server announces itself (an HTTP/2 server's `session` event).
  const ownSessions = new Set<Http2Session>();
  server.on('session', (session: Http2Session) => {
    ownSessions.add(session);
    session.once('close', () => ownSessions.delete(session));
  });
  const sessions = (): Http2Session[] => [...ownSessions, ...(options.http2Sessions?.() ?? [])];
  const goAway = () => {
    for (const session of sessions()) if (!session.closed && !session.destroyed) session.close();
  };
  let draining = false;
  let everyClosed = false;
  const tls = typeof (server as { addContext?: unknown }).addContext === 'function';

  const add = (socket: Socket) => {
    connections.set(socket, {
      busy: 0,
      requests: 0,
      idleSince: Date.now(),
      bytesAtIdle: socket.bytesRead,
      latest: undefined,
      closing: undefined,
    });
    socket.once('close', () => connections.delete(socket));
  };
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    if (!tls) add(socket);
  });
  if (tls) server.on('secureConnection', add);

  // One listener for every response (`this` is the response): no closure, and no set of every
  // response in flight (a set keyed by a new object each request costs its identity hash and a
  // table that grows and shrinks under load).
  const responseClosed = function (this: ServerResponse) {
    const connection = connections.get(this.req.socket);
    if (connection === undefined) return;
    if (connection.latest === this) connection.latest = undefined;
    if (connection.closing === this) connection.closing = undefined;
    connection.busy--;
    connection.idleSince = Date.now();
    connection.bytesAtIdle = this.req.socket.bytesRead;
  };
  // The drain ends a connection with its latest response: `Connection: close` on it (node closes
  // the connection after it), and back to keep-alive on one it had told so before, when a request
  // pipelined behind that one has arrived since.
  const closeWith = (connection: Connection, response: ServerResponse) => {
    const before = connection.closing;
    // Back to what node would have said (it kept the connection alive before the drain told it).
    if (before !== undefined && before !== response && !before.headersSent)
      before.setHeader('connection', 'keep-alive');
    connection.closing = undefined;
    if (response.headersSent || response.hasHeader('connection')) return;
    response.setHeader('connection', 'close');
    connection.closing = response;
  };
  const closeAfter = (response: ServerResponse) => {
    if (!response.headersSent && !response.hasHeader('connection')) response.setHeader('connection', 'close');
  };
  // Prepended, so it runs before fastify's handler can answer (and finish) the request.
  server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
    if (request.httpVersionMajor !== 1) return;
    const connection = connections.get(request.socket);
    if (connection === undefined) {
      if (draining) closeAfter(response);
      pending.add(response);
      response.on('close', () => pending.delete(response));
      return;
    }
    connection.busy++;
    connection.requests++;
    connection.latest = response;
    if (draining) closeWith(connection, response);
    // `on`: a response emits 'close' once, and `once` would allocate a wrapper per request.
    response.on('close', responseClosed);
  });

  const sweep = () => {
    // A connection accepted just before the port closed may have turned HTTP/2 since.
    goAway();
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

  const endKeepAlive = () => {
    if (draining) return;
    draining = true;
    for (const response of pending) closeAfter(response);
    for (const connection of connections.values()) {
      if (connection.latest !== undefined) closeWith(connection, connection.latest);
    }
  };

  return {
    endKeepAlive,
    get open() {
      return sockets.size;
    },
    closeListener() {
      return new Promise<void>((resolve) => {
        const close = () => {
          endKeepAlive();
          // net.Server's close, not http.Server's: that one closes "idle" connections at once.
          if (server.listening) net.Server.prototype.close.call(server, () => (everyClosed = true));
          goAway();
          // Checked after the poll phase (setImmediate), so bytes already sent by a client count.
          const timer = setInterval(() => setImmediate(sweep), SWEEP_MS);
          timer.unref();
          server.once('close', () => clearInterval(timer));
          resolve();
        };
        // Closing a listening socket resets the connections in the kernel's accept queue, whose
        // clients may have sent a request already: close right after the event loop has accepted
        // what was pending (setImmediate follows the poll phase), and while the kernel still
        // reports a queue (Linux), let the loop accept again, a few times at most.
        const port = listeningPort(server);
        let tries = 0;
        const attempt = () => {
          if (tries++ < MAX_ACCEPT_WAITS && port !== undefined && acceptQueueLength(port) > 0) {
            return void setImmediate(attempt);
          }
          close();
        };
        setImmediate(attempt);
      });
    },
    allClosed() {
      if (everyClosed || (!server.listening && sockets.size === 0)) return Promise.resolve();
      return new Promise<void>((resolve) => server.once('close', () => resolve()));
    },
    destroyAll() {
      for (const session of sessions()) session.destroy();
      for (const socket of sockets) socket.destroy();
      for (const socket of connections.keys()) socket.destroy();
    },
  };
}
