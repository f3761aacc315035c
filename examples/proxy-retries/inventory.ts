/**
 * The "real" inventory service of the proxy-retries example: a plain fastify app that knows the
 * stock of two items and counts the requests that reach it, so you can tell which of the orders
 * service's attempts got past echo-chaos.
 *
 *   PORT=9000 npx node examples/proxy-retries/inventory.ts
 *   curl localhost:9000/items/42    # {"id":"42","stock":7}
 *   curl localhost:9000/stats       # {"requests":1,"retryDepths":[0]}
 *
 * `GET /stats` is what reached `/items/:id`: how many requests, and the `Obs-Retry-Depth` each came
 * with (obs on the orders side stamps it: 0 on a first attempt, 2 on a third). `PORT` (default 9000,
 * 0 for any free port) and `HOST` (default 127.0.0.1) choose the address.
 */
import Fastify from 'fastify';

const STOCK: Record<string, number> = { '42': 7, '43': 0 };

/** What reached `/items/:id`, in order. */
const retryDepths: number[] = [];

const app = Fastify({ logger: { level: process.env.LOG_LEVEL ?? 'info' } });

app.get('/', async () => ({ service: 'inventory', items: Object.keys(STOCK) }));

app.get<{ Params: { id: string } }>('/items/:id', async (request, reply) => {
  retryDepths.push(Number(request.headers['obs-retry-depth'] ?? 0));
  const stock = STOCK[request.params.id];
  if (stock === undefined) return reply.code(404).send({ error: `no item ${request.params.id}` });
  return { id: request.params.id, stock };
});

app.get('/stats', async () => ({ requests: retryDepths.length, retryDepths }));

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

await app.listen({ port: Number(process.env.PORT ?? 9000), host: process.env.HOST ?? '127.0.0.1' });
