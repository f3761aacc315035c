/** The operator's meters, all `echo_chaos_operator_*`, on the registry it is given. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export interface OperatorMetrics {
  /** Scenario arrays POSTed to echo endpoints, by `result` (`success`, `failure`). */
  readonly pushes: Counter<'result'>;
  /** Duration of one push, in seconds. */
  readonly pushSeconds: Histogram;
  /** Reconciles of a work-queue key, by `kind` (`pod`, `echoscenario`) and `result` (`success`, `error`). */
  readonly reconciles: Counter<'kind' | 'result'>;
  /** Informer restarts after a dropped or failed watch, by `resource`. */
  readonly watchRestarts: Counter<'resource'>;
  /** 1 while this replica holds the lease. */
  readonly leader: Gauge;
  /** Keys waiting in the work queue, read at each scrape. */
  readonly queueDepth: Gauge;
}

/** Registers the operator's meters on `registry`; `queueDepth` is called at each scrape. */
export function createOperatorMetrics(registry: Registry, queueDepth: () => number): OperatorMetrics {
  return {
    pushes: new Counter({
      name: 'echo_chaos_operator_pushes_total',
      help: 'Scenario arrays POSTed to echo endpoints, by result.',
      labelNames: ['result'],
      registers: [registry],
    }),
    pushSeconds: new Histogram({
      name: 'echo_chaos_operator_push_duration_seconds',
      help: 'Duration of one POST /scenario to an echo endpoint.',
      buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers: [registry],
    }),
    reconciles: new Counter({
      name: 'echo_chaos_operator_reconciles_total',
      help: 'Reconciles of a work-queue key, by kind and result.',
      labelNames: ['kind', 'result'],
      registers: [registry],
    }),
    watchRestarts: new Counter({
      name: 'echo_chaos_operator_watch_restarts_total',
      help: 'Informer restarts after a dropped or failed watch, by resource.',
      labelNames: ['resource'],
      registers: [registry],
    }),
    leader: new Gauge({
      name: 'echo_chaos_operator_leader',
      help: '1 while this replica holds the lease.',
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: 'echo_chaos_operator_queue_depth',
      help: 'Keys waiting in the work queue.',
      registers: [registry],
      collect() {
        this.set(queueDepth());
      },
    }),
  };
}
