import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Counter, Gauge, Histogram, Registry, Summary } from 'prom-client';
import {
  CARDINALITY_OVERFLOW_METRIC,
  CardinalityFirewall,
  OVERFLOW_VALUE,
} from '../../../../src/obs/core/cardinality.ts';
import { guardRegistry } from '../../../../src/obs/core/meters.ts';
import {
  addContextLabel,
  NO_CONTEXT_LABEL_VALUE,
} from '../../../../src/obs/features/request-context/context-meter-labels.ts';

/** A context whose value the test sets: what the label reads when a meter records. */
function injected() {
  let value: string | undefined;
  return {
    current: () => value,
    set(next: string | undefined) {
      value = next;
    },
  };
}

async function series(metric: { get(): Promise<{ values: Array<{ labels: object; value: number }> }> }) {
  return (await metric.get()).values.map((v) => [v.labels, v.value]);
}

const labelNamesOf = (metric: object) => (metric as { labelNames?: readonly string[] }).labelNames;

test('context meter labels – a counter present before and one registered after get the label', async () => {
  const registry = new Registry();
  const ctx = injected();
  const before = new Counter({
    name: 'before_total',
    help: 'h',
    labelNames: ['kind'],
    registers: [registry],
  });
  addContextLabel(registry, {
    label: 'tenant',
    meters: ['before_total', 'after_total'],
    current: ctx.current,
  });
  const after = new Counter({ name: 'after_total', help: 'h', registers: [registry] });
  const untouched = new Counter({ name: 'untouched_total', help: 'h', registers: [registry] });
  assert.deepEqual(labelNamesOf(before), ['kind', 'tenant']);
  assert.deepEqual(labelNamesOf(after), ['tenant']);
  assert.deepEqual(labelNamesOf(untouched), []);
  ctx.set('a');
  before.inc({ kind: 'x' });
  before.inc({ kind: 'x' }, 2);
  after.inc();
  after.inc(3);
  untouched.inc();
  ctx.set(undefined);
  before.inc({ kind: 'x' });
  after.inc();
  assert.deepEqual(await series(before), [
    [{ kind: 'x', tenant: 'a' }, 3],
    [{ kind: 'x', tenant: NO_CONTEXT_LABEL_VALUE }, 1],
  ]);
  // no unlabelled series is left beside the labelled ones
  assert.deepEqual(await series(after), [
    [{ tenant: 'a' }, 4],
    [{ tenant: 'none' }, 1],
  ]);
  assert.deepEqual(await series(untouched), [[{}, 1]]);
});

test('context meter labels – labels(...) children read the context when they record', async () => {
  const registry = new Registry();
  const ctx = injected();
  addContextLabel(registry, {
    label: 'priority',
    meters: ['c_total', 'g', 'h_seconds', 's_seconds'],
    current: ctx.current,
  });
  const c = new Counter({ name: 'c_total', help: 'h', labelNames: ['m', 'r'], registers: [registry] });
  const g = new Gauge({ name: 'g', help: 'h', labelNames: ['m'], registers: [registry] });
  const h = new Histogram({
    name: 'h_seconds',
    help: 'h',
    labelNames: ['m'],
    buckets: [1],
    registers: [registry],
  });
  const s = new Summary({ name: 's_seconds', help: 'h', labelNames: ['m'], registers: [registry] });
  const children = [c.labels('GET', '200'), c.labels({ m: 'GET', r: '200' })];
  const gc = g.labels('GET');
  const hc = h.labels('GET');
  const sc = s.labels({ m: 'GET' });
  for (const p of ['high', 'low']) {
    ctx.set(p);
    for (const child of children) child.inc();
    gc.set(p === 'high' ? 5 : 7);
    hc.observe(0.5);
    sc.observe(0.5);
  }
  assert.deepEqual(await series(c), [
    [{ m: 'GET', r: '200', priority: 'high' }, 2],
    [{ m: 'GET', r: '200', priority: 'low' }, 2],
  ]);
  assert.deepEqual(await series(g), [
    [{ m: 'GET', priority: 'high' }, 5],
    [{ m: 'GET', priority: 'low' }, 7],
  ]);
  const counts = (await h.get()).values.filter(
    (v) => (v as { metricName?: string }).metricName === 'h_seconds_count',
  );
  assert.deepEqual(
    counts.map((v) => [v.labels, v.value]),
    [
      [{ m: 'GET', priority: 'high' }, 1],
      [{ m: 'GET', priority: 'low' }, 1],
    ],
  );
  const summaryCounts = (await s.get()).values.filter(
    (v) => (v as { metricName?: string }).metricName === 's_seconds_count',
  );
  assert.deepEqual(
    summaryCounts.map((v) => v.labels),
    [
      { m: 'GET', priority: 'high' },
      { m: 'GET', priority: 'low' },
    ],
  );
});

