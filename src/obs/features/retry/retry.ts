/**
 * Retry amplification (`obs.retry`): how many retries stand behind a request. Each request's depth
 * comes in as `Obs-Retry-Depth` (`header-name`), else as the OpenTelemetry baggage entry
 * `obs.retry.depth` an upstream SDK extracted, else it is 0 ({@link inboundRetryDepth}). It goes in
 * the request context (`retryDepth`, so log lines carry `retry_depth`), the baggage and the span
 * attribute `obs.retry.depth`, and out again on every outbound call. A request that arrives at
 * `amplification-threshold` or deeper counts in `obs_retry_amplification_total{endpoint}` and logs
 * a warning, at most one per endpoint per minute ({@link WarningLimiter}).
 *
 * The depth only grows through `obs.retry(fn, options)` (`retry-helper.ts`): attempt `n` runs with
 * the depth raised by `n`, so a chain of retrying services shows how its retries multiply.
 */
import { context, propagation } from '@opentelemetry/api';
import { Counter } from 'prom-client';
import type { ObsCore } from '../../core/obs.ts';
import { routeOf } from '../../core/route.ts';
import { WarningLimiter } from '../../core/warning-limiter.ts';
import { contextKit } from '../request-context/context-hook.ts';
import { inboundRetryDepth, MAX_RETRY_DEPTH, RETRY_DEPTH_BAGGAGE_KEY } from './retry-depth.ts';
import { helperFiguresOf, type RetryState } from './retry-helper.ts';

/** Names of the meters of retry amplification. */
export const RETRY_METRICS = {
  amplification: 'obs_retry_amplification_total',
  invalid: 'obs_retry_depth_invalid_total',
  retries: 'obs_retry_attempts_total',
} as const;

/** At most one amplification warning per endpoint in this many milliseconds. */
export const RETRY_WARNING_INTERVAL_MS = 60_000;
/** Endpoints whose last warning is remembered; past it the one warned longest ago is forgotten. */
export const RETRY_WARNING_MAX_ENDPOINTS = 256;

// ---------------------------------------------------------------------------------------------
// the feature on a fastify app

/** Test seams of {@link registerRetry}. */
export interface RetryRegistrationOptions {
  /** The clock of the warning limiter, epoch milliseconds. Default `Date.now`. */
  readonly now?: () => number;
  readonly warningIntervalMs?: number;
  readonly maxWarnedEndpoints?: number;
}

type DepthBucket = '0' | '1' | '2' | '3+';

function depthBucket(depth: number): DepthBucket {
  return depth === 0 ? '0' : depth === 1 ? '1' : depth === 2 ? '2' : '3+';
}

/**
 * Adds retry amplification to the request context of `obs` (contributor, outbound header, meters,
 * warnings) when `obs.retry.enabled`, and its snapshot section either way.
 */
export function registerRetry(obs: ObsCore, options: RetryRegistrationOptions = {}): void {
  const config = obs.config.retry;
  const threshold = config['amplification-threshold'];
  const header = config['header-name'];
  const helper = helperFiguresOf(obs);
  const byDepth: Record<DepthBucket, number> = { '0': 0, '1': 0, '2': 0, '3+': 0 };
  const invalidCounts = { header: 0, baggage: 0 };
  let flagged = 0;
  const now = options.now ?? Date.now;
  const limiter = new WarningLimiter(
    options.warningIntervalMs ?? RETRY_WARNING_INTERVAL_MS,
    options.maxWarnedEndpoints ?? RETRY_WARNING_MAX_ENDPOINTS,
  );
  obs.addSnapshotSection('retry', () => ({
    enabled: config.enabled,
    config: obs.resolved.effective.retry ?? null,
    header,
    baggage: RETRY_DEPTH_BAGGAGE_KEY,
    span_attribute: RETRY_DEPTH_BAGGAGE_KEY,
    threshold,
    max_depth: MAX_RETRY_DEPTH,
    metrics: [RETRY_METRICS.amplification, RETRY_METRICS.invalid, RETRY_METRICS.retries],
    requests_by_depth: { ...byDepth },
    invalid: { ...invalidCounts },
    flagged,
    warnings: { logged: limiter.logged, suppressed: limiter.suppressed },
    helper: { calls: helper.calls, retries: helper.retries, gave_up: { ...helper.gaveUp } },
  }));
  if (!config.enabled) return;

  const amplification = new Counter({
    name: RETRY_METRICS.amplification,
    help: 'Inbound requests whose retry depth is at or above amplification-threshold, by endpoint (route pattern)',
    labelNames: ['endpoint'],
    registers: [obs.registry],
  });
  const invalid = new Counter({
    name: RETRY_METRICS.invalid,
    help: 'Inbound requests whose retry depth was malformed (ignored as absent), by source (header or baggage)',
    labelNames: ['source'],
    registers: [obs.registry],
  });
  const retries = new Counter({
    name: RETRY_METRICS.retries,
    help: 'Retries made through obs.retry (first attempts not counted), by endpoint (route pattern; none outside a request)',
    labelNames: ['endpoint'],
    registers: [obs.registry],
  });
  helper.countRetry = (endpoint) => retries.inc({ endpoint });

  const kit = contextKit(obs);
  kit.propagation.retryDepthHeader = header;
  const headerKey = header.toLowerCase();
  kit.addContributor('retry', ({ request, store, baggage, attribute }) => {
    const endpoint = routeOf(request);
    const carried = propagation.getBaggage(context.active())?.getEntry(RETRY_DEPTH_BAGGAGE_KEY)?.value;
    const inbound = inboundRetryDepth(request.headers[headerKey], carried);
    for (const source of inbound.invalid) {
      invalidCounts[source] += 1;
      invalid.inc({ source });
    }
    const depth = inbound.depth;
    byDepth[depthBucket(depth)] += 1;
    store.retryDepth = depth;
    store.state.retry = { endpoint } satisfies RetryState;
    baggage(RETRY_DEPTH_BAGGAGE_KEY, String(depth));
    attribute(RETRY_DEPTH_BAGGAGE_KEY, depth);
    if (depth < threshold) return;
    flagged += 1;
    amplification.inc({ endpoint });
    const admitted = limiter.admit(endpoint, now());
    if (admitted === undefined) return;
    const more = admitted.suppressed === 0 ? '' : ` (${admitted.suppressed} more since the last warning)`;
    obs.logger.warn(
      { obs: 'retry', endpoint, retry_depth: depth, threshold, suppressed: admitted.suppressed },
      `obs retry amplification: a request to ${endpoint} arrived at retry depth ${depth}, at or above amplification-threshold ${threshold}${more}`,
    );
  });
}
