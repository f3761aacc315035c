import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MeterProvider as ApiMeterProvider, Attributes } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { Counter, Gauge, Histogram, Registry, Summary } from 'prom-client';
import { CARDINALITY_OVERFLOW_METRIC } from '../../../src/obs/core/cardinality.ts';
import { registryGuard } from '../../../src/obs/core/meters.ts';
import {
  CardinalityFirewall,
  createObs,
  type EnforcementMode,
  guardMeterProvider,
  guardRegistry,
  OBS_METRICS,
} from '../../../src/obs/index.ts';
import { capturingLogger, post, startObsApp } from '../helpers.ts';

// ---------------------------------------------------------------------------------------------
// helpers

/** Sends `count` GETs to `${url}${path(i)}`, 50 at a time, and reads every answer. */
async function hitMany(count: number, path: (i: number) => string): Promise<void> {
  for (let start = 0; start < count; start += 50) {
    const batch = [];
    for (let i = start; i < Math.min(count, start + 50); i++) {
      batch.push(
        fetch(path(i)).then(async (r) => {
          assert.equal(r.status, 200);
          await r.arrayBuffer();
        }),
      );
    }
    await Promise.all(batch);
  }
}

/** `name{label="value"} N` lines of a scrape: value of `label` → sample. */
function seriesOf(text: string, name: string, label: string): Map<string, number> {
  const out = new Map<string, number>();
  const pattern = new RegExp(`^${name}\\{(?:[^}]*,)?${label}="([^"]*)"[^}]*\\} (\\S+)$`, 'gm');
  for (const match of text.matchAll(pattern)) out.set(match[1] ?? '', Number(match[2]));
  return out;
}

function overflowCount(text: string, meter: string, tagKey: string): number {
  const line = new RegExp(
    `^obs_cardinality_overflow_total\\{meter="${meter}",tag_key="${tagKey}"\\} (\\S+)$`,
    'm',
  );
  return Number(line.exec(text)?.[1] ?? 0);
}

/** A reader that collects on demand, with the SDK's own cardinality limit out of the way. */
class TestReader extends MetricReader {
  constructor() {
    super({ cardinalitySelector: () => 100_000 });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** Data points of one instrument at the last collection. */
async function pointsOf(
  reader: TestReader,
  name: string,
): Promise<Array<{ attributes: Attributes; value: unknown }>> {
  const { resourceMetrics, errors } = await reader.collect();
  assert.deepEqual(errors, []);
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name === name) {
        return metric.dataPoints.map((p) => ({ attributes: p.attributes, value: p.value }));
      }
    }
  }
  return [];
}

function otel(firewall: CardinalityFirewall | { guardMeterProvider(p: ApiMeterProvider): ApiMeterProvider }) {
  const reader = new TestReader();
  const sdk = new MeterProvider({ readers: [reader] });
  const provider =
    firewall instanceof CardinalityFirewall
      ? guardMeterProvider(sdk, firewall)
      : firewall.guardMeterProvider(sdk);
  return { reader, sdk, meter: provider.getMeter('test') };
}

// ---------------------------------------------------------------------------------------------
// prom-client, through the plugin and real HTTP

async function labelApp(mode: EnforcementMode, cap?: number) {
  const registry = new Registry();
  // One metric exists before obs guards the registry, one is registered after.
  const latency = new Histogram({
    name: 'app_latency_seconds',
    help: 'latency',
    labelNames: ['path'],
    buckets: [0.1],
    registers: [registry],
  });
  let hits: Counter<'path'> | undefined;
  const obs = await startObsApp(
    {
      registry,
      config: {
        enforcement: { mode },
        ...(cap === undefined ? {} : { cardinality: { 'max-tag-values-per-meter': cap } }),
      },
    },
    (app) => {
      hits = new Counter({
        name: 'app_hits_total',
        help: 'hits',
        labelNames: ['path'],
        registers: [registry],
      });
      app.get<{ Params: { v: string } }>('/hit/:v', async (request) => {
        hits?.inc({ path: request.params.v });
        latency.observe({ path: request.params.v }, 0.05);
        return 'ok';
      });
      app.get('/metrics', async (_request, reply) =>
        reply.type(registry.contentType).send(await registry.metrics()),
      );
    },
  );
  return obs;
}

