/**
 * The Grafana dashboard (charts/echo-chaos/dashboards/echo-chaos.json): every query parses
 * (`promtool check rules`, each query as a recording rule, Grafana's variables given sample values)
 * and names only metrics, and labels, that a real echo-chaos and a real operator registry export.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dump } from 'js-yaml';
import { Registry } from 'prom-client';
import { createOperatorMetrics } from '../../src/operator/metrics.ts';
import { createOperatorServer } from '../../src/operator/server.ts';
import { startEcho } from '../helpers/echo-server.ts';
import { until as waitUntil } from '../helpers/runtime.ts';
import { spec, startFixture } from '../operator/fixture.ts';

const DASHBOARD = join(
  import.meta.dirname,
  '..',
  '..',
  'charts',
  'echo-chaos',
  'dashboards',
  'echo-chaos.json',
);

// biome-ignore lint/suspicious/noExplicitAny: dashboard JSON is walked field by field below.
type Any = any;

/** Grafana's variables, as the dashboard uses them, with a value that makes the query plain PromQL. */
const VARIABLES: Record<string, string> = { __rate_interval: '5m', namespace: 'default' };
/** Labels Prometheus adds to every series of a ServiceMonitor or PodMonitor target. */
const TARGET_LABELS = new Set(['namespace', 'pod', 'job', 'instance', 'service', 'endpoint', 'container']);
const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
]);

/** Metric name -> the label names seen on its samples, from a Prometheus text exposition. */
function exported(text: string): Map<string, Set<string>> {
  const names = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? \S+/.exec(line);
    if (m === null) continue;
    const labels = names.get(m[1]!) ?? new Set<string>();
    for (const pair of (m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="/g)) labels.add(pair[1]!);
    names.set(m[1]!, labels);
  }
  return names;
}

interface Query {
  readonly where: string;
  readonly expr: string;
}

/** Every PromQL query of the dashboard: panel targets (rows included) and query variables. */
function queries(dashboard: Any): Query[] {
  const panels: Any[] = (dashboard.panels ?? []).flatMap((p: Any) => [p, ...(p.panels ?? [])]);
  const found: Query[] = panels.flatMap((p) =>
    (p.targets ?? []).map((t: Any) => ({ where: `panel "${p.title}" ${t.refId}`, expr: String(t.expr) })),
  );
  for (const v of dashboard.templating?.list ?? []) {
    if (v.type !== 'query') continue;
    const text = String(typeof v.query === 'object' ? v.query.query : v.query);
    // label_values(<selector>, <label>) is Grafana's; its selector is PromQL.
    const selector = /^label_values\((.*),\s*(\w+)\)$/.exec(text);
    found.push({ where: `variable ${v.name}`, expr: selector === null ? text : selector[1]! });
  }
  return found;
}

/** The query with Grafana's variables replaced; throws naming a variable it does not know. */
function plain(expr: string): string {
  return expr.replace(/\$\{?(\w+)\}?/g, (_, name: string) => {
    const value = VARIABLES[name];
    if (value === undefined) throw new Error(`unknown variable $${name} in ${expr}`);
    return value;
  });
}

/** The metric names a PromQL expression selects and the label names it uses. */
function namesIn(expr: string): { metrics: string[]; labels: string[] } {
  const noStrings = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const labels: string[] = [];
  let rest = noStrings.replace(/\{([^}]*)\}/g, (_, body: string) => {
    for (const m of body.matchAll(/([a-zA-Z_]\w*)\s*(=~|!~|!=|=)/g)) labels.push(m[1]!);
    return ' ';
  });
  rest = rest.replace(
    /\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g,
    (_, _kw, list: string) => {
      labels.push(
        ...list
          .split(',')
          .map((l) => l.trim())
          .filter((l) => l !== ''),
      );
      return ' ';
    },
  );
  rest = rest.replace(/\[[^\]]*\]/g, ' ');
  const metrics = [...rest.matchAll(/([a-zA-Z_:][\w:]*)(\s*\()?/g)]
    .filter((m) => m[2] === undefined && !KEYWORDS.has(m[1]!))
    .map((m) => m[1]!);
  return { metrics, labels };
}

/** What is wrong with the dashboard's queries against the exported metrics; [] when nothing. */
function dashboardProblems(dashboard: Any, metrics: Map<string, Set<string>>): string[] {
  const problems: string[] = [];
  for (const { where, expr } of queries(dashboard)) {
    const { metrics: used, labels } = namesIn(expr);
    if (used.length === 0) problems.push(`${where}: names no metric`);
    const known = new Set(TARGET_LABELS);
    for (const name of used) {
      const labelsOf = metrics.get(name);
      if (labelsOf === undefined)
        problems.push(`${where}: ${name} is exported by neither service nor operator`);
      for (const l of labelsOf ?? []) known.add(l);
    }
    for (const label of labels) {
      if (!known.has(label)) problems.push(`${where}: label ${label} is on none of ${used.join(', ')}`);
    }
  }
  return problems;
}