test('context meter labels – gauges, histograms and summaries: every recording method', async () => {
  const registry = new Registry();
  const ctx = injected();
  addContextLabel(registry, {
    label: 'tenant',
    meters: ['g', 'h_seconds', 's_seconds'],
    current: ctx.current,
  });
  const g = new Gauge({ name: 'g', help: 'h', registers: [registry] });
  const h = new Histogram({ name: 'h_seconds', help: 'h', buckets: [1], registers: [registry] });
  const s = new Summary({ name: 's_seconds', help: 'h', labelNames: ['m'], registers: [registry] });
  ctx.set('a');
  g.set(10);
  g.inc();
  g.dec(2);
  g.inc({}, 5);
  h.zero({}); // a zeroed series, before anything is recorded in it
  h.observe(0.1);
  const endH = h.startTimer();
  s.observe({ m: 'x' }, 1);
  const endS = s.startTimer({ m: 'y' });
  const endG = g.startTimer();
  // A timer keeps the value of when it started.
  ctx.set('b');
  endH();
  endS();
  g.setToCurrentTime();
  ctx.set('a');
  endG();
  const gauge = Object.fromEntries((await g.get()).values.map((v) => [String(v.labels.tenant), v.value]));
  assert.equal(Object.keys(gauge).sort().join(), 'a,b');
  assert.ok((gauge.b ?? 0) > 1_000_000_000, 'setToCurrentTime recorded under b');
  const hCounts = (await h.get()).values.filter(
    (v) => (v as { metricName?: string }).metricName === 'h_seconds_count',
  );
  assert.deepEqual(
    hCounts.map((v) => [v.labels, v.value]),
    [[{ tenant: 'a' }, 2]],
  );
  const sCounts = (await s.get()).values.filter(
    (v) => (v as { metricName?: string }).metricName === 's_seconds_count',
  );
  assert.deepEqual(
    sCounts.map((v) => [v.labels, v.value]),
    [
      [{ m: 'x', tenant: 'a' }, 1],
      [{ m: 'y', tenant: 'a' }, 1],
    ],
  );
});

test('context meter labels – exemplar forms of inc and observe', async () => {
  const registry = new Registry<typeof Registry.OPENMETRICS_CONTENT_TYPE>();
  registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  const ctx = injected();
  addContextLabel(registry, { label: 'tenant', meters: ['e_total', 'e_seconds'], current: ctx.current });
  const c = new Counter({ name: 'e_total', help: 'h', enableExemplars: true, registers: [registry] });
  const h = new Histogram({
    name: 'e_seconds',
    help: 'h',
    enableExemplars: true,
    buckets: [1],
    registers: [registry],
  });
  ctx.set('a');
  c.inc({ value: 2, exemplarLabels: { trace_id: 't1' } });
  c.inc();
  h.observe({ value: 0.5, exemplarLabels: { trace_id: 't1' } });
  h.startTimer()();
  assert.deepEqual(await series(c), [[{ tenant: 'a' }, 3]]);
  const counts = (await h.get()).values.filter(
    (v) => (v as { metricName?: string }).metricName === 'e_seconds_count',
  );
  assert.deepEqual(
    counts.map((v) => [v.labels, v.value]),
    [[{ tenant: 'a' }, 2]],
  );
});

test('context meter labels – the cap: distinct values per meter, then OVERFLOW; none never counts', async () => {
  const registry = new Registry();
  const ctx = injected();
  const overflowed: string[] = [];
  const label = addContextLabel(registry, {
    label: 'tenant',
    meters: ['one_total', 'two_total'],
    current: ctx.current,
    maxValues: 2,
    onOverflow: (meter) => overflowed.push(meter),
  });
  const one = new Counter({ name: 'one_total', help: 'h', registers: [registry] });
  const two = new Counter({ name: 'two_total', help: 'h', registers: [registry] });
  for (const tenant of [undefined, 'a', 'b', 'c', 'a', 'd', undefined]) {
    ctx.set(tenant);
    one.inc();
  }
  ctx.set('c');
  two.inc();
  assert.deepEqual(await series(one), [
    [{ tenant: 'none' }, 2],
    [{ tenant: 'a' }, 2],
    [{ tenant: 'b' }, 1],
    [{ tenant: OVERFLOW_VALUE }, 2],
  ]);
  // the cap is per meter
  assert.deepEqual(await series(two), [[{ tenant: 'c' }, 1]]);
  assert.deepEqual(overflowed, ['one_total', 'one_total']);
  assert.equal(label.overflowed(), 2);
  assert.deepEqual(label.tagged(), ['one_total', 'two_total']);
  assert.deepEqual(label.distinct(), { one_total: 4, two_total: 1 });
});

