/**
 * Broken bodies (`X-Echo-Error: empty|truncate|malformed|garbage`): responses that break the
 * protocol itself, the way a crashing or misbehaving server does. fastify cannot send them, so the
 * reply is hijacked and the bytes go straight to the connection. Over HTTP/2 there is no raw
 * connection to write to: each kind maps to the nearest stream or session error (README, "Slow and
 * broken bodies").
 */
import { STATUS_CODES } from 'node:http';
import { constants as h2, type ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RandomBody } from './bodies.ts';
import type { Controls } from './controls.ts';
import type { BrokenBodyKind } from './faults.ts';
import type { RandomSource } from './random.ts';
import { http2StreamOf } from './transport/index.ts';

/** What a broken response carries where it carries anything. */
export interface BrokenContent {
  /** The body the request would have been answered with: its bytes, or a size of random bytes. */
  readonly body: Buffer | number;
  readonly contentType: string;
  /** The status of the head `truncate` and `malformed` send: the scenario response's, else 200. */
  readonly status: number;
}

/** The answer a broken body breaks: a scenario response's, or an upstream's (status, body, headers). */
export interface ScriptedAnswer {
  /** `undefined`: 200. */
  readonly status: number | undefined;
  /** A scenario's text, or an upstream's bytes (reverse proxy). */
  readonly body: string | Buffer | undefined;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * What a broken body carries: the body the request would have had (the generated size, the
 * echoed body, else the summary, so there is always something to cut in half).
 */
export function brokenContent(
  request: FastifyRequest,
  controls: Controls,
  body: Buffer | undefined,
  summary: () => string,
  scripted?: ScriptedAnswer,
): BrokenContent {
  // A scenario response breaks the answer it scripts: its status (one with a body to break) and,
  // unless a size replaces it, its body and Content-Type.
  const status =
    scripted?.status !== undefined && scripted.status >= 200 && !NO_CONTENT_STATUSES.has(scripted.status)
      ? scripted.status
      : BROKEN_STATUS;
  if (controls.responseSize !== undefined) {
    const type = controls.contentType ?? request.headers['content-type'] ?? 'application/octet-stream';
    return { body: controls.responseSize, contentType: type, status };
  }
  if (scripted?.body !== undefined) {
    const type = controls.contentType ?? scripted.headers['content-type'] ?? 'text/plain; charset=utf-8';
    return { body: Buffer.from(scripted.body), contentType: type, status };
  }
  if (body !== undefined && body.length > 0) {
    const type = controls.contentType ?? request.headers['content-type'] ?? 'text/plain';
    return { body, contentType: type, status };
  }
  return {
    body: Buffer.from(summary()),
    contentType: controls.contentType ?? 'text/plain; charset=utf-8',
    status,
  };
}

/** Statuses without content: a broken body cannot be sent with them, so 200 is. */
const NO_CONTENT_STATUSES: ReadonlySet<number> = new Set([204, 205, 304]);

/** How many random bytes `garbage` sends. */
export const GARBAGE_BYTES = 1024;
/** The status whose head `truncate` and `malformed` send before they break, unless a scenario scripted one. */
const BROKEN_STATUS = 200;
/** Headers HTTP/2 refuses (RFC 9113 8.2.2); never among the reply's, but kept out to be sure. */
const CONNECTION_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade']);

/**
 * Sends a broken response of `kind` on the hijacked `reply`. Returns the status to record: 0 when
 * nothing HTTP-shaped was sent (`empty`, `garbage`), else the status of the head that went out.
 */
export function sendBrokenBody(
  request: FastifyRequest,
  reply: FastifyReply,
  kind: BrokenBodyKind,
  content: BrokenContent,
  random: RandomSource,
): number {
  reply.hijack();
  const stream = http2StreamOf(request.raw);
  if (stream !== undefined) return breakStream(stream, reply, kind, content);
  const socket = request.raw.socket;
  const length = bodyLength(content.body);
  const half = Math.floor(length / 2);
  const headers = { ...reply.getHeaders(), 'content-type': content.contentType };
  switch (kind) {
    case 'empty':
      socket.end();
      return 0;
    case 'garbage':
      socket.end(garbage(random));
      return 0;
    case 'truncate':
      // As a server that crashed mid-body: nothing announces the end (no `Connection: close`), the
      // connection just ends. A client's retry (undici's RetryAgent) treats it as the crash it is;
      // announced, it took the close as the server's choice and gave up (issue #31).
      socket.write(head(content.status, { ...headers, 'content-length': length }));
      writePart(socket, content.body, half, () => socket.end());
      return content.status;
    case 'malformed':
      socket.write(head(content.status, { ...headers, connection: 'close', 'transfer-encoding': 'chunked' }));
      // Half the body as a valid chunk (none when empty: a 0 chunk would end the body properly),
      // then a chunk-size line that is not hexadecimal.
      if (half > 0) socket.write(`${half.toString(16)}\r\n`);
      writePart(socket, content.body, half, () =>
        socket.end(`${half > 0 ? '\r\n' : ''}zz\r\nnot a chunk\r\n`),
      );
      return content.status;
  }
}

/**
 * HTTP/2: `empty` resets the stream (NO_ERROR) before any HEADERS; `truncate` sends the head with
 * the whole `content-length`, half the DATA, then RST_STREAM(INTERNAL_ERROR); `malformed` sends the
 * head and half the DATA, then RST_STREAM(PROTOCOL_ERROR); `garbage` ends the whole session with
 * GOAWAY(PROTOCOL_ERROR), as bytes that are not HTTP/2 frames would.
 */
function breakStream(
  stream: ServerHttp2Stream,
  reply: FastifyReply,
  kind: BrokenBodyKind,
  content: BrokenContent,
): number {
  switch (kind) {
    case 'empty':
      stream.close(h2.NGHTTP2_NO_ERROR);
      return 0;
    case 'garbage': {
      // (destroy(code) would also raise the error on this side, where nobody listens for it.)
      const session = stream.session;
      session?.goaway(h2.NGHTTP2_PROTOCOL_ERROR);
      session?.destroy();
      return 0;
    }
    case 'truncate':
    case 'malformed': {
      const length = bodyLength(content.body);
      const headers: Record<string, string | number | string[]> = {
        ':status': content.status,
        'content-type': content.contentType,
      };
      for (const [name, value] of Object.entries(reply.getHeaders())) {
        if (value !== undefined && !CONNECTION_HEADERS.has(name)) headers[name] = value;
      }
      if (kind === 'truncate') headers['content-length'] = length;
      const code = kind === 'truncate' ? h2.NGHTTP2_INTERNAL_ERROR : h2.NGHTTP2_PROTOCOL_ERROR;
      // The reset goes once every DATA frame is out: waiting for trailers holds back only END_STREAM.
      stream.respond(headers, { waitForTrailers: true });
      stream.once('wantTrailers', () => stream.close(code));
      writePart(stream, content.body, Math.floor(length / 2), () => stream.end());
      return content.status;
    }
  }
}

function bodyLength(body: Buffer | number): number {
  return typeof body === 'number' ? body : body.length;
}

/** Writes the first `n` bytes of `body` (random ones, streamed, for a size), then calls `then`. */
function writePart(out: Writable | Socket, body: Buffer | number, n: number, then: () => void): void {
  if (typeof body !== 'number') {
    if (n > 0) out.write(body.subarray(0, n));
    then();
    return;
  }
  const part = new RandomBody(n);
  part.once('end', then);
  part.pipe(out, { end: false });
}

/** An HTTP/1.1 response head. */
function head(
  status: number,
  headers: Record<string, string | number | readonly string[] | undefined>,
): string {
  let out = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const v of typeof value === 'object' ? value : [value]) out += `${name}: ${v}\r\n`;
  }
  return `${out}\r\n`;
}

/** Random bytes: nothing a client could take for an HTTP response. */
/** What `garbage` sends: random bytes that cannot start a status line. */
export function garbage(random: RandomSource): Buffer {
  const bytes = Buffer.allocUnsafe(GARBAGE_BYTES);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256);
  // An `H` first could start a status line; anything else cannot.
  if (bytes[0] === 0x48) bytes[0] = 0x00;
  return bytes;
}
