import http, { type IncomingMessage, type Server } from 'node:http';
import http2, { type Http2SecureServer, type Http2Session } from 'node:http2';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyServerFactory } from 'fastify';
import type { Logger } from 'pino';
import type { EchoConfig } from './config.ts';
import { writeRawError } from './error-handler.ts';
import { EchoError } from './errors.ts';
import {
  ConnectionLimiter,
  connectionsCheckingIntervalMs,
  h2Settings,
  limitConnections,
  limitHeaderList,
  limitStreams,
} from './limits.ts';
import { takeTurns } from './pipelining.ts';
import { loadTls } from './tls.ts';

// One port for every protocol (docs/adr/0003-one-port-for-h1-h2c.md):
// - TLS: fastify's HTTP/2 secure server with allowHTTP1; ALPN picks h2 or http/1.1.
// - Cleartext: an http.Server whose connections are sniffed for the HTTP/2 client preface; a
//   connection that starts with it goes to an http2 server that never listens itself, any other to
//   the HTTP/1.1 server. `Upgrade: h2c` is answered with 101 and the connection is handed to the same
//   http2 server, with the upgraded request injected as stream 1.

/** The client connection preface of HTTP/2 (RFC 9113, section 3.4). */
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
/** Frame header size and the frame types and flags used here (RFC 9113, section 4 and 6). */
const FRAME_HEADER_BYTES = 9;
const FRAME_HEADERS = 0x1;
const FRAME_SETTINGS = 0x4;
const FRAME_CONTINUATION = 0x9;
const FLAG_END_STREAM = 0x1;
const FLAG_END_HEADERS = 0x4;
/** SETTINGS_MAX_FRAME_SIZE's initial value: the largest frame the server accepts before it says more. */
const INITIAL_MAX_FRAME_BYTES = 16_384;
/** A client's first SETTINGS frame is a few dozen bytes; more than this is not a client to wait for. */
const MAX_FIRST_SETTINGS_BYTES = 4_096;
/** fastify's default, used when fastify does not pass one (it applies it only to servers it makes). */
const DEFAULT_HTTP2_SESSION_TIMEOUT_MS = 72_000;

/** Options for `Fastify()` that choose the transport; `await`ed inside `buildApp`. */
export interface TransportOptions {
  readonly serverFactory?: FastifyServerFactory;
}

/** What a connection handed over to a protocol looks like to the code that takes it. */
type ConnectionListener = (socket: Socket) => void;
type UpgradeListener = (request: IncomingMessage, socket: Duplex, head: Buffer) => void;

/** The parts of a cleartext transport that `wireServer` and shutdown reach, by server. */
interface Cleartext {
  readonly upgradeToH2c: UpgradeListener;
}
const cleartextByServer = new WeakMap<object, Cleartext>();
/** The open HTTP/2 sessions behind each server fastify listens on (cleartext h2c or TLS h2). */
const http2SessionsByServer = new WeakMap<object, ReadonlySet<Http2Session>>();

/** The HTTP/2 sessions open on `server` now (for the shutdown drain's GOAWAY); none when unknown. */
export function http2SessionsOf(server: object): readonly Http2Session[] {
  return [...(http2SessionsByServer.get(server) ?? [])];
}

/**
 * The fastify options for the transport the config asks for. With `ENABLE_TLS` it loads (or
 * generates) the certificate and may throw the `EchoConfigError` (`ECHO_ERR_CONFIG`) that stops
 * startup; without, it returns the server factory of the one-port HTTP/1.1 + h2c server.
 */
export async function transportOptions(config: EchoConfig, logger: Logger): Promise<TransportOptions> {
  if (!config.enableTls) {
    const limits = cleartextLimits(config, logger);
    return {
      serverFactory: ((handler: http.RequestListener, options: Record<string, unknown>) =>
        createCleartextServer(handler, options, limits)) as unknown as FastifyServerFactory,
      requestTimeout: config.requestTimeoutMs,
      keepAliveTimeout: config.keepAliveTimeoutMs,
      http2SessionTimeout: config.keepAliveTimeoutMs,
      http: { headersTimeout: config.headersTimeoutMs, requestTimeout: config.requestTimeoutMs },
    } as unknown as TransportOptions;
  }
  const tls = await loadTls(config, logger);
  // fastify's types tie the instance type to these options; the app is typed for http.Server, whose
  // request and response surface the routes use is the same on HTTP/2's compatibility API.
  return {
    http2: true,
    http2SessionTimeout: config.keepAliveTimeoutMs,
    https: {
      allowHTTP1: true,
      key: tls.key,
      cert: tls.cert,
      ALPNProtocols: ['h2', 'http/1.1'],
      ...tlsLimitOptions(config),
    },
  } as unknown as TransportOptions;
}