test('meters – prom-client, ENFORCING: 5,000 distinct label values leave the cap plus OVERFLOW, counted', async (t) => {
  const obs = await labelApp('ENFORCING');
  t.after(() => obs.close());
  await hitMany(5000, (i) => `${obs.url}/hit/p${i}`);
  const text = await (await fetch(`${obs.url}/metrics`)).text();
  const hits = seriesOf(text, 'app_hits_total', 'path');
  assert.equal(hits.size, 1001, 'the cap of 1000, plus OVERFLOW');
  assert.equal(hits.get('OVERFLOW'), 4000);
  assert.equal(hits.get('p0'), 1);
  const latency = seriesOf(text, 'app_latency_seconds_count', 'path');
  assert.equal(latency.size, 1001, 'a metric registered before obs is guarded too');
  assert.equal(latency.get('OVERFLOW'), 4000);
  assert.equal(overflowCount(text, 'app_hits_total', 'path'), 4000);
  assert.equal(overflowCount(text, 'app_latency_seconds', 'path'), 4000);
});

test('meters – prom-client, DRY_RUN: 5,000 distinct label values all pass, the overflow counted', async (t) => {
  const obs = await labelApp('DRY_RUN');
  t.after(() => obs.close());
  await hitMany(5000, (i) => `${obs.url}/hit/p${i}`);
  const text = await (await fetch(`${obs.url}/metrics`)).text();
  const hits = seriesOf(text, 'app_hits_total', 'path');
  assert.equal(hits.size, 5000);
  assert.equal(hits.has('OVERFLOW'), false);
  assert.equal(seriesOf(text, 'app_latency_seconds_count', 'path').size, 5000);
  assert.equal(overflowCount(text, 'app_hits_total', 'path'), 4000);
  assert.equal(overflowCount(text, 'app_latency_seconds', 'path'), 4000);
});

test('meters – prom-client: POST /actuator/obs/enforcement takes effect on the very next value', async (t) => {
  const obs = await labelApp('ENFORCING', 2);
  t.after(() => obs.close());
  const hit = async (v: string) => assert.equal((await fetch(`${obs.url}/hit/${v}`)).status, 200);
  const paths = async () =>
    seriesOf(await (await fetch(`${obs.url}/metrics`)).text(), 'app_hits_total', 'path');
  await hit('a');
  await hit('b');
  await hit('c');
  assert.deepEqual([...(await paths()).keys()].sort(), ['OVERFLOW', 'a', 'b']);
  assert.equal((await post(`${obs.url}/actuator/obs/enforcement`, '{"value":"DRY_RUN"}')).status, 200);
  await hit('d');
  assert.deepEqual([...(await paths()).keys()].sort(), ['OVERFLOW', 'a', 'b', 'd'], 'd passes at once');
  assert.equal((await post(`${obs.url}/actuator/obs/enforcement`, '{"value":"ENFORCING"}')).status, 200);
  await hit('e');
  const after = await paths();
  assert.equal(after.has('e'), false, 'e is rewritten at once');
  assert.equal(after.get('OVERFLOW'), 2);
  const text = await (await fetch(`${obs.url}/metrics`)).text();
  assert.equal(overflowCount(text, 'app_hits_total', 'path'), 3, 'c, d and e');
});

test('meters – a call site that admits its labels itself is counted once, in both modes', async (t) => {
  for (const mode of ['ENFORCING', 'DRY_RUN'] as const) {
    const registry = new Registry();
    const obs = await startObsApp(
      { registry, config: { enforcement: { mode }, cardinality: { 'max-tag-values-per-meter': 2 } } },
      (app) => {
        const requests = new Counter({
          name: 'svc_requests_total',
          help: 'requests',
          labelNames: ['path', 'status'],
          registers: [registry],
        });
        // The echo service's pattern: admit explicitly, then record.
        app.get<{ Params: { v: string } }>('/p/:v', async (request) => {
          requests.inc({
            path: app.obs.firewall.admit('svc_requests_total', 'path', request.params.v),
            status: 200,
          });
          requests.inc(
            app.obs.firewall.admitLabels('svc_requests_total', { path: request.params.v, status: 201 }),
          );
          return 'ok';
        });
        app.get('/metrics', async (_r, reply) =>
          reply.type(registry.contentType).send(await registry.metrics()),
        );
      },
    );
    t.after(() => obs.close());
    await hitMany(6, (i) => `${obs.url}/p/v${i}`);
    const text = await (await fetch(`${obs.url}/metrics`)).text();
    assert.equal(
      overflowCount(text, 'svc_requests_total', 'path'),
      8,
      `${mode}: 4 values past the cap, 2 recordings each`,
    );
    const paths = seriesOf(text, 'svc_requests_total', 'path');
    assert.equal(paths.size, mode === 'ENFORCING' ? 3 : 6, mode);
  }
});