test('context meter labels – a value the caller gives is kept (and capped); a meter declaring the label is left alone', async () => {
  const registry = new Registry();
  const ctx = injected();
  const skipped: string[] = [];
  addContextLabel(registry, {
    label: 'tenant',
    meters: ['own_total', 'given_total'],
    current: ctx.current,
    maxValues: 1,
    onSkipped: (meter) => skipped.push(meter),
  });
  const own = new Counter({ name: 'own_total', help: 'h', labelNames: ['tenant'], registers: [registry] });
  const given = new Counter({ name: 'given_total', help: 'h', registers: [registry] });
  ctx.set('ctx');
  own.inc({ tenant: 'mine' });
  given.inc({ tenant: 'explicit' });
  given.inc({ tenant: 'other' });
  assert.deepEqual(skipped, ['own_total']);
  assert.deepEqual(await series(own), [[{ tenant: 'mine' }, 1]]);
  assert.deepEqual(await series(given), [
    [{ tenant: 'explicit' }, 1],
    [{ tenant: OVERFLOW_VALUE }, 1],
  ]);
});

test('context meter labels – two labels and the cardinality firewall compose; the overflow counter is never tagged', async () => {
  const registry = new Registry();
  const firewall = new CardinalityFirewall({ maxValuesPerTag: 2 });
  guardRegistry(registry, firewall);
  const tenant = injected();
  const priority = injected();
  addContextLabel(registry, {
    label: 'priority',
    meters: ['both_total', CARDINALITY_OVERFLOW_METRIC],
    current: priority.current,
  });
  addContextLabel(registry, {
    label: 'tenant',
    meters: ['both_total', CARDINALITY_OVERFLOW_METRIC],
    current: tenant.current,
    maxValues: 100,
  });
  const both = new Histogram({
    name: 'both_total',
    help: 'h',
    labelNames: ['m'],
    buckets: [1],
    registers: [registry],
  });
  const child = both.labels('GET');
  priority.set('high');
  for (const t of ['a', 'b', 'c']) {
    tenant.set(t);
    child.observe(1);
  }
  const counts = (await both.get()).values.filter(
    (v) => (v as { metricName?: string }).metricName === 'both_total_count',
  );
  // the firewall's own cap (2) applies to the filled value too
  assert.deepEqual(
    counts.map((v) => [v.labels, v.value]),
    [
      [{ m: 'GET', priority: 'high', tenant: 'a' }, 1],
      [{ m: 'GET', priority: 'high', tenant: 'b' }, 1],
      [{ m: 'GET', priority: 'high', tenant: OVERFLOW_VALUE }, 1],
    ],
  );
  assert.deepEqual(labelNamesOf(registry.getSingleMetric(CARDINALITY_OVERFLOW_METRIC) ?? {}), [
    'meter',
    'tag_key',
  ]);
  assert.deepEqual(await series(registry.getSingleMetric(CARDINALITY_OVERFLOW_METRIC) as Counter), [
    [{ meter: 'both_total', tag_key: 'tenant' }, 1],
  ]);
});

test('context meter labels – a second obs on the same registry leaves a metric the first took in alone', async () => {
  const registry = new Registry();
  const ctx = injected();
  const skipped: string[] = [];
  addContextLabel(registry, { label: 'tenant', meters: ['m_total'], current: ctx.current });
  const m = new Counter({ name: 'm_total', help: 'h', registers: [registry] });
  addContextLabel(registry, {
    label: 'tenant',
    meters: ['m_total'],
    current: ctx.current,
    onSkipped: (meter) => skipped.push(meter),
  });
  ctx.set('a');
  m.inc();
  assert.deepEqual(skipped, []);
  assert.deepEqual(labelNamesOf(m), ['tenant']);
  assert.deepEqual(await series(m), [[{ tenant: 'a' }, 1]]);
});
