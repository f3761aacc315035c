import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import {
  BrokenCircuitError,
  bulkhead,
  CircuitState,
  ConsecutiveBreaker,
  ConstantBackoff,
  circuitBreaker,
  handleAll,
  retry,
  TimeoutStrategy,
  timeout,
  wrap,
} from 'cockatiel';
import CircuitBreaker from 'opossum';
import { Registry } from 'prom-client';
import {
  createObs,
  currentObsContext,
  instrumentBreaker,
  instrumentPolicy,
  MAX_INSTRUMENTED_RESILIENCE,
  type Obs,
  type ObsConfigInput,
} from '../../../src/obs/index.ts';
import {
  CIRCUIT_TRANSITION_EVENT,
  MAX_RESILIENCE_NAME_LENGTH,
  RESILIENCE_METRICS,
} from '../../../src/obs/integrations/resilience.ts';
import { installOtelSdk } from '../../helpers/otel-sdk.ts';
import { until } from '../../helpers/runtime.ts';
import {
  type CapturingLogger,
  capturingLogger,
  injectableObsApp,
  type RunningObsApp,
  startObsApp,
} from '../helpers.ts';

function makeObs(
  t: { after(fn: () => void): void },
  config: ObsConfigInput = {},
): { obs: Obs; registry: Registry; logger: CapturingLogger } {
  const registry = new Registry();
  const logger = capturingLogger();
  const obs = createObs({ env: {}, registry, logger, config });
  t.after(() => obs.close());
  return { obs, registry, logger };
}

/** The series of a meter as sorted `label=value,…` → value pairs. */
async function series(registry: Registry, name: string): Promise<Array<[string, number]>> {
  const metric = await registry.getSingleMetric(name)?.get();
  return (metric?.values ?? [])
    .map(
      (v) =>
        [
          Object.entries(v.labels)
            .map(([k, l]) => `${k}=${l}`)
            .join(','),
          v.value,
        ] as [string, number],
    )
    .sort();
}

async function stateOf(registry: Registry, breaker: string): Promise<string[]> {
  return (await series(registry, RESILIENCE_METRICS.circuitState))
    .filter(([labels, value]) => labels.startsWith(`breaker=${breaker},`) && value === 1)
    .map(([labels]) => labels.split('state=')[1] ?? '');
}

function failing(): Promise<never> {
  return Promise.reject(new Error('down'));
}

function transitionLines(logger: CapturingLogger) {
  return logger.lines
    .filter((l) => (l.object as { obs?: string; to?: string }).obs === 'resilience' && 'to' in l.object)
    .map((l) => `${l.level} ${(l.object as { from: string }).from}->${(l.object as { to: string }).to}`);
}

// ---------------------------------------------------------------------------------------------
// opossum

test('resilience – an opossum breaker that fails opens: state gauge, transition, calls, a warning', async (t) => {
  const { obs, registry, logger } = makeObs(t);
  let healthy = false;
  const breaker = new CircuitBreaker(async () => (healthy ? 'ok' : failing()), {
    name: 'payments',
    volumeThreshold: 2,
    errorThresholdPercentage: 50,
    resetTimeout: 200, // long enough for the next call to find it open, even on a loaded machine
  });
  t.after(() => breaker.shutdown());
  assert.equal(instrumentBreaker(breaker, obs), breaker);
  assert.deepEqual(await stateOf(registry, 'payments'), ['closed'], 'the state is known from the start');

  const opened = once(breaker, 'open');
  await breaker.fire().catch(() => undefined);
  await breaker.fire().catch(() => undefined);
  await opened;
  assert.deepEqual(await stateOf(registry, 'payments'), ['open']);
  assert.deepEqual(await series(registry, RESILIENCE_METRICS.circuitState), [
    ['breaker=payments,state=closed', 0],
    ['breaker=payments,state=half_open', 0],
    ['breaker=payments,state=open', 1],
  ]);
  assert.deepEqual(await series(registry, RESILIENCE_METRICS.circuitTransitions), [
    ['breaker=payments,from=closed,to=open', 1],
  ]);
  const warning = logger.lines.find((l) => l.level === 'warn' && (l.object as { to?: string }).to === 'open');
  assert.ok(warning, 'opening logs a warning');
  assert.deepEqual(warning.object, {
    obs: 'resilience',
    breaker: 'payments',
    library: 'opossum',
    from: 'closed',
    to: 'open',
  });
  assert.match(warning.message ?? '', /circuit breaker payments went from closed to open/);

  // an open breaker rejects; resetTimeout later it is half-open, and a success closes it
  await breaker.fire().catch(() => undefined);
  const halfOpen = breaker.halfOpen ? Promise.resolve() : once(breaker, 'halfOpen');
  await halfOpen;
  assert.deepEqual(await stateOf(registry, 'payments'), ['half_open']);
  healthy = true;
  const closed = once(breaker, 'close');
  assert.equal(await breaker.fire(), 'ok');
  await closed;
  assert.deepEqual(await stateOf(registry, 'payments'), ['closed']);
  assert.deepEqual(await series(registry, RESILIENCE_METRICS.circuitTransitions), [
    ['breaker=payments,from=closed,to=open', 1],
    ['breaker=payments,from=half_open,to=closed', 1],
    ['breaker=payments,from=open,to=half_open', 1],
  ]);
  assert.deepEqual(transitionLines(logger), [
    'warn closed->open',
    'info open->half_open',
    'info half_open->closed',
  ]);
  const calls = new Map(await series(registry, RESILIENCE_METRICS.circuitCalls));
  assert.equal(calls.get('breaker=payments,outcome=failure'), 2);
  assert.ok((calls.get('breaker=payments,outcome=rejected') ?? 0) >= 1, 'the call while open was rejected');
  assert.equal(calls.get('breaker=payments,outcome=success'), 1);

  const snapshot = obs.snapshot().sections.resilience as Record<string, unknown>;
  assert.equal(snapshot.enabled, true);
  assert.equal(snapshot.breakers_total, 1);
  const [entry] = snapshot.breakers as Array<Record<string, unknown>>;
  assert.equal(entry?.name, 'payments');
  assert.equal(entry?.library, 'opossum');
  assert.equal(entry?.state, 'closed');
  assert.equal(entry?.transitions, 3);
  assert.equal((entry?.calls as Record<string, number> | undefined)?.failure, 2);
});

