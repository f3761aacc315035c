/** The operator's meters, all `echo_operator_*`, on the registry it is given. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export interface OperatorMetrics {
  /**
   * Scenario arrays POSTed to echo endpoints, by `result`: `success` and `unchanged` (412) only once
   * the read-back proved the pod holds the array, `not_applied` (answered, then read back holding
   * something else), `failure`.
   */
  readonly pushes: Counter<'result'>;
  /** Duration of one push, in seconds. */
  readonly pushSeconds: Histogram;
  /** Reconciles of a work-queue key, by `kind` (`pod`, `echoscenario`) and `result` (`success`, `error`). */
  readonly reconciles: Counter<'kind' | 'result'>;
  /** Duration of one reconcile of a work-queue key, by `kind` (`pod`, `echoscenario`), in seconds. */
  readonly reconcileSeconds: Histogram<'kind'>;
  /** Informer restarts after a dropped or failed watch, by `resource`. */
  readonly watchRestarts: Counter<'resource'>;
  /** 1 while this replica holds the lease. */
  readonly leader: Gauge;
  /** Keys waiting in the work queue, read at each scrape. */
  readonly queueDepth: Gauge;
  /** EchoScenarios in the informer cache, by `condition`, `status` and `reason`, counted at each scrape. */
  readonly echoScenarios: Gauge<'condition' | 'status' | 'reason'>;
  /** Checks of `spec.abortWhen`, by `result`: `held`, `clear` (the query answered) or `failed` (it could not be evaluated). */
  readonly abortChecks: Counter<'result'>;
}

/** What `echo_operator_echoscenarios` reads of one condition of an EchoScenario. */
export interface ConditionLike {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
}

/** The condition an EchoScenario without one is counted under, as `Unknown`. */
const READY = 'Ready';

/**
 * Registers the operator's meters on `registry`; `queueDepth` and `scenarioConditions` (the
 * conditions of each cached EchoScenario) are called at each scrape.
 */
export function createOperatorMetrics(
  registry: Registry,
  queueDepth: () => number,
  scenarioConditions: () => Iterable<readonly ConditionLike[] | undefined> = () => [],
): OperatorMetrics {
  return {
    pushes: new Counter({
      name: 'echo_operator_pushes_total',
      help: 'Scenario arrays POSTed to echo endpoints, by result (success and unchanged, the endpoint held the array already: both proven by a read-back; not_applied: answered, but the read-back shows it does not hold it; failure).',
      labelNames: ['result'],
      registers: [registry],
    }),
    pushSeconds: new Histogram({
      name: 'echo_operator_push_duration_seconds',
      help: 'Duration of one POST /scenario to an echo endpoint.',
      buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers: [registry],
    }),
    reconciles: new Counter({
      name: 'echo_operator_reconciles_total',
      help: 'Reconciles of a work-queue key, by kind and result.',
      labelNames: ['kind', 'result'],
      registers: [registry],
    }),
    reconcileSeconds: new Histogram({
      name: 'echo_operator_reconcile_duration_seconds',
      help: 'Duration of one reconcile of a work-queue key (planning, pushes and status writes), by kind.',
      labelNames: ['kind'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
      registers: [registry],
    }),
    watchRestarts: new Counter({
      name: 'echo_operator_watch_restarts_total',
      help: 'Informer restarts after a dropped or failed watch, by resource.',
      labelNames: ['resource'],
      registers: [registry],
    }),
    leader: new Gauge({
      name: 'echo_operator_leader',
      help: '1 while this replica holds the lease.',
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: 'echo_operator_queue_depth',
      help: 'Keys waiting in the work queue.',
      registers: [registry],
      collect() {
        this.set(queueDepth());
      },
    }),
    echoScenarios: new Gauge({
      name: 'echo_operator_echoscenarios',
      help: 'EchoScenarios by condition, status and reason (every replica counts its cache: aggregate with max).',
      labelNames: ['condition', 'status', 'reason'],
      registers: [registry],
      collect() {
        // Rebuilt at each scrape: a reason nobody has any more disappears; Ready is always there.
        this.reset();
        for (const status of ['True', 'False', 'Unknown'])
          this.set({ condition: READY, status, reason: '' }, 0);
        for (const conditions of scenarioConditions()) {
          const list = conditions ?? [];
          const counted = list.some((c) => c.type === READY)
            ? list
            : [...list, { type: READY, status: 'Unknown', reason: '' }];
          for (const c of counted) this.inc({ condition: c.type, status: c.status, reason: c.reason ?? '' });
        }
      },
    }),
    abortChecks: new Counter({
      name: 'echo_operator_abort_checks_total',
      help: 'Checks of spec.abortWhen queries, by result (held: the abort condition holds; clear: it does not; failed: the query could not be evaluated).',
      labelNames: ['result'],
      registers: [registry],
    }),
  };
}
