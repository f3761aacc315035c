import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import http2, {
  type ClientHttp2Session,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http2';
import net from 'node:net';
import { Duplex } from 'node:stream';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { within } from './runtime.ts';

/** Every wait in the protocol tests is bounded by this. */
export const TIMEOUT_MS = 10_000;

/** The first line of a GET summary: `METHOD URI PROTOCOL`. */
export function summaryLine(text: string): string {
  return text.split('\n', 1)[0] ?? '';
}

/** Resolves as `promise` does, or rejects with `message` after `ms`. */
export function waitFor<T>(promise: Promise<T>, message: string, ms = TIMEOUT_MS): Promise<T> {
  return within(promise, message, ms);
}

export interface Curl {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

const curlProbe = spawnSync('curl', ['--version'], { encoding: 'utf8', timeout: TIMEOUT_MS });
const CURL_HAS_HTTP2 = curlProbe.status === 0 && /\bHTTP2\b/.test(curlProbe.stdout);

/**
 * Whether the test may use curl; skips it (locally) or fails it (in CI, which installs curl) when
 * there is no curl with HTTP/2 support.
 */
export function needCurl(t: TestContext): boolean {
  if (CURL_HAS_HTTP2) return true;
  const why = 'curl with HTTP/2 support not found on PATH (Debian package curl); .ci/run installs it';
  if (process.env['CI']) assert.fail(`${why}: required in CI`);
  t.skip(why);
  return false;
}

/** Runs curl asynchronously (the server under test shares this process), bounded in time. */
export function curl(args: readonly string[]): Promise<Curl> {
  return new Promise((resolve, reject) => {
    const child = spawn('curl', ['-sS', '--max-time', String(TIMEOUT_MS / 1000), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: TIMEOUT_MS + 2_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export interface OpenH2Options {
  /** For https: the CA to trust (the server's own certificate for a self-signed one). */
  readonly ca?: string;
  /** Offsets at which the client's first bytes (the preface) are cut into separate writes. */
  readonly splitPrefaceAt?: readonly number[];
  /** Pause between those writes. */
  readonly pauseMs?: number;
}

/** Opens an HTTP/2 session (h2c with prior knowledge for http:, ALPN h2 for https:), once connected. */
export async function openH2(url: string, options: OpenH2Options = {}): Promise<ClientHttp2Session> {
  const target = new URL(url);
  const split = options.splitPrefaceAt;
  const session = http2.connect(url, {
    ...(options.ca !== undefined ? { ca: options.ca, servername: 'localhost' } : {}),
    ...(split !== undefined
      ? {
          createConnection: () =>
            dribblingConnection(Number(target.port), target.hostname, split, options.pauseMs ?? 20),
        }
      : {}),
  });
  // Errors surface on the streams; a session error must not end the test process.
  session.on('error', () => {});
  await waitFor(
    new Promise<void>((resolve, reject) => {
      session.once('connect', () => resolve());
      session.once('close', () => reject(new Error('the session closed before connecting')));
    }),
    `no HTTP/2 session with ${url}`,
  );
  return session;
}

export interface H2Response {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  /** Statuses of informational (1xx) responses before the final one. */
  readonly informational: readonly number[];
}

/**
 * One request on an HTTP/2 session. Rejects (with `rstCode`) when the stream ends without a whole
 * response, and after `TIMEOUT_MS`.
 */
export function h2Request(
  session: ClientHttp2Session,
  headers: OutgoingHttpHeaders,
  body?: Buffer,
): Promise<H2Response> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined });
    const timer = setTimeout(() => {
      stream.close(http2.constants.NGHTTP2_CANCEL);
      reject(new Error(`no answer to ${String(headers[':path'])} within ${TIMEOUT_MS} ms`));
    }, TIMEOUT_MS);
    const informational: number[] = [];
    let status = 0;
    let responseHeaders: IncomingHttpHeaders = {};
    let ended = false;
    const chunks: Buffer[] = [];
    stream.on('headers', (h) => informational.push(Number(h[':status'])));
    stream.on('response', (h) => {
      status = Number(h[':status']);
      responseHeaders = h;
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      ended = true;
    });
    stream.on('error', () => {}); // reported below, with the stream's reset code
    stream.on('close', () => {
      clearTimeout(timer);
      const rstCode = stream.rstCode ?? http2.constants.NGHTTP2_NO_ERROR;
      if (ended && status !== 0 && rstCode === http2.constants.NGHTTP2_NO_ERROR) {
        resolve({ status, headers: responseHeaders, body: Buffer.concat(chunks), informational });
      } else {
        reject(
          Object.assign(new Error(`stream for ${String(headers[':path'])} closed with code ${rstCode}`), {
            rstCode,
          }),
        );
      }
    });
    if (body !== undefined) stream.end(body);
  });
}

/**
 * Sends raw bytes on a new connection, ends its side (unless `keepOpen`: node's server aborts a
 * request whose client half-closes before the answer starts, so an answer that waits needs it), and
 * collects what comes back until the server closes (bounded).
 */
export function rawExchange(
  port: number,
  text: string,
  options: { keepOpen?: boolean } = {},
): Promise<string> {
  const socket = net.connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<string>((resolve, reject) => {
    socket.once('error', reject);
    socket.once('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
  if (options.keepOpen === true) socket.write(text);
  else socket.end(text);
  return waitFor(done, 'the server did not close the connection').finally(() => socket.destroy());
}

/**
 * A connection that writes its first bytes in pieces, pausing between them, like a slow client
 * (http2 writes through it: it is not a net.Socket, so each write here is a real one).
 */
function dribblingConnection(
  port: number,
  host: string,
  splitAt: readonly number[],
  pauseMs: number,
): Duplex {
  const socket = net.connect(port, host);
  socket.setNoDelay(true);
  let written = 0;
  const duplex = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _encoding, callback) {
      const start = written;
      written += chunk.length;
      const cuts = splitAt.filter((at) => at > start && at < start + chunk.length).map((at) => at - start);
      if (cuts.length === 0) {
        socket.write(chunk, callback);
        return;
      }
      const pieces = [0, ...cuts, chunk.length]
        .slice(1)
        .map((end, i, ends) => chunk.subarray(i === 0 ? 0 : ends[i - 1], end));
      (async () => {
        for (const [i, piece] of pieces.entries()) {
          if (i > 0) await sleep(pauseMs);
          socket.write(piece);
        }
      })().then(() => callback(), callback);
    },
    final(callback) {
      socket.end();
      callback();
    },
    destroy(err, callback) {
      socket.destroy();
      callback(err);
    },
  });
  socket.on('data', (data: Buffer) => {
    if (!duplex.push(data)) socket.pause();
  });
  socket.on('end', () => duplex.push(null));
  socket.on('error', (err) => duplex.destroy(err));
  socket.on('close', () => duplex.destroy());
  return duplex;
}
