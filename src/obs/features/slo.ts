/**
 * SLO-as-code (`obs.slo`): the declared objectives rendered as a prometheus-operator
 * `PrometheusRule` (recording rules of the error ratio over 5m, 30m, 1h, 6h and 3d, and the SRE
 * Workbook's multiwindow, multi-burn-rate alerts), served as YAML at `GET /actuator/obs/slo`; and a
 * live, in-process estimate of each objective's burn rate for the snapshot and `/actuator/obsui`.
 *
 * An availability objective counts the events of a counter (`metric{filter}`) and the bad ones
 * among them (`metric{filter,error-filter}`); a latency objective reads a seconds histogram, where
 * the bad events are the slower than the threshold: `_count{filter} - _bucket{filter,le="<threshold>"}`.
 * The rules aggregate `by (namespace, job)`, so one rule set serves every deployment of a service.
 */
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { dump } from 'js-yaml';
import type { Registry } from 'prom-client';
import type { ObsConfig } from '../core/config/config-schema.ts';
import { ObsError } from '../core/errors.ts';
import type { ObsCore } from '../core/obs.ts';

/** One declared objective, as resolved (durations in milliseconds). */
export type SloObjective = ObsConfig['slo']['objectives'][number];

/** The windows the recording rules cover. */
export const SLO_WINDOWS = ['5m', '30m', '1h', '6h', '3d'] as const;
export type SloWindow = (typeof SLO_WINDOWS)[number];

/** The Workbook's alert pairs (chapter 5, table 5-8): both windows above `factor` times the budget. */
export const SLO_BURN_PAIRS = [
  { severity: 'page', factor: 14.4, long: '1h', short: '5m' },
  { severity: 'page', factor: 6, long: '6h', short: '30m' },
  { severity: 'ticket', factor: 1, long: '3d', short: '6h' },
] as const;

/** The labels every rule aggregates by. */
export const SLO_GROUP_BY = ['namespace', 'job'] as const;

/** The name of the recording rule of an objective's error ratio over a window. */
export function sloRecordName(objective: string, window: SloWindow): string {
  return `slo:${objective.replaceAll('-', '_')}:error_ratio_rate${window}`;
}

/** `orders-api` → `OrdersApi`: the prefix of an objective's alert names. */
export function sloAlertPrefix(objective: string): string {
  return objective
    .split(/[-_]+/)
    .filter((part) => part !== '')
    .map((part) => part[0]?.toUpperCase() + part.slice(1))
    .join('');
}

/** The alert names of an objective: the page and the ticket. */
export function sloAlertNames(objective: string): { readonly page: string; readonly ticket: string } {
  const prefix = sloAlertPrefix(objective);
  return { page: `${prefix}BurnRateCritical`, ticket: `${prefix}BurnRateTicket` };
}

/** The `le` label value of a threshold in milliseconds, as prom-client writes it (seconds). */
export function leOf(thresholdMs: number): string {
  return String(thresholdMs / 1000);
}

function selector(metric: string, ...matchers: Array<string | undefined>): string {
  const inner = matchers
    .filter((m): m is string => m !== undefined && m.trim() !== '')
    .map((m) => m.trim())
    .join(',');
  return `${metric}{${inner}}`;
}

function sumRate(series: string, window: string): string {
  return `sum by (${SLO_GROUP_BY.join(', ')}) (rate(${series}[${window}]))`;
}

/** The PromQL of an objective's error ratio (bad events / all events) over a window. */
export function sloErrorRatioExpr(objective: SloObjective, window: string): string {
  if (objective.sli === 'latency') {
    const count = selector(`${objective.metric}_count`, objective.filter);
    const le = `le="${leOf(objective.threshold ?? 0)}"`;
    const fast = selector(`${objective.metric}_bucket`, objective.filter, le);
    return `(\n  ${sumRate(count, window)}\n  -\n  ${sumRate(fast, window)}\n)\n/\n${sumRate(count, window)}`;
  }
  const bad = selector(objective.metric, objective.filter, objective['error-filter']);
  const all = selector(objective.metric, objective.filter);
  return `${sumRate(bad, window)}\n/\n${sumRate(all, window)}`;
}