test('resilience – opossum: timeouts and fallbacks are outcomes; the name option wins; once is enough', async (t) => {
  const { obs, registry } = makeObs(t);
  // the action never answers: opossum's 5 ms timeout ends each call
  const breaker = new CircuitBreaker(() => new Promise<string>(() => {}), {
    name: 'own-name',
    timeout: 5,
    volumeThreshold: 100,
  });
  breaker.fallback(() => 'fallback');
  t.after(() => breaker.shutdown());
  instrumentBreaker(instrumentBreaker(breaker, obs, { name: 'search' }), obs, { name: 'search' });
  assert.equal(await breaker.fire(), 'fallback');
  const calls = new Map(await series(registry, RESILIENCE_METRICS.circuitCalls));
  // opossum reports a timeout as a failure too
  assert.equal(calls.get('breaker=search,outcome=timeout'), 1, 'counted once: instrumented once');
  assert.equal(calls.get('breaker=search,outcome=failure'), 1);
  assert.equal(calls.get('breaker=search,outcome=fallback'), 1);
  assert.ok(![...calls.keys()].some((k) => k.includes('own-name')));
});

test('resilience – a transition inside an active span is an obs.circuit.transition span event', async (t) => {
  const sdk = installOtelSdk(t);
  const { obs } = makeObs(t);
  const breaker = instrumentBreaker(
    new CircuitBreaker(failing, {
      name: 'db',
      volumeThreshold: 1,
      errorThresholdPercentage: 1,
      resetTimeout: 60_000,
    }),
    obs,
  );
  t.after(() => breaker.shutdown());
  await sdk.tracer.startActiveSpan('caller', async (span) => {
    await breaker.fire().catch(() => undefined);
    span.end();
  });
  assert.equal(breaker.opened, true);
  const [span] = await sdk.finishedSpans();
  const event = span?.events.find((e) => e.name === CIRCUIT_TRANSITION_EVENT);
  assert.deepEqual(event?.attributes, {
    'obs.circuit.breaker': 'db',
    'obs.circuit.from': 'closed',
    'obs.circuit.to': 'open',
  });
});

test('resilience – breakers are bounded in number, with one warning past the limit', async (t) => {
  const { obs, registry, logger } = makeObs(t);
  const made: CircuitBreaker[] = [];
  t.after(() => {
    for (const b of made) b.shutdown();
  });
  for (let i = 0; i <= MAX_INSTRUMENTED_RESILIENCE; i += 1) {
    const b = new CircuitBreaker(async () => 'ok', { name: `b${i}` });
    made.push(b);
    instrumentBreaker(b, obs);
  }
  const snapshot = obs.snapshot().sections.resilience as Record<string, unknown>;
  assert.equal(snapshot.breakers_total, MAX_INSTRUMENTED_RESILIENCE);
  assert.equal(snapshot.refused_over_limit, 1);
  assert.equal(
    logger.lines.filter((l) => /go uninstrumented/.test(l.message ?? '')).length,
    1,
    'one warning for the limit',
  );
  const last = made.at(-1);
  await last?.fire();
  assert.deepEqual(
    await stateOf(registry, `b${MAX_INSTRUMENTED_RESILIENCE}`),
    [],
    'past the limit: no series',
  );

  assert.equal(
    (await series(registry, RESILIENCE_METRICS.circuitState)).length,
    MAX_INSTRUMENTED_RESILIENCE * 3,
    'three series per breaker, no more',
  );
});

