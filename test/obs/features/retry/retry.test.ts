import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { test } from 'node:test';
import { context, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CBaggagePropagator } from '@opentelemetry/core';
import axios from 'axios';
import Fastify, { type FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { registerRequestContext } from '../../../../src/obs/features/request-context/context-hook.ts';
import { RETRY_METRICS, registerRetry } from '../../../../src/obs/features/retry/retry.ts';
import {
  inboundRetryDepth,
  MAX_RETRY_DEPTH,
  parseRetryDepth,
  RETRY_DEPTH_BAGGAGE_KEY,
} from '../../../../src/obs/features/retry/retry-depth.ts';
import {
  createObs,
  currentObsContext,
  instrumentAxios,
  type ObsConfigInput,
  obsPlugin,
  TimeoutBudgetExhaustedError,
} from '../../../../src/obs/index.ts';
import { capturingLogger, type RunningObsApp, startObsApp } from '../../helpers.ts';

type TestContext = { after(fn: () => unknown): void };

const NO_WAIT = async (): Promise<void> => {};

/** The real OpenTelemetry context manager and the W3C baggage propagator, for one test. */
function realOtel(t: TestContext): void {
  const manager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(manager);
  propagation.setGlobalPropagator(new W3CBaggagePropagator());
  t.after(() => {
    propagation.disable();
    context.disable();
    manager.disable();
  });
}

async function valuesOf(registry: Registry, name: string): Promise<Array<[string, number]>> {
  const metric = await registry.getSingleMetric(name)?.get();
  return (metric?.values ?? [])
    .map((v) => [Object.values(v.labels).join(','), v.value] as [string, number])
    .sort();
}

/** An app whose `/depth` route answers the context's depth and the baggage's entry. */
async function depthApp(t: TestContext, config: ObsConfigInput = {}) {
  const registry = new Registry();
  const logger = capturingLogger();
  const app = Fastify();
  await app.register(obsPlugin, { env: {}, logger, registry, config });
  const answer = async () => ({
    depth: currentObsContext()?.retryDepth ?? null,
    baggage: propagation.getBaggage(context.active())?.getEntry(RETRY_DEPTH_BAGGAGE_KEY)?.value ?? null,
  });
  app.get('/depth', answer);
  app.get('/orders/:id', answer);
  await app.ready();
  t.after(() => app.close());
  return { app, registry, logger };
}

async function depthOf(app: FastifyInstance, headers: Record<string, string>, url = '/depth') {
  const response = await app.inject({ url, headers });
  assert.equal(response.statusCode, 200, response.body);
  return response.json<{ depth: number | null; baggage: string | null }>().depth;
}

function retrySection(snapshot: unknown) {
  return (snapshot as { sections: Record<string, unknown> }).sections.retry as Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------
// inbound

test('retry – parseRetryDepth: plain non-negative integers, clamped at 1000; anything else malformed', () => {
  assert.equal(parseRetryDepth(undefined), undefined);
  assert.equal(parseRetryDepth('0'), 0);
  assert.equal(parseRetryDepth(' 2 '), 2);
  assert.equal(parseRetryDepth('1000'), 1000);
  assert.equal(parseRetryDepth('1001'), MAX_RETRY_DEPTH, 'too big is clamped, and still flagged');
  assert.equal(parseRetryDepth('9999999999999999'), MAX_RETRY_DEPTH);
  for (const bad of [
    '',
    ' ',
    '-1',
    '1.5',
    '+1',
    '1e3',
    'two',
    '1, 2',
    '0x10',
    '99999999999999999',
    ['1', '2'],
    3,
  ]) {
    assert.equal(parseRetryDepth(bad), null, JSON.stringify(bad));
  }
});

test('retry – inboundRetryDepth: the header, else the baggage, else 0; a malformed one is ignored and reported', () => {
  assert.deepEqual(inboundRetryDepth(undefined, undefined), { depth: 0, source: 'none', invalid: [] });
  assert.deepEqual(inboundRetryDepth('0', '5'), { depth: 0, source: 'header', invalid: [] });
  assert.deepEqual(inboundRetryDepth('2', undefined), { depth: 2, source: 'header', invalid: [] });
  assert.deepEqual(inboundRetryDepth(undefined, '4'), { depth: 4, source: 'baggage', invalid: [] });
  assert.deepEqual(inboundRetryDepth('x', '4'), { depth: 4, source: 'baggage', invalid: ['header'] });
  assert.deepEqual(inboundRetryDepth('x', 'y'), { depth: 0, source: 'none', invalid: ['header', 'baggage'] });
});

test('retry – the handler sees the inbound depth in the context and the baggage; malformed counts as invalid', async (t) => {
  realOtel(t);
  const { app, registry } = await depthApp(t);
  assert.equal(await depthOf(app, {}), 0);
  assert.equal(await depthOf(app, { 'obs-retry-depth': '0' }), 0);
  assert.equal(await depthOf(app, { 'obs-retry-depth': '2' }), 2);
  assert.equal(await depthOf(app, { 'obs-retry-depth': 'lots' }), 0);
  assert.equal(await depthOf(app, { 'obs-retry-depth': '-3' }), 0);
  assert.equal(await depthOf(app, { 'obs-retry-depth': '5000' }), 1000);
  const response = await app.inject({ url: '/depth', headers: { 'obs-retry-depth': '2' } });
  assert.equal(response.json<{ baggage: string }>().baggage, '2');
  assert.deepEqual(await valuesOf(registry, RETRY_METRICS.invalid), [['header', 2]]);
});

test('retry – without the header, the depth comes from the W3C baggage an upstream propagator extracted', async (t) => {
  realOtel(t);
  // What an SDK's HTTP instrumentation does: extract the incoming context before fastify runs.
  const app = Fastify({
    serverFactory: (handler) =>
      createServer((request: IncomingMessage, response: ServerResponse) => {
        const extracted = propagation.extract(context.active(), request.headers);
        context.with(extracted, () => handler(request, response));
      }),
  });
  const registry = new Registry();
  await app.register(obsPlugin, { env: {}, logger: capturingLogger(), registry });
  app.get('/depth', async () => ({ depth: currentObsContext()?.retryDepth ?? null }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => app.close());
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/depth`;
  const ask = async (headers: Record<string, string>) =>
    ((await (await fetch(url, { headers })).json()) as { depth: number }).depth;
  assert.equal(await ask({ baggage: 'obs.retry.depth=4' }), 4);
  assert.equal(await ask({ baggage: 'other=1,obs.retry.depth=2' }), 2);
  assert.equal(await ask({ baggage: 'obs.retry.depth=4', 'obs-retry-depth': '1' }), 1, 'the header wins');
  assert.equal(await ask({ baggage: 'obs.retry.depth=4', 'obs-retry-depth': 'bad' }), 4);
  assert.equal(await ask({ baggage: 'obs.retry.depth=nope' }), 0);
  assert.equal(await ask({}), 0);
  assert.deepEqual(await valuesOf(registry, RETRY_METRICS.invalid), [
    ['baggage', 1],
    ['header', 1],
  ]);
});

// ---------------------------------------------------------------------------------------------
// threshold and warnings

test('retry – amplification-threshold: one below is not flagged, at it is, labelled with the route pattern', async (t) => {
  const { app, registry, logger } = await depthApp(t, { retry: { 'amplification-threshold': 3 } });
  await depthOf(app, { 'obs-retry-depth': '2' }, '/orders/7');
  assert.deepEqual(await valuesOf(registry, RETRY_METRICS.amplification), []);
  assert.equal(logger.lines.filter((l) => l.level === 'warn').length, 0);
  await depthOf(app, { 'obs-retry-depth': '3' }, '/orders/7');
  await depthOf(app, { 'obs-retry-depth': '9' }, '/orders/8');
  await app.inject({ url: '/nowhere', headers: { 'obs-retry-depth': '3' } });
  assert.deepEqual(await valuesOf(registry, RETRY_METRICS.amplification), [
    ['/orders/:id', 2],
    ['unmatched', 1],
  ]);
  const warnings = logger.lines.filter((l) => l.level === 'warn').map((l) => l.object);
  assert.deepEqual(warnings, [
    { obs: 'retry', endpoint: '/orders/:id', retry_depth: 3, threshold: 3, suppressed: 0 },
    { obs: 'retry', endpoint: 'unmatched', retry_depth: 3, threshold: 3, suppressed: 0 },
  ]);
  const section = retrySection((await app.inject({ url: '/actuator/obs' })).json());
  assert.equal(section.flagged, 3);
  assert.deepEqual(section.warnings, { logged: 2, suppressed: 1 });
});

test('retry – warnings of the app are rate-limited per endpoint with the injected clock', async (t) => {
  let now = 0;
  const logger = capturingLogger();
  const obs = createObs({ env: {}, logger, registry: new Registry() });
  const app = Fastify();
  registerRequestContext(app, obs);
  registerRetry(obs, { now: () => now, warningIntervalMs: 10_000 });
  app.get('/hot', async () => 'ok');
  await app.ready();
  t.after(() => app.close());
  const hit = () => app.inject({ url: '/hot', headers: { 'obs-retry-depth': '4' } });
  await hit();
  await hit();
  await hit();
  now = 9_999;
  await hit();
  now = 10_000;
  await hit();
  const warnings = logger.lines.filter((l) => l.level === 'warn');
  assert.deepEqual(
    warnings.map((w) => (w.object as { suppressed: number }).suppressed),
    [0, 3],
  );
  assert.match(warnings[1]?.message ?? '', /retry depth 4, at or above amplification-threshold 3 \(3 more/);
});

// ---------------------------------------------------------------------------------------------
// the helper, over real loopback calls

/** Service B: fails `failures` times, then answers; keeps the depth header of each request. */
async function serviceB(failures: number): Promise<RunningObsApp & { seen: Array<string | undefined> }> {
  const seen: Array<string | undefined> = [];
  const b = await startObsApp({}, (app) => {
    app.get('/work', async (request, reply) => {
      seen.push(request.headers['obs-retry-depth'] as string | undefined);
      if (seen.length <= failures) return reply.code(503).send({ failing: true });
      return { done: true, depth: currentObsContext()?.retryDepth };
    });
  });
  return Object.assign(b, { seen });
}

const axiosClient = axios.create();
instrumentAxios(axiosClient);

async function callThrough(client: 'fetch' | 'axios', url: string): Promise<unknown> {
  if (client === 'fetch') {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`status ${response.status}`);
    return response.json();
  }
  return (await axiosClient.get(url)).data;
}

for (const client of ['fetch', 'axios'] as const) {
  test(`retry – a chain through ${client}: B sees depths 1, 2, 3 as A retries a request that came at depth 1`, async (t) => {
    const b = await serviceB(2);
    t.after(() => b.close());
    const a = await startObsApp({}, (app) => {
      app.get('/call', async () =>
        app.obs.retry(() => callThrough(client, `${b.url}/work`), { sleep: NO_WAIT }),
      );
    });
    t.after(() => a.close());
    const response = await fetch(`${a.url}/call`, { headers: { 'Obs-Retry-Depth': '1' } });
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { done: true, depth: 3 });
    assert.deepEqual(b.seen, ['1', '2', '3']);
    assert.deepEqual(await valuesOf(a.registry, RETRY_METRICS.retries), [['/call', 2]]);
    // B flags the third request (depth 3 = amplification-threshold); A's inbound depth 1 is not.
    assert.deepEqual(await valuesOf(b.registry, RETRY_METRICS.amplification), [['/work', 1]]);
    assert.deepEqual(await valuesOf(a.registry, RETRY_METRICS.amplification), []);
    const section = retrySection(await (await fetch(`${a.url}/actuator/obs`)).json());
    assert.deepEqual(section.helper, {
      calls: 1,
      retries: 2,
      gave_up: { attempts: 0, 'not-retryable': 0, budget: 0, aborted: 0 },
    });
    assert.deepEqual(
      section.requests_by_depth,
      { '0': 1, '1': 1, '2': 0, '3+': 0 },
      'the snapshot request at 0',
    );
  });
}

test('retry – a call without an inbound header starts at 0; attempts run out and the last error comes back', async (t) => {
  const b = await serviceB(100);
  t.after(() => b.close());
  const a = await startObsApp({}, (app) => {
    app.get('/call', async () => {
      try {
        return await app.obs.retry(() => callThrough('fetch', `${b.url}/work`), {
          attempts: 4,
          sleep: NO_WAIT,
        });
      } catch (error) {
        return { error: String(error) };
      }
    });
  });
  t.after(() => a.close());
  const body = await (await fetch(`${a.url}/call`)).json();
  assert.deepEqual(body, { error: 'Error: status 503' });
  assert.deepEqual(b.seen, ['0', '1', '2', '3']);
});

test('retry – with obs.retry.enabled=false it still retries and stamps nothing; no meters', async (t) => {
  const b = await serviceB(2);
  t.after(() => b.close());
  const a = await startObsApp({ config: { retry: { enabled: false } } }, (app) => {
    app.get('/call', async () =>
      app.obs.retry(() => callThrough('fetch', `${b.url}/work`), { sleep: NO_WAIT }),
    );
  });
  t.after(() => a.close());
  const response = await fetch(`${a.url}/call`, { headers: { 'Obs-Retry-Depth': '1' } });
  assert.equal(response.status, 200);
  assert.deepEqual(b.seen, [undefined, undefined, undefined]);
  assert.equal(a.registry.getSingleMetric(RETRY_METRICS.retries), undefined);
  const section = retrySection(await (await fetch(`${a.url}/actuator/obs`)).json());
  assert.equal(section.enabled, false);
  assert.equal((section.helper as { retries: number }).retries, 2);
});

// ---------------------------------------------------------------------------------------------
// the helper's options and stops

/** obs without fastify, with the retry feature's figures and meters. */
function bareObs() {
  const obs = createObs({ env: {}, logger: capturingLogger(), registry: new Registry() });
  registerRetry(obs);
  return obs;
}

test('retry – attempts: default 3, at most 10; every retry waits the backoff (exponential, capped)', async () => {
  const obs = bareObs();
  const run = async (options: Parameters<typeof obs.retry>[1]) => {
    const attempts: number[] = [];
    const waits: number[] = [];
    await assert.rejects(
      obs.retry(
        async (attempt) => {
          attempts.push(attempt);
          throw new Error('down');
        },
        {
          ...options,
          sleep: async (ms) => {
            waits.push(ms);
          },
        },
      ),
      /down/,
    );
    return { attempts: attempts.length, waits };
  };
  assert.deepEqual(await run({}), { attempts: 3, waits: [50, 100] });
  assert.deepEqual((await run({ attempts: 10 })).attempts, 10);
  assert.deepEqual(await run({ attempts: 5, delayMs: 400, maxDelayMs: 1000 }), {
    attempts: 5,
    waits: [400, 800, 1000, 1000],
  });
  assert.deepEqual(await run({ attempts: 3, delayMs: 7, backoff: 'fixed' }), { attempts: 3, waits: [7, 7] });
  assert.deepEqual(await run({ attempts: 1 }), { attempts: 1, waits: [] });
});

test('retry – a bad option rejects with OBS_ERR_INVALID_RETRY_OPTION, before any attempt; it never throws', async () => {
  const obs = bareObs();
  let called = 0;
  const fn = async () => {
    called += 1;
  };
  const bad: Array<[unknown, RegExp]> = [
    [{ attempts: 11 }, /attempts = 11: expected an integer from 1 to 10/],
    [{ attempts: 0 }, /attempts = 0/],
    [{ attempts: 2.5 }, /attempts = 2.5/],
    [{ attempts: '3' }, /attempts = "3"/],
    [{ delayMs: -1 }, /delayMs = -1: expected an integer from 0 to 60000/],
    [{ maxDelayMs: 60_001 }, /maxDelayMs = 60001/],
    [{ backoff: 'linear' }, /backoff = "linear": expected "exponential" or "fixed"/],
    [{ retryOn: true }, /retryOn = true: expected a function/],
    [{ sleep: 5 }, /sleep = 5: expected a function/],
    [{ signal: {} }, /signal = \{\}: expected an AbortSignal/],
    ['fast', /options = "fast": expected an object/],
    [{ attemps: 3 }, /attemps = 3: expected no such option; did you mean attempts\?/],
    [{ zzzzzzzzzz: 1 }, /zzzzzzzzzz = 1: expected no such option \(options: attempts, delayMs/],
  ];
  for (const [options, message] of bad) {
    let promise: Promise<unknown> | undefined;
    assert.doesNotThrow(() => {
      promise = obs.retry(fn, options as Parameters<typeof obs.retry>[1]);
    });
    await assert.rejects(
      promise!,
      (error: { code?: string; message?: string }) =>
        error.code === 'OBS_ERR_INVALID_RETRY_OPTION' && message.test(error.message ?? ''),
      JSON.stringify(options),
    );
  }
  await assert.rejects(
    obs.retry('nope' as never),
    (error: { code?: string }) => error.code === 'OBS_ERR_INVALID_RETRY_OPTION',
  );
  assert.equal(called, 0);
});

test('retry – retryOn decides; by default a call refused for an exhausted budget is not retried', async () => {
  const obs = bareObs();
  let calls = 0;
  const refused = new TimeoutBudgetExhaustedError('fetch', 0, 100);
  await assert.rejects(
    obs.retry(
      async () => {
        calls += 1;
        throw refused;
      },
      { sleep: NO_WAIT },
    ),
    (error) => error === refused,
  );
  assert.equal(calls, 1);
  calls = 0;
  await assert.rejects(
    obs.retry(
      async () => {
        calls += 1;
        throw new Error(calls === 1 ? 'transient' : 'fatal');
      },
      { retryOn: (error) => String(error).includes('transient'), sleep: NO_WAIT, attempts: 5 },
    ),
    /fatal/,
  );
  assert.equal(calls, 2);
  assert.deepEqual(
    (obs.snapshot().sections.retry as { helper: { gave_up: Record<string, number> } }).helper.gave_up,
    { attempts: 0, 'not-retryable': 2, budget: 0, aborted: 0 },
  );
});

test('retry – an aborted signal stops the retries', async () => {
  const obs = bareObs();
  const controller = new AbortController();
  let calls = 0;
  await assert.rejects(
    obs.retry(
      async (_attempt, signal) => {
        calls += 1;
        assert.equal(signal, controller.signal);
        controller.abort();
        throw new Error('down');
      },
      { signal: controller.signal, attempts: 5 },
    ),
    /down/,
  );
  assert.equal(calls, 1);
});

test('retry – inside a request it stops when the timeout budget, less the next wait, is at or below minimum-budget', async (t) => {
  let calls: number[] = [];
  const a = await startObsApp({}, (app) => {
    app.get('/call', async (request) => {
      calls = [];
      const delayMs = Number((request.query as { delay?: string }).delay ?? '0');
      try {
        await app.obs.retry(
          async (attempt) => {
            calls.push(attempt);
            throw new Error('down');
          },
          { delayMs, maxDelayMs: 60_000, sleep: NO_WAIT, attempts: 4 },
        );
      } catch {
        // expected
      }
      return { calls };
    });
  });
  t.after(() => a.close());
  const call = async (path: string, budgetMs: string) =>
    (
      (await (await fetch(`${a.url}${path}`, { headers: { 'obs-timeout-ms': budgetMs } })).json()) as {
        calls: number[];
      }
    ).calls;
  assert.deepEqual(await call('/call', '0'), [0], 'no budget left: no retry');
  assert.deepEqual(await call('/call?delay=20000', '5000'), [0], 'the wait would spend the budget');
  assert.deepEqual(await call('/call', '20000'), [0, 1, 2, 3], 'room enough: every attempt');
  const section = retrySection(await (await fetch(`${a.url}/actuator/obs`)).json());
  assert.deepEqual((section.helper as { gave_up: object }).gave_up, {
    attempts: 1,
    'not-retryable': 0,
    budget: 2,
    aborted: 0,
  });
});

test('retry – outside a request it still retries; the depth goes 0 → n in the baggage only', async (t) => {
  realOtel(t);
  const obs = bareObs();
  const seen: Array<[string | null, number | null]> = [];
  await obs.retry(
    async (attempt) => {
      seen.push([
        propagation.getBaggage(context.active())?.getEntry(RETRY_DEPTH_BAGGAGE_KEY)?.value ?? null,
        currentObsContext()?.retryDepth ?? null,
      ]);
      if (attempt < 2) throw new Error('again');
    },
    { sleep: NO_WAIT },
  );
  assert.deepEqual(seen, [
    [null, null],
    ['1', null],
    ['2', null],
  ]);
});

test('retry – /actuator/obs has the retry section: header, baggage key, threshold and live figures', async (t) => {
  const { app } = await depthApp(t);
  await depthOf(app, { 'obs-retry-depth': '1' });
  await depthOf(app, { 'obs-retry-depth': '2' });
  await depthOf(app, { 'obs-retry-depth': '7' });
  await depthOf(app, { 'obs-retry-depth': 'x' });
  const snapshot = (await app.inject({ url: '/actuator/obs' })).json();
  const section = retrySection(snapshot);
  assert.equal(section.enabled, true);
  assert.deepEqual(section.config, {
    enabled: true,
    'amplification-threshold': 3,
    'header-name': 'Obs-Retry-Depth',
  });
  assert.equal(section.header, 'Obs-Retry-Depth');
  assert.equal(section.baggage, 'obs.retry.depth');
  assert.equal(section.threshold, 3);
  // The snapshot's own request is at depth 0.
  assert.deepEqual(section.requests_by_depth, { '0': 2, '1': 1, '2': 1, '3+': 1 });
  assert.deepEqual(section.invalid, { header: 1, baggage: 0 });
  assert.equal(section.flagged, 1);
  const feature = (snapshot.features as Record<string, { status: string; enabled: boolean }>).retry;
  assert.deepEqual([feature?.status, feature?.enabled], ['built', true]);
});