/** The limits a cleartext server is made with (`createCleartextServer`). */
interface CleartextLimits {
  readonly limiter: ConnectionLimiter;
  readonly h2: http2.ServerOptions;
  readonly requestTimeoutMs: number;
  readonly connectionsCheckingIntervalMs: number;
}

function cleartextLimits(config: EchoConfig, logger: Logger): CleartextLimits {
  return {
    limiter: new ConnectionLimiter(config.maxConnections, logger),
    h2: { settings: h2Settings(config) },
    requestTimeoutMs: config.requestTimeoutMs,
    connectionsCheckingIntervalMs: connectionsCheckingIntervalMs(config),
  };
}

/**
 * The TLS server's limits, as `http2.createSecureServer` options: the HTTP/1.1 timeouts of its
 * `allowHTTP1` connections (Node applies them as on an http.Server), the TLS handshake within the
 * headers timeout, and the SETTINGS its HTTP/2 sessions advertise.
 */
function tlsLimitOptions(config: EchoConfig): Record<string, unknown> {
  return {
    headersTimeout: config.headersTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    connectionsCheckingInterval: connectionsCheckingIntervalMs(config),
    handshakeTimeout: config.headersTimeoutMs,
    settings: h2Settings(config),
  };
}

/** Each server's connection limiter, for `/info` and `/metrics`. */
const limiterByServer = new WeakMap<object, ConnectionLimiter>();

/** The connection limiter of the app's server (undefined before `wireServer`). */
export function connectionLimiter(server: object): ConnectionLimiter | undefined {
  return limiterByServer.get(server);
}

/**
 * The TLS server's connection cap, stream timeouts and keep-alive timeout, put on the server fastify
 * made; and the meters of either server's limiter, once the app has them.
 */
function wireLimits(app: FastifyInstance, config: EchoConfig | undefined): void {
  const server = app.server as unknown as Http2SecureServer & { keepAliveTimeout: number };
  if (!limiterByServer.has(server) && config !== undefined) {
    const limiter = new ConnectionLimiter(config.maxConnections, app.log as unknown as Logger);
    limitConnections(server, limiter, true);
    limitStreams(server, config.requestTimeoutMs);
    server.keepAliveTimeout = config.keepAliveTimeoutMs;
    // fastify's handler, made to take pipelined HTTP/1.1 requests in turns and to refuse an HTTP/2
    // header list over the limit, as the cleartext server's are.
    const handlers = server.listeners('request') as http.RequestListener[];
    server.removeAllListeners('request');
    for (const handler of handlers) server.on('request', takeTurns(limitHeaderList(handler)));
    limiterByServer.set(server, limiter);
  }
  const limiter = limiterByServer.get(server);
  if (limiter === undefined) return;
  app.addHook('onReady', async () => {
    const metrics = (app as Partial<FastifyInstance>).echo?.metrics;
    if (metrics === undefined) return;
    limiter.onRefused = () => metrics.connectionRefused();
    metrics.watchOpenConnections(() => limiter.open);
  });
}

/**
 * Connects the server to the app once fastify has made it: `Upgrade` requests are taken over only
 * for `h2c` (cleartext) and for the paths in `app.echo.upgradeHandlers`; every other upgrade request
 * is served as a normal request. Also gives the TLS server the `closeAllConnections` that the
 * drain's deadline calls.
 */
