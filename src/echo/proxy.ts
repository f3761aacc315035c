/**
 * The reverse proxy (issue #32): with `ECHO_UPSTREAM` set, an echo request that no scenario answers
 * is forwarded to the upstream and the upstream's answer is returned, after the faults that act
 * before it (delay, an error status, reset, close, blackhole, chaos: the upstream is never called
 * for those) and with the faults that act on an answer (status, set headers, content type, slow
 * bodies, compression). docs/adr/0036-reverse-proxy.md says what is built and what is not yet.
 *
 * One undici `Agent` per app, keep-alive, bounded connections. Bodies are streamed both ways: the
 * answer's to the client as it comes, and a request body longer than {@link PEEK_BYTES} to the
 * upstream (its first bytes are read first, for scenarios and history: {@link StreamedBody}).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { type Duplex, Readable } from 'node:stream';
import { TLSSocket } from 'node:tls';
import type { FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import { rawErrorResponse } from './error-handler.ts';
import { EchoError } from './errors.ts';

/** What a tunnelled WebSocket handshake gets besides its forwarding (the faults decided before it). */
export interface TunnelOptions {
  /** Added to the answer, the upstream's own of the same name replaced (applied faults, set headers). */
  readonly headers: Readonly<Record<string, string>>;
  /** The upstream's bytes reach the client through it (throttle, chunk delay, body delay). */
  readonly shaper?: Duplex;
  /** `slow-close`: once the upstream ends, the client's side is held open this long before it closes. */
  readonly lingerMs?: number;
  /**
   * How the handshake ended: the upstream's `101` or its failure (answered 502 or 504), or
   * `client-gone` when the client left first; `headMs` is the upstream's time.
   */
  onHandshake(outcome: { status: number | 'client-gone'; headMs: number; failure?: EchoError }): void;
}

/** `Name: value` lines of a raw HTTP head. */
export function headerLines(headers: Readonly<Record<string, string>>): string {
  let out = '';
  for (const name in headers) out += `${name}: ${headers[name]}\r\n`;
  return out;
}

/** Where and how to forward: `ECHO_UPSTREAM`, `ECHO_UPSTREAM_TIMEOUT`, `ECHO_UPSTREAM_HOST_HEADER`. */
export interface UpstreamSettings {
  /** The upstream's origin and base path, e.g. `http://orders:8080` or `https://api.example/v2`. */
  readonly url: URL;
  /** How long the upstream may take to send its answer's head, and to send each piece of its body. */
  readonly timeoutMs: number;
  /** `upstream`: the request's `Host` is the upstream's; `preserve`: the client's, as sent. */
  readonly hostHeader: 'upstream' | 'preserve';
  /**
   * This proxy's name in `Via` (RFC 9110 7.6.3), random per app: a request that already names it
   * has come round a loop (an upstream that forwards back here) and is refused with a 508.
   */
  readonly pseudonym: string;
}

/**
 * How much of a request body the proxy reads before deciding where it goes: a body this long or
 * shorter is read whole (scenarios match on it, history keeps it, as without a proxy); a longer one
 * is a {@link StreamedBody}, its first bytes read and the rest streamed to the upstream as it comes,
 * so an upload of any size costs the proxy this much memory, not its size.
 */
export const PEEK_BYTES = 64 * 1024;

/**
 * A request body too long to read whole: its first {@link PEEK_BYTES} (what scenarios match on and
 * history keeps) and the rest of the request, paused. Answered by anything but the upstream, the
 * rest is left unread (node discards it once the answer is sent).
 */
export class StreamedBody {
  readonly head: Buffer;
  readonly #rest: Readable;

  constructor(head: Buffer, rest: Readable) {
    this.head = head;
    this.#rest = rest;
  }

