/**
 * The operator's own HTTP endpoints: `/metrics` (Prometheus text), `/healthz` (the process runs),
 * `/readyz` (every informer has listed once, and no drain is under way).
 */
import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';

export interface OperatorServerOptions {
  readonly registry: Registry;
  readonly ready: () => boolean;
}

export function createOperatorServer(options: OperatorServerOptions): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const reply = (status: number, body: string, type = 'text/plain; charset=utf-8') => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply(405, 'method not allowed\n');
    if (path === '/healthz') return reply(200, 'ok\n');
    if (path === '/readyz') return options.ready() ? reply(200, 'ok\n') : reply(503, 'not ready\n');
    if (path === '/metrics') {
      options.registry.metrics().then(
        (text) => reply(200, text, options.registry.contentType),
        (error: unknown) => reply(500, `${String(error)}\n`),
      );
      return;
    }
    reply(404, 'not found\n');
  });
}