export function wireServer(app: FastifyInstance, config?: EchoConfig): void {
  const server = app.server as unknown as UpgradingServer;
  const cleartext = cleartextByServer.get(server);
  const handlerFor = (request: IncomingMessage) => {
    const handlers = (app as Partial<FastifyInstance>).echo?.upgradeHandlers;
    // Any other WebSocket upgrade goes to the `*` handler when there is one (the reverse proxy's).
    return (
      handlers?.get(pathOf(request.url ?? '/')) ??
      (String(request.headers.upgrade ?? '').toLowerCase() === 'websocket' ? handlers?.get('*') : undefined)
    );
  };

  server.shouldUpgradeCallback = (request) =>
    (cleartext !== undefined && isH2cUpgrade(request)) || handlerFor(request) !== undefined;
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (cleartext !== undefined && isH2cUpgrade(request)) {
      const problem = http2SettingsProblem(request.headers['http2-settings']);
      if (problem !== undefined) return refuse(socket, new EchoError('ECHO_ERR_BAD_REQUEST', [problem]));
      return cleartext.upgradeToH2c(request, socket, head);
    }
    const handler = handlerFor(request);
    // The handler left between the callback and now (it cannot, today): nobody speaks for the path.
    if (handler === undefined) return void socket.destroy();
    handler(request, socket, head);
  });

  // CONNECT (a proxy's method) is answered, not dropped: node ends the connection without a word
  // when nobody listens.
  server.on('connect', (request: IncomingMessage, socket: Duplex) => refuseConnect(request, socket));

  if (cleartext === undefined) addCloseAllConnections(server as unknown as Http2SecureServer);
  wireLimits(app, config);
}

/** A 400 in the service's JSON shape for CONNECT, then the connection ends. */
function refuseConnect(request: IncomingMessage, socket: Duplex): void {
  refuse(
    socket,
    new EchoError('ECHO_ERR_BAD_REQUEST', [
      `CONNECT ${request.url ?? ''} is not served: echo-chaos is not a proxy`,
    ]),
  );
}

/** `error` in the service's JSON shape on a connection node has handed over, then the connection ends. */
export function refuse(socket: Duplex, error: EchoError): void {
  try {
    writeRawError(socket, error);
  } finally {
    socket.end();
    setTimeout(() => socket.destroy(), 1000).unref();
  }
}

/**
 * What is wrong with an `HTTP2-Settings` header, or undefined: RFC 9113 (section 3.2.1) makes it
 * exactly one field holding the base64url of a SETTINGS payload (6 bytes a parameter).
 */
export function http2SettingsProblem(value: string | string[] | undefined): string | undefined {
  if (typeof value !== 'string') return 'HTTP2-Settings must be one header field';
  if (!/^[A-Za-z0-9_-]*={0,2}$/.test(value) || Buffer.from(value, 'base64url').length % 6 !== 0)
    return 'HTTP2-Settings must be the base64url of a SETTINGS payload (6 bytes a parameter)';
  return undefined;
}

interface UpgradingServer extends Server {
  shouldUpgradeCallback: (request: IncomingMessage) => boolean;
}