  /** The whole body, the head then the rest as it comes: to be read once. */
  async *chunks(): AsyncGenerator<Buffer> {
    yield this.head;
    for await (const chunk of this.#rest) yield chunk as Buffer;
  }
}

/**
 * The echo route's body parser in proxy mode (fastify's content-type parser signature): reads up to
 * {@link PEEK_BYTES}; a body that ends by then is a Buffer, as without a proxy, a longer one a
 * {@link StreamedBody}. No body limit applies: a streamed body costs the proxy only its head.
 */
export function peekBody(payload: Readable, done: (error: Error | null, body?: unknown) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const finish = (error: Error | null, body?: unknown) => {
    payload.removeListener('data', onData);
    payload.removeListener('end', onEnd);
    payload.removeListener('error', onError);
    done(error, body);
  };
  const onData = (chunk: Buffer) => {
    chunks.push(chunk);
    size += chunk.length;
    if (size > PEEK_BYTES) {
      payload.pause();
      finish(null, new StreamedBody(Buffer.concat(chunks), payload));
    }
  };
  const onEnd = () => finish(null, Buffer.concat(chunks));
  const onError = (error: Error) => finish(error);
  payload.on('data', onData);
  payload.once('end', onEnd);
  payload.once('error', onError);
}

/** Connections kept to the upstream at most (per origin). */
export const MAX_UPSTREAM_CONNECTIONS = 256;

/**
 * Headers that belong to one connection (RFC 9110 7.6.1), never forwarded either way, with those
 * HTTP/2 forbids and `host` (set apart) and the framing headers undici sets itself.
 */
const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
]);

/** Also never forwarded with a request: `host` is set apart, and undici frames the body itself. */
const NOT_FORWARDED: ReadonlySet<string> = new Set(['host', 'content-length']);

/** What the upstream answered: its head, and its body as a stream (not yet read). */
export interface UpstreamAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[]>;
  readonly body: Readable;
  /** Milliseconds from sending the request to the answer's head. */
  readonly headMs: number;
}

/** The upstream's side of a forwarded request, for its history entry and the meters. */
export interface UpstreamOutcome {
  readonly url: string;
  status: number | null;
  duration_ms: number | null;
  error?: string;
}

/** The upstream meters (`echo_upstream_requests_total`, `echo_upstream_request_duration_seconds`). */
export interface UpstreamMeters {
  upstreamAnswered(status: number | 'error', seconds: number): void;
}

/** Names a connection-level header listed in `Connection` (those go no further either). */
function connectionTokens(value: string | string[] | undefined): Set<string> | undefined {
  if (value === undefined) return undefined;
  // The common case, `keep-alive` or `close`: hop-by-hop already, so nothing more is named.
  if (typeof value === 'string' && !value.includes(',')) {
    const token = value.trim().toLowerCase();
    return token === '' || HOP_BY_HOP.has(token) ? undefined : new Set([token]);
  }
  const tokens = new Set<string>();
  for (const part of [value].flat().join(',').split(',')) {
    const token = part.trim().toLowerCase();
    if (token !== '') tokens.add(token);
  }
  return tokens;
}

/**
 * The headers a request goes to the upstream with: the client's, without hop-by-hop headers, the
 * `X-Echo-*` controls (consumed here) and HTTP/2's pseudo-headers; with `X-Forwarded-For`,
 * `X-Forwarded-Proto` and `X-Forwarded-Host`, and `Host` as `ECHO_UPSTREAM_HOST_HEADER` says.
 */
export function forwardedHeaders(
  headers: IncomingHttpHeaders,
  clientIp: string,
  proto: 'http' | 'https',
  hostHeader: UpstreamSettings['hostHeader'],
  via: string,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const named = connectionTokens(headers.connection);
  for (const name in headers) {
    if (name.startsWith(':') || name.startsWith('x-echo-') || HOP_BY_HOP.has(name)) continue;
    if (NOT_FORWARDED.has(name) || named?.has(name)) continue;
    const value = headers[name];
    if (value !== undefined) out[name] = value;
  }
  const host = headers.host ?? (headers[':authority'] as string | undefined);
  const prior = headers['x-forwarded-for'];
  out['x-forwarded-for'] = prior === undefined ? clientIp : `${[prior].flat().join(', ')}, ${clientIp}`;
  out['x-forwarded-proto'] = proto;
  const priorVia = headers.via;
  out.via = priorVia === undefined ? via : `${[priorVia].flat().join(', ')}, ${via}`;
  if (host !== undefined) {
    out['x-forwarded-host'] = host;
    if (hostHeader === 'preserve') out['host'] = host;
  }
  return out;
}

