/**
 * SLO-as-code: the rules the objectives render to (pure), the validation of the objectives, the
 * `GET /actuator/obs/slo` route, the live burn estimate (injected time), and promtool: the rules
 * pass `promtool check rules`, and `promtool test rules` with synthetic series proves which burn
 * fires what (14.4x pages, 6x pages on the slower pair, 1.2x only tickets, none and injected faults
 * alone stay quiet).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { dump, load } from 'js-yaml';
import { Counter, Histogram, Registry } from 'prom-client';
import { renderObsUi } from '../../../src/obs/features/actuator/obsui.ts';
import {
  countsOf,
  matchesLabels,
  parseLabelMatchers,
  SloBurnEstimator,
  type SloObjective,
  sloAlertNames,
  sloPrometheusRule,
  sloPrometheusRuleYaml,
  sloRecordName,
} from '../../../src/obs/features/slo.ts';
import { loadObsConfig, type ObsConfigInput } from '../../../src/obs/index.ts';
import { needTools } from '../../helpers/tools.ts';
import { injectableObsApp } from '../helpers.ts';

const AVAILABILITY: SloObjective = {
  name: 'orders-availability',
  sli: 'availability',
  target: 0.999,
  threshold: undefined,
  metric: 'http_requests_total',
  filter: 'fault="none"',
  'error-filter': 'status=~"5.."',
};
const LATENCY: SloObjective = {
  name: 'orders-latency',
  sli: 'latency',
  target: 0.99,
  threshold: 500,
  metric: 'http_request_duration_seconds',
  filter: 'fault="none"',
  'error-filter': 'status=~"5.."',
};

function problems(options: ObsConfigInput): string[] {
  try {
    loadObsConfig({ options });
    return [];
  } catch (error) {
    return ((error as { problems?: Array<{ message: string }> }).problems ?? []).map((p) => p.message);
  }
}

test('slo – an availability objective records bad/total over each window and alerts on the Workbook pairs', () => {
  const rule = sloPrometheusRule([AVAILABILITY], 'orders api');
  assert.equal(rule.kind, 'PrometheusRule');
  assert.equal(rule.apiVersion, 'monitoring.coreos.com/v1');
  assert.equal(rule.metadata.name, 'orders-api-slo');
  const [group] = rule.spec.groups;
  assert.ok(group);
  const records = group.rules.filter((r) => r.record !== undefined);
  assert.deepEqual(
    records.map((r) => r.record),
    ['5m', '30m', '1h', '6h', '3d'].map((w) => `slo:orders_availability:error_ratio_rate${w}`),
  );
  assert.equal(
    records[0]?.expr,
    'sum by (namespace, job) (rate(http_requests_total{fault="none",status=~"5.."}[5m]))\n/\nsum by (namespace, job) (rate(http_requests_total{fault="none"}[5m]))',
  );
  const alerts = group.rules.filter((r) => r.alert !== undefined);
  assert.deepEqual(
    alerts.map((a) => [a.alert, a.labels]),
    [
      ['OrdersAvailabilityBurnRateCritical', { severity: 'page', slo: 'orders-availability' }],
      ['OrdersAvailabilityBurnRateTicket', { severity: 'ticket', slo: 'orders-availability' }],
    ],
  );
  const flat = (s: string | undefined) => s?.replace(/\s+/g, ' ').trim();
  assert.equal(
    flat(alerts[0]?.expr),
    '( slo:orders_availability:error_ratio_rate1h > (14.4 * (1 - 0.999)) and slo:orders_availability:error_ratio_rate5m > (14.4 * (1 - 0.999)) ) or ( slo:orders_availability:error_ratio_rate6h > (6 * (1 - 0.999)) and slo:orders_availability:error_ratio_rate30m > (6 * (1 - 0.999)) )',
  );
  assert.equal(
    flat(alerts[1]?.expr),
    '( slo:orders_availability:error_ratio_rate3d > (1 * (1 - 0.999)) and slo:orders_availability:error_ratio_rate6h > (1 * (1 - 0.999)) )',
  );
});

test('slo – a latency objective counts the events slower than the threshold: _count minus the bucket le=threshold', () => {
  const [group] = sloPrometheusRule([LATENCY], 'x').spec.groups;
  const expr = group?.rules[2]?.expr.replace(/\s+/g, ' ');
  assert.equal(
    expr,
    '( sum by (namespace, job) (rate(http_request_duration_seconds_count{fault="none"}[1h])) - sum by (namespace, job) (rate(http_request_duration_seconds_bucket{fault="none",le="0.5"}[1h])) ) / sum by (namespace, job) (rate(http_request_duration_seconds_count{fault="none"}[1h]))',
  );
  assert.equal(sloRecordName('a-b', '3d'), 'slo:a_b:error_ratio_rate3d');
  assert.deepEqual(sloAlertNames('api_p99-latency'), {
    page: 'ApiP99LatencyBurnRateCritical',
    ticket: 'ApiP99LatencyBurnRateTicket',
  });
});

test('slo – objectives are validated at startup, one clear line each', () => {
  const base = { name: 'a', metric: 'm_total' };
  assert.deepEqual(
    problems({
      slo: {
        enabled: true,
        objectives: [
          { name: '9bad', metric: 'm_total' },
          { name: 'b' },
          { ...base, name: 'c', metric: 'not a metric' },
          { ...base, name: 'd', filter: 'job=api' },
          { ...base, name: 'e', 'error-filter': 'status=~"5..",' },
          { ...base, name: 'f', sli: 'latency' },
          { ...base, name: 'g', target: 1 },
          { ...base, name: 'h', sli: 'latency', threshold: '1s', filter: 'le="1"' },
          { ...base, name: 'I' },
          { ...base, name: 'i' },
        ],
      },
    }),
    [
      'obs.slo.objectives[0].name = "9bad" (options): expected a name of at most 63 letters, digits, _ and -, starting with a letter',
      'obs.slo.objectives[1].metric (options): expected a value (required)',
      'obs.slo.objectives[2].metric = "not a metric" (options): expected a Prometheus metric name of at most 200 characters (letters, digits, _ and :)',
      'obs.slo.objectives[3].filter = "job=api" (options): expected PromQL label matchers separated by commas, each name="value", name!="value", name=~"regex" or name!~"regex", at most 500 characters',
      'obs.slo.objectives[4].error-filter = "status=~\\"5..\\"," (options): expected PromQL label matchers separated by commas, each name="value", name!="value", name=~"regex" or name!~"regex", at most 500 characters',
    ],
  );
  // The rules between keys run once every value reads.
  assert.deepEqual(
    problems({
      slo: {
        enabled: true,
        objectives: [
          { ...base, name: 'f', sli: 'latency' },
          { ...base, name: 'g', target: 1 },
          { ...base, name: 'h', sli: 'latency', threshold: '1s', filter: 'le="1"' },
          { ...base, name: 'i-j' },
          { ...base, name: 'I_J' },
        ],
      },
    }),
    [
      'obs.slo.objectives[0].threshold (options): expected a duration (required by a latency objective)',
      'obs.slo.objectives[1].target = 1 (options): expected a number above 0 and below 1 (1 leaves no error budget, 0 sets no objective)',
      'obs.slo.objectives[2].filter = "le=\\"1\\"" (options): expected matchers without le (the threshold sets it)',
      'obs.slo.objectives[4].name = "I_J" (options): expected a name no other objective has (ignoring case, - and _)',
    ],
  );
  const many = Array.from({ length: 51 }, (_, i) => ({ ...base, name: `o${i}` }));
  assert.deepEqual(problems({ slo: { enabled: true, objectives: many } }), [
    'obs.slo.objectives = "51 objectives" (options): expected at most 50',
  ]);
});

test('slo – an application default objective is below every other source', () => {
  const defaults = { slo: { enabled: true, objectives: [{ name: 'app', metric: 'm_total' }] } } as const;
  const resolved = loadObsConfig({ defaults });
  assert.equal(resolved.config.slo.enabled, true);
  assert.equal(resolved.config.slo.objectives[0]?.name, 'app');
  assert.equal(resolved.origins['obs.slo.objectives'], 'application defaults');
  const overridden = loadObsConfig({ defaults, env: { OBS_SLO_ENABLED: 'false' } });
  assert.equal(overridden.config.slo.enabled, false);
});

test('slo – label matchers evaluate like PromQL (anchored regexes, a missing label reads empty)', () => {
  const m = parseLabelMatchers('status=~"5..", fault="none",path!~"/health|/metrics", x!="y"');
  assert.equal(m.length, 4);
  assert.ok(matchesLabels(m, { status: 503, fault: 'none', path: '/a' }));
  assert.ok(!matchesLabels(m, { status: 5030, fault: 'none', path: '/a' }), 'anchored');
  assert.ok(!matchesLabels(m, { status: 500, fault: 'chaos', path: '/a' }));
  assert.ok(!matchesLabels(m, { status: 500, fault: 'none', path: '/health' }));
  assert.ok(!matchesLabels(m, { status: 500, fault: 'none', path: '/a', x: 'y' }));
  assert.ok(matchesLabels(parseLabelMatchers('a=""'), {}), 'missing reads empty');
  assert.deepEqual(parseLabelMatchers('a="q\\"x"')[0]?.value, 'q"x');
});

test('slo – counts from the registry: bad events by the error filter, latency by the bucket', async () => {
  const registry = new Registry();
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'h',
    labelNames: ['status', 'fault'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'h',
    labelNames: ['fault'],
    buckets: [0.1, 0.5, 1],
    registers: [registry],
  });
  requests.inc({ status: 200, fault: 'none' }, 90);
  requests.inc({ status: 503, fault: 'none' }, 10);
  requests.inc({ status: 500, fault: 'chaos' }, 1000);
  for (const s of [0.05, 0.2, 0.7, 2]) duration.observe({ fault: 'none' }, s);
  duration.observe({ fault: 'delay' }, 5);
  const counter = (await registry.getSingleMetric('http_requests_total')?.get()) as unknown as {
    values: never[];
  };
  assert.deepEqual(countsOf(AVAILABILITY, 'counter', counter.values), { total: 100, bad: 10 });
  assert.equal(countsOf(AVAILABILITY, 'histogram', counter.values), undefined, 'wrong kind');
  const histogram = (await registry.getSingleMetric('http_request_duration_seconds')?.get()) as unknown as {
    values: never[];
  };
  assert.deepEqual(countsOf(LATENCY, 'histogram', histogram.values), { total: 4, bad: 2 });
});

test('slo – the live burn: a bounded ring of samples, per window, with injected time', () => {
  const estimator = new SloBurnEstimator([AVAILABILITY], 15_000);
  const t0 = 1_000_000;
  // An hour at 0.1% errors (1x), then five minutes at 2% (20x).
  let total = 0;
  let bad = 0;
  estimator.record(0, t0, { total, bad });
  for (let i = 1; i <= 240; i++) {
    total += 1000;
    bad += 1;
    estimator.record(0, t0 + i * 15_000, { total, bad });
  }
  const hourly = estimator.window(0, 3_600_000);
  assert.equal(hourly.events, 240_000);
  assert.ok(Math.abs((hourly.burn_rate ?? 0) - 1) < 1e-9);
  for (let i = 241; i <= 260; i++) {
    total += 1000;
    bad += 20;
    estimator.record(0, t0 + i * 15_000, { total, bad });
  }
  const fast = estimator.window(0, 300_000);
  assert.equal(fast.covered_seconds, 300);
  assert.ok(Math.abs((fast.burn_rate ?? 0) - 20) < 1e-9, `5m burn ${fast.burn_rate}`);
  const [figures] = estimator.figures();
  assert.equal(figures?.metric_state, 'ok');
  assert.ok((figures?.windows['1h']?.burn_rate ?? 0) > 1);
  assert.equal(figures?.windows['1h']?.covered_seconds, 3600, 'the ring keeps one hour, no more');
  // A counter reset starts the ring again.
  estimator.record(0, t0 + 261 * 15_000, { total: 5, bad: 0 });
  assert.equal(estimator.window(0, 300_000).burn_rate, null);
});

test("slo – obsui shows each objective's live burn per window, escaped", async (t) => {
  const app = await injectableObsApp(t, {});
  const snapshot = app.obs.snapshot();
  const estimator = new SloBurnEstimator([{ ...AVAILABILITY, name: 'a<b' }], 15_000);
  estimator.record(0, 0, { total: 0, bad: 0 });
  estimator.record(0, 60_000, { total: 1000, bad: 20 });
  const html = renderObsUi(
    { ...snapshot, sections: { ...snapshot.sections, slo: { live: { objectives: estimator.figures() } } } },
    '/actuator',
  );
  assert.match(
    html,
    /<td class="mono">a&lt;b<\/td><td>availability<\/td><td>0\.999<\/td><td>20\.00x <span class="muted">\(20 of 1000\)<\/span>/,
  );
  assert.doesNotMatch(renderObsUi(snapshot, '/actuator'), /id="slo"/, 'no table without objectives');
});

test('slo – GET /actuator/obs/slo serves the PrometheusRule as YAML; 404 when off or empty', async (t) => {
  const registry = new Registry();
  new Counter({
    name: 'http_requests_total',
    help: 'h',
    labelNames: ['status', 'fault'],
    registers: [registry],
  });
  new Histogram({
    name: 'http_request_duration_seconds',
    help: 'h',
    labelNames: ['fault'],
    buckets: [0.1, 0.5, 1],
    registers: [registry],
  });
  const config = {
    slo: {
      enabled: true,
      objectives: [
        { ...AVAILABILITY, threshold: undefined },
        { ...LATENCY, threshold: '500ms' },
      ],
    },
  } as unknown as ObsConfigInput;
  const app = await injectableObsApp(t, { config, registry, serviceName: 'orders' });
  const answer = await app.inject({ url: '/actuator/obs/slo' });
  assert.equal(answer.statusCode, 200);
  assert.match(String(answer.headers['content-type']), /^application\/yaml/);
  const rule = load(answer.body) as ReturnType<typeof sloPrometheusRule>;
  assert.deepEqual(rule, JSON.parse(JSON.stringify(sloPrometheusRule([AVAILABILITY, LATENCY], 'orders'))));
  const snapshot = (await app.inject({ url: '/actuator/obs' })).json();
  assert.equal(snapshot.features.slo.status, 'built');
  assert.deepEqual(
    snapshot.sections.slo.live.objectives.map((o: { name: string; metric_state: string }) => [
      o.name,
      o.metric_state,
    ]),
    [
      ['orders-availability', 'ok'],
      ['orders-latency', 'ok'],
    ],
  );
  const ui = await app.inject({ url: '/actuator/obsui' });
  assert.match(ui.body, /<table id="slo">/);
  assert.match(ui.body, /<td class="mono">orders-availability<\/td><td>availability<\/td><td>0\.999<\/td>/);

  const off = await injectableObsApp(t, {});
  const none = await off.inject({ url: '/actuator/obs/slo' });
  assert.equal(none.statusCode, 404);
  assert.equal(none.json().error.code, 'OBS_ERR_SLO_NOT_CONFIGURED');
  assert.match(none.json().error.message, /obs\.slo\.enabled is false/);
});

test('slo – startup stops when an objective does not fit its metric (kind, threshold not a bucket)', async (t) => {
  const registry = () => {
    const r = new Registry();
    new Histogram({ name: 'lat_seconds', help: 'h', buckets: [0.1, 0.5], registers: [r] });
    return r;
  };
  const config = (threshold: string, sli = 'latency') =>
    ({
      slo: { enabled: true, objectives: [{ name: 'l', sli, metric: 'lat_seconds', threshold }] },
    }) as unknown as ObsConfigInput;
  await assert.rejects(
    injectableObsApp(t, { config: config('300ms'), registry: registry() }),
    (error: Error) => {
      assert.equal((error as { code?: string }).code, 'OBS_ERR_SLO_OBJECTIVE');
      assert.match(error.message, /threshold 0\.3s is not a bucket of lat_seconds \(buckets: 0\.1, 0\.5\)/);
      return true;
    },
  );
  await assert.rejects(
    injectableObsApp(t, { config: config('500ms', 'availability'), registry: registry() }),
    /not a counter/,
  );
  const ok = await injectableObsApp(t, { config: config('500ms'), registry: registry() });
  assert.equal((await ok.inject({ url: '/actuator/obs/slo' })).statusCode, 200);
});

// ---------------------------------------------------------------------------------------------
// promtool

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'obs-slo-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function promtool(...args: string[]) {
  return spawnSync('promtool', args, { encoding: 'utf8', timeout: 120_000 });
}

test('slo – promtool check rules accepts the rules of both SLIs', (t) => {
  if (!needTools(t, ['promtool'], 'Debian package prometheus')) return;
  const dir = tempDir(t);
  const file = join(dir, 'rules.yaml');
  const rule = load(sloPrometheusRuleYaml([AVAILABILITY, LATENCY], 'orders')) as { spec: unknown };
  writeFileSync(file, dump(rule.spec));
  const result = promtool('check', 'rules', file);
  assert.equal(result.status, 0, `promtool check rules:\n${result.stdout}${result.stderr}`);
  assert.match(result.stdout, /SUCCESS: 14 rules found/);
});

/**
 * One synthetic scenario: per minute, `ok` good and `bad` bad own answers, and `faults` injected
 * 5xx (fault="chaos"), for `minutes`. The series carry the labels a scrape adds.
 */
