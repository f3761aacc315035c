import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import axios from 'axios';
import type { FastifyInstance } from 'fastify';
import { Agent, request as undiciRequest } from 'undici';
import { currentTimeoutBudget } from '../../../../src/obs/features/request-context/request-context.ts';
import {
  createBudgetInterceptor,
  instrumentAxios,
  TRANSPORTS,
} from '../../../../src/obs/features/timeout-budget/timeout-budget-clients.ts';
import { TIMEOUT_BUDGET_METRICS } from '../../../../src/obs/features/timeout-budget/timeout-budget-hook.ts';
import { budgetOptions, type RunningObsApp, startObsApp } from '../../helpers.ts';

type TestContext = { after(fn: () => Promise<void> | void): void };

/** What a client answers: the JSON body, or the error's code or name. */
type Outcome = { status: number; body: Record<string, unknown> } | { error: string };

/** A dispatcher handed the budget interceptor, as an application would compose it. */
const agent = new Agent().compose(createBudgetInterceptor());
after(() => agent.close());
/** An axios instance handed to obs. */
const axiosClient = axios.create();
instrumentAxios(axiosClient);

/** The clients under test, each a GET of a JSON answer with optional headers. */
const CLIENTS: Record<string, (url: string, headers?: Record<string, string>) => Promise<Outcome>> = {
  fetch: async (url, headers = {}) => {
    try {
      const response = await fetch(url, { headers });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    } catch (error) {
      return { error: errorName(error) };
    }
  },
  undici: async (url, headers = {}) => {
    try {
      const response = await undiciRequest(url, { dispatcher: agent, headers });
      return { status: response.statusCode, body: (await response.body.json()) as Record<string, unknown> };
    } catch (error) {
      return { error: errorName(error) };
    }
  },
  axios: async (url, headers = {}) => {
    try {
      const response = await axiosClient.get(url, { headers, validateStatus: () => true });
      return { status: response.status, body: response.data as Record<string, unknown> };
    } catch (error) {
      return { error: errorName(error) };
    }
  },
  http: (url, headers = {}) =>
    new Promise((resolve) => {
      const request = httpRequest(url, { headers }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => {
          text += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
        response.on('error', (error) => resolve({ error: errorName(error) }));
      });
      request.on('error', (error) => resolve({ error: errorName(error) }));
      request.end();
    }),
};

function errorName(error: unknown): string {
  const e = error as { code?: unknown; name?: unknown; cause?: unknown };
  if (typeof e.code === 'string' && e.code.startsWith('OBS_')) return e.code;
  // undici's header timeout and axios's cancellation are how those clients report an aborted call.
  const aborted = ['UND_ERR_HEADERS_TIMEOUT', 'ERR_CANCELED'];
  if (e.name === 'TimeoutError' || e.name === 'AbortError' || aborted.includes(String(e.code))) {
    return 'TimeoutError';
  }
  if (e.cause !== undefined) return errorName(e.cause);
  return String(e.code ?? e.name);
}

