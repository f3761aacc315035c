/**
 * The upstream of the benchmark's proxy scenario (bench/run.ts `proxy`, issue #32): a bare node:http
 * server that the minimal proxy (bench/bare-proxy.ts) and echo-chaos (`ECHO_UPSTREAM`) forward to.
 * - `GET /bytes/<n>`: n bytes (`Content-Length: n`), made 64 KiB at a time as the client reads
 *   (one fixed 64 KiB chunk written again and again: nothing of the size is held), for the 1 GiB
 *   streamed transfer;
 * - anything else: `200` with a small fixed text body (after reading any request body).
 *
 * Prints `listening <port>` once it listens.
 */
import { createServer } from 'node:http';
import { pipeline, Readable } from 'node:stream';

const CHUNK = Buffer.alloc(64 * 1024, 'x');
const BODY = Buffer.from(`${'upstream says hello '.repeat(10).trimEnd()}\n`);

/** n bytes, 64 KiB at a time, made when the reader asks for more. */
function bytes(size: number): Readable {
  let remaining = size;
  return new Readable({
    highWaterMark: CHUNK.length,
    read() {
      if (remaining <= 0) {
        this.push(null);
        return;
      }
      const n = Math.min(CHUNK.length, remaining);
      remaining -= n;
      this.push(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n));
    },
  });
}

const server = createServer((req, res) => {
  const m = /^\/bytes\/(\d+)$/.exec(req.url ?? '');
  if (req.method === 'GET' && m) {
    const size = Number(m[1]);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(size) });
    pipeline(bytes(size), res, () => {});
    return;
  }
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': BODY.length });
    res.end(BODY);
  });
});

const port = Number(process.env['PORT'] ?? 0);
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
