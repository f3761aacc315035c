/**
 * The baseline of the benchmark: a bare node:http echo doing the same work as echo-chaos for every
 * request the bench sends, and nothing else (no logging, no metrics, no history):
 * - `GET`: a plain-text summary of the request (request line, headers, client IP, timestamp);
 * - any other method: the body back, with the request's content type;
 * - `X-Echo-Delay: <n>ms` (or a bare number of ms): answer after a setTimeout;
 * - `X-Echo-Response-Size: N`: N random bytes, 64 KiB at a time (randomFillSync), gzipped with node's
 *   defaults when `X-Echo-Compress: gzip` asks for it, as echo-chaos streams them.
 *
 * `BARE_H2=true` serves HTTP/2 cleartext (prior knowledge, node:http2) instead of HTTP/1.1, with the
 * same handler on the compatibility API. Prints `listening <port>` once it listens.
 */
import { randomFillSync } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import {
  createServer as createH2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from 'node:http2';
import { pipeline, Readable } from 'node:stream';
import { createGzip } from 'node:zlib';

const CHUNK_BYTES = 64 * 1024;

/** N random bytes, made chunk by chunk as the client reads. */
function randomBody(size: number): Readable {
  let remaining = size;
  return new Readable({
    highWaterMark: CHUNK_BYTES,
    read() {
      if (remaining <= 0) {
        this.push(null);
        return;
      }
      const n = Math.min(CHUNK_BYTES, remaining);
      remaining -= n;
      this.push(randomFillSync(Buffer.allocUnsafe(n)));
    },
  });
}

/** `100ms`, `1s` or a bare number of ms; anything else is no delay. */
function delayMs(value: string | string[] | undefined): number {
  if (typeof value !== 'string') return 0;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s)?\s*$/.exec(value);
  if (!m) return 0;
  return Number(m[1]) * (m[2] === 's' ? 1000 : 1);
}

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

function answer(req: Req, response: Res): void {
  // The HTTP/2 compatibility response has the same writeHead and end; one type keeps the calls plain.
  const res = response as ServerResponse;
  const size = req.headers['x-echo-response-size'];
  if (typeof size === 'string') {
    const gzip = req.headers['x-echo-compress'] === 'gzip';
    const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
    if (gzip) {
      headers['content-encoding'] = 'gzip';
      headers['vary'] = 'Accept-Encoding';
    }
    res.writeHead(200, headers);
    const body = randomBody(Number(size));
    if (gzip) pipeline(body, createGzip(), res, () => {});
    else pipeline(body, res, () => {});
    return;
  }
  if (req.method === 'GET' || req.method === 'HEAD') {
    let out = `${req.method} ${req.url} HTTP/${req.httpVersion}\n`;
    for (let i = 0; i < req.rawHeaders.length; i += 2)
      out += `${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}\n`;
    out += `\nClient IP: ${req.socket.remoteAddress}\nTimestamp: ${new Date().toISOString()}\n`;
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(out);
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'text/plain' });
    res.end(Buffer.concat(chunks));
  });
}

function handle(req: Req, res: Res): void {
  const ms = delayMs(req.headers['x-echo-delay']);
  if (ms > 0) setTimeout(answer, ms, req, res);
  else answer(req, res);
}

const port = Number(process.env['PORT'] ?? 0);
const server = process.env['BARE_H2'] === 'true' ? createH2Server(handle) : createServer(handle);
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