test('resilience – breaker names pass the cardinality firewall', async (t) => {
  // the plugin guards obs.registry; the resilience meters, made later in it, are guarded too
  const app = await injectableObsApp(t, {
    config: { enforcement: { mode: 'ENFORCING' }, cardinality: { 'max-tag-values-per-meter': 2 } },
  });
  const obs = app.obs;
  const registry = obs.registry;
  const made = ['a', 'b', 'c'].map((name) =>
    instrumentBreaker(new CircuitBreaker(async () => 'ok', { name }), obs),
  );
  t.after(() => {
    for (const b of made) b.shutdown();
  });
  const names = new Set(
    (await series(registry, RESILIENCE_METRICS.circuitState)).map(([l]) => l.split(',')[0]),
  );
  assert.deepEqual([...names].sort(), ['breaker=OVERFLOW', 'breaker=a', 'breaker=b']);
});

test('resilience – a long breaker name is cut', async (t) => {
  const { obs, registry } = makeObs(t);
  const breaker = instrumentBreaker(new CircuitBreaker(async () => 'ok'), obs, { name: 'x'.repeat(1000) });
  t.after(() => breaker.shutdown());
  const [first] = await series(registry, RESILIENCE_METRICS.circuitState);
  assert.equal(first?.[0], `breaker=${'x'.repeat(MAX_RESILIENCE_NAME_LENGTH)},state=closed`);
});

// ---------------------------------------------------------------------------------------------
// cockatiel

test('resilience – a cockatiel ConsecutiveBreaker(2) opens, refuses, goes half-open and closes', async (t) => {
  const { obs, registry, logger } = makeObs(t);
  const policy = circuitBreaker(handleAll, { halfOpenAfter: 200, breaker: new ConsecutiveBreaker(2) });
  assert.equal(instrumentPolicy(policy, obs, { name: 'inventory' }), policy);
  assert.deepEqual(await stateOf(registry, 'inventory'), ['closed']);

  await policy.execute(failing).catch(() => undefined);
  await policy.execute(failing).catch(() => undefined);
  assert.equal(policy.state, CircuitState.Open);
  assert.deepEqual(await stateOf(registry, 'inventory'), ['open']);
  await assert.rejects(
    policy.execute(() => 'ok'),
    BrokenCircuitError,
    'the policy still refuses the same',
  );

  // half-open comes on the first call after halfOpenAfter: try until the breaker lets one through
  const reset = new Promise<void>((resolve) => policy.onReset(() => resolve()));
  await until(
    'the breaker lets a call through after halfOpenAfter',
    async () => {
      const result = await policy.execute(() => 'ok').catch((error: unknown) => error);
      if (result === 'ok') return true;
      assert.ok(result instanceof BrokenCircuitError);
      return false;
    },
    10_000,
    10,
  );
  await reset;
  assert.deepEqual(await stateOf(registry, 'inventory'), ['closed']);
  assert.deepEqual(await series(registry, RESILIENCE_METRICS.circuitTransitions), [
    ['breaker=inventory,from=closed,to=open', 1],
    ['breaker=inventory,from=half_open,to=closed', 1],
    ['breaker=inventory,from=open,to=half_open', 1],
  ]);
  assert.deepEqual(transitionLines(logger), [
    'warn closed->open',
    'info open->half_open',
    'info half_open->closed',
  ]);
  const calls = new Map(await series(registry, RESILIENCE_METRICS.circuitCalls));
  assert.equal(calls.get('breaker=inventory,outcome=failure'), 2);
  assert.equal(calls.get('breaker=inventory,outcome=success'), 1);
  assert.ok((calls.get('breaker=inventory,outcome=rejected') ?? 0) >= 1);
  const [entry] = (obs.snapshot().sections.resilience as { breakers: Array<Record<string, unknown>> })
    .breakers;
  assert.equal(entry?.library, 'cockatiel');
  assert.equal(entry?.state, 'closed');
});

/** A downstream fastify service that fails `failures` times, then answers; it keeps the depths seen. */
async function downstream(failures: number): Promise<RunningObsApp & { seen: Array<string | undefined> }> {
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

async function fetchJson(url: string): Promise<unknown> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`status ${response.status}`);
  return response.json();
}

