import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { refuseSocket } from './error-handler.ts';
import { EchoError } from './errors.ts';
import { TOKEN } from './http-grammar.ts';
import { retryAfterSeconds, takeRateToken } from './rate-limit.ts';
import type { EchoState } from './state.ts';

/** The path of the WebSocket echo. */
export const WS_PATH = '/ws';

/** Close codes this endpoint sends (RFC 6455 7.4.1 and the IANA registry). */
export const WS_CLOSE = {
  /** The server is draining. */
  GOING_AWAY: 1001,
  /** A message above `MAX_BODY_SIZE` (sent by `ws` itself through `maxPayload`). */
  MESSAGE_TOO_BIG: 1009,
  /** `ECHO_MAX_STREAMS` connections are open already. */
  TRY_AGAIN_LATER: 1013,
} as const;

/** What a WebSocket handshake lacks (RFC 6455, section 4.2.1), or undefined when ws will take it. */
export function handshakeProblem(request: IncomingMessage): string | undefined {
  if (request.method !== 'GET') return `a WebSocket handshake is a GET, not ${request.method}`;
  if (String(request.headers.upgrade ?? '').toLowerCase() !== 'websocket')
    return 'a WebSocket handshake needs Upgrade: websocket';
  const key = request.headers['sec-websocket-key'];
  if (typeof key !== 'string' || !/^[+/0-9A-Za-z]{22}==$/.test(key))
    return 'Sec-WebSocket-Key must be 16 bytes in base64';
  const version = request.headers['sec-websocket-version'];
  if (version !== '13' && version !== '8') return 'Sec-WebSocket-Version must be 13';
  const protocols = request.headers['sec-websocket-protocol'];
  if (protocols !== undefined) {
    const names = protocols.split(',').map((name) => name.trim());
    if (names.some((name) => !TOKEN.test(name)) || new Set(names).size !== names.length)
      return 'Sec-WebSocket-Protocol must be a list of distinct tokens';
  }
  return undefined;
}

/**
 * Reading from a client stops while this many bytes of its echoes wait to be written, and resumes
 * once they are out: a client that sends without reading cannot grow the server's memory beyond
 * this and the one message being read.
 */
const HIGH_WATER_BYTES = 1024 * 1024;

/**
 * `/ws`: every message echoed back unchanged, with its frame type. The socket arrives through
 * `state.upgradeHandlers` (the server dispatches HTTP/1.1 upgrades by path); a plain request to
 * `/ws` is a 426.
 */
export function registerWebSocket(app: FastifyInstance, state: EchoState): void {
  const { config } = state;
  const log = app.log;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: config.maxBodyBytes,
    // Compression would let a small frame inflate to MAX_BODY_SIZE and costs memory per socket.
    perMessageDeflate: false,
    clientTracking: false,
  });
  /** The connections counted in `state.openStreams.ws`. */
  const clients = new Set<WebSocket>();
  /** Settled when the last counted connection has closed (waited for while closing). */
  let allClosed: PromiseWithResolvers<void> | undefined;
  let straggler: NodeJS.Timeout | undefined;

  const closeAll = () => {
    for (const ws of clients) ws.close(WS_CLOSE.GOING_AWAY, 'server draining');
    // A client that never answers the close frame must not hold the drain open.
    if (clients.size > 0 && straggler === undefined) {
      straggler = setTimeout(() => {
        for (const ws of clients) ws.terminate();
      }, config.drainTimeoutMs);
      straggler.unref();
    }
  };
  state.drain.signal.addEventListener('abort', closeAll, { once: true });
  // The HTTP server does not wait for upgraded sockets: closing waits here for their close
  // handshakes (bounded by ECHO_DRAIN_TIMEOUT), so every client sees its 1001.
  app.addHook('preClose', async () => {
    closeAll();
    if (clients.size === 0) return;
    allClosed = Promise.withResolvers<void>();
    await allClosed.promise;
  });
  app.addHook('onClose', async () => {
    state.drain.signal.removeEventListener('abort', closeAll);
    clearTimeout(straggler);
    wss.close();
  });

  const onConnection = (ws: WebSocket, request: IncomingMessage) => {
    ws.on('error', (err) => log.debug({ err }, 'websocket error'));
    if (state.drain.signal.aborted) return ws.close(WS_CLOSE.GOING_AWAY, 'server draining');
    if (state.openStreams.ws + state.openStreams.sse >= config.maxStreams) {
      return ws.close(WS_CLOSE.TRY_AGAIN_LATER, 'too many open streams');
    }
    state.openStreams.ws++;
    clients.add(ws);
    // Only what the log lines need: the request itself is not kept for the life of the socket.
    const line = `${request.socket.remoteAddress ?? '-'} GET ${request.url}`;
    const openedAt = performance.now();
    if (config.logRequests) log.info(`${line} - 101 websocket`);
    ws.once('close', (code) => {
      state.openStreams.ws--;
      clients.delete(ws);
      if (clients.size === 0) {
        clearTimeout(straggler);
        allClosed?.resolve();
      }
      if (config.logRequests) {
        const ms = Math.round(performance.now() - openedAt);
        log.info(`${line} - websocket closed ${code} after ${ms}ms`);
      }
    });
    ws.on('message', (data: RawData, isBinary: boolean) => {
      ws.send(data, { binary: isBinary }, () => {
        if (ws.isPaused && ws.bufferedAmount < HIGH_WATER_BYTES / 2) ws.resume();
      });
      if (ws.bufferedAmount >= HIGH_WATER_BYTES) ws.pause();
    });
  };

  state.upgradeHandlers.set(WS_PATH, (request, socket, head) => {
    // An upgrade is a request like any other against the global rate limit (it bypassed it).
    const waitMs = takeRateToken(state) ?? 0;
    if (typeof waitMs === 'number') upgrade(request, socket, head, waitMs);
    else void waitMs.then((ms) => upgrade(request, socket, head, ms));
  });

  function upgrade(request: IncomingMessage, socket: Duplex, head: Buffer, waitMs: number) {
    if (waitMs > 0) {
      const error = new EchoError('ECHO_ERR_RATE_LIMITED', [config.rateLimitRps]);
      return refuseSocket(socket, error, `Retry-After: ${retryAfterSeconds(waitMs)}\r\n`);
    }
    // ws refuses a bad handshake itself, but in plain text: the service answers in its JSON shape.
    const problem = handshakeProblem(request);
    if (problem !== undefined) {
      return refuseSocket(
        socket,
        new EchoError('ECHO_ERR_BAD_REQUEST', [problem]),
        'Sec-WebSocket-Version: 13\r\n',
      );
    }
    wss.handleUpgrade(request, socket, head, (ws) => onConnection(ws, request));
  }

  app.get(WS_PATH, async (request, reply) => {
    // `Upgrade` is a connection header: HTTP/2 forbids it (and has no WebSocket upgrade of this kind).
    if (request.raw.httpVersionMajor === 1) reply.header('upgrade', 'websocket');
    throw new EchoError('ECHO_ERR_UPGRADE_REQUIRED', [WS_PATH]);
  });
}
