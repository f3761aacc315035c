/**
 * The features of obs: the seed's feature table, each row with the subtree of `obs.*` that
 * configures it and whether obs has its code yet. This is the one place that says so.
 *
 * A `planned` feature has its keys in the schema, to document what will come, and nothing presents
 * it as working: the snapshot and `/actuator/obsui` show it as planned, its keys are left out of the
 * effective configuration, the config hash and the README's key table, its `enabled` reads false in
 * the resolved tree, and a key of it set by any source stops startup (`OBS_ERR_CONFIG`). Building
 * one means writing its code and changing its `status` to `built`.
 */
import type { ObsConfig } from './config/config-schema.ts';

/** Whether obs has the code of a feature. */
export type FeatureStatus = 'built' | 'planned';

/** One row of {@link FEATURES}. */
export interface Feature {
  /** The display name, as the seed's table words it. */
  readonly name: string;
  /** The subtree of `obs.*` that configures it (`config-validation` has none). */
  readonly key: keyof ObsConfig | 'config-validation';
  /** The default as the seed words it (for a planned feature: once it is built). */
  readonly default: string;
  readonly status: FeatureStatus;
  /**
   * Keys of a planned feature's subtree (relative to it) that built code reads already; they may be
   * set. `obs.context.request-id-header` names the request-id header of obs's structured logs.
   */
  readonly builtKeys?: readonly string[];
}

/** The seed's feature table, in its order. */
export const FEATURES: readonly Feature[] = [
  { name: 'Cardinality firewall', key: 'cardinality', default: 'on', status: 'built' },
  { name: 'Timeout-budget propagation', key: 'timeout-budget', default: 'on', status: 'built' },
  {
    name: 'Context propagation',
    key: 'context',
    default: 'on',
    status: 'built',
  },
  { name: 'Trace-context guard', key: 'trace-guard', default: 'on', status: 'built' },
  { name: 'Structured logs', key: 'logging', default: 'on', status: 'built' },
  { name: 'Stable exception fingerprints', key: 'exception-handler', default: 'on', status: 'built' },
  { name: 'Conditional features', key: 'conditional-features', default: 'on', status: 'built' },
  { name: 'Dependency health map', key: 'dependencies', default: 'on', status: 'built' },
  { name: 'Retry amplification', key: 'retry', default: 'on', status: 'built' },
  { name: 'Multi-tenant context', key: 'tenant', default: 'opt-in', status: 'built' },
  { name: 'Request priority', key: 'priority', default: 'opt-in', status: 'built' },
  {
    name: 'Container-aware memory metrics',
    key: 'container-memory',
    default: 'on; readiness opt-in',
    status: 'built',
  },
  {
    name: 'Kafka time-based lag',
    key: 'kafka',
    default: 'on if kafkajs is handed to obs',
    status: 'built',
  },
  { name: 'Request fan-out', key: 'fan-out', default: 'on', status: 'built' },
  { name: 'SLO-as-code', key: 'slo', default: 'opt-in', status: 'built' },
  {
    name: 'Resilience auto-instrumentation',
    key: 'resilience',
    default: 'on if cockatiel or opossum is handed to obs',
    status: 'built',
  },
  { name: 'Background-job observability', key: 'jobs', default: 'on', status: 'built' },
  {
    name: 'Database N+1 and slow-query detection',
    key: 'db',
    default: 'on if pg is handed to obs',
    status: 'built',
  },
  { name: 'Cache observability', key: 'cache', default: 'opt-in', status: 'built' },
  { name: 'Feature-flag evaluation correlation', key: 'feature-flags', default: 'opt-in', status: 'built' },
  { name: 'Continuous-profiling correlation', key: 'profiling', default: 'opt-in', status: 'built' },
  { name: 'Wide-event API', key: 'wide-events', default: 'on (no-op until called)', status: 'built' },
  { name: 'Graceful drain and telemetry flush', key: 'shutdown', default: 'on', status: 'built' },
  { name: 'Fleet config-drift detection', key: 'config-drift', default: 'on', status: 'built' },
  { name: 'Live diagnostic actuator', key: 'actuator', default: 'on', status: 'built' },
  { name: 'Sampling', key: 'sampling', default: 'on', status: 'built' },
  { name: 'Dry-run / enforcement mode', key: 'enforcement', default: 'on', status: 'built' },
  {
    name: 'Profile presets',
    key: 'profile-presets',
    default: 'files shipped; auto-apply opt-in',
    status: 'built',
  },
  { name: 'Configuration validation', key: 'config-validation', default: 'on (always)', status: 'built' },
];

const PLANNED = new Map(FEATURES.filter((f) => f.status === 'planned').map((f) => [f.key as string, f]));

/**
 * The planned feature a key belongs to, or `undefined` when the key may be set: it lies outside
 * every planned feature, or is one of its {@link Feature.builtKeys} (or a block holding one).
 * `path` is `obs.a.b`, list items as `obs.a.b[0].c`.
 */
export function plannedFeatureOf(path: string): Feature | undefined {
  const parts = path.replace(/\[\d+\]/g, '').split('.');
  const feature = parts[0] === 'obs' ? PLANNED.get(parts[1] ?? '') : undefined;
  if (feature === undefined) return undefined;
  const rest = parts.slice(2).join('.');
  // A built key, a key below one, or a block that holds one (the feature's own subtree included).
  const settable = (feature.builtKeys ?? []).some(
    (k) => rest === '' || rest === k || rest.startsWith(`${k}.`) || k.startsWith(`${rest}.`),
  );
  return settable ? undefined : feature;
}