test('meters – the overflow counter is never guarded itself; obs.cardinality switches and exemptions apply', async (t) => {
  const registry = new Registry();
  const obs = await startObsApp({
    registry,
    config: { cardinality: { 'max-tag-values-per-meter': 1, 'exempt-meter-prefixes': ['free_'] } },
  });
  t.after(() => obs.close());
  assert.equal(registryGuard(registry), obs.app.obs.firewall);
  const meters = ['m1_total', 'm2_total', 'm3_total', 'free_total'].map(
    (name) => new Counter({ name, help: name, labelNames: ['v'], registers: [registry] }),
  );
  for (const meter of meters) for (const v of ['a', 'b', 'c']) meter.inc({ v });
  const text = await registry.metrics();
  const overflowMeters = seriesOf(text, CARDINALITY_OVERFLOW_METRIC, 'meter');
  assert.deepEqual(
    [...overflowMeters.keys()].sort(),
    ['m1_total', 'm2_total', 'm3_total'],
    'no OVERFLOW meter',
  );
  assert.deepEqual([...seriesOf(text, 'free_total', 'v').keys()].sort(), ['a', 'b', 'c'], 'exempt');
  assert.match(text, /^obs_enforcement_mode\{mode="DRY_RUN"\} 0$/m, "obs's own fixed labels are left alone");

  const offRegistry = new Registry();
  const off = await startObsApp({ registry: offRegistry, config: { cardinality: { enabled: false } } });
  t.after(() => off.close());
  assert.equal(registryGuard(offRegistry), undefined, 'cardinality.enabled=false guards nothing');
  const free = new Counter({ name: 'x_total', help: 'x', labelNames: ['v'], registers: [offRegistry] });
  for (let i = 0; i < 1200; i++) free.inc({ v: String(i) });
  assert.equal(seriesOf(await offRegistry.metrics(), 'x_total', 'v').size, 1200);
});

// ---------------------------------------------------------------------------------------------
// prom-client, every recording method

interface Outcome {
  readonly values: Set<string>;
  readonly overflow: number;
}

/** A metric made on a registry, and how to record one label value with it. */
type Recorder = (registry: Registry) => {
  readonly metric: { get(): Promise<{ values: ReadonlyArray<{ labels: object }> }> };
  readonly record: (v: string, i: number) => unknown;
};

// prom-client's types declare no constructor argument; the content type is one at run time.
const OpenMetricsRegistry = Registry as unknown as new (contentType: string) => Registry;

/** Records ten distinct `path` values with `record` on a guarded registry, cap 2, in `mode`. */
async function recordTen(mode: EnforcementMode, make: Recorder, registry = new Registry()): Promise<Outcome> {
  const firewall = new CardinalityFirewall({ maxValuesPerTag: 2, mode: () => mode });
  guardRegistry(registry, firewall);
  const { metric, record } = make(registry);
  for (let i = 0; i < 10; i++) record(`v${i}`, i);
  const values = new Set<string>();
  for (const value of (await metric.get()).values) {
    const labels = value.labels as Record<string, string | number | undefined>;
    for (const key of ['path', 'code']) if (labels[key] !== undefined) values.add(String(labels[key]));
  }
  const overflowMetric = registry.getSingleMetric(CARDINALITY_OVERFLOW_METRIC) as Counter;
  const overflow = (await overflowMetric.get()).values.reduce((sum, v) => sum + v.value, 0);
  return { values, overflow };
}

const COUNTER = (registry: Registry) =>
  new Counter({ name: 'c_total', help: 'c', labelNames: ['path'], registers: [registry] });
const GAUGE = (registry: Registry) =>
  new Gauge({ name: 'g', help: 'g', labelNames: ['path'], registers: [registry] });
const HISTOGRAM = (registry: Registry, labelNames = ['path']) =>
  new Histogram({ name: 'h_seconds', help: 'h', labelNames, buckets: [1], registers: [registry] });
