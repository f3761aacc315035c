/**
 * obs's timeout budget across a chain of three services and a sink, in one process and with no
 * OpenTelemetry SDK. Each hop notes what it saw on arrival, spends `SPEND_MS` (default 100 ms), calls
 * the next (hop1 → hop2 → hop3 → sink) and returns its note, what became of its call in `call` and
 * the next hop's answer nested in `next`. Four HTTP clients, all covered by obs:
 *
 * - `fetch`: the global `fetch`, which obs wraps once `obsPlugin` is registered;
 * - `undici`: `request()` through `new Agent().compose(createBudgetInterceptor())`;
 * - `axios`: an `axios.create()` instance handed to `instrumentAxios()`;
 * - `http`: `node:http`'s `http.request`, which obs instruments once `obsPlugin` is registered.
 *
 * By default hop1 calls hop2 with `fetch`, hop2 calls hop3 with `undici` and hop3 calls the sink with
 * `axios`. `?client=http` makes every call of the chain use one client; `?client=fetch,undici,http`
 * names hop1's, hop2's and hop3's in turn. `?spend=300` overrides `SPEND_MS` for that request.
 *
 *   npx node examples/deadline-chain/server.ts
 *   curl -H 'Obs-Timeout-Ms: 1000' localhost:3000/
 *   curl -H 'Obs-Timeout-Ms: 1000' 'localhost:3000/?client=http&spend=300'
 *   curl localhost:3000/actuator/obs
 *
 * What to look for in the nested JSON: hop1's budget comes from `Obs-Timeout-Ms`
 * (`remaining-header`, less the 50 ms safety margin); hop2 and hop3 get `Obs-Timeout-Deadline-Ms`
 * (`deadline-header`) stamped by the outbound call and share hop1's absolute deadline, while
 * `remainingMs` shrinks hop by hop. Without the header, hop1 uses `default-budget` (`default`).
 *
 * Each `call` says which client was used, the budget left when it was made (`remainingMs`), how it
 * ended (`outcome`: `reached` with the `status`, `refused` with obs's error `code`, or `failed`), the
 * calling hop's `obs_timeout_budget_exhausted_total{transport=<client>}` before and after it
 * (`exhausted`), and the next service's count of requests received before and after it (`nextHits`;
 * all run in this process). With `Obs-Timeout-Ms: 1000` and `?spend=300`, hop3 arrives with about
 * 350 ms left and calls the sink with about 50 ms, at or below `minimum-budget` (100 ms): the call
 * is counted and still reaches the sink; with `OBS_TIMEOUT_BUDGET_ABORT_ON_EXHAUSTION=true` it is
 * refused (`OBS_ERR_TIMEOUT_BUDGET_EXHAUSTED`) and the sink's count does not move.
 *
 * hop1 listens on `PORT` (default 3000, 0 for any free port) and `HOST` (default 127.0.0.1); hop2,
 * hop3 and the sink on free loopback ports, without a logger, so hop1's `listening at` line is the
 * only one. Each hop reports its `url`, and serves its metrics at `/metrics`. Every `OBS_*` variable
 * applies to the three hops; the sink has no obs.
 */
import http from 'node:http';
import {
  createBudgetInterceptor,
  currentTimeoutBudget,
  instrumentAxios,
  isObsError,
  obsPlugin,
} from '@echo-chaos/obs';
import axios from 'axios';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { Agent, request } from 'undici';

const CLIENTS = ['fetch', 'undici', 'axios', 'http'] as const;
type Client = (typeof CLIENTS)[number];
/** The clients of hop1's, hop2's and hop3's calls when the request names none. */
const DEFAULT_CLIENTS: readonly Client[] = ['fetch', 'undici', 'axios'];
const SPEND_MS = Number(process.env.SPEND_MS ?? 100);
if (!Number.isInteger(SPEND_MS) || SPEND_MS < 0) {
  process.stderr.write(`SPEND_MS must be a whole number of milliseconds, not ${process.env.SPEND_MS}\n`);
  process.exit(1);
}

/** A response of the next service, whatever the client. */
interface NextResponse {
  status: number;
  body: unknown;
}

// The clients. None sets a deadline header itself: obs stamps them.
const dispatcher = new Agent().compose(createBudgetInterceptor());
const axiosInstance = axios.create({ validateStatus: () => true });
instrumentAxios(axiosInstance);

const CALLS: Record<Client, (url: string) => Promise<NextResponse>> = {
  fetch: async (url) => {
    const res = await fetch(url);
    return { status: res.status, body: await res.json() };
  },
  undici: async (url) => {
    const res = await request(url, { dispatcher });
    return { status: res.statusCode, body: await res.body.json() };
  },
  axios: async (url) => {
    const res = await axiosInstance.get(url);
    return { status: res.status, body: res.data };
  },
  http: (url) =>
    new Promise((resolve, reject) => {
      const req = http.request(url, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) });
          } catch (error) {
            reject(error);
          }
        });
        res.on('error', reject);
      });
      // A refused call is destroyed with obs's error before anything is sent: it arrives here.
      req.on('error', reject);
      req.end();
    }),
};

/** The chain's plan for one request, from its query, passed on to the next hop unchanged. */
interface Plan {
  clients: readonly Client[];
  spendMs: number;
}