/** A rule of a rule group, as Prometheus reads it. */
export interface SloRule {
  readonly record?: string;
  readonly alert?: string;
  readonly expr: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

/** A rule group. */
export interface SloRuleGroup {
  readonly name: string;
  readonly rules: readonly SloRule[];
}

function budgetText(target: number): string {
  return `(1 - ${target})`;
}

function what(objective: SloObjective): string {
  return objective.sli === 'latency'
    ? `requests of ${objective.metric} slower than ${leOf(objective.threshold ?? 0)}s`
    : `bad events of ${objective.metric} (${objective['error-filter']})`;
}

/**
 * The rule group of one objective: its recording rules first, then its alerts (one group, so an
 * alert reads the ratios recorded in the same evaluation).
 */
export function sloRuleGroup(objective: SloObjective): SloRuleGroup {
  const budget = budgetText(objective.target);
  const record = (w: SloWindow) => sloRecordName(objective.name, w);
  const over = (w: SloWindow, factor: number) => `${record(w)} > (${factor} * ${budget})`;
  const names = sloAlertNames(objective.name);
  const labels = (severity: string) => ({ severity, slo: objective.name });
  const pages = SLO_BURN_PAIRS.filter((p) => p.severity === 'page');
  const ticket = SLO_BURN_PAIRS.find((p) => p.severity === 'ticket') ?? SLO_BURN_PAIRS[2];
  const pair = (p: (typeof SLO_BURN_PAIRS)[number]) =>
    `(\n  ${over(p.long, p.factor)}\nand\n  ${over(p.short, p.factor)}\n)`;
  return {
    name: `slo-${objective.name}`,
    rules: [
      ...SLO_WINDOWS.map((w) => ({
        record: record(w),
        expr: sloErrorRatioExpr(objective, w),
        labels: { slo: objective.name },
      })),
      {
        alert: names.page,
        expr: pages.map(pair).join('\nor\n'),
        labels: labels('page'),
        annotations: {
          summary: `SLO ${objective.name} is burning its error budget fast`,
          description: `The ratio of ${what(objective)} is above ${pages.map((p) => `${p.factor}x the budget over ${p.long} and ${p.short}`).join(', or ')}; objective ${objective.target}.`,
        },
      },
      {
        alert: names.ticket,
        expr: pair(ticket),
        labels: labels('ticket'),
        annotations: {
          summary: `SLO ${objective.name} is burning its error budget`,
          description: `The ratio of ${what(objective)} is above ${ticket.factor}x the budget over ${ticket.long} and ${ticket.short}; objective ${objective.target}.`,
        },
      },
    ],
  };
}

/** A prometheus-operator `PrometheusRule`. */
export interface PrometheusRuleResource {
  readonly apiVersion: 'monitoring.coreos.com/v1';
  readonly kind: 'PrometheusRule';
  readonly metadata: { readonly name: string; readonly labels: Readonly<Record<string, string>> };
  readonly spec: { readonly groups: readonly SloRuleGroup[] };
}

/** A Kubernetes object name (RFC 1123 label) made of a service name. */
function k8sName(service: string): string {
  const name = service
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 58)
    .replace(/-+$/, '');
  return `${name === '' ? 'service' : name}-slo`;
}

/** The `PrometheusRule` of the objectives of a service. */
export function sloPrometheusRule(
  objectives: readonly SloObjective[],
  serviceName: string,
): PrometheusRuleResource {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: {
      name: k8sName(serviceName),
      labels: {
        'app.kubernetes.io/name': k8sName(serviceName).slice(0, -4),
        'app.kubernetes.io/component': 'slo',
      },
    },
    spec: { groups: objectives.map(sloRuleGroup) },
  };
}