/** A plain server (no obs) that records the headers of what reaches it; `delayMs` before answering. */
async function startSink(t: TestContext, delayMs = 0) {
  const received: IncomingHttpHeaders[] = [];
  const server = createServer((request, response) => {
    received.push(request.headers);
    setTimeout(() => response.end('{}'), delayMs).unref();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return { url: `http://127.0.0.1:${port}/`, received };
}

async function exhaustedCount(app: RunningObsApp, transport: string): Promise<number> {
  const metric = await app.registry.getSingleMetric(TIMEOUT_BUDGET_METRICS.exhausted)?.get();
  return metric?.values.find((v) => v.labels.transport === transport)?.value ?? 0;
}

/**
 * One hop: spends `spendMs`, then calls `next` with `client` and answers what it saw: its own
 * budget, and the next hop's answer (or the error of the call).
 */
function hop(client: string, next: () => string, spendMs: number) {
  return (app: FastifyInstance) => {
    app.get('/', async () => {
      const budget = currentTimeoutBudget();
      await sleep(spendMs); // the hop's work: real time spent from the budget, the point of the chain
      return { budget: budget ?? null, next: await CLIENTS[client]!(next()) };
    });
  };
}

for (const client of Object.keys(CLIENTS)) {
  const chain = async (t: TestContext, abort: boolean) => {
    const sink = await startSink(t);
    const options = budgetOptions({
      'safety-margin': 0,
      // The third hop calls with at most ~100 ms left; the second with ~400 (slack for a loaded machine).
      'minimum-budget': 150,
      'abort-on-exhaustion': abort,
    });
    const start = async (next: () => string) => {
      const running = await startObsApp(options, hop(client, next, 300));
      t.after(() => running.close());
      return running;
    };
    const third = await start(() => sink.url);
    const second = await start(() => `${third.url}/`);
    const first = await start(() => `${second.url}/`);
    const outcome = await CLIENTS.fetch!(`${first.url}/`, { 'obs-timeout-ms': '1000' });
    assert.ok('body' in outcome, JSON.stringify(outcome));
    const secondAnswer = (outcome.body.next as { body: Record<string, unknown> }).body;
    const thirdAnswer = (secondAnswer.next as { body: Record<string, unknown> }).body;
    return { sink, first, second, third, thirdAnswer };
  };

  test(`timeout budget ${client} – a chain of three services: the third sees ~400 ms, its call is counted exhausted`, async (t) => {
    const { sink, first, second, third, thirdAnswer } = await chain(t, false);
    const budget = thirdAnswer.budget as { remainingMs: number; source: string };
    assert.equal(budget.source, 'deadline-header', 'the first hop passed the absolute deadline on');
    assert.ok(budget.remainingMs > 100 && budget.remainingMs <= 450, String(budget.remainingMs));
    assert.deepEqual(thirdAnswer.next, { status: 200, body: {} }, 'the exhausted call still runs');
    assert.equal(sink.received.length, 1);
    const stamped = sink.received[0]!;
    const remaining = Number(stamped['obs-timeout-ms']);
    assert.ok(remaining >= 0 && remaining <= 150, `stamped ${stamped['obs-timeout-ms']}`);
    const deadline = Number(stamped['obs-timeout-deadline-ms']);
    assert.ok(Math.abs(deadline - (Date.now() + remaining)) < 2000, 'the deadline travels with it');
    for (const transport of TRANSPORTS) {
      const expected = transport === client ? 1 : 0;
      assert.equal(
        await exhaustedCount(third, transport),
        expected,
        `${transport}: counted once, as ${client}`,
      );
    }
    assert.equal(await exhaustedCount(second, client), 0);
    assert.equal(await exhaustedCount(first, client), 0);
  });

  test(`timeout budget ${client} – abort-on-exhaustion refuses the third hop’s call before it reaches the server`, async (t) => {
    const { sink, third, thirdAnswer } = await chain(t, true);
    assert.deepEqual(thirdAnswer.next, { error: 'OBS_ERR_TIMEOUT_BUDGET_EXHAUSTED' });
    assert.equal(sink.received.length, 0);
    assert.equal(await exhaustedCount(third, client), 1);
  });

  test(`timeout budget ${client} – a header the caller set is kept; outside a request nothing is stamped`, async (t) => {
    const sink = await startSink(t);
    const app = await startObsApp(budgetOptions({ 'outbound-header': 'X-Budget-Left' }), (app) => {
      app.get('/', async () => CLIENTS[client]!(sink.url, { 'obs-timeout-deadline-ms': '42' }));
    });
    t.after(() => app.close());
    await CLIENTS.fetch!(`${app.url}/`, { 'obs-timeout-ms': '5000' });
    const stamped = sink.received[0]!;
    assert.equal(stamped['obs-timeout-deadline-ms'], '42');
    assert.ok(Number(stamped['x-budget-left']) > 4000 && Number(stamped['x-budget-left']) <= 4950);
    assert.equal(stamped['obs-timeout-ms'], undefined, 'the outbound header is configurable');

    await CLIENTS[client]!(sink.url);
    assert.equal(sink.received.length, 2);
    assert.equal(sink.received[1]!['obs-timeout-deadline-ms'], undefined);
    assert.equal(sink.received[1]!['x-budget-left'], undefined);
  });

  test(`timeout budget ${client} – apply-client-timeout aborts a call still running when the budget runs out`, async (t) => {
    const sink = await startSink(t, 5000);
    const app = await startObsApp(budgetOptions({ 'apply-client-timeout': true }), (app) => {
      app.get('/', async () => {
        const started = Date.now();
        const outcome = await CLIENTS[client]!(sink.url);
        return { outcome, tookMs: Date.now() - started };
      });
    });
    t.after(() => app.close());
    const answer = await CLIENTS.fetch!(`${app.url}/`, { 'obs-timeout-ms': '400' });
    assert.ok('body' in answer, JSON.stringify(answer));
    assert.deepEqual(answer.body.outcome, { error: 'TimeoutError' });
    assert.ok((answer.body.tookMs as number) < 4000, String(answer.body.tookMs));
    assert.equal(sink.received.length, 1, 'the call was made, then aborted');
  });

  test(`timeout budget ${client} – apply-client-timeout with 0 ms left leaves the call unbounded: it runs to its answer (#40)`, async (t) => {
    // An answer later than any 0 ms bound could wait: a bounded call would fail first.
    const sink = await startSink(t, 300);
    const app = await startObsApp(budgetOptions({ 'apply-client-timeout': true }), (app) => {
      app.get('/', async () => CLIENTS[client]!(sink.url));
    });
    t.after(() => app.close());
    const answer = await CLIENTS.fetch!(`${app.url}/`, { 'obs-timeout-ms': '0' });
    assert.ok('body' in answer, JSON.stringify(answer));
    assert.deepEqual(answer.body, { status: 200, body: {} }, 'the exhausted call still executes');
    assert.equal(sink.received.length, 1);
    assert.equal(sink.received[0]!['obs-timeout-ms'], '0', 'stamped with what is left');
    assert.equal(await exhaustedCount(app, client), 1);
  });
}

test('timeout budget undici – fetch through a dispatcher with the interceptor is stamped and counted once, as fetch', async (t) => {
  const sink = await startSink(t);
  const app = await startObsApp(budgetOptions(), (app) => {
    app.get('/', async () => {
      const response = await fetch(sink.url, { dispatcher: agent } as RequestInit);
      return { status: response.status };
    });
  });
  t.after(() => app.close());
  await CLIENTS.fetch!(`${app.url}/`, { 'obs-timeout-ms': '50' });
  assert.equal(sink.received.length, 1);
  assert.equal(sink.received[0]!['obs-timeout-ms'], '0');
  assert.equal(await exhaustedCount(app, 'fetch'), 1);
  assert.equal(await exhaustedCount(app, 'undici'), 0);
});

test('timeout budget undici – headers as a flat array or pairs keep the caller’s and gain the stamps', async (t) => {
  const sink = await startSink(t);
  const app = await startObsApp(budgetOptions(), (app) => {
    app.get('/', async () => {
      await undiciRequest(sink.url, { dispatcher: agent, headers: ['Obs-Timeout-Ms', '7', 'x-a', '1'] });
      await undiciRequest(sink.url, {
        dispatcher: agent,
        headers: new Map([['x-b', '2']]) as unknown as Record<string, string>,
      });
      return {};
    });
  });
  t.after(() => app.close());
  await CLIENTS.fetch!(`${app.url}/`, { 'obs-timeout-ms': '5000' });
  const [flat, pairs] = sink.received;
  assert.deepEqual([flat?.['obs-timeout-ms'], flat?.['x-a']], ['7', '1']);
  assert.ok(Number(flat?.['obs-timeout-deadline-ms']) > Date.now());
  assert.equal(pairs?.['x-b'], '2');
  assert.ok(Number(pairs?.['obs-timeout-ms']) > 4000);
});

test('timeout budget axios – an instance not handed to obs is still covered, as http', async (t) => {
  const sink = await startSink(t);
  const app = await startObsApp(budgetOptions(), (app) => {
    app.get('/', async () => {
      await axios.get(sink.url);
      return {};
    });
  });
  t.after(() => app.close());
  await CLIENTS.fetch!(`${app.url}/`, { 'obs-timeout-ms': '50' });
  assert.equal(sink.received[0]?.['obs-timeout-ms'], '0');
  assert.equal(await exhaustedCount(app, 'http'), 1);
  assert.equal(await exhaustedCount(app, 'axios'), 0);
});

test('timeout budget – a failure of the instrumentation is logged and the call goes on as without obs', async (t) => {
  const sink = await startSink(t);
  const app = await startObsApp(budgetOptions(), (app) => {
    app.get('/', async () => {
      // Headers that cannot be copied: the stamping fails, fetch then answers as it would alone.
      const broken = {
        [Symbol.iterator]() {
          throw new Error('unreadable headers');
        },
      } as unknown as Record<string, string>;
      const outcome = await fetch(sink.url, { headers: broken }).then(
        (r) => ({ status: r.status }),
        (error: Error) => ({ error: error.message }),
      );
      return { outcome };
    });
  });
  t.after(() => app.close());
  const answer = await CLIENTS.fetch!(`${app.url}/`, { 'obs-timeout-ms': '5000' });
  assert.ok('body' in answer && answer.status === 200, JSON.stringify(answer));
  assert.deepEqual(answer.body.outcome, { error: 'unreadable headers' }, 'fetch’s own answer');
  const warning = app.logger.lines.find((l) => (l.object as { obs?: string }).obs === 'timeout-budget');
  assert.equal((warning?.object as { transport?: string } | undefined)?.transport, 'fetch');
});

test('timeout budget – abort-on-exhaustion refuses in ENFORCING only: DRY_RUN counts the call and lets it run', async (t) => {
  const sink = await startSink(t);
  const app = await startObsApp({ config: { 'timeout-budget': { 'abort-on-exhaustion': true } } }, (app) => {
    app.get('/', async () => CLIENTS.fetch!(sink.url));
  });
  t.after(() => app.close());
  const refused = await CLIENTS.fetch!(`${app.url}/`, { 'obs-timeout-ms': '0' });
  assert.deepEqual('body' in refused && refused.body, { error: 'OBS_ERR_TIMEOUT_BUDGET_EXHAUSTED' });
  assert.equal(sink.received.length, 0);
  app.app.obs.mode.set('DRY_RUN');
  const ran = await CLIENTS.fetch!(`${app.url}/`, { 'obs-timeout-ms': '0' });
  assert.deepEqual('body' in ran && ran.body, { status: 200, body: {} });
  assert.equal(sink.received.length, 1);
  assert.equal(await exhaustedCount(app, 'fetch'), 2);
});
