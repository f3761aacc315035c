/**
 * Container-aware memory (`obs.container-memory`): what the kernel charges to the process's
 * cgroup, its limit and the OOM kills, from cgroup v2 (`memory.current`, `memory.max`,
 * `memory.events`) or v1 (`memory/memory.usage_in_bytes`, `memory.limit_in_bytes`,
 * `memory.oom_control`). The process's own cgroup is found through `/proc/self/cgroup` (a host or
 * a container without a cgroup namespace), else the mount root is read (a container's own view).
 * Reading never throws: a missing or unreadable file leaves its figure unknown.
 *
 * The meters (read on each scrape) are `obs_container_memory_used_bytes`,
 * `obs_container_memory_limit_bytes` (`+Inf` without a limit), `obs_container_memory_headroom_ratio`
 * (the free share of the limit) and `obs_container_oom_kills_total`; an unknown figure has no
 * sample (the series is absent from the scrape, as PromQL expects of an unknown value).
 */
import { readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { JsonValue } from '../core/config/config-hash.ts';
import type { ObsCore } from '../core/obs.ts';

/** Where the cgroup file system is mounted (`obs.container-memory.cgroup-root`). */
export const DEFAULT_CGROUP_ROOT = '/sys/fs/cgroup';
/** The file naming the cgroups of this process. */
export const SELF_CGROUP_FILE = '/proc/self/cgroup';
/** Headroom below which the opt-in readiness check fails (`critical-headroom-ratio`). */
export const DEFAULT_CRITICAL_HEADROOM_RATIO = 0.1;
/**
 * cgroup v1 writes a number close to 2^63 (rounded down to a page) for "no limit"; a limit of
 * 2^60 bytes (1 EiB) or more is read as no limit.
 */
export const UNLIMITED_THRESHOLD_BYTES = 2 ** 60;

/** Names of the container memory meters. */
export const CONTAINER_MEMORY_METRICS = {
  usedBytes: 'obs_container_memory_used_bytes',
  limitBytes: 'obs_container_memory_limit_bytes',
  headroomRatio: 'obs_container_memory_headroom_ratio',
  oomKillsTotal: 'obs_container_oom_kills_total',
} as const;

/** The cgroup version the figures come from. */
export type CgroupVersion = 'v1' | 'v2';

/** Where {@link readContainerMemory} reads. */
export interface ContainerMemoryOptions {
  /** Mount point of the cgroup file system; v1's memory controller is under `memory/`. Default {@link DEFAULT_CGROUP_ROOT}. */
  readonly root?: string;
  /** The file naming this process's cgroups. Default {@link SELF_CGROUP_FILE}. */
  readonly selfCgroupFile?: string;
}

/** One reading of the container's memory. Figures that could not be read are `undefined`. */
export interface ContainerMemoryReading {
  /** Which cgroup version was found; `undefined` when none (not Linux, or no memory controller). */
  readonly version: CgroupVersion | undefined;
  /** The cgroup directory read. */
  readonly directory: string | undefined;
  /** Bytes charged to the cgroup (page cache included, as the kernel counts toward the limit). */
  readonly usedBytes: number | undefined;
  /** The tightest limit of the cgroup and its ancestors in view, in bytes; `undefined` when unlimited or unknown. */
  readonly limitBytes: number | undefined;
  /** True when the limit files were read and none sets a limit. */
  readonly unlimited: boolean;
  /** `(limit - used) / limit`, between 0 and 1; `undefined` without a limit or a usage. */
  readonly headroomRatio: number | undefined;
  /** Processes of the cgroup killed by the OOM killer; `undefined` when the kernel does not say. */
  readonly oomKills: number | undefined;
}

const NOTHING: ContainerMemoryReading = {
  version: undefined,
  directory: undefined,
  usedBytes: undefined,
  limitBytes: undefined,
  unlimited: false,
  headroomRatio: undefined,
  oomKills: undefined,
};

interface Layout {
  readonly version: CgroupVersion;
  readonly directory: string;
  /** The mount root of the hierarchy: limits are looked up from the directory up to here. */
  readonly base: string;
}

const FILES = {
  v2: { usage: 'memory.current', limit: 'memory.max' },
  v1: { usage: 'memory.usage_in_bytes', limit: 'memory.limit_in_bytes' },
} as const;

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** A byte count: a non-negative whole number; `max` (v2) and huge values (v1) are `Infinity`. */
function parseBytes(text: string | undefined): number | undefined {
  const trimmed = text?.trim();
  if (trimmed === undefined || trimmed === '') return undefined;
  if (trimmed === 'max') return Number.POSITIVE_INFINITY;
  if (!/^\d+$/.test(trimmed)) return undefined;
  const value = Number(trimmed);
  return value >= UNLIMITED_THRESHOLD_BYTES ? Number.POSITIVE_INFINITY : value;
}

/** The value of `key` in a flat-keyed file (`oom_kill 3`). */
function parseKeyed(text: string | undefined, key: string): number | undefined {
  if (text === undefined) return undefined;
  for (const line of text.split('\n')) {
    const [name, value] = line.trim().split(/\s+/);
    if (name === key && value !== undefined && /^\d+$/.test(value)) return Number(value);
  }
  return undefined;
}

/** This process's cgroup path in one hierarchy, from `/proc/self/cgroup` (`0::/path` for v2). */
function selfPath(file: string, version: CgroupVersion): string | undefined {
  const text = readText(file);
  if (text === undefined) return undefined;
  for (const line of text.split('\n')) {
    const first = line.indexOf(':');
    const second = line.indexOf(':', first + 1);
    if (first < 0 || second < 0) continue;
    const id = line.slice(0, first);
    const controllers = line.slice(first + 1, second).split(',');
    const path = line.slice(second + 1).trim();
    if (version === 'v2' ? id === '0' && controllers.join('') === '' : controllers.includes('memory')) {
      return path.startsWith('/') ? path : undefined;
    }
  }
  return undefined;
}

/** Inside `base` (a path from `/proc` never leads out of the mount). */
function within(base: string, path: string): boolean {
  return path === base || path.startsWith(`${base}/`);
}

/** Finds the cgroup directory to read: v2 first, then v1; the process's own cgroup before the root. */
export function locateCgroup(options: ContainerMemoryOptions = {}): Layout | undefined {
  const root = resolve(options.root ?? DEFAULT_CGROUP_ROOT);
  const selfFile = options.selfCgroupFile ?? SELF_CGROUP_FILE;
  for (const version of ['v2', 'v1'] as const) {
    const base = version === 'v2' ? root : join(root, 'memory');
    const own = selfPath(selfFile, version);
    const candidates = own === undefined || own === '/' ? [base] : [join(base, own), base];
    for (const directory of candidates) {
      if (within(base, directory) && isFile(join(directory, FILES[version].usage))) {
        return { version, directory, base };
      }
    }
  }
  return undefined;
}

/** The tightest limit from `directory` up to `base`: a finite number, `Infinity`, or unknown. */
function tightestLimit(layout: Layout): number | undefined {
  let limit: number | undefined;
  let directory = layout.directory;
  for (;;) {
    const value = parseBytes(readText(join(directory, FILES[layout.version].limit)));
    if (value !== undefined) limit = limit === undefined ? value : Math.min(limit, value);
    if (directory === layout.base) break;
    const parent = dirname(directory);
    if (parent === directory || !within(layout.base, parent)) break;
    directory = parent;
  }
  return limit;
}

/** Reads the container's memory now. Never throws. */
export function readContainerMemory(options: ContainerMemoryOptions = {}): ContainerMemoryReading {
  try {
    const layout = locateCgroup(options);
    if (layout === undefined) return NOTHING;
    const { version, directory } = layout;
    const usedBytes = parseBytes(readText(join(directory, FILES[version].usage)));
    const used = usedBytes === Number.POSITIVE_INFINITY ? undefined : usedBytes;
    const limit = tightestLimit(layout);
    const limitBytes = limit === undefined || limit === Number.POSITIVE_INFINITY ? undefined : limit;
    const headroomRatio =
      used === undefined || limitBytes === undefined || limitBytes === 0
        ? undefined
        : Math.min(1, Math.max(0, (limitBytes - used) / limitBytes));
    const oomKills =
      version === 'v2'
        ? parseKeyed(readText(join(directory, 'memory.events')), 'oom_kill')
        : parseKeyed(readText(join(directory, 'memory.oom_control')), 'oom_kill');
    return {
      version,
      directory,
      usedBytes: used,
      limitBytes,
      unlimited: limit === Number.POSITIVE_INFINITY,
      headroomRatio,
      oomKills,
    };
  } catch {
    return NOTHING;
  }
}

/**
 * A gauge whose unknown value (NaN) is left out of the scrape. prom-client prints NaN as `Nan`,
 * which is not the exposition format's `NaN`; and an absent sample is what PromQL treats as
 * unknown, where a NaN would turn every `sum` over the pods into NaN.
 */
class KnownGauge extends Gauge<string> {
  override async get() {
    const metric = await super.get();
    return { ...metric, values: metric.values.filter((value) => !Number.isNaN(value.value)) };
  }
}

/** The same for a counter (the OOM kills, unknown without a cgroup file that counts them). */
class KnownCounter extends Counter<string> {
  override async get() {
    const metric = await super.get();
    return { ...metric, values: metric.values.filter((value) => !Number.isNaN(value.value)) };
  }
}

/** Registers the four container meters on `registry`; each scrape reads afresh. */
export function registerContainerMemoryMetrics(registry: Registry, read: () => ContainerMemoryReading): void {
  // One reading per scrape, shared by the four meters: a scrape collects them in one synchronous run.
  let cached: ContainerMemoryReading | undefined;
  const reading = (): ContainerMemoryReading => {
    if (cached === undefined) {
      cached = read();
      queueMicrotask(() => {
        cached = undefined;
      });
    }
    return cached;
  };
  const or = (value: number | undefined) => value ?? Number.NaN;
  new KnownGauge({
    name: CONTAINER_MEMORY_METRICS.usedBytes,
    help: 'Memory charged to the cgroup of the process, in bytes (no sample when unknown)',
    registers: [registry],
    collect() {
      this.set(or(reading().usedBytes));
    },
  });
  new KnownGauge({
    name: CONTAINER_MEMORY_METRICS.limitBytes,
    help: 'Memory limit of the cgroup of the process, in bytes (+Inf without a limit, no sample when unknown)',
    registers: [registry],
    collect() {
      const r = reading();
      this.set(r.unlimited ? Number.POSITIVE_INFINITY : or(r.limitBytes));
    },
  });
  new KnownGauge({
    name: CONTAINER_MEMORY_METRICS.headroomRatio,
    help: 'Free share of the cgroup memory limit, 0 to 1 (no sample without a limit)',
    registers: [registry],
    collect() {
      this.set(or(reading().headroomRatio));
    },
  });
  new KnownCounter({
    name: CONTAINER_MEMORY_METRICS.oomKillsTotal,
    help: 'Processes of the cgroup killed by the kernel OOM killer (no sample when unknown)',
    registers: [registry],
    collect() {
      // The kernel keeps the count; the counter only mirrors it.
      this.reset();
      this.inc(or(reading().oomKills));
    },
  });
}

/** A reading as JSON, for the snapshot and the runtime section. */
export function containerMemoryJson(reading: ContainerMemoryReading): { readonly [key: string]: JsonValue } {
  return {
    cgroup: reading.version ?? null,
    directory: reading.directory ?? null,
    used_bytes: reading.usedBytes ?? null,
    limit_bytes: reading.limitBytes ?? null,
    unlimited: reading.unlimited,
    headroom_ratio:
      reading.headroomRatio === undefined ? null : Math.round(reading.headroomRatio * 1e4) / 1e4,
    oom_kills: reading.oomKills ?? null,
  };
}

/** The readiness verdict: not ready while the headroom is below `criticalRatio`; no limit is ready. */
export function containerMemoryReadiness(
  reading: ContainerMemoryReading,
  criticalRatio: number,
): { ok: boolean; detail: JsonValue } {
  const detail = { ...containerMemoryJson(reading), critical_headroom_ratio: criticalRatio };
  if (reading.headroomRatio === undefined) return { ok: true, detail };
  return { ok: reading.headroomRatio >= criticalRatio, detail };
}

/** Settings of {@link installContainerMemory}: `obs.container-memory`. */
export interface ContainerMemorySettings {
  readonly enabled: boolean;
  readonly 'readiness-enabled': boolean;
  readonly 'critical-headroom-ratio': number;
  readonly 'cgroup-root': string;
}

/** What {@link installContainerMemory} needs of the obs core. */
export interface ContainerMemoryHost {
  readonly registry: Registry;
  addReadinessCheck(name: string, check: () => { ok: boolean; detail?: JsonValue }): void;
}

/**
 * The container memory feature on an obs core, when `settings.enabled`: the four meters, and the
 * readiness check `container-memory` when `readiness-enabled` too.
 * @returns the reader, or `undefined` when the feature is off.
 */
export function installContainerMemory(
  host: ContainerMemoryHost,
  settings: ContainerMemorySettings,
  options: Pick<ContainerMemoryOptions, 'selfCgroupFile'> = {},
): (() => ContainerMemoryReading) | undefined {
  if (!settings.enabled) return undefined;
  const read = () => readContainerMemory({ root: settings['cgroup-root'], ...options });
  registerContainerMemoryMetrics(host.registry, read);
  if (settings['readiness-enabled']) {
    const critical = settings['critical-headroom-ratio'];
    host.addReadinessCheck('container-memory', () => containerMemoryReadiness(read(), critical));
  }
  return read;
}

/** The container memory feature's part of `app.obs`. */
export interface ContainerMemoryApi {
  /** Reads the container memory now; `undefined` when `obs.container-memory.enabled=false`. */
  containerMemory(): ContainerMemoryReading | undefined;
}

/**
 * The container memory feature on an obs core, as `obs.container-memory` says ({@link
 * installContainerMemory}), with its section of the snapshot.
 */
export function containerMemoryApi(core: ObsCore): ContainerMemoryApi {
  const settings = core.config['container-memory'];
  const read = installContainerMemory(core, settings);
  core.addSnapshotSection('container-memory', () => {
    const reading = read?.();
    return {
      enabled: settings.enabled,
      config: core.resolved.effective['container-memory'] ?? null,
      reading: reading === undefined ? null : containerMemoryJson(reading),
    };
  });
  return { containerMemory: () => read?.() };
}