/** The `PrometheusRule` as YAML. */
export function sloPrometheusRuleYaml(objectives: readonly SloObjective[], serviceName: string): string {
  return dump(sloPrometheusRule(objectives, serviceName), { lineWidth: -1, noRefs: true });
}

// ---------------------------------------------------------------------------------------------
// Label matchers, evaluated in process

/** One PromQL label matcher. */
export interface LabelMatcher {
  readonly name: string;
  readonly op: '=' | '!=' | '=~' | '!~';
  readonly value: string;
  readonly regex?: RegExp;
}

const MATCHER_AT = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\\n]|\\.)*)"\s*(?:,|$)/y;

/**
 * The matchers of a `filter` (already validated by the schema). A regular expression is anchored as
 * PromQL anchors it; one JavaScript cannot compile throws.
 */
export function parseLabelMatchers(text: string | undefined): LabelMatcher[] {
  if (text === undefined || text.trim() === '') return [];
  const out: LabelMatcher[] = [];
  MATCHER_AT.lastIndex = 0;
  while (MATCHER_AT.lastIndex < text.length) {
    const m = MATCHER_AT.exec(text);
    assert.ok(m !== null, `not PromQL label matchers: ${text}`);
    const [, name = '', op, raw = ''] = m;
    const value = raw.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    const matcher: LabelMatcher =
      op === '=~' || op === '!~'
        ? { name, op, value, regex: new RegExp(`^(?:${value})$`) }
        : { name, op: op as '=' | '!=', value };
    out.push(matcher);
    if (text.slice(MATCHER_AT.lastIndex).trim() === '') break;
  }
  return out;
}