function promtool(): string | undefined {
  const probe = spawnSync('promtool', ['--version'], { encoding: 'utf8', timeout: 10_000 });
  if (probe.error === undefined && probe.status === 0) return undefined;
  const why = 'promtool not found on PATH (Debian package prometheus); .ci/run installs it';
  if (process.env['CI']) throw new Error(`${why}: required in CI`);
  return why;
}

describe('dashboard echo-chaos.json', () => {
  const dashboard: Any = JSON.parse(readFileSync(DASHBOARD, 'utf8'));
  let metrics: Map<string, Set<string>>;

  before(async () => {
    const echo = await startEcho();
    try {
      await fetch(`${echo.url}/hello`);
      await fetch(`${echo.url}/broken`, { headers: { 'X-Echo-Status': '503', 'X-Echo-Delay': '10ms' } });
      metrics = exported(await (await fetch(`${echo.url}/metrics`)).text());
    } finally {
      await echo.close();
    }
    const registry = new Registry();
    // The operator's meters, used once each as the operator uses them, so their labels show.
    const operator = createOperatorMetrics(
      registry,
      () => 0,
      () => [[{ type: 'Ready', status: 'True', reason: 'Synced' }]],
    );
    operator.pushes.inc({ result: 'failure' });
    operator.pushSeconds.observe(0.01);
    operator.reconciles.inc({ kind: 'pod', result: 'success' });
    operator.watchRestarts.inc({ resource: 'pods' });
    for (const [name, labels] of exported(await registry.metrics())) metrics.set(name, labels);
  });

  test('dashboard – has the panels the issue asks for, each with a query', () => {
    const titles = dashboard.panels.map((p: Any) => p.title);
    assert.deepEqual(titles, [
      'Request rate by status',
      'Injected faults by kind',
      'Active faults',
      'Latency p50 / p99',
      'Operator pushes and failures',
      'EchoScenarios by condition',
      'Config hashes per job',
    ]);
    for (const p of dashboard.panels) assert.ok(p.targets.length > 0, p.title);
    assert.equal(dashboard.uid, 'echo-chaos');
    assert.ok(
      dashboard.templating.list.some((v: Any) => v.type === 'datasource' && v.query === 'prometheus'),
    );
  });

  test('dashboard – every query parses (promtool check rules)', (t) => {
    const missing = promtool();
    if (missing !== undefined) {
      t.skip(missing);
      return;
    }
    const all = queries(dashboard);
    const rules = all.map((q, i) => ({ record: `dashboard:query_${i}`, expr: plain(q.expr) }));
    const dir = mkdtempSync(join(tmpdir(), 'echo-chaos-dashboard-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'rules.yaml');
    writeFileSync(file, dump({ groups: [{ name: 'dashboard', rules }] }));
    const result = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(result.status, 0, `promtool check rules:\n${result.stdout}${result.stderr}`);
    assert.match(result.stdout, new RegExp(`SUCCESS: ${all.length} rules found`));
  });

  test('dashboard – a query that does not parse is caught by promtool', (t) => {
    const missing = promtool();
    if (missing !== undefined) {
      t.skip(missing);
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'echo-chaos-dashboard-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'rules.yaml');
    const broken = 'sum by (status) (rate(echo_requests_total[5m])';
    writeFileSync(file, dump({ groups: [{ name: 'd', rules: [{ record: 'd:q', expr: broken }] }] }));
    const result = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8', timeout: 30_000 });
    assert.notEqual(result.status, 0);
  });

  test('dashboard – every query names metrics and labels the service or the operator exports', () => {
    assert.ok(metrics.has('echo_requests_total') && metrics.has('echo_operator_echoscenarios'));
    assert.deepEqual(dashboardProblems(dashboard, metrics), []);
    const used = new Set(queries(dashboard).flatMap((q) => namesIn(q.expr).metrics));
    for (const name of [
      'echo_requests_total',
      'echo_faults_injected_total',
      'echo_active_faults',
      'echo_request_duration_seconds_bucket',
      'echo_operator_pushes_total',
      'echo_operator_echoscenarios',
      'obs_config_info',
    ]) {
      assert.ok(used.has(name), name);
    }
  });

  test('dashboard – the name check catches a misspelt metric, a misspelt label and an unknown variable', () => {
    const broken = structuredClone(dashboard);
    broken.panels[0].targets[0].expr = broken.panels[0].targets[0].expr.replace(
      'echo_requests_total',
      'echo_request_total',
    );
    broken.panels[1].targets[0].expr = broken.panels[1].targets[0].expr.replace('by (kind)', 'by (knd)');
    broken.panels[3].targets[0].expr = broken.panels[3].targets[0].expr.replace('_bucket', '');
    assert.deepEqual(dashboardProblems(broken, metrics), [
      'panel "Request rate by status" A: echo_request_total is exported by neither service nor operator',
      'panel "Request rate by status" A: label status is on none of echo_request_total',
      'panel "Injected faults by kind" A: label knd is on none of echo_faults_injected_total',
      'panel "Latency p50 / p99" A: echo_request_duration_seconds is exported by neither service nor operator',
      'panel "Latency p50 / p99" A: label le is on none of echo_request_duration_seconds',
    ]);
    assert.throws(() => plain('rate(x[$interval])'), /unknown variable \$interval/);
  });

  test('dashboard – every query returns series from a real Prometheus scraping echo-chaos and the operator', async (t) => {
    const probe = spawnSync('prometheus', ['--version'], { encoding: 'utf8', timeout: 10_000 });
    if (probe.error !== undefined || probe.status !== 0) {
      const why = 'prometheus not found on PATH (Debian package prometheus); .ci/run installs it';
      if (process.env['CI']) assert.fail(`${why}: required in CI`);
      t.skip(why);
      return;
    }
    // A real operator (against the API double) pushing a scenario to a real echo pod.
    const f = await startFixture(1);
    t.after(() => f.close());
    const operator = await f.startOperator();
    const server = createOperatorServer({ registry: operator.registry, ready: () => operator.ready });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    await f.createScenario('flaky', spec('/flaky', 503));
    const echo = f.echoes.get('echo-0')!;
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const dir = mkdtempSync(join(tmpdir(), 'echo-chaos-prometheus-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    // The target labels a ServiceMonitor and a PodMonitor would add, as static labels.
    const target = (job: string, address: string, pod: string) => ({
      job_name: job,
      static_configs: [{ targets: [address], labels: { namespace: 'default', pod } }],
    });
    writeFileSync(
      join(dir, 'prometheus.yml'),
      dump({
        global: { scrape_interval: '1s', scrape_timeout: '1s' },
        scrape_configs: [
          target('echo-chaos', new URL(echo.url).host, 'echo-0'),
          target('operator', `127.0.0.1:${(server.address() as { port: number }).port}`, 'operator-0'),
        ],
      }),
    );
    const prometheus = spawn(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    prometheus.stderr.on('data', (chunk) => {
      log = (log + String(chunk)).slice(-4000);
    });
    t.after(async () => {
      if (prometheus.exitCode === null) {
        const exited = new Promise((resolve) => prometheus.once('exit', resolve));
        prometheus.kill('SIGTERM');
        await exited;
      }
    });
    const query = async (expr: string): Promise<Any[]> => {
      const url = `http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(expr)}`;
      const body: Any = await (await fetch(url)).json();
      assert.equal(body.status, 'success', `${expr}: ${JSON.stringify(body)}`);
      return body.data.result;
    };
    const until = (what: string, check: () => Promise<boolean>) =>
      waitUntil(
        what,
        () => check().catch(() => false), // Prometheus not listening yet
        60_000,
        250,
      ).catch((error: Error) => assert.fail(`${error.message}\n${log}`));
    await until('both targets up', async () => (await query('sum(up)'))[0]?.value[1] === '2');
    // Traffic between scrapes, so the rates are not empty: a plain answer, the pushed scenario's 503,
    // a header fault, and a delayed request still in progress at a scrape (active faults).
    const traffic = async () => {
      await fetch(`${echo.url}/hello`);
      await fetch(`${echo.url}/flaky`);
      await fetch(`${echo.url}/x`, { headers: { 'X-Echo-Status': '418' } });
    };
    const slow = fetch(`${echo.url}/slow`, { headers: { 'X-Echo-Delay': '2500ms' } });
    await until('the scenario and the faults are scraped', async () => {
      await traffic();
      const statuses = (await query(plain(queries(dashboard)[0]!.expr))).map((r) => r.metric.status);
      return statuses.includes('503') && statuses.includes('418');
    });
    const results = new Map<string, Any[]>();
    await until('every query returns a series', async () => {
      for (const q of queries(dashboard)) {
        if (q.where.startsWith('variable')) continue;
        results.set(q.where, await query(plain(q.expr)));
      }
      return [...results.values()].every((r) => r.length > 0);
    });
    await slow;
    const labels = (where: string, label: string) =>
      (results.get(where) ?? []).map((r) => r.metric[label] as string).sort();
    assert.ok(labels('panel "Injected faults by kind" A', 'kind').includes('status'));
    assert.ok(labels('panel "Operator pushes and failures" A', 'result').includes('success'));
    const ready = results.get('panel "EchoScenarios by condition" A')!;
    const synced = ready.find((r) => r.metric.status === 'True' && r.metric.reason === 'Synced');
    assert.equal(synced?.value[1], '1', JSON.stringify(ready));
    const variable = queries(dashboard).find((q) => q.where === 'variable namespace')!;
    assert.ok((await query(plain(variable.expr))).some((r) => r.metric.namespace === 'default'));
  });
});