function series(ok: number, bad: number, faults: number, minutes: number) {
  const job = 'namespace="shop",job="orders"';
  const counter = (labels: string, perMinute: number) => ({
    series: `http_requests_total{${job},${labels}}`,
    values: `0+${perMinute}x${minutes}`,
  });
  return [
    counter('status="200",fault="none"', ok),
    counter('status="503",fault="none"', bad),
    counter('status="500",fault="chaos"', faults),
    counter('status="502",fault="error"', faults),
    counter('status="504",fault="scenario"', faults),
    counter('status="500",fault="status"', faults),
  ];
}

test('slo – promtool test rules: 14.4x pages, 6x pages on the slower pair, 1.2x only tickets, none and faults alone stay quiet', (t) => {
  if (!needTools(t, ['promtool'], 'Debian package prometheus')) return;
  const dir = tempDir(t);
  const rulesFile = join(dir, 'rules.yaml');
  const rule = sloPrometheusRule([AVAILABILITY], 'orders');
  writeFileSync(rulesFile, dump(JSON.parse(JSON.stringify(rule.spec))));
  const names = sloAlertNames(AVAILABILITY.name);
  const group = rule.spec.groups[0];
  const annotations = (alert: string) =>
    group?.rules.find((r) => r.alert === alert)?.annotations as Record<string, string>;
  const labels = (severity: string) => ({
    namespace: 'shop',
    job: 'orders',
    slo: AVAILABILITY.name,
    severity,
  });
  const page = { exp_labels: labels('page'), exp_annotations: annotations(names.page) };
  const ticket = { exp_labels: labels('ticket'), exp_annotations: annotations(names.ticket) };
  const alerts = (at: string, paged: boolean, ticketed: boolean) => [
    { eval_time: at, alertname: names.page, exp_alerts: paged ? [page] : [] },
    { eval_time: at, alertname: names.ticket, exp_alerts: ticketed ? [ticket] : [] },
  ];
  const fastPair = `${sloRecordName(AVAILABILITY.name, '1h')} > (14.4 * (1 - 0.999)) and ${sloRecordName(AVAILABILITY.name, '5m')} > (14.4 * (1 - 0.999))`;
  const tests = [
    // 15x (1.5% of own answers fail): the 1h/5m pair pages within the hour.
    { interval: '1m', input_series: series(985, 15, 0, 70), alert_rule_test: alerts('1h', true, true) },
    // 30x for an hour, then no error for ten minutes: the 1h window is still far above 14.4x, but
    // the 5m window has reset, so the fast pair is silent (the slower pair still pages, as it should).
    {
      interval: '1m',
      input_series: [
        ...series(970, 0, 0, 70).filter((s) => !s.series.includes('503')),
        {
          series: 'http_requests_total{namespace="shop",job="orders",status="503",fault="none"}',
          values: '0+30x60 1800+0x10',
        },
      ],
      promql_expr_test: [
        { expr: fastPair, eval_time: '70m', exp_samples: [] },
        {
          expr: `count(${sloRecordName(AVAILABILITY.name, '1h')} > (14.4 * (1 - 0.999)))`,
          eval_time: '70m',
          exp_samples: [{ labels: '{}', value: 1 }],
        },
      ],
    },
    // 8x: too slow for 1h/5m (14.4x), paged by 6h/30m; the fast pair is provably silent.
    {
      interval: '1m',
      input_series: series(992, 8, 0, 400),
      alert_rule_test: alerts('6h', true, true),
      promql_expr_test: [{ expr: fastPair, eval_time: '6h', exp_samples: [] }],
    },
    // 1.2x: only a ticket (3d and 6h above 1x), never a page.
    { interval: '1m', input_series: series(9988, 12, 0, 400), alert_rule_test: alerts('6h', false, true) },
    // No burn: quiet.
    { interval: '1m', input_series: series(1000, 0, 0, 400), alert_rule_test: alerts('6h', false, false) },
    // Injected faults only, at a rate that would page many times over: quiet.
    {
      interval: '1m',
      input_series: series(1000, 0, 500, 400),
      alert_rule_test: [...alerts('1h', false, false), ...alerts('6h', false, false)],
    },
  ];
  const testFile = join(dir, 'tests.yaml');
  writeFileSync(
    testFile,
    dump({ rule_files: [rulesFile], evaluation_interval: '1m', tests }, { lineWidth: -1 }),
  );
  const result = promtool('test', 'rules', testFile);
  assert.equal(result.status, 0, `promtool test rules:\n${result.stdout}${result.stderr}`);
  assert.match(result.stdout, /SUCCESS/);
});

