/**
 * The timeout budget on a fastify app: its part of the request context (`context-hook.ts`)
 * establishes each request's budget ({@link establishBudget}), puts it in the request context, puts
 * the deadline in the baggage (`obs.timeout-budget.deadline.epoch.ms`) and on the active span
 * ({@link TIMEOUT_BUDGET_SPAN_ATTRIBUTES}). A malformed deadline header counts in
 * `obs_timeout_budget_invalid_total{header}`; outbound calls that find the budget exhausted count in
 * `obs_timeout_budget_exhausted_total{transport}`.
 */
import { Counter } from 'prom-client';
import type { ObsCore } from '../../core/obs.ts';
import { contextKit } from '../request-context/context-hook.ts';
import type { ContextBudget, OutboundBudgetPolicy } from '../request-context/request-context.ts';
import { DEADLINE_HEADER, establishBudget, remainingMs, type TimeoutBudgetSource } from './timeout-budget.ts';
import { TRANSPORTS, type Transport } from './timeout-budget-clients.ts';

/** Names of the meters of the timeout budget. */
export const TIMEOUT_BUDGET_METRICS = {
  exhausted: 'obs_timeout_budget_exhausted_total',
  invalid: 'obs_timeout_budget_invalid_total',
} as const;

/** The attributes the budget puts on the request's active span when it is established. */
export const TIMEOUT_BUDGET_SPAN_ATTRIBUTES = {
  deadline: 'obs.timeout_budget.deadline_epoch_ms',
  remaining: 'obs.timeout_budget.remaining_ms',
  source: 'obs.timeout_budget.source',
} as const;

/** The baggage entry that carries the deadline (epoch milliseconds). */
export const DEADLINE_BAGGAGE_KEY = 'obs.timeout-budget.deadline.epoch.ms';

const SOURCES: readonly TimeoutBudgetSource[] = ['deadline-header', 'remaining-header', 'default'];

const policies = new WeakMap<ObsCore, OutboundBudgetPolicy>();

/**
 * The outbound policy {@link registerTimeoutBudget} made for `obs`: undefined before it ran, or when
 * `obs.timeout-budget.enabled=false`. A context rebuilt elsewhere (a Kafka record) carries it.
 */
export function outboundPolicyOf(obs: ObsCore): OutboundBudgetPolicy | undefined {
  return policies.get(obs);
}

/**
 * Adds the budget's part of the request context, meters, outbound instrumentation and snapshot section to a fastify app
 * (hooks, meters and instrumentation only when `obs.timeout-budget.enabled`).
 */
export function registerTimeoutBudget(obs: ObsCore): void {
  const config = obs.config['timeout-budget'];
  const established = Object.fromEntries(SOURCES.map((s) => [s, 0])) as Record<TimeoutBudgetSource, number>;
  const exhaustedCounts = Object.fromEntries(TRANSPORTS.map((t) => [t, 0])) as Record<Transport, number>;
  let invalidCount = 0;
  let skipped = 0;
  let unbudgeted = 0;
  const outboundHeader = config['outbound-header'] ?? config['inbound-header'];
  obs.addSnapshotSection('timeout-budget', () => ({
    enabled: config.enabled,
    config: obs.resolved.effective['timeout-budget'] ?? null,
    headers: { deadline: DEADLINE_HEADER, inbound: config['inbound-header'], outbound: outboundHeader },
    baggage: DEADLINE_BAGGAGE_KEY,
    transports: [...TRANSPORTS],
    metrics: [TIMEOUT_BUDGET_METRICS.exhausted, TIMEOUT_BUDGET_METRICS.invalid],
    established: { ...established },
    skipped,
    // requests that came without a deadline header while `default-budget` is 0
    without_budget: unbudgeted,
    invalid: invalidCount,
    exhausted: { ...exhaustedCounts },
  }));
  if (!config.enabled) return;

  const exhausted = new Counter({
    name: TIMEOUT_BUDGET_METRICS.exhausted,
    help: 'Outbound calls made or refused with the remaining timeout budget at or below minimum-budget, by transport',
    labelNames: ['transport'],
    registers: [obs.registry],
  });
  const invalid = new Counter({
    name: TIMEOUT_BUDGET_METRICS.invalid,
    help: 'Inbound requests whose deadline header was malformed (treated as absent), by header',
    labelNames: ['header'],
    registers: [obs.registry],
  });
  const policy: OutboundBudgetPolicy = {
    outboundHeader,
    minimumBudgetMs: config['minimum-budget'],
    // A refusal is enforcement: DRY_RUN counts the exhausted call and lets it run.
    get abortOnExhaustion() {
      return config['abort-on-exhaustion'] && obs.mode.get() === 'ENFORCING';
    },
    applyClientTimeout: config['apply-client-timeout'],
    exhausted(transport) {
      try {
        exhausted.inc({ transport });
        if (transport in exhaustedCounts) exhaustedCounts[transport as Transport] += 1;
      } catch {
        // a broken meter never fails the call
      }
    },
    failed(transport, error) {
      try {
        obs.logger.warn(
          { obs: 'timeout-budget', transport, err: String(error) },
          `obs could not apply the timeout budget to a ${transport} call; the call goes on without it`,
        );
      } catch {
        // nothing more to do
      }
    },
  };
  policies.set(obs, policy);

  contextKit(obs).addContributor('timeout-budget', ({ request, store, baggage, attribute }) => {
    if (!obs.isEnabledFor('timeout-budget', request)) {
      skipped += 1;
      return;
    }
    const now = Date.now();
    const result = establishBudget(request.headers, config, now);
    for (const header of result.invalidHeaders) {
      invalidCount += 1;
      invalid.inc({ header });
    }
    if (result.budget === undefined) {
      // `default-budget: 0` and no deadline header: nothing to carry, stamp or count.
      unbudgeted += 1;
      return;
    }
    established[result.budget.source] += 1;
    const budget: ContextBudget = {
      deadlineEpochMs: result.budget.deadlineEpochMs,
      source: result.budget.source,
      policy,
    };
    store.budget = budget;
    baggage(DEADLINE_BAGGAGE_KEY, String(budget.deadlineEpochMs));
    attribute(TIMEOUT_BUDGET_SPAN_ATTRIBUTES.deadline, budget.deadlineEpochMs);
    attribute(TIMEOUT_BUDGET_SPAN_ATTRIBUTES.remaining, remainingMs(budget.deadlineEpochMs, now));
    attribute(TIMEOUT_BUDGET_SPAN_ATTRIBUTES.source, budget.source);
  });
}
