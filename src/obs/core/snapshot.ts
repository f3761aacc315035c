/**
 * The snapshot (`GET /actuator/obs`, the page `/actuator/obsui`): what obs does in this process,
 * feature by feature, with the effective configuration of each, the mode and the runtime figures.
 */

import type { CardinalityOffender } from './cardinality.ts';
import type { ResolvedObsConfig } from './config/config.ts';
import type { JsonValue } from './config/config-hash.ts';
import type { EnforcementMode } from './config/config-schema.ts';
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

/** `GET /actuator/obs`: what is on and off, with what configuration, in which mode. */
export interface ObsSnapshot {
  readonly service: string;
  readonly version: string;
  readonly mode: EnforcementMode;
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