test('slo – promtool test rules: a latency burn pages, injected delays alone stay quiet', (t) => {
  if (!needTools(t, ['promtool'], 'Debian package prometheus')) return;
  const dir = tempDir(t);
  const rulesFile = join(dir, 'rules.yaml');
  writeFileSync(rulesFile, dump(JSON.parse(JSON.stringify(sloPrometheusRule([LATENCY], 'orders').spec))));
  const job = 'namespace="shop",job="orders"';
  // Per minute: `total` requests of which `fast` within 0.5s, for each fault label.
  const histogram = (fault: string, total: number, fast: number) => [
    {
      series: `http_request_duration_seconds_bucket{${job},fault="${fault}",le="0.5"}`,
      values: `0+${fast}x80`,
    },
    {
      series: `http_request_duration_seconds_bucket{${job},fault="${fault}",le="+Inf"}`,
      values: `0+${total}x80`,
    },
    { series: `http_request_duration_seconds_count{${job},fault="${fault}"}`, values: `0+${total}x80` },
  ];
  const names = sloAlertNames(LATENCY.name);
  const tests = [
    // 20% slow (20x the 1% budget): pages.
    {
      interval: '1m',
      input_series: [...histogram('none', 100, 80), ...histogram('delay', 100, 0)],
      alert_rule_test: [
        {
          eval_time: '1h',
          alertname: names.page,
          exp_alerts: [
            {
              exp_labels: { namespace: 'shop', job: 'orders', slo: LATENCY.name, severity: 'page' },
              exp_annotations: sloPrometheusRule([LATENCY], 'o').spec.groups[0]?.rules[5]?.annotations,
            },
          ],
        },
      ],
    },
    // Every slow request was delayed on purpose: quiet.
    {
      interval: '1m',
      input_series: [...histogram('none', 100, 100), ...histogram('delay', 100, 0)],
      alert_rule_test: [
        { eval_time: '1h', alertname: names.page, exp_alerts: [] },
        { eval_time: '1h', alertname: names.ticket, exp_alerts: [] },
      ],
    },
  ];
  const testFile = join(dir, 'tests.yaml');
  writeFileSync(
    testFile,
    dump({ rule_files: [rulesFile], evaluation_interval: '1m', tests }, { lineWidth: -1 }),
  );
  const result = promtool('test', 'rules', testFile);
  assert.equal(result.status, 0, `promtool test rules:\n${result.stdout}${result.stderr}`);
});