for (const inbound of [undefined, '1'] as const) {
  test(`resilience – a cockatiel retry in a request raises the retry depth of each attempt (inbound ${inbound ?? 'none'})`, async (t) => {
    const b = await downstream(2);
    t.after(() => b.close());
    const a = await startObsApp({}, (app) => {
      const policy = instrumentPolicy(
        retry(handleAll, { maxAttempts: 3, backoff: new ConstantBackoff(0) }),
        app.obs,
        { name: 'to-b' },
      );
      app.get('/call', async () =>
        policy.execute(async ({ attempt }) => ({ attempt, body: await fetchJson(`${b.url}/work`) })),
      );
    });
    t.after(() => a.close());
    const response = await fetch(
      `${a.url}/call`,
      inbound === undefined ? {} : { headers: { 'Obs-Retry-Depth': inbound } },
    );
    assert.equal(response.status, 200);
    const base = Number(inbound ?? 0);
    assert.deepEqual(await response.json(), { attempt: 2, body: { done: true, depth: base + 2 } });
    assert.deepEqual(b.seen, [String(base), String(base + 1), String(base + 2)]);
    assert.deepEqual(await series(a.registry, RESILIENCE_METRICS.retries), [['policy=to-b', 2]]);
    const section = (await (await fetch(`${a.url}/actuator/obs`)).json()) as {
      sections: { resilience: { retry_policies: unknown } };
    };
    const retryPolicies = section.sections.resilience.retry_policies;
    assert.deepEqual(retryPolicies, [{ name: 'to-b', retries: 2, gave_up: 0 }]);
  });
}

test('resilience – wrap(retry, breaker): the retry raises the depth, the breaker counts each attempt', async (t) => {
  const b = await downstream(1);
  t.after(() => b.close());
  const a = await startObsApp({}, (app) => {
    const policy = instrumentPolicy(
      wrap(
        retry(handleAll, { maxAttempts: 2 }),
        circuitBreaker(handleAll, { halfOpenAfter: 60_000, breaker: new ConsecutiveBreaker(5) }),
        timeout(5_000, TimeoutStrategy.Cooperative),
      ),
      app.obs,
      { name: 'b' },
    );
    app.get('/call', async () => policy.execute(() => fetchJson(`${b.url}/work`)));
  });
  t.after(() => a.close());
  assert.equal((await fetch(`${a.url}/call`)).status, 200);
  assert.deepEqual(b.seen, ['0', '1']);
  assert.deepEqual(await series(a.registry, RESILIENCE_METRICS.retries), [['policy=b', 1]]);
  const calls = new Map(await series(a.registry, RESILIENCE_METRICS.circuitCalls));
  assert.equal(calls.get('breaker=b,outcome=failure'), 1);
  assert.equal(calls.get('breaker=b,outcome=success'), 1);
});

test('resilience – a cockatiel bulkhead counts its rejections', async (t) => {
  const { obs, registry } = makeObs(t);
  const policy = instrumentPolicy(bulkhead(1, 0), obs, { name: 'pool' });
  let release: () => void = () => {};
  const held = policy.execute(() => new Promise<void>((resolve) => (release = resolve)));
  await assert.rejects(policy.execute(() => 'second'));
  release();
  await held;
  assert.deepEqual(await series(registry, RESILIENCE_METRICS.bulkheadRejections), [['policy=pool', 1]]);
});

test('resilience – with obs.resilience.enabled=false nothing is instrumented', async (t) => {
  const { obs, registry } = makeObs(t, { resilience: { enabled: false } });
  const breaker = new CircuitBreaker(failing, {
    name: 'off',
    volumeThreshold: 1,
    errorThresholdPercentage: 1,
  });
  t.after(() => breaker.shutdown());
  const listeners = breaker.listenerCount('open');
  assert.equal(instrumentBreaker(breaker, obs), breaker);
  assert.equal(breaker.listenerCount('open'), listeners, 'no listener added');
  const policy = retry(handleAll, { maxAttempts: 1 });
  const execute = policy.execute;
  assert.equal(instrumentPolicy(policy, obs, { name: 'off' }), policy);
  assert.equal(policy.execute, execute, 'execute untouched');
  await breaker.fire().catch(() => undefined);
  await policy.execute(failing).catch(() => undefined);
  for (const name of Object.values(RESILIENCE_METRICS)) {
    assert.equal(registry.getSingleMetric(name), undefined, `${name} not made`);
  }
  const section = obs.snapshot().sections.resilience as Record<string, unknown> | undefined;
  assert.ok(section === undefined || section.enabled === false);
});

test('resilience – something else handed over is logged, handed back, and fails nothing', async (t) => {
  const { obs, logger } = makeObs(t);
  const notABreaker = { name: 'x' } as unknown as CircuitBreaker;
  assert.equal(instrumentBreaker(notABreaker, obs), notABreaker);
  const notAPolicy = {} as unknown as ReturnType<typeof retry>;
  assert.equal(instrumentPolicy(notAPolicy, obs, { name: 'x' }), notAPolicy);
  assert.equal(logger.lines.filter((l) => /could not instrument/.test(l.message ?? '')).length, 2);
});