const SUMMARY = (registry: Registry) =>
  new Summary({ name: 's_seconds', help: 's', labelNames: ['path'], registers: [registry] });

const RECORDERS: Record<string, Recorder> = {
  'counter.inc': (r) => {
    const m = COUNTER(r);
    return { metric: m, record: (v) => m.inc({ path: v }) };
  },
  'counter.labels(positional).inc': (r) => {
    const m = COUNTER(r);
    return { metric: m, record: (v) => m.labels(v).inc() };
  },
  'counter.labels(object).inc': (r) => {
    const m = COUNTER(r);
    return { metric: m, record: (v) => m.labels({ path: v }).inc(2) };
  },
  'gauge.set/inc/dec': (r) => {
    const m = GAUGE(r);
    const ops = [
      (v: string) => m.set({ path: v }, 1),
      (v: string) => m.inc({ path: v }),
      (v: string) => m.dec({ path: v }),
    ];
    return { metric: m, record: (v, i) => ops[i % 3]?.(v) };
  },
  'gauge.labels().set/setToCurrentTime': (r) => {
    const m = GAUGE(r);
    return {
      metric: m,
      record: (v, i) => (i % 2 ? m.labels(v).set(3) : m.labels({ path: v }).setToCurrentTime()),
    };
  },
  'gauge.startTimer (start and end labels)': (r) => {
    const m = GAUGE(r);
    return {
      metric: m,
      record: (v, i) => (i % 2 ? m.startTimer({ path: v })() : m.startTimer()({ path: v })),
    };
  },
  'histogram.observe/zero': (r) => {
    const m = HISTOGRAM(r);
    return { metric: m, record: (v, i) => (i % 2 ? m.observe({ path: v }, 0.5) : m.zero({ path: v })) };
  },
  'histogram.labels().observe/startTimer': (r) => {
    const m = HISTOGRAM(r);
    return {
      metric: m,
      record: (v, i) => (i % 2 ? m.labels(v).observe(0.5) : m.labels({ path: v }).startTimer()()),
    };
  },
  'histogram.startTimer': (r) => {
    const m = HISTOGRAM(r);
    return { metric: m, record: (v) => m.startTimer({ path: v })() };
  },
  'summary.observe/labels/startTimer': (r) => {
    const m = SUMMARY(r);
    const ops = [
      (v: string) => m.observe({ path: v }, 1),
      (v: string) => m.labels(v).observe(1),
      (v: string) => m.labels({ path: v }).startTimer()(),
      (v: string) => m.startTimer({ path: v })(),
    ];
    return { metric: m, record: (v, i) => ops[i % 4]?.(v) };
  },
};

test('meters – every prom-client recording method passes the firewall: at most cap + OVERFLOW', async () => {
  for (const [name, make] of Object.entries(RECORDERS)) {
    const { values, overflow } = await recordTen('ENFORCING', make);
    assert.deepEqual([...values].sort(), ['OVERFLOW', 'v0', 'v1'], name);
    assert.equal(overflow, 8, `${name}: each value past the cap counted once`);
  }
});

test('meters – every prom-client recording method in DRY_RUN: all values pass, each counted exactly once', async () => {
  for (const [name, make] of Object.entries(RECORDERS)) {
    const { values, overflow } = await recordTen('DRY_RUN', make);
    assert.equal(values.size, 10, name);
    assert.equal(overflow, 8, `${name}: not counted twice through labels() and startTimer`);
  }
  // Start labels admitted in labels(), end labels at the end of the timer: two labels, both guarded once.
  const both = await recordTen('DRY_RUN', (r) => {
    const m = HISTOGRAM(r, ['path', 'code']);
    return { metric: m, record: (v) => m.labels({ path: v }).startTimer()({ code: v }) };
  });
  assert.equal(both.values.size, 10);
  assert.equal(both.overflow, 16);
});

