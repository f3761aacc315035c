/**
 * The operator's own HTTP endpoints: `/metrics` (Prometheus text), `/healthz` (the process runs),
 * `/readyz` (every informer has listed once, no drain is under way, obs's readiness checks pass).
 */
import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';

export interface OperatorServerOptions {
  readonly registry: Registry;
  /** Ready to work: may be async (e.g. obs readiness checks); a rejection counts as not ready. */
  readonly ready: () => boolean | Promise<boolean>;
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
    if (path === '/readyz') {
      Promise.resolve()
        .then(options.ready)
        .then(
          (ok) => (ok ? reply(200, 'ok\n') : reply(503, 'not ready\n')),
          () => reply(503, 'not ready\n'),
        );
      return;
    }
    if (path === '/metrics') {
      options.registry.metrics().then(
        // prom-client spells an unknown value `Nan`; the exposition format's is `NaN`.
        (text) => reply(200, text.replace(/ Nan$/gm, ' NaN'), options.registry.contentType),
        (error: unknown) => reply(500, `${String(error)}\n`),
      );
      return;
    }
    reply(404, 'not found\n');
  });
}
