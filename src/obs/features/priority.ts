/**
 * Request priority (opt-in, `obs.priority.enabled`): its part of the request context
 * (`context-hook.ts`) reads the priority header (`Obs-Priority`) with {@link parsePriority}, puts
 * it in the request context (logs carry it as `priority`, outbound calls as the same header), in
 * the baggage (`obs.priority`) and on the active span (`obs.priority`). A present but unusable value
 * gives `default-priority` and counts in `obs_priority_invalid_total{reason}`. The meters named in
 * `tag-meters` get a `priority` label (`context-meter-labels.ts`).
 */
import { Counter } from 'prom-client';
import type { ObsCore } from '../core/obs.ts';
import { contextKit } from './request-context/context-hook.ts';
import { addContextLabel } from './request-context/context-meter-labels.ts';
import { currentRequestContext, type ObsPriority, PRIORITIES } from './request-context/request-context.ts';

/** Names of the meters of request priority. */
export const PRIORITY_METRICS = { invalid: 'obs_priority_invalid_total' } as const;

/** The baggage entry and the span attribute that carry the priority. */
export const PRIORITY_BAGGAGE_KEY = 'obs.priority';
export const PRIORITY_SPAN_ATTRIBUTE = 'obs.priority';
/** The label the meters of `obs.priority.tag-meters` get. */
export const PRIORITY_LABEL = 'priority';

/** The longest priority header value read (before trimming); a longer one is invalid. */
export const MAX_PRIORITY_HEADER_LENGTH = 32;

/** Why a present priority header was not used. */
export type PriorityInvalidReason = 'unknown' | 'too-long' | 'repeated';
const REASONS: readonly PriorityInvalidReason[] = ['unknown', 'too-long', 'repeated'];

/** What {@link parsePriority} made of a header. */
export interface ParsedPriority {
  readonly priority: ObsPriority;
  /** `header` when the header named it, `default` otherwise. */
  readonly source: 'header' | 'default';
  /** Set when the header was present but unusable. */
  readonly invalid?: PriorityInvalidReason;
}

/**
 * The priority a header value names: trimmed, case-insensitive, one of {@link PRIORITIES}. Absent,
 * empty or blank gives `fallback`; longer than {@link MAX_PRIORITY_HEADER_LENGTH}, repeated (node
 * joins a repeated header with `, `) or unknown gives `fallback` with the reason. Never throws.
 */
export function parsePriority(
  value: string | readonly string[] | undefined,
  fallback: ObsPriority,
): ParsedPriority {
  if (value === undefined) return { priority: fallback, source: 'default' };
  if (typeof value !== 'string') {
    return { priority: fallback, source: 'default', invalid: value.length > 1 ? 'repeated' : 'unknown' };
  }
  if (value.length > MAX_PRIORITY_HEADER_LENGTH)
    return { priority: fallback, source: 'default', invalid: 'too-long' };
  const text = value.trim().toLowerCase();
  if (text === '') return { priority: fallback, source: 'default' };
  if (text.includes(',')) return { priority: fallback, source: 'default', invalid: 'repeated' };
  const known = PRIORITIES.find((p) => p === text);
  return known === undefined
    ? { priority: fallback, source: 'default', invalid: 'unknown' }
    : { priority: known, source: 'header' };
}

/**
 * Adds request priority to an obs instance: its context contributor, outbound header, meter labels
 * and snapshot section (all but the section only when `obs.priority.enabled`).
 */
export function registerPriority(obs: ObsCore): void {
  const config = obs.config.priority;
  const requests = Object.fromEntries(PRIORITIES.map((p) => [p, 0])) as Record<ObsPriority, number>;
  const invalidCounts = Object.fromEntries(REASONS.map((r) => [r, 0])) as Record<
    PriorityInvalidReason,
    number
  >;
  let fromHeader = 0;
  let defaulted = 0;
  let label: ReturnType<typeof addContextLabel> | undefined;
  obs.addSnapshotSection('priority', () => ({
    enabled: config.enabled,
    config: obs.resolved.effective.priority ?? null,
    header: config['header-name'],
    default_priority: config['default-priority'],
    baggage: PRIORITY_BAGGAGE_KEY,
    metrics: [PRIORITY_METRICS.invalid],
    requests: { ...requests },
    from_header: fromHeader,
    defaulted,
    invalid: { ...invalidCounts },
    tag_meters: {
      listed: [...config['tag-meters']],
      tagged: label?.tagged() ?? [],
      distinct_values: label?.distinct() ?? {},
    },
  }));
  if (!config.enabled) return;

  const invalid = new Counter({
    name: PRIORITY_METRICS.invalid,
    help: 'Inbound requests whose priority header was unusable (the default priority was used), by reason',
    labelNames: ['reason'],
    registers: [obs.registry],
  });
  const headerName = config['header-name'].toLowerCase();
  const kit = contextKit(obs);
  kit.propagation.priorityHeader = config['header-name'];
  kit.addContributor('priority', ({ request, store, baggage, attribute }) => {
    const parsed = parsePriority(request.headers[headerName], config['default-priority']);
    if (parsed.invalid !== undefined) {
      invalidCounts[parsed.invalid] += 1;
      invalid.inc({ reason: parsed.invalid });
    }
    if (parsed.source === 'header') fromHeader += 1;
    else defaulted += 1;
    requests[parsed.priority] += 1;
    store.priority = parsed.priority;
    baggage(PRIORITY_BAGGAGE_KEY, parsed.priority);
    attribute(PRIORITY_SPAN_ATTRIBUTE, parsed.priority);
  });
  label = addContextLabel(obs.registry, {
    label: PRIORITY_LABEL,
    meters: config['tag-meters'],
    current: () => currentRequestContext()?.priority,
    onSkipped: (meter, reason) =>
      obs.logger.warn({ obs: 'priority', meter }, `obs cannot add a priority label to ${meter}: ${reason}`),
  });
}