test('meters – exemplar metrics (OpenMetrics registry) are guarded through their labels field', async () => {
  const registry = new OpenMetricsRegistry(Registry.OPENMETRICS_CONTENT_TYPE);
  const counter = await recordTen(
    'ENFORCING',
    (r) => {
      const m = new Counter({
        name: 'e_total',
        help: 'e',
        labelNames: ['path'],
        enableExemplars: true,
        registers: [r],
      });
      return {
        metric: m,
        record: (v) => m.inc({ labels: { path: v }, value: 1, exemplarLabels: { path: 'exemplar' } }),
      };
    },
    registry,
  );
  assert.deepEqual([...counter.values].sort(), ['OVERFLOW', 'v0', 'v1']);
  const histogram = await recordTen(
    'ENFORCING',
    (r) => {
      const m = new Histogram({
        name: 'eh_seconds',
        help: 'e',
        labelNames: ['path'],
        buckets: [1],
        enableExemplars: true,
        registers: [r],
      });
      return { metric: m, record: (v) => m.observe({ labels: { path: v }, value: 0.5, exemplarLabels: {} }) };
    },
    new OpenMetricsRegistry(Registry.OPENMETRICS_CONTENT_TYPE),
  );
  assert.deepEqual([...histogram.values].sort(), ['OVERFLOW', 'v0', 'v1']);
});

test('meters – guardRegistry alone: its own overflow counter, idempotent, numbers kept as numbers', async () => {
  const registry = new Registry();
  const firewall = new CardinalityFirewall({ maxValuesPerTag: 1 });
  assert.equal(guardRegistry(registry, firewall), registry);
  guardRegistry(registry, firewall);
  const counter = new Counter({ name: 'n_total', help: 'n', labelNames: ['code'], registers: [registry] });
  counter.inc({ code: 200 });
  counter.inc({ code: 200 });
  counter.inc({ code: 500 });
  const text = await registry.metrics();
  assert.match(text, /^n_total\{code="200"\} 2$/m);
  assert.match(text, /^n_total\{code="OVERFLOW"\} 1$/m);
  assert.equal(overflowCount(text, 'n_total', 'code'), 1, 'once, though guarded twice');
});

// ---------------------------------------------------------------------------------------------
// OpenTelemetry metrics API, with the real SDK

test('meters – OpenTelemetry, ENFORCING: 5,000 distinct attribute values give at most cap + OVERFLOW', async () => {
  const obs = createObs({ env: {}, registry: new Registry(), logger: capturingLogger() });
  try {
    const { reader, sdk, meter } = otel(obs);
    const counter = meter.createCounter('http.requests');
    for (let i = 0; i < 5000; i++) counter.add(1, { path: `/p${i}`, method: 'GET' });
    const points = await pointsOf(reader, 'http.requests');
    assert.equal(points.length, 1001);
    assert.equal(points.find((p) => p.attributes.path === 'OVERFLOW')?.value, 4000);
    assert.ok(
      points.every((p) => p.attributes.method === 'GET'),
      'other attributes kept',
    );
    const text = await obs.registry.metrics();
    assert.equal(overflowCount(text, 'http.requests', 'path'), 4000);
    await sdk.shutdown();
  } finally {
    obs.close();
  }
});

test('meters – OpenTelemetry, DRY_RUN: all 5,000 series pass, the overflow counted', async () => {
  const obs = createObs({
    env: { OBS_ENFORCEMENT_MODE: 'DRY_RUN' },
    registry: new Registry(),
    logger: capturingLogger(),
  });
  try {
    const { reader, sdk, meter } = otel(obs);
    const histogram = meter.createHistogram('http.duration');
    for (let i = 0; i < 5000; i++) histogram.record(0.1, { path: `/p${i}` });
    const points = await pointsOf(reader, 'http.duration');
    assert.equal(points.length, 5000);
    assert.equal(
      points.some((p) => p.attributes.path === 'OVERFLOW'),
      false,
    );
    assert.equal(overflowCount(await obs.registry.metrics(), 'http.duration', 'path'), 4000);
    await sdk.shutdown();
  } finally {
    obs.close();
  }
});

