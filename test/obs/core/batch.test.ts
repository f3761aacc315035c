import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { seededRandom as seeded } from '../../../src/echo/random.ts';
import {
  CardinalityFirewall,
  CounterBatch,
  type EnforcementMode,
  guardRegistry,
  HistogramBatch,
  registryGuard,
} from '../../../src/obs/index.ts';

/** A scrape's lines, sorted: a series first recorded at a flush comes later in prom-client's order. */
async function scrape(registry: Registry): Promise<string[]> {
  return (await registry.metrics()).split('\n').sort();
}

interface Pair {
  readonly registry: Registry;
  readonly counter: Counter<'method' | 'path' | 'status'>;
  readonly histogram: Histogram<'path'>;
}

function guarded(mode: EnforcementMode, cap: number): Pair {
  const registry = new Registry();
  guardRegistry(registry, new CardinalityFirewall({ maxValuesPerTag: cap, mode: () => mode }));
  const counter = new Counter({
    name: 'requests_total',
    help: 'h',
    labelNames: ['method', 'path', 'status'],
    registers: [registry],
  });
  const histogram = new Histogram({
    name: 'duration_seconds',
    help: 'h',
    labelNames: ['path'],
    buckets: [0.01, 0.1, 1],
    registers: [registry],
  });
  return { registry, counter, histogram };
}

for (const mode of ['ENFORCING', 'DRY_RUN'] as const) {
  test(`batch – a scrape shows what recording each value directly shows, over the cardinality cap (${mode})`, async () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const random = seeded(seed);
      const direct = guarded(mode, 5);
      const batched = guarded(mode, 5);
      const counts = new CounterBatch(batched.counter, { firewall: registryGuard(batched.registry) });
      const durations = new HistogramBatch(batched.histogram, {
        firewall: registryGuard(batched.registry),
        maxSeries: 6,
      });
      // 9 paths against a cap of 5: some series are past the cap, and more than maxSeries exist
      for (let i = 0; i < 700; i++) {
        const path = `/p${Math.floor(random() * 9)}`;
        const method = random() < 0.5 ? 'GET' : 'POST';
        const status = random() < 0.8 ? 200 : 503;
        const seconds = random() * 2;
        direct.counter.inc({ method, path, status });
        counts.inc(`${method}\u0000${status}\u0000${path}`, { method, path, status });
        direct.histogram.observe({ path }, seconds);
        durations.observe(path, { path }, seconds);
        // scrapes now and then, in the middle of a histogram series' buffer
        if (i % 250 === 249) assert.deepEqual(await scrape(batched.registry), await scrape(direct.registry));
      }
      const want = await direct.registry.metrics();
      assert.match(want, /obs_cardinality_overflow_total\{meter="requests_total",tag_key="path"\} [1-9]/);
      if (mode === 'ENFORCING') assert.match(want, /path="OVERFLOW"/);
      assert.deepEqual(await scrape(batched.registry), await scrape(direct.registry), `seed ${seed}`);
      // get() (what the SLO engine reads) flushes too, and keeps the label values' types
      const direct2 = guarded(mode, 5);
      const batched2 = guarded(mode, 5);
      const counts2 = new CounterBatch(batched2.counter);
      direct2.counter.inc({ method: 'GET', path: '/a', status: 200 });
      counts2.inc('GET 200 /a', { method: 'GET', path: '/a', status: 200 });
      assert.deepEqual(await batched2.counter.get(), await direct2.counter.get());
    }
  });
}

/** A counter `c_total` and a histogram `h_seconds` (one bucket, 1) with one label `k`, and their batches. */
function oneLabel(collect?: () => void) {
  const registry = new Registry();
  const counter = new Counter({
    name: 'c_total',
    help: 'h',
    labelNames: ['k'],
    registers: [registry],
    collect,
  });
  const histogram = new Histogram({
    name: 'h_seconds',
    help: 'h',
    labelNames: ['k'],
    buckets: [1],
    registers: [registry],
  });
  return {
    registry,
    counter,
    histogram,
    counts: new CounterBatch(counter),
    observations: new HistogramBatch(histogram),
  };
}