/** Whether a series' labels pass every matcher (a missing label reads as empty, as in PromQL). */
export function matchesLabels(
  matchers: readonly LabelMatcher[],
  labels: Readonly<Partial<Record<string, string | number>>>,
): boolean {
  for (const m of matchers) {
    const v = labels[m.name];
    const value = v === undefined ? '' : String(v);
    const hit = m.regex === undefined ? value === m.value : m.regex.test(value);
    if ((m.op === '=' || m.op === '=~') !== hit) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// The live burn rate

/** How often the counters are sampled. */
export const SLO_SAMPLE_INTERVAL_MS = 15_000;
/** The windows of the live estimate, in milliseconds. */
export const SLO_LIVE_WINDOWS = { '5m': 300_000, '1h': 3_600_000 } as const;

/** The cumulative counts of one objective at one time. */
export interface SloCounts {
  readonly total: number;
  readonly bad: number;
}

interface Sample extends SloCounts {
  readonly t: number;
}

/** A value of a prom-client metric's `get()`. */
interface MetricValue {
  readonly value: number;
  readonly labels: Readonly<Partial<Record<string, string | number>>>;
  readonly metricName?: string;
}

/** The counts of an objective from the values of its metric; `undefined` when the metric is not the right kind. */
export function countsOf(
  objective: SloObjective,
  type: string,
  values: readonly MetricValue[],
): SloCounts | undefined {
  const filter = parseLabelMatchers(objective.filter);
  if (objective.sli === 'latency') {
    if (type !== 'histogram') return undefined;
    const le = (objective.threshold ?? 0) / 1000;
    let total = 0;
    let fast = 0;
    for (const v of values) {
      if (!matchesLabels(filter, v.labels)) continue;
      if (v.metricName === `${objective.metric}_count`) total += v.value;
      else if (v.metricName === `${objective.metric}_bucket` && Number(v.labels.le) === le) fast += v.value;
    }
    return { total, bad: Math.max(0, total - fast) };
  }
  if (type !== 'counter') return undefined;
  const errors = parseLabelMatchers(objective['error-filter']);
  let total = 0;
  let bad = 0;
  for (const v of values) {
    if (!matchesLabels(filter, v.labels)) continue;
    total += v.value;
    if (matchesLabels(errors, v.labels)) bad += v.value;
  }
  return { total, bad };
}

/** The live figures of one window. */
export type SloWindowFigures = {
  /** Bad events over all events in the window, `null` without events. */
  readonly error_ratio: number | null;
  /** The error ratio over the error budget (`1 - target`): 1 spends the budget exactly over the SLO period. */
  readonly burn_rate: number | null;
  readonly events: number;
  readonly bad_events: number;
  /** Seconds of the window the samples cover (less than the window shortly after start). */
  readonly covered_seconds: number;
};

/**
 * A bounded ring of count samples per objective: enough for the longest live window at the sample
 * interval. Time is injected, so the arithmetic is tested without waiting.
 */
export class SloBurnEstimator {
  readonly #objectives: readonly SloObjective[];
  readonly #capacity: number;
  readonly #rings: Sample[][];
  readonly #state: Array<'ok' | 'absent' | 'wrong-type'>;

  constructor(objectives: readonly SloObjective[], intervalMs = SLO_SAMPLE_INTERVAL_MS) {
    this.#objectives = objectives;
    this.#capacity = Math.ceil(SLO_LIVE_WINDOWS['1h'] / intervalMs) + 2;
    this.#rings = objectives.map(() => []);
    this.#state = objectives.map(() => 'absent');
  }

  /** Records the counts of objective `i` at `t` (`undefined`: its metric is absent or of another kind). */
  record(
    i: number,
    t: number,
    counts: SloCounts | undefined,
    state: 'ok' | 'absent' | 'wrong-type' = 'ok',
  ): void {
    const ring = this.#rings[i];
    if (ring === undefined) return;
    this.#state[i] = counts === undefined ? (state === 'ok' ? 'absent' : state) : 'ok';
    if (counts === undefined) return;
    const last = ring[ring.length - 1];
    // A counter that went down was reset: the samples before it no longer subtract.
    if (last !== undefined && (counts.total < last.total || counts.bad < last.bad)) ring.length = 0;
    ring.push({ t, ...counts });
    if (ring.length > this.#capacity) ring.shift();
  }

  /** Reads every objective's metric from the registry and records it at `t`. Never rejects. */
  async sample(registry: Registry, t: number): Promise<void> {
    await Promise.all(
      this.#objectives.map(async (objective, i) => {
        try {
          const metric = registry.getSingleMetric(objective.metric);
          if (metric === undefined) return this.record(i, t, undefined, 'absent');
          const got = await metric.get();
          const counts = countsOf(objective, String(got.type), got.values);
          this.record(i, t, counts, counts === undefined ? 'wrong-type' : 'ok');
        } catch {
          this.record(i, t, undefined, 'absent');
        }
      }),
    );
  }

  /** The figures of objective `i` over a window ending at its newest sample. */
  window(i: number, windowMs: number): SloWindowFigures {
    const ring = this.#rings[i] ?? [];
    const newest = ring[ring.length - 1];
    const objective = this.#objectives[i];
    if (newest === undefined || objective === undefined) {
      return { error_ratio: null, burn_rate: null, events: 0, bad_events: 0, covered_seconds: 0 };
    }
    const base = ring.find((s) => s.t >= newest.t - windowMs) ?? newest;
    const events = newest.total - base.total;
    const bad = newest.bad - base.bad;
    const ratio = events > 0 ? bad / events : null;
    return {
      error_ratio: ratio,
      burn_rate: ratio === null ? null : ratio / (1 - objective.target),
      events,
      bad_events: bad,
      covered_seconds: Math.round((newest.t - base.t) / 1000),
    };
  }

  /** Every objective's live figures. */
  figures() {
    return this.#objectives.map((o, i) => ({
      name: o.name,
      sli: o.sli,
      target: o.target,
      metric: o.metric,
      metric_state: this.#state[i] ?? 'absent',
      windows: Object.fromEntries(
        Object.entries(SLO_LIVE_WINDOWS).map(([name, ms]) => [name, this.window(i, ms)]),
      ),
    }));
  }
}

// ---------------------------------------------------------------------------------------------
// Registration