/** An upgrade to h2c that can be honoured: HTTP/1.1, `HTTP2-Settings` present, no request body. */
function isH2cUpgrade(request: IncomingMessage): boolean {
  const upgrade = request.headers.upgrade;
  if (upgrade === undefined || request.httpVersion !== '1.1') return false;
  if (!upgrade.split(',').some((token) => token.trim().toLowerCase() === 'h2c')) return false;
  if (request.headers['http2-settings'] === undefined) return false;
  // RFC 9113, section 3.1: a body would have to be sent before the switch; serve such a request over
  // HTTP/1.1 instead, which the upgrade mechanism allows (RFC 9110, section 7.8).
  const length = request.headers['content-length'];
  return (length === undefined || length === '0') && request.headers['transfer-encoding'] === undefined;
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/**
 * fastify's server factory for cleartext: an http.Server that fastify listens on and closes, with
 * an http2 server behind it that takes the connections speaking HTTP/2.
 */
function createCleartextServer(
  handler: http.RequestListener,
  options: Record<string, unknown>,
  limits: CleartextLimits,
): Server {
  const h1 = http.createServer(
    {
      connectionsCheckingInterval: limits.connectionsCheckingIntervalMs,
      // An HTTP/1.1 request without Host is refused by app.ts in the service's JSON shape; node's
      // own refusal is a bare 400 without a body or an X-Request-ID.
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
    limits.h2,
    limitHeaderList(handler) as unknown as (...args: unknown[]) => void,
  );
  limitStreams(h2, limits.requestTimeoutMs);
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

  http2SessionsByServer.set(h1, sessions);
  limitConnections(h1, limits.limiter, false);
  limiterByServer.set(h1, limits.limiter);

  cleartextByServer.set(h1, {
    upgradeToH2c: (request, socket, head) => {
      // Until the client's preface is in, the upgraded connection is idle too.
      undecided.add(socket as Socket);
      upgradeToH2c(request, socket as Socket, head, h1.headersTimeout, (ok) => {
        undecided.delete(socket as Socket);
        if (ok) serveHttp2(socket as Socket);
      });
    },
  });
  return h1;
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

/** Keeps the open sessions of an http2 server, closing each after `idleMs` without activity. */
function trackSessions(server: http2.Http2Server | Http2SecureServer, idleMs: number): Set<Http2Session> {
  const sessions = new Set<Http2Session>();
  server.on('session', (session: Http2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    if (idleMs > 0) session.setTimeout(idleMs, () => session.close());
  });
  return sessions;
}

/** The TLS server has sessions and HTTP/1.1 connections; the drain deadline ends them all. */
function addCloseAllConnections(server: Http2SecureServer): void {
  // fastify already closes idle sessions of the TLS server after http2SessionTimeout.
  const sessions = trackSessions(server, 0);
  http2SessionsByServer.set(server, sessions);
  (server as Http2SecureServer & { closeAllConnections(): void }).closeAllConnections = () => {
    // HTTP/1.1 connections of an allowHTTP1 server are tracked as an http.Server's are.
    http.Server.prototype.closeAllConnections.call(server as unknown as Server);
    for (const session of sessions) session.destroy();
  };
}

/**
 * Reads a new connection's first bytes until they show whether it starts with the HTTP/2 preface,
 * then gives them back to the socket and calls `decide` (with `undefined` when the socket ended or
 * failed first). A client that sends the preface in pieces is waited for, up to `timeoutMs`; an
 * HTTP/1.1 request is told apart at its first byte that differs from the preface, usually the first.
 */
function sniffPreface(
  socket: Socket,
  timeoutMs: number,
  decide: (isHttp2: boolean | undefined) => void,
): void {
  let seen: Buffer = Buffer.alloc(0);
  const finish = (isHttp2: boolean | undefined) => {
    socket.removeListener('data', onData);
    for (const event of GONE_EVENTS) socket.removeListener(event, onGone);
    socket.setTimeout(0);
    if (isHttp2 !== undefined) giveBack(socket, seen);
    decide(isHttp2);
  };
  const onData = (chunk: Buffer) => {
    seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, PREFACE.length);
    if (seen.compare(PREFACE, 0, n, 0, n) !== 0) finish(false);
    else if (n === PREFACE.length) finish(true);
  };
  // Ended, failed or silent for too long before saying which protocol it speaks: nothing to serve.
  const onGone = () => {
    finish(undefined);
    socket.destroy();
  };
  socket.on('data', onData);
  for (const event of GONE_EVENTS) socket.once(event, onGone);
  if (timeoutMs > 0) socket.setTimeout(timeoutMs);
}

/** Events after which a connection still being sniffed (or upgraded) has nothing left to serve. */
const GONE_EVENTS = ['end', 'close', 'error', 'timeout'] as const;

/**
 * Puts bytes read for sniffing back in front of the socket's readable buffer, paused, for the next
 * owner: the HTTP/1.1 server's `data` listener resumes it, an HTTP/2 session reads what is buffered.
 */
function giveBack(socket: Socket, bytes: Buffer): void {
  socket.pause();
  if (bytes.length > 0) socket.unshift(bytes);
  // Back to "no mode chosen yet", as a fresh connection is: adding a `data` listener then resumes.
  (socket as unknown as { readableFlowing: boolean | null }).readableFlowing = null;
}

/**
 * Answers `Upgrade: h2c` with 101 and hands the connection to the http2 server. Node's http2 has no
 * API for an upgraded connection, so the request that asked for the upgrade is injected as stream 1
 * (RFC 9113 section 3.2 makes it exactly that): once the client's preface and first SETTINGS frame
 * are in, a HEADERS frame carrying the request is put after them, and the http2 server answers it
 * as if the client had sent it.
 */
function upgradeToH2c(
  request: IncomingMessage,
  socket: Socket,
  head: Buffer,
  timeoutMs: number,
  done: (ok: boolean) => void,
): void {
  const headers = headersFramesForStream1(request);
  socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n');
  let seen = head;
  const finish = (ok: boolean) => {
    socket.removeListener('data', onData);
    for (const event of GONE_EVENTS) socket.removeListener(event, onFail);
    socket.setTimeout(0);
    if (!ok) {
      socket.destroy();
      return done(false);
    }
    const settingsEnd = PREFACE.length + FRAME_HEADER_BYTES + seen.readUIntBE(PREFACE.length, 3);
    giveBack(socket, Buffer.concat([seen.subarray(0, settingsEnd), headers, seen.subarray(settingsEnd)]));
    done(true);
  };
  const check = () => {
    const n = Math.min(seen.length, PREFACE.length);
    if (seen.compare(PREFACE, 0, n, 0, n) !== 0) return finish(false);
    if (seen.length < PREFACE.length + FRAME_HEADER_BYTES) return;
    const length = seen.readUIntBE(PREFACE.length, 3);
    const type = seen[PREFACE.length + 3];
    if (type !== FRAME_SETTINGS || length > MAX_FIRST_SETTINGS_BYTES) return finish(false);
    if (seen.length >= PREFACE.length + FRAME_HEADER_BYTES + length) finish(true);
  };
  const onData = (chunk: Buffer) => {
    seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
    check();
  };
  const onFail = () => finish(false);
  socket.on('data', onData);
  for (const event of GONE_EVENTS) socket.once(event, onFail);
  if (timeoutMs > 0) socket.setTimeout(timeoutMs);
  if (seen.length > 0) check();
}

/** Headers that belong to the HTTP/1.1 connection and are malformed in HTTP/2 (RFC 9113, 8.2.2). */
const CONNECTION_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
  'host',
]);

