/**
 * A second reference for the benchmark: bare fastify (no plugins, no hooks, no logger) doing the
 * same work as the bare node:http echo (`bench/bare-echo.ts`) for the GET and POST scenarios:
 * - `GET`: a plain-text summary of the request (request line, headers, client IP, timestamp);
 * - any other method: the body back, with the request's content type (fastify's default body
 *   parsers for JSON and text; anything else as a Buffer).
 * It shows what the framework echo-chaos is built on costs before echo-chaos does anything.
 */
import Fastify from 'fastify';

const app = Fastify({ logger: false, bodyLimit: 16 * 1024 * 1024 });
app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
app.removeContentTypeParser(['application/json', 'text/plain']);
app.addContentTypeParser(['application/json', 'text/plain'], { parseAs: 'buffer' }, (_r, body, done) =>
  done(null, body),
);

app.get('/*', async (request, reply) => {
  const req = request.raw;
  let out = `${req.method} ${req.url} HTTP/${req.httpVersion}\n`;
  for (let i = 0; i < req.rawHeaders.length; i += 2)
    out += `${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}\n`;
  out += `\nClient IP: ${req.socket.remoteAddress}\nTimestamp: ${new Date().toISOString()}\n`;
  reply.type('text/plain; charset=utf-8');
  return out;
});

app.post('/*', async (request, reply) => {
  reply.type(request.headers['content-type'] ?? 'text/plain');
  return request.body;
});

const port = Number(process.env['PORT'] ?? 0);
await app.listen({ port, host: '127.0.0.1' });
process.stdout.write(`listening ${port}\n`);
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