test('meters – OpenTelemetry: every instrument kind, observable and batch callbacks, pass the firewall', async () => {
  const firewall = new CardinalityFirewall({ maxValuesPerTag: 2 });
  const { reader, sdk, meter } = otel(firewall);
  const values = ['a', 'b', 'c', 'd', 'e'];
  const upDown = meter.createUpDownCounter('queue.depth');
  const gauge = meter.createGauge('temperature');
  for (const v of values) {
    upDown.add(1, { queue: v });
    gauge.record(20, { room: v });
  }
  const observed = meter.createObservableGauge('pool.size');
  let calls = 0;
  const callback = (result: { observe(value: number, attributes?: Attributes): void }) => {
    calls++;
    for (const v of values) result.observe(1, { pool: v });
  };
  observed.addCallback(callback);
  const cumulative = meter.createObservableCounter('bytes.read');
  const upDownObserved = meter.createObservableUpDownCounter('conns.open');
  meter.addBatchObservableCallback(
    (result) => {
      for (const v of values) {
        result.observe(cumulative, 10, { file: v });
        result.observe(upDownObserved, 1, { peer: v });
      }
    },
    [cumulative, upDownObserved],
  );

  const distinct = async (name: string, key: string) =>
    [...new Set((await pointsOf(reader, name)).map((p) => String(p.attributes[key])))].sort();
  assert.deepEqual(await distinct('queue.depth', 'queue'), ['OVERFLOW', 'a', 'b']);
  assert.deepEqual(await distinct('temperature', 'room'), ['OVERFLOW', 'a', 'b']);
  assert.deepEqual(await distinct('pool.size', 'pool'), ['OVERFLOW', 'a', 'b']);
  assert.deepEqual(await distinct('bytes.read', 'file'), ['OVERFLOW', 'a', 'b']);
  assert.deepEqual(await distinct('conns.open', 'peer'), ['OVERFLOW', 'a', 'b']);

  const before = calls;
  observed.removeCallback(callback);
  await reader.collect();
  assert.equal(calls, before, 'removeCallback removes the guarded callback');
  await sdk.shutdown();
});

test('meters – OpenTelemetry through the plugin: the mode switch over HTTP applies to the next value', async (t) => {
  const reader = new TestReader();
  const sdk = new MeterProvider({ readers: [reader] });
  const obs = await startObsApp({ config: { cardinality: { 'max-tag-values-per-meter': 1 } } }, (app) => {
    const counter = app.obs.guardMeterProvider(sdk).getMeter('app').createCounter('orders');
    app.get<{ Params: { v: string } }>('/order/:v', async (request) => {
      counter.add(1, { customer: request.params.v });
      return 'ok';
    });
  });
  t.after(async () => {
    await obs.close();
    await sdk.shutdown();
  });
  const customers = async () =>
    [...new Set((await pointsOf(reader, 'orders')).map((p) => String(p.attributes.customer)))].sort();
  await fetch(`${obs.url}/order/ann`);
  await fetch(`${obs.url}/order/bob`);
  assert.deepEqual(await customers(), ['OVERFLOW', 'ann']);
  await post(`${obs.url}/actuator/obs/enforcement`, '{"value":"DRY_RUN"}');
  await fetch(`${obs.url}/order/cid`);
  assert.deepEqual(await customers(), ['OVERFLOW', 'ann', 'cid']);
  assert.equal(overflowCount(await obs.registry.metrics(), 'orders', 'customer'), 2);
  assert.equal(OBS_METRICS.cardinalityOverflow, CARDINALITY_OVERFLOW_METRIC);
});

test('meters – a metric of prom-client 14 is left unguarded and said so once; tag-meters skips it the same way', async (t) => {
  const { Counter: Counter14 } = await import('prom-client-14');
  const registry = new Registry();
  const old = new Counter14({
    name: 'old_orders_total',
    help: 'made with prom-client 14',
    labelNames: ['user'],
    registers: [registry as never],
  });
  const current = new Counter({
    name: 'new_orders_total',
    help: 'x',
    labelNames: ['user'],
    registers: [registry],
  });
  const obs = await startObsApp({
    registry,
    config: {
      cardinality: { 'max-tag-values-per-meter': 1 },
      tenant: { enabled: true, 'tag-meters': ['old_orders_total'] },
    },
  });
  t.after(() => obs.close());
  for (const user of ['a', 'b', 'c']) {
    old.inc({ user });
    current.inc({ user });
  }
  const text = await registry.metrics();
  assert.equal(seriesOf(text, 'old_orders_total', 'user').size, 3, 'not guarded: every value kept');
  assert.deepEqual([...seriesOf(text, 'new_orders_total', 'user').keys()].sort(), ['OVERFLOW', 'a']);
  const warnings = obs.logger.lines.filter((l) => l.level === 'warn').map((l) => l.message ?? '');
  assert.equal(
    warnings.filter((m) => /cannot guard the labels of metric old_orders_total/.test(m)).length,
    1,
  );
  assert.ok(
    warnings.some(
      (m) => m.includes('old_orders_total') && /not a prom-client 15 metric/.test(m) && /tenant/.test(m),
    ),
    warnings.join('\n'),
  );
});