/**
 * The upgraded request as HEADERS (and CONTINUATION) frames on stream 1 with END_STREAM: its
 * pseudo-headers and headers, lower-cased, connection-specific ones left out, each HPACK-encoded as
 * a literal without indexing and without Huffman coding, so no compression state changes.
 */
function headersFramesForStream1(request: IncomingMessage): Buffer {
  const named = new Set(
    String(request.headers.connection ?? '')
      .split(',')
      .map((token) => token.trim().toLowerCase()),
  );
  const fields: Buffer[] = [
    literal(':method', request.method ?? 'GET'),
    literal(':scheme', 'http'),
    literal(':path', request.url ?? '/'),
  ];
  const authority = request.headers.host;
  if (authority !== undefined) fields.push(literal(':authority', authority));
  const raw = request.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const value = raw[i + 1]!;
    if (CONNECTION_HEADERS.has(name) || named.has(name)) continue;
    if (name === 'te' && value.trim().toLowerCase() !== 'trailers') continue;
    fields.push(literal(name, value));
  }
  const block = Buffer.concat(fields);

  const frames: Buffer[] = [];
  for (let offset = 0; offset < block.length || offset === 0; offset += INITIAL_MAX_FRAME_BYTES) {
    const payload = block.subarray(offset, offset + INITIAL_MAX_FRAME_BYTES);
    const first = offset === 0;
    const last = offset + INITIAL_MAX_FRAME_BYTES >= block.length;
    const header = Buffer.alloc(FRAME_HEADER_BYTES);
    header.writeUIntBE(payload.length, 0, 3);
    header[3] = first ? FRAME_HEADERS : FRAME_CONTINUATION;
    header[4] = (first ? FLAG_END_STREAM : 0) | (last ? FLAG_END_HEADERS : 0);
    header.writeUInt32BE(1, 5);
    frames.push(header, payload);
  }
  return Buffer.concat(frames);
}

/** HPACK "literal header field without indexing, new name" (RFC 7541, 6.2.2), no Huffman. */
function literal(name: string, value: string): Buffer {
  // Header bytes arrive as latin1 strings from the HTTP/1.1 parser: latin1 gives the same bytes back.
  const n = Buffer.from(name, 'latin1');
  const v = Buffer.from(value, 'latin1');
  return Buffer.concat([Buffer.of(0x00), hpackInteger(n.length), n, hpackInteger(v.length), v]);
}

/** An HPACK string length: a 7-bit prefix integer (RFC 7541, 5.1) with the Huffman bit clear. */
function hpackInteger(value: number): Buffer {
  if (value < 0x7f) return Buffer.of(value);
  const bytes = [0x7f];
  let rest = value - 0x7f;
  while (rest >= 0x80) {
    bytes.push((rest & 0x7f) | 0x80);
    rest >>>= 7;
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}
