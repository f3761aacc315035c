/**
 * The snapshot (`GET /actuator/obs`, the page `/actuator/obsui`): what obs does in this process,
 * feature by feature, with the effective configuration of each, the mode and the runtime figures.
 */

import type { CardinalityOffender } from './cardinality.ts';
import type { ResolvedObsConfig } from './config/config.ts';
import type { JsonValue } from './config/config-hash.ts';
import type { EnforcementMode, ObsConfig } from './config/config-schema.ts';
import type { DrainPhase } from './drain.ts';
import { FEATURES } from './features.ts';

/**
 * One feature of the seed's table in the snapshot. A built feature says whether it is on; a planned
 * one has no code, so it is never on (`enabled: false`), and its default is the one it will have
 * once built (`default_once_built`), so that nothing reading `default` takes it for on.
 */
export type FeatureSnapshot =
  | {
      readonly name: string;
      readonly status: 'built';
      readonly default: string;
      readonly enabled: boolean;
      /** The effective configuration of the feature (`null` when it has none). */
      readonly config: JsonValue;
    }
  | {
      readonly name: string;
      readonly status: 'planned';
      /** Always false: a planned feature has no code. */
      readonly enabled: false;
      /** The default once it is built, as the seed words it. */
      readonly default_once_built: string;
      /** Its keys that built code reads already (`null` when none). */
      readonly config: JsonValue;
    };

/** Live figures of the process: the runtime section of the snapshot. */
export interface RuntimeSnapshot {
  /** Whether live diagnostics are on (`obs.diagnostics.enabled`). */
  readonly enabled: boolean;
  readonly started_at: string;
  readonly uptime_seconds: number;
  readonly pid: number;
  readonly node_version: string;
  readonly memory: {
    readonly rss_bytes: number;
    readonly heap_used_bytes: number;
    readonly heap_total_bytes: number;
    /** V8's ceiling of the heap (`--max-old-space-size`), to set against the container limit. */
    readonly heap_limit_bytes: number;
    readonly external_bytes: number;
    readonly array_buffers_bytes: number;
    /** The cgroup reading; `null` when container memory or diagnostics are off. */
    readonly container: { readonly [key: string]: JsonValue } | null;
  };
  /** Event-loop delay since start, in milliseconds; `null` with diagnostics off. */
  readonly event_loop_lag_ms: {
    readonly mean: number | null;
    readonly p50: number | null;
    readonly p99: number | null;
    readonly max: number | null;
  };
  readonly in_flight_requests: number;
  readonly cardinality: {
    readonly enabled: boolean;
    readonly max_values_per_tag: number;
    readonly overflow_value: string;
    /** Meters and labels with the most overflow, then the most distinct values. */
    readonly top_offenders: readonly CardinalityOffender[];
  };
  readonly drain: { readonly state: DrainPhase; readonly since: string };
}

/** One setting whose effect depends on the mode, as the snapshot's `dry_run` lists it. */
export interface DryRunChange {
  /** The `obs.*` key. */
  readonly setting: string;
  /** What the setting does in ENFORCING mode. */
  readonly enforcing: string;
  /** What it does instead in DRY_RUN mode. */
  readonly dry_run: string;
  /** Whether the setting is on in this process, so that DRY_RUN changes something here. */
  readonly applies: boolean;
}

/** What the snapshot says DRY_RUN changes: `dry_run`. */
export interface DryRunSnapshot {
  /** Whether this process is in DRY_RUN now. */
  readonly active: boolean;
  /** Every setting whose effect depends on the mode; everything else behaves the same in both. */
  readonly changes: readonly DryRunChange[];
}

/**
 * What DRY_RUN changes, setting by setting (ADR 0051): it never refuses or rewrites anything, it
 * counts and lets it through. Nothing else depends on the mode: stamping, counting, metrics, logs,
 * Kafka and the rest behave the same in both.
 */
export function dryRunSnapshot(config: ObsConfig, mode: EnforcementMode): DryRunSnapshot {
  const { cardinality } = config;
  const guard = config['trace-guard'];
  const budget = config['timeout-budget'];
  return {
    active: mode === 'DRY_RUN',
    changes: [
      {
        setting: 'obs.cardinality.max-tag-values-per-meter',
        enforcing: `a label value past the cap is recorded as "${cardinality['overflow-value']}"`,
        dry_run: 'the value is recorded as it is; the overflow is counted',
        applies: cardinality.enabled,
      },
      {
        setting: 'obs.trace-guard.fail-on-missing',
        enforcing: 'a request without trace context is refused with 400 (OBS_ERR_TRACE_CONTEXT_MISSING)',
        dry_run: 'the request is logged and counted, never refused',
        applies: guard.enabled && guard['fail-on-missing'],
      },
      {
        setting: 'obs.timeout-budget.abort-on-exhaustion',
        enforcing:
          'an outbound HTTP call with minimum-budget or less left is refused before a byte is sent (OBS_ERR_TIMEOUT_BUDGET_EXHAUSTED)',
        dry_run: 'the call is counted as exhausted and runs',
        applies: budget.enabled && budget['abort-on-exhaustion'],
      },
    ],
  };
}

/** `GET /actuator/obs`: what is on and off, with what configuration, in which mode. */
export interface ObsSnapshot {
  readonly service: string;
  readonly version: string;
  readonly mode: EnforcementMode;
  /** What DRY_RUN changes: the settings whose effect depends on the mode, and whether each is on. */
  readonly dry_run: DryRunSnapshot;
  readonly config_hash: string;
  readonly profile: { readonly name: string | null; readonly applied: boolean; readonly auto_apply: boolean };
  readonly config_file: string | null;
  readonly generated_at: string;
  readonly features: Readonly<Record<string, FeatureSnapshot>>;
  readonly runtime: RuntimeSnapshot;
  /** Sections contributed by obs features through `Obs.addSnapshotSection`. */
  readonly sections: Readonly<Record<string, JsonValue>>;
}

/** Every feature of {@link FEATURES}, keyed by its subtree, as the snapshot shows it. */
export function featureSnapshots(resolved: ResolvedObsConfig): Record<string, FeatureSnapshot> {
  const { config } = resolved;
  const out: Record<string, FeatureSnapshot> = {};
  for (const { name, key, default: byDefault, status } of FEATURES) {
    const effective = key === 'config-validation' ? null : (resolved.effective[key] ?? null);
    if (status === 'planned') {
      out[key] = { name, status, enabled: false, default_once_built: byDefault, config: effective };
      continue;
    }
    const enabled =
      key === 'config-validation'
        ? true
        : key === 'profile-presets'
          ? config['profile-presets']['auto-apply']
          : (config[key] as { readonly enabled?: boolean }).enabled !== false;
    out[key] = { name, status, default: byDefault, enabled, config: effective };
  }
  return out;
}

/** The contributed sections, each computed now; a section that throws shows its error instead. */
export function readSections(sections: ReadonlyMap<string, () => JsonValue>): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  for (const [name, section] of sections) {
    try {
      out[name] = section();
    } catch (error) {
      out[name] = { error: error instanceof Error ? error.message : String(error) };
    }
  }
  return out;
}
