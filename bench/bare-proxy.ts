/**
 * The baseline of the benchmark's proxy scenario (bench/run.ts `proxy`, issue #32): a minimal
 * reverse proxy, a node:http server that forwards every request to `UPSTREAM` (an origin,
 * `http://127.0.0.1:<port>`) with one undici `Agent` (keep-alive, at most 256 connections, as
 * echo-chaos's own, src/echo/proxy.ts) and streams the answer back. It does the forwarding work
 * echo-chaos does for the bench's requests, and nothing else (no logging, metrics, history, faults):
 * - request headers without the hop-by-hop ones (RFC 9110 7.6.1, and those named in `Connection`)
 *   and without `Host` (undici sends the upstream's); `X-Forwarded-For`, `-Proto` and `-Host` added;
 * - the request body streamed to the upstream (none for GET and HEAD), with the client's length;
 * - the answer's status and headers without the hop-by-hop ones, its body piped to the client as it
 *   comes (backpressure both ways, nothing of it held);
 * - a `502` when the upstream cannot be reached; a client that leaves aborts the upstream request.
 *
 * Prints `listening <port>` once it listens.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { pipeline } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';

const upstream = new URL(process.env['UPSTREAM'] ?? 'http://127.0.0.1:9000');
const origin = upstream.origin;
const agent = new Agent({ connections: 256 });

const HOP_BY_HOP = new Set([
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

/** The headers named in `Connection`, or undefined without one. */
function named(value: string | string[] | undefined): Set<string> | undefined {
  if (value === undefined) return undefined;
  return new Set(
    [value]
      .flat()
      .join(',')
      .split(',')
      .map((t) => t.trim().toLowerCase()),
  );
}

function withoutHopByHop(
  headers: IncomingHttpHeaders,
  skip: ReadonlySet<string>,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const listed = named(headers.connection);
  for (const name in headers) {
    if (HOP_BY_HOP.has(name) || skip.has(name) || listed?.has(name)) continue;
    const value = headers[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

const NOT_FORWARDED = new Set(['host']);
const NOTHING = new Set<string>();

const server = createServer((req, res) => {
  const headers = withoutHopByHop(req.headers, NOT_FORWARDED);
  const ip = req.socket.remoteAddress ?? '';
  const prior = req.headers['x-forwarded-for'];
  headers['x-forwarded-for'] = prior === undefined ? ip : `${[prior].flat().join(', ')}, ${ip}`;
  headers['x-forwarded-proto'] = 'http';
  if (req.headers.host !== undefined) headers['x-forwarded-host'] = req.headers.host;
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  const leaving = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) leaving.abort();
  });
  agent
    .request({
      origin,
      path: req.url ?? '/',
      method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
      headers,
      body: hasBody ? req : null,
      signal: leaving.signal,
    })
    .then(
      (answer) => {
        res.writeHead(answer.statusCode, withoutHopByHop(answer.headers as IncomingHttpHeaders, NOTHING));
        pipeline(answer.body, res, () => {});
      },
      () => {
        if (res.headersSent) res.destroy();
        else {
          res.writeHead(502, { 'content-type': 'text/plain' });
          res.end('upstream unreachable\n');
        }
      },
    );
});

const port = Number(process.env['PORT'] ?? 0);
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
});
const stop = () => process.exit(0);
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
