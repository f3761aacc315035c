/**
 * The features of obs: the seed's feature table, each row with the subtree of `obs.*` that
 * configures it.
 */
import type { ObsConfig } from './config-schema.ts';

/**
 * The seed's feature table, in its order: the display name, the default as the seed words it and
 * the subtree of `obs.*` that configures it (`undefined` when the feature has none).
 */
export const FEATURES: ReadonlyArray<{
  readonly name: string;
  readonly key: keyof ObsConfig | 'config-validation';
  readonly default: string;
}> = [
  { name: 'Cardinality firewall', key: 'cardinality', default: 'on' },
  { name: 'Timeout-budget propagation', key: 'timeout-budget', default: 'on' },
  { name: 'Context propagation', key: 'context', default: 'on' },
  { name: 'Trace-context guard', key: 'trace-guard', default: 'on' },
  { name: 'Structured logs', key: 'logging', default: 'on' },
  { name: 'Stable exception fingerprints', key: 'exception-handler', default: 'on' },
  { name: 'Conditional features', key: 'conditional-features', default: 'on' },
  { name: 'Dependency health map', key: 'dependencies', default: 'on' },
  { name: 'Retry amplification', key: 'retry', default: 'on' },
  { name: 'Multi-tenant context', key: 'tenant', default: 'opt-in' },
  { name: 'Request priority', key: 'priority', default: 'opt-in' },
  { name: 'Container-aware memory metrics', key: 'container-memory', default: 'on; readiness opt-in' },
  { name: 'Kafka time-based lag', key: 'kafka', default: 'on if kafkajs is handed to obs' },
  { name: 'Request fan-out', key: 'fan-out', default: 'on' },
  { name: 'SLO-as-code', key: 'slo', default: 'opt-in' },
  {
    name: 'Resilience auto-instrumentation',
    key: 'resilience',
    default: 'on if cockatiel or opossum is handed to obs',
  },
  { name: 'Background-job observability', key: 'jobs', default: 'on' },
  { name: 'Database N+1 and slow-query detection', key: 'db', default: 'on if pg is handed to obs' },
  { name: 'Cache observability', key: 'cache', default: 'opt-in' },
  { name: 'Feature-flag evaluation correlation', key: 'feature-flags', default: 'opt-in' },
  { name: 'Continuous-profiling correlation', key: 'profiling', default: 'opt-in' },
  { name: 'Wide-event API', key: 'wide-events', default: 'on (no-op until called)' },
  { name: 'Graceful drain and telemetry flush', key: 'shutdown', default: 'on' },
  { name: 'Fleet config-drift detection', key: 'config-drift', default: 'on' },
  { name: 'Live diagnostic actuator', key: 'actuator', default: 'on' },
  { name: 'Sampling', key: 'sampling', default: 'on' },
  { name: 'Dry-run / enforcement mode', key: 'enforcement', default: 'on' },
  { name: 'Profile presets', key: 'profile-presets', default: 'files shipped; auto-apply opt-in' },
  { name: 'Configuration validation', key: 'config-validation', default: 'on (always)' },
];
