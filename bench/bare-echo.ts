/**
 * The baseline of the throughput benchmark: a bare node:http echo doing the same work as
 * echo-chaos's default GET (a plain-text summary of the request) and POST (the body back).
 */
import { createServer } from 'node:http';

const port = Number(process.env['PORT'] ?? 0);
const server = createServer((req, res) => {
  if (req.method === 'GET') {
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
});
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
