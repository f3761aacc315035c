/**
 * The orders service of the proxy-retries example: a fastify app with obs that, on
 * `GET /orders/:id`, asks the inventory service for the item (`GET <INVENTORY_URL>/items/:id`, with
 * undici) and retries a failed call, a 5xx or a broken connection, with `app.obs.retry`: up to
 * `ATTEMPTS` attempts in all (default 4), waiting `BACKOFF_MS` (default 50 ms) before the first
 * retry and twice as long before each next one. Its answer says how it went:
 *
 *   {"order":"42","item":{"id":"42","stock":7},"attempts":3,"tries":[503,"ECONNRESET",200]}
 *
 * `tries` is each attempt's outcome: the inventory's status, or undici's error code when no answer
 * came (`ECONNRESET`: the connection was reset; `UND_ERR_SOCKET`: closed). When every attempt
 * failed the answer is a 502 with the same fields and `error`; an inventory's 4xx is final (no
 * retry) and passed on with its status.
 *
 * Point `INVENTORY_URL` (default http://127.0.0.1:8080) at echo-chaos running as a proxy in front of
 * the real inventory (`ECHO_UPSTREAM`), and the faults echo-chaos injects become failures this
 * service has to live with: README.md has the three commands and the requests that show it.
 *
 *   INVENTORY_URL=http://127.0.0.1:8080 npx node examples/proxy-retries/server.ts
 *   curl localhost:3000/orders/42
 *   curl localhost:3000/actuator/obs
 *
 * `GET /` says where the inventory is and calls nothing. `PORT` (default 3000, 0 for any free port)
 * and `HOST` (default 127.0.0.1) choose the address; every `OBS_*` variable applies.
 */
import { createBudgetInterceptor, obsPlugin } from '@echo-chaos/obs';
import Fastify from 'fastify';
import { Agent, request } from 'undici';

function whole(name: string, fallback: number, min: number, max: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < min || value > max) {
    process.stderr.write(`${name} must be a whole number from ${min} to ${max}, not ${process.env[name]}\n`);
    process.exit(1);
  }
  return value;
}

const INVENTORY_URL = (process.env.INVENTORY_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
/** obs.retry's bounds: 1 to 10 attempts, waits up to a minute. */
const ATTEMPTS = whole('ATTEMPTS', 4, 1, 10);
const BACKOFF_MS = whole('BACKOFF_MS', 50, 0, 60_000);

// Through obs's interceptor, each call carries the request's deadline and its retry depth
// (`Obs-Retry-Depth`: 0 on a first attempt, 1 on the first retry, ...), which the inventory records.
const dispatcher = new Agent().compose(createBudgetInterceptor());

/** An answer of the inventory's that is worth another attempt. */
class InventoryUnavailable extends Error {
  readonly status: number;
  constructor(status: number) {
    super(`inventory answered ${status}`);
    this.status = status;
  }
}

const app = Fastify({ logger: { level: process.env.LOG_LEVEL ?? 'info' } });
await app.register(obsPlugin, { env: process.env, version: '1.0.0', serviceName: 'proxy-retries-orders' });

app.get('/', async () => ({ service: 'orders', inventory: INVENTORY_URL, attempts: ATTEMPTS }));

app.get<{ Params: { id: string } }>('/orders/:id', async (req, reply) => {
  const id = req.params.id;
  const tries: Array<number | string> = [];
  try {
    const answer = await app.obs.retry(
      async (_attempt, signal) => {
        let res: Awaited<ReturnType<typeof request>>;
        try {
          res = await request(`${INVENTORY_URL}/items/${encodeURIComponent(id)}`, { dispatcher, signal });
        } catch (error) {
          tries.push((error as { code?: string }).code ?? 'error');
          throw error;
        }
        tries.push(res.statusCode);
        if (res.statusCode >= 500) {
          await res.body.dump();
          throw new InventoryUnavailable(res.statusCode);
        }
        return { status: res.statusCode, body: (await res.body.json()) as unknown };
      },
      { attempts: ATTEMPTS, delayMs: BACKOFF_MS },
    );
    if (answer.status !== 200) {
      return reply.code(answer.status).send({ order: id, error: answer.body, attempts: tries.length, tries });
    }
    return { order: id, item: answer.body, attempts: tries.length, tries };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return reply.code(502).send({ order: id, error: message, attempts: tries.length, tries });
  }
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    app
      .close()
      .then(() => dispatcher.close())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  });
}

await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' });
