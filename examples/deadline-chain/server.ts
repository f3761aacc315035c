/**
 * obs's timeout budget across a chain of three services, in one process and with no OpenTelemetry
 * SDK: hop1 calls hop2 with the global `fetch`, hop2 calls hop3 with undici through a dispatcher
 * composed with `createBudgetInterceptor()`. Each hop notes what it saw on arrival, spends ~100 ms,
 * calls the next and returns its note with the next hop's nested in `next`.
 *
 *   npx node examples/deadline-chain/server.ts
 *   curl -H 'Obs-Timeout-Ms: 1000' localhost:3000/
 *   curl localhost:3000/actuator/obs
 *
 * What to look for in the nested JSON: hop1's budget comes from `Obs-Timeout-Ms`
 * (`remaining-header`, less the safety margin); hop2 and hop3 get `Obs-Timeout-Deadline-Ms`
 * (`deadline-header`) stamped by the outbound call and share hop1's absolute deadline, while
 * `remainingMs` shrinks hop by hop. Without the header, hop1 uses `default-budget` (`default`).
 *
 * hop1 listens on `PORT` (default 3000, 0 for any free port) and `HOST` (default 127.0.0.1); hop2
 * and hop3 on free loopback ports, without a logger, so hop1's `listening at` line is the only one.
 */
import { createBudgetInterceptor, currentTimeoutBudget, obsPlugin } from '@echo-chaos/obs';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { Agent, request } from 'undici';

const SPEND_MS = 100;
const spend = () => new Promise((resolve) => setTimeout(resolve, SPEND_MS));

/** What a hop saw on arrival: its budget, and the deadline headers it was sent. */
function seen(hop: string, req: FastifyRequest) {
  const budget = currentTimeoutBudget();
  return {
    hop,
    budget: budget && {
      remainingMs: budget.remainingMs,
      deadlineEpochMs: budget.deadlineEpochMs,
      source: budget.source,
    },
    headers: {
      'obs-timeout-ms': req.headers['obs-timeout-ms'] ?? null,
      'obs-timeout-deadline-ms': req.headers['obs-timeout-deadline-ms'] ?? null,
    },
  };
}

async function service(name: string, logger: boolean): Promise<FastifyInstance> {
  const app = Fastify({ logger: logger && { level: process.env.LOG_LEVEL ?? 'info' } });
  await app.register(obsPlugin, {
    env: process.env,
    version: '1.0.0',
    serviceName: `deadline-chain-${name}`,
  });
  return app;
}

// hop3 calls nothing: it reports.
const hop3 = await service('hop3', false);
hop3.get('/', async (req) => seen('hop3', req));
const hop3Url = await hop3.listen({ port: 0, host: '127.0.0.1' });

// hop2 calls hop3 with undici; the interceptor stamps the budget on the request.
const dispatcher = new Agent().compose(createBudgetInterceptor());
const hop2 = await service('hop2', false);
hop2.get('/', async (req) => {
  const arrived = seen('hop2', req);
  await spend();
  const res = await request(`${hop3Url}/`, { dispatcher });
  return { ...arrived, next: await res.body.json() };
});
const hop2Url = await hop2.listen({ port: 0, host: '127.0.0.1' });

// hop1 calls hop2 with the global fetch, which obs wraps.
const hop1 = await service('hop1', true);
hop1.get('/', async (req) => {
  const arrived = seen('hop1', req);
  await spend();
  const res = await fetch(`${hop2Url}/`);
  return { ...arrived, next: await res.json() };
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    Promise.all([hop1.close(), hop2.close(), hop3.close()])
      .then(() => dispatcher.close())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  });
}

await hop1.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' });