function planOf(query: unknown): Plan | string {
  const { client, spend } = (query ?? {}) as { client?: unknown; spend?: unknown };
  let clients = DEFAULT_CLIENTS;
  if (client !== undefined) {
    const names = String(client).split(',');
    const unknown = names.filter((n) => !(CLIENTS as readonly string[]).includes(n));
    if (unknown.length > 0 || (names.length !== 1 && names.length !== 3)) {
      return `client must be one of ${CLIENTS.join(', ')}, or three of them separated by commas`;
    }
    clients = (names.length === 1 ? [names[0], names[0], names[0]] : names) as Client[];
  }
  let spendMs = SPEND_MS;
  if (spend !== undefined) {
    spendMs = Number(spend);
    if (!/^\d+$/.test(String(spend)) || spendMs > 60_000)
      return 'spend must be a whole number of milliseconds';
  }
  return { clients, spendMs };
}

const queryOf = (plan: Plan) =>
  new URLSearchParams({ client: plan.clients.join(','), spend: String(plan.spendMs) }).toString();

/** Requests received by each service on `/`. */
const hits = { hop1: 0, hop2: 0, hop3: 0, sink: 0 };
type Service = keyof typeof hits;

/** What a hop saw on arrival: its budget, and the deadline headers it was sent. */
function seen(hop: string, url: string, req: FastifyRequest) {
  const budget = currentTimeoutBudget();
  return {
    hop,
    url,
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

/** A hop's count of exhausted calls of one transport, as `/metrics` shows it. */
async function exhaustedCount(app: FastifyInstance, transport: Client): Promise<number> {
  const metric = await app.obs.registry.getSingleMetric('obs_timeout_budget_exhausted_total')?.get();
  return metric?.values.find((v) => v.labels.transport === transport)?.value ?? 0;
}

/** Makes a hop's call to the next service and reports what became of it. */
async function callNext(app: FastifyInstance, client: Client, url: string, nextName: Service) {
  const exhaustedBefore = await exhaustedCount(app, client);
  const hitsBefore = hits[nextName];
  const remainingMs = currentTimeoutBudget()?.remainingMs ?? null;
  let outcome: Record<string, unknown>;
  let next: unknown;
  try {
    const res = await CALLS[client](url);
    outcome = { outcome: 'reached', status: res.status };
    next = res.body;
  } catch (error) {
    outcome = isObsError(error)
      ? { outcome: 'refused', code: error.code, message: error.message }
      : { outcome: 'failed', message: error instanceof Error ? error.message : String(error) };
  }
  const call = {
    client,
    to: url,
    remainingMs,
    ...outcome,
    exhausted: { transport: client, before: exhaustedBefore, after: await exhaustedCount(app, client) },
    nextHits: { before: hitsBefore, after: hits[nextName] },
  };
  return { call, next };
}

async function service(name: string, logger: boolean): Promise<FastifyInstance> {
  const app = Fastify({ logger: logger && { level: process.env.LOG_LEVEL ?? 'info' } });
  await app.register(obsPlugin, {
    env: process.env,
    version: '1.0.0',
    serviceName: `deadline-chain-${name}`,
  });
  app.get('/metrics', async (_req, reply) =>
    reply.type(app.obs.registry.contentType).send(await app.obs.registry.metrics()),
  );
  return app;
}

/** A hop: note the arrival, spend, call `nextName` at `nextUrl()` with this hop's client. */
function hop(
  app: FastifyInstance,
  name: Service,
  index: number,
  url: () => string,
  nextName: Service,
  nextUrl: (plan: Plan) => string,
) {
  app.get('/', async (req: FastifyRequest, reply: FastifyReply) => {
    hits[name] += 1;
    const arrived = seen(name, url(), req);
    const plan = planOf(req.query);
    if (typeof plan === 'string') return reply.code(400).send({ error: plan });
    await new Promise((resolve) => setTimeout(resolve, plan.spendMs));
    const client = plan.clients[index]!;
    const { call, next } = await callNext(app, client, nextUrl(plan), nextName);
    return { ...arrived, spentMs: plan.spendMs, call, next };
  });
}

// The sink calls nothing and has no obs: it counts what reaches it and shows the headers it got.
const sink = Fastify();
sink.get('/', async (req) => {
  hits.sink += 1;
  return {
    hop: 'sink',
    hits: hits.sink,
    headers: {
      'obs-timeout-ms': req.headers['obs-timeout-ms'] ?? null,
      'obs-timeout-deadline-ms': req.headers['obs-timeout-deadline-ms'] ?? null,
    },
  };
});
const sinkUrl = await sink.listen({ port: 0, host: '127.0.0.1' });

const hop3 = await service('hop3', false);
let hop3Url = '';
hop(
  hop3,
  'hop3',
  2,
  () => hop3Url,
  'sink',
  () => `${sinkUrl}/`,
);
hop3Url = await hop3.listen({ port: 0, host: '127.0.0.1' });

const hop2 = await service('hop2', false);
let hop2Url = '';
hop(
  hop2,
  'hop2',
  1,
  () => hop2Url,
  'hop3',
  (plan) => `${hop3Url}/?${queryOf(plan)}`,
);
hop2Url = await hop2.listen({ port: 0, host: '127.0.0.1' });

const hop1 = await service('hop1', true);
let hop1Url = '';
hop(
  hop1,
  'hop1',
  0,
  () => hop1Url,
  'hop2',
  (plan) => `${hop2Url}/?${queryOf(plan)}`,
);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    Promise.all([hop1.close(), hop2.close(), hop3.close(), sink.close()])
      .then(() => dispatcher.close())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  });
}

hop1Url = await hop1.listen({
  port: Number(process.env.PORT ?? 3000),
  host: process.env.HOST ?? '127.0.0.1',
});