/**
 * The upstream answer's headers a client gets: without hop-by-hop ones. `Content-Length` stays: the
 * body goes on as it came (the echo drops it only when it compresses).
 */
export function answerHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const named = connectionTokens(headers.connection);
  for (const name in headers) {
    if (HOP_BY_HOP.has(name) || named?.has(name)) continue;
    const value = headers[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** Whether `headers` say the request has already passed the proxy named `pseudonym` (a loop). */
export function hasLooped(headers: IncomingHttpHeaders, pseudonym: string): boolean {
  const via = headers.via;
  if (via === undefined) return false;
  for (const hop of [via].flat().join(',').split(',')) {
    // `1.1 name` or `1.1 name (comment)`: the name is the second token.
    if (hop.trim().split(/\s+/)[1] === pseudonym) return true;
  }
  return false;
}

/** The errors of a failed forward that mean "no answer in time", rather than "no answer at all". */
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** One app's way to its upstream. */
export class Upstream {
  readonly settings: UpstreamSettings;
  readonly #agent: Dispatcher;
  /** The base path requests are appended to (`/v2` of `https://api.example/v2`; empty for `/`). */
  readonly #basePath: string;
  /** `settings.url.origin`, made once: the URL's getter builds a new string on every read. */
  readonly #origin: string;

  constructor(settings: UpstreamSettings, agent: Dispatcher) {
    this.settings = settings;
    this.#agent = agent;
    this.#origin = settings.url.origin;
    const path = settings.url.pathname;
    this.#basePath = path === '/' ? '' : path.replace(/\/$/, '');
  }

  /** The origin and base path, as history and errors name the upstream. */
  get label(): string {
    return `${this.settings.url.origin}${this.#basePath}`;
  }

  /**
   * Sends `request` (with `body`, already read) to the upstream and resolves with its answer's head
   * and streaming body. `signal` is aborted when the client leaves.
   * @throws EchoError `ECHO_ERR_PROXY_TIMEOUT` (504) or `ECHO_ERR_PROXY_UNREACHABLE` (502).
   */
  async forward(
    request: FastifyRequest,
    body: Buffer | StreamedBody | undefined,
    signal: AbortSignal,
  ): Promise<UpstreamAnswer> {
    const raw = request.raw;
    const proto = raw.socket instanceof TLSSocket ? 'https' : 'http';
    if (hasLooped(raw.headers, this.settings.pseudonym)) {
      throw new EchoError('ECHO_ERR_PROXY_LOOP', [this.settings.pseudonym, this.label]);
    }
    const via = `${raw.httpVersion} ${this.settings.pseudonym}`;
    const headers = forwardedHeaders(raw.headers, request.ip, proto, this.settings.hostHeader, via);
    // The request's id goes along (fastify made one when the client sent none): one id, both logs.
    headers['x-request-id'] ??= request.id;
    // A streamed body keeps the length the client announced (undici checks it); else it is chunked.
    const length = raw.headers['content-length'];
    if (body instanceof StreamedBody && length !== undefined) headers['content-length'] = length;
    const started = performance.now();
    try {
      const answer = await this.#agent.request({
        origin: this.#origin,
        path: `${this.#basePath}${raw.url ?? '/'}`,
        method: (raw.method ?? 'GET') as Dispatcher.HttpMethod,
        headers,
        body:
          body instanceof StreamedBody
            ? Readable.from(body.chunks(), { objectMode: false })
            : body === undefined || body.length === 0
              ? null
              : body,
        signal,
      });
      return {
        status: answer.statusCode,
        headers: answerHeaders(answer.headers as IncomingHttpHeaders),
        body: answer.body,
        headMs: performance.now() - started,
      };
    } catch (error) {
      throw this.failure(error);
    }
  }

  /** The coded error a failed forward is answered with, naming the upstream and the cause. */
  failure(error: unknown): EchoError {
    const code = (error as { code?: string }).code ?? '';
    const cause = `${code === '' ? '' : `${code}: `}${(error as Error)?.message ?? String(error)}`;
    if (TIMEOUT_CODES.has(code)) {
      return new EchoError('ECHO_ERR_PROXY_TIMEOUT', [this.label, this.settings.timeoutMs, cause]);
    }
    return new EchoError('ECHO_ERR_PROXY_UNREACHABLE', [this.label, cause]);
  }

  /**
   * Tunnels a WebSocket upgrade to the upstream (undici's `upgrade`): the upstream's `101` and its
   * headers (with `options.headers` added) go to the client, then bytes pass both ways until either
   * side closes; the upstream's pass through `options.shaper` when there is one (a slow WebSocket).
   * A refused or failed handshake is answered with the upstream's failure in the JSON shape.
   * `options.onHandshake` learns how the handshake ended (the faults before it are the caller's:
   * `proxy-upgrade.ts`).
   */
  tunnel(
    request: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    clientIp: string,
    options: TunnelOptions,
  ): void {
    const proto = socket instanceof TLSSocket ? 'https' : 'http';
    if (hasLooped(request.headers, this.settings.pseudonym)) {
      const failure = new EchoError('ECHO_ERR_PROXY_LOOP', [this.settings.pseudonym, this.label]);
      options.onHandshake({ status: failure.statusCode, headMs: 0, failure });
      socket.write(rawErrorResponse(failure, headerLines(options.headers)));
      socket.end();
      setTimeout(() => socket.destroy(), 1000).unref();
      return;
    }
    const via = `${request.httpVersion} ${this.settings.pseudonym}`;
    const headers = forwardedHeaders(request.headers, clientIp, proto, this.settings.hostHeader, via);
    // undici's upgrade writes the handshake's own `Connection` and `Upgrade` (they are hop-by-hop,
    // and forwardedHeaders leaves them out); the `Sec-WebSocket-*` headers go as the client sent them.
    const protocol = String(request.headers.upgrade ?? 'websocket');
    const leaving = new AbortController();
    const onEarlyClose = () => leaving.abort();
    socket.once('close', onEarlyClose);
    const started = performance.now();
    const shaper = options.shaper;
    this.#agent
      // An Agent serves many origins: it needs `origin`, which undici's upgrade types leave out.
      .upgrade({
        origin: this.#origin,
        path: `${this.#basePath}${request.url ?? '/'}`,
        method: 'GET',
        headers,
        protocol,
        signal: leaving.signal,
      } as Dispatcher.UpgradeOptions)
      .then(
        ({ headers: answered, socket: upstream }) => {
          socket.removeListener('close', onEarlyClose);
          if (socket.destroyed) {
            shaper?.destroy();
            upstream.destroy();
            return options.onHandshake({ status: 'client-gone', headMs: performance.now() - started });
          }
          let out = 'HTTP/1.1 101 Switching Protocols\r\n';
          const added = options.headers;
          for (const [name, value] of Object.entries(answered)) {
            if (Object.hasOwn(added, name)) continue;
            for (const v of [value ?? []].flat()) out += `${name}: ${v}\r\n`;
          }
          for (const name in added) out += `${name}: ${added[name]}\r\n`;
          socket.write(`${out}\r\n`);
          options.onHandshake({ status: 101, headMs: performance.now() - started });
          if (head.length > 0) upstream.write(head);
          this.#tunnels.add(socket);
          let linger: NodeJS.Timeout | undefined;
          const end = () => {
            clearTimeout(linger);
            this.#tunnels.delete(socket);
            socket.destroy();
            upstream.destroy();
            shaper?.destroy();
          };
          socket.on('error', end).on('close', end);
          upstream.on('error', end);
          socket.pipe(upstream);
          const toClient: Readable = shaper === undefined ? upstream : upstream.pipe(shaper);
          const lingerMs = options.lingerMs;
          // The upstream's end reaches the client once its last bytes are out (through the shaper):
          // at once, or (slow-close) lingerMs later, the client's side held open (no FIN) meanwhile.
          toClient.pipe(socket, { end: lingerMs === undefined });
          if (lingerMs !== undefined) {
            toClient.once('end', () => {
              linger = setTimeout(() => socket.end(), lingerMs);
            });
          }
          // A client that keeps its side open after the FIN does not keep the tunnel.
          socket.once('finish', () => setTimeout(end, 1000).unref());
          upstream.on('close', () => {
            if (!upstream.readableEnded) end();
          });
        },
        (error: unknown) => {
          socket.removeListener('close', onEarlyClose);
          shaper?.destroy();
          const headMs = performance.now() - started;
          if (socket.destroyed) return options.onHandshake({ status: 'client-gone', headMs });
          const failure = this.failure(error);
          options.onHandshake({ status: failure.statusCode, headMs, failure });
          try {
            socket.write(rawErrorResponse(failure, headerLines(options.headers)));
          } finally {
            socket.end();
            setTimeout(() => socket.destroy(), 1000).unref();
          }
        },
      );
  }

  /** `ECHO_ERR_PROXY_TIMEOUT`: the upstream sent no answer's head within `ECHO_UPSTREAM_TIMEOUT`. */
  timedOut(): EchoError {
    const { timeoutMs } = this.settings;
    return new EchoError('ECHO_ERR_PROXY_TIMEOUT', [
      this.label,
      timeoutMs,
      `no answer after ${timeoutMs} ms`,
    ]);
  }

  /** Open WebSocket tunnels: ended when the app closes (a drain does not wait for them). */
  readonly #tunnels = new Set<Duplex>();

  /** Ends the open WebSocket tunnels (the agent is the registry's). */
  closeTunnels(): void {
    for (const socket of this.#tunnels) socket.destroy();
  }
}

/**
 * The upstreams of one app: `ECHO_UPSTREAM`'s and each scenario's `upstream`, one {@link Upstream}
 * per URL over one shared undici `Agent` (undici is loaded at the first). At most
 * {@link MAX_UPSTREAMS} are kept; past it the oldest is dropped (a set of 1,000 scenarios with as
 * many upstreams is the most a set can name).
 */
export class Upstreams {
  readonly #timeoutMs: number;
  readonly #hostHeader: UpstreamSettings['hostHeader'];
  #agent: Promise<Dispatcher> | undefined;
  readonly #byUrl = new Map<string, Upstream>();
  /** This app's name in `Via` (see {@link UpstreamSettings.pseudonym}). */
  readonly pseudonym = `echo-chaos-${randomBytes(4).toString('hex')}`;

  constructor(timeoutMs: number, hostHeader: UpstreamSettings['hostHeader']) {
    this.#timeoutMs = timeoutMs;
    this.#hostHeader = hostHeader;
  }

  /** The upstream of `url` (a valid upstream URL: `ECHO_UPSTREAM`, or a validated scenario's). */
  async get(url: string | URL): Promise<Upstream> {
    const key = String(url);
    const known = this.#byUrl.get(key);
    if (known !== undefined) return known;
    this.#agent ??= import('undici').then(
      ({ Agent }) =>
        new Agent({
          connections: MAX_UPSTREAM_CONNECTIONS,
          headersTimeout: this.#timeoutMs,
          bodyTimeout: this.#timeoutMs,
          connect: { timeout: this.#timeoutMs },
          allowH2: true,
        }),
    );
    const agent = await this.#agent;
    const upstream =
      this.#byUrl.get(key) ??
      new Upstream(
        {
          url: new URL(key),
          timeoutMs: this.#timeoutMs,
          hostHeader: this.#hostHeader,
          pseudonym: this.pseudonym,
        },
        agent,
      );
    if (!this.#byUrl.has(key)) {
      if (this.#byUrl.size >= MAX_UPSTREAMS) {
        const oldest = this.#byUrl.keys().next().value;
        if (oldest !== undefined) this.#byUrl.delete(oldest);
      }
      this.#byUrl.set(key, upstream);
    }
    return upstream;
  }

  async close(): Promise<void> {
    for (const upstream of this.#byUrl.values()) upstream.closeTunnels();
    if (this.#agent !== undefined) await (await this.#agent).close();
  }
}

/** Upstreams kept at most: as many as a set has scenarios, and `ECHO_UPSTREAM`. */
export const MAX_UPSTREAMS = 1001;