/**
 * Checks the objectives against the metrics the registry holds: an availability objective's metric
 * must be a counter, a latency objective's a histogram with the threshold among its buckets. A
 * metric the registry does not hold (exported elsewhere) is not checked.
 * @throws {ObsError} `OBS_ERR_SLO_OBJECTIVE` at the first objective that does not fit.
 */
export function checkObjectivesAgainst(registry: Registry, objectives: readonly SloObjective[]): void {
  for (const o of objectives) {
    const metric = registry.getSingleMetric(o.metric) as
      | { type?: string; upperBounds?: readonly number[] }
      | undefined;
    if (metric === undefined) continue;
    const type = String(metric.type);
    if (o.sli === 'availability' && type !== 'counter') {
      throw new ObsError('OBS_ERR_SLO_OBJECTIVE', [o.name, `${o.metric} is a ${type}, not a counter`]);
    }
    if (o.sli === 'latency') {
      if (type !== 'histogram') {
        throw new ObsError('OBS_ERR_SLO_OBJECTIVE', [o.name, `${o.metric} is a ${type}, not a histogram`]);
      }
      const le = (o.threshold ?? 0) / 1000;
      const bounds = metric.upperBounds ?? [];
      if (!bounds.includes(le)) {
        throw new ObsError('OBS_ERR_SLO_OBJECTIVE', [
          o.name,
          `threshold ${le}s is not a bucket of ${o.metric} (buckets: ${bounds.join(', ')})`,
        ]);
      }
    }
  }
}

/** Options of {@link registerSlo}, for tests. */
export interface SloOptions {
  readonly nowMs?: () => number;
  readonly intervalMs?: number;
}

/**
 * Adds SLO-as-code to a fastify app: the `slo` snapshot section, and with `obs.slo.enabled` and
 * objectives, the check of the objectives against the registry when the app is ready (startup
 * fails on a mismatch) and the sampling of the live burn rate. The route is the actuator's.
 */
export function registerSlo(app: FastifyInstance, obs: ObsCore, options: SloOptions = {}): void {
  const config = obs.config.slo;
  const objectives = config.enabled ? config.objectives : [];
  const nowMs = options.nowMs ?? Date.now;
  const intervalMs = options.intervalMs ?? SLO_SAMPLE_INTERVAL_MS;
  const estimator = new SloBurnEstimator(objectives, intervalMs);
  const base = obs.config.actuator['base-path'];

  obs.addSnapshotSection('slo', () => ({
    enabled: config.enabled,
    config: obs.resolved.effective.slo ?? null,
    rules: objectives.length > 0 && obs.config.actuator.enabled ? `${base}/obs/slo` : null,
    live: {
      note: `In-process estimate: this process's counters sampled every ${intervalMs / 1000}s; Prometheus's rules over every instance are authoritative.`,
      objectives: estimator.figures(),
    },
  }));
  if (objectives.length === 0) return;

  let timer: NodeJS.Timeout | undefined;
  const sample = () => {
    estimator.sample(obs.registry, nowMs()).catch(() => {});
  };
  app.addHook('onReady', async () => {
    checkObjectivesAgainst(obs.registry, objectives);
    await estimator.sample(obs.registry, nowMs());
    timer = setInterval(sample, intervalMs);
    timer.unref();
  });
  app.addHook('onClose', (_instance, done) => {
    if (timer !== undefined) clearInterval(timer);
    done();
  });
}

/**
 * The body of `GET /actuator/obs/slo`.
 * @throws {ObsError} `OBS_ERR_SLO_NOT_CONFIGURED` (404) when `obs.slo` is off or declares no objective.
 */
export function sloRouteBody(obs: ObsCore): string {
  const config = obs.config.slo;
  if (!config.enabled || config.objectives.length === 0) {
    throw new ObsError('OBS_ERR_SLO_NOT_CONFIGURED', [
      config.enabled ? 'obs.slo.objectives is empty' : 'obs.slo.enabled is false',
    ]);
  }
  return sloPrometheusRuleYaml(config.objectives, obs.serviceName);
}