test('batch – nothing reaches prom-client until the metric is read; a full histogram series hands its values over', async () => {
  const { registry, counter, histogram, counts, observations } = oneLabel();
  for (let i = 0; i < 3; i++) counts.inc('a', { k: 'a' });
  for (let i = 0; i < 64; i++) observations.observe('a', { k: 'a' }, 0.5);
  observations.observe('a', { k: 'a' }, 0.5);
  // prom-client's own store, read without collect: the counter's increments wait, the histogram's
  // first 64 observations went over when its buffer filled
  const store = (m: object) =>
    Object.values((m as { hashMap: Record<string, { value?: number; count?: number }> }).hashMap);
  assert.deepEqual(store(counter), []);
  assert.equal(store(histogram)[0]?.count, 64);
  const text = await registry.metrics();
  assert.match(text, /^c_total\{k="a"\} 3$/m);
  assert.match(text, /^h_seconds_count\{k="a"\} 65$/m);
  assert.match(text, /^h_seconds_sum\{k="a"\} 32\.5$/m);
});

test('batch – the metric keeps its own collect, and a value prom-client refuses throws at the call', async () => {
  let collected = 0;
  const { registry, counts, observations } = oneLabel(() => {
    collected++;
  });
  counts.inc('a', { k: 'a' });
  await registry.metrics();
  assert.equal(collected, 1);
  assert.throws(() => observations.observe('a', { k: 'a' }, Number.NaN), /not a valid number/);
  assert.throws(() => counts.inc('b', { nope: 'b' } as never), /not included in initial labelset/);
  assert.match(await registry.metrics(), /^c_total\{k="a"\} 1$/m);
});

test('batch – reset() drops what waits as well as what prom-client holds', async () => {
  const { registry, counter, histogram, counts, observations } = oneLabel();
  counts.inc('a', { k: 'a' });
  observations.observe('a', { k: 'a' }, 0.5);
  await registry.metrics(); // handed over: 1 and 1
  counts.inc('a', { k: 'a' });
  observations.observe('a', { k: 'a' }, 0.5);
  counter.reset();
  histogram.reset();
  counts.inc('a', { k: 'a' });
  observations.observe('a', { k: 'a' }, 2);
  const text = await registry.metrics();
  assert.match(text, /^c_total\{k="a"\} 1$/m);
  assert.match(text, /^h_seconds_count\{k="a"\} 1$/m);
  assert.match(text, /^h_seconds_sum\{k="a"\} 2$/m);
});

test("batch – a histogram series is added to prom-client's own store, not observed value by value", async () => {
  const { registry, histogram, observations } = oneLabel();
  let observed = 0;
  const observe = histogram.observe.bind(histogram);
  histogram.observe = ((...args: Parameters<typeof observe>) => {
    observed++;
    return observe(...args);
  }) as typeof histogram.observe;
  // 64 values fill the series' buffer: handed over at once; the rest at the scrape.
  for (let i = 0; i < 70; i++) observations.observe('a', { k: 'a' }, i % 2 === 0 ? 0.25 : 3);
  const text = await registry.metrics();
  assert.equal(observed, 0);
  assert.match(text, /^h_seconds_bucket\{le="1",k="a"\} 35$/m);
  assert.match(text, /^h_seconds_bucket\{le="\+Inf",k="a"\} 70$/m);
  assert.match(text, /^h_seconds_sum\{k="a"\} 113\.75$/m);
  assert.match(text, /^h_seconds_count\{k="a"\} 70$/m);
});

test('batch – a series that leaves a label of the metric out is recorded directly, at each call, as without a batch', async () => {
  const make = () => {
    const registry = new Registry();
    const histogram = new Histogram({
      name: 'partial_seconds',
      help: 'h',
      labelNames: ['path', 'tenant'],
      buckets: [0.1, 1],
      registers: [registry],
    });
    return { registry, histogram };
  };
  const direct = make();
  const batched = make();
  const batch = new HistogramBatch(batched.histogram);
  let observed = 0;
  const observe = batched.histogram.observe.bind(batched.histogram);
  batched.histogram.observe = ((...args: Parameters<typeof observe>) => {
    observed++;
    return observe(...args);
  }) as typeof batched.histogram.observe;
  for (const value of [0.05, 0.5, 5, 0.5]) {
    direct.histogram.observe({ path: '/a' }, value);
    batch.observe('/a', { path: '/a' }, value);
    direct.histogram.observe({ path: '/b', tenant: 't' }, value);
    batch.observe('/b t', { path: '/b', tenant: 't' }, value);
  }
  // '/a' lacks `tenant`: its four values were observed at their calls, before any scrape (where
  // obs's context labels fill it from the request being recorded); '/b t' names both: none was.
  assert.equal(observed, 4);
  assert.deepEqual(await scrape(batched.registry), await scrape(direct.registry));
  assert.equal(observed, 4);
});
