/**
 * The pure part of `npm run soak` (bench/soak.ts): reading the server's log, placing each `/health`
 * probe in the attack that was running, the probe and RSS summaries and the three verdicts of issue
 * #30's "Done when". No I/O and no clock here, so test/bench/soak-report.test.ts checks it on made-up
 * runs.
 */
import { percentile, type Target } from './lib.ts';

/** pino's numeric levels: 50 is `error`, 60 `fatal`. */
export const ERROR_LEVEL = 50;
/** How many error lines (and stderr lines) a scan keeps to show. */
export const KEPT_LINES = 5;
/** Longest kept line, in characters: a stack is cut, its first line is what tells the story. */
export const KEPT_LINE_CHARS = 400;

/**
 * Reads a log as it arrives in chunks: pino's JSON lines on stdout, counted by level, the lines at
 * `error` or above kept (the first few), and any line that is not JSON (a crash's stack, a Node
 * warning) counted as well, since pino writes nothing else there.
 */
export class LogScan {
  readonly byLevel = new Map<number, number>();
  readonly errors: string[] = [];
  errorCount = 0;
  readonly notJson: string[] = [];
  notJsonCount = 0;
  lines = 0;
  #partial = '';

  /** Feeds the next chunk of text; a line cut across chunks is read when its end arrives. */
  feed(chunk: string): void {
    const text = this.#partial + chunk;
    const lines = text.split('\n');
    this.#partial = lines.pop() ?? '';
    for (const line of lines) this.#line(line);
  }

  /** Reads what is left after the last newline (the stream ended). */
  end(): void {
    if (this.#partial !== '') this.#line(this.#partial);
    this.#partial = '';
  }

  #line(line: string): void {
    if (line.trim() === '') return;
    this.lines++;
    const level = levelOf(line);
    if (level === undefined) {
      this.notJsonCount++;
      if (this.notJson.length < KEPT_LINES) this.notJson.push(line.slice(0, KEPT_LINE_CHARS));
      return;
    }
    this.byLevel.set(level, (this.byLevel.get(level) ?? 0) + 1);
    if (level >= ERROR_LEVEL) {
      this.errorCount++;
      if (this.errors.length < KEPT_LINES) this.errors.push(line.slice(0, KEPT_LINE_CHARS));
    }
  }
}

/**
 * The `level` of a pino line, undefined when the line is not a JSON object with a numeric level.
 * Most lines are info: they are recognised by their prefix without parsing (the soak's server writes
 * a few hundred a second).
 */
export function levelOf(line: string): number | undefined {
  const fast = /^\{"level":(\d+),/.exec(line);
  if (fast) return Number(fast[1]);
  try {
    const value = JSON.parse(line) as unknown;
    if (typeof value !== 'object' || value === null) return undefined;
    const level = (value as { level?: unknown }).level;
    return typeof level === 'number' ? level : undefined;
  } catch {
    return undefined;
  }
}

/** A time span of the run: an attack, from its start to its end (epoch milliseconds). */
export interface Phase {
  readonly name: string;
  readonly startMs: number;
  readonly endMs: number;
}

/** One `/health` probe: when it was sent (epoch ms), how long it took, and whether it answered 200. */
export interface Probe {
  readonly atMs: number;
  readonly ms: number;
  readonly ok: boolean;
}

/** What ran while a probe was out: the attacks it overlapped, else the last one before it. */
export interface Attribution {
  /** The attacks running at some point between the probe's sending and its answer. */
  readonly during: readonly string[];
  /** When none was: the attack that ended last before it, and how long before, in ms. */
  readonly after?: { readonly name: string; readonly agoMs: number };
}

export function attribute(probe: Probe, phases: readonly Phase[]): Attribution {
  const end = probe.atMs + probe.ms;
  const during = phases.filter((p) => p.startMs <= end && p.endMs >= probe.atMs).map((p) => p.name);
  if (during.length > 0) return { during: [...new Set(during)] };
  const before = phases.filter((p) => p.endMs < probe.atMs).sort((a, b) => b.endMs - a.endMs)[0];
  return before === undefined
    ? { during: [] }
    : { during: [], after: { name: before.name, agoMs: probe.atMs - before.endMs } };
}

/** How an attribution reads in the report. */
export function describeAttribution(a: Attribution): string {
  if (a.during.length > 0) return `during ${a.during.join(' + ')}`;
  if (a.after !== undefined)
    return `normal traffic only, ${(a.after.agoMs / 1000).toFixed(1)} s after ${a.after.name}`;
  return 'normal traffic only';
}

/** Count, failures and percentiles of a set of probes (times in ms; NaN of none). */
export interface ProbeFigures {
  readonly count: number;
  readonly failures: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Probes slower than the limit. */
  readonly over: number;
}

export function probeFigures(probes: readonly Probe[], limitMs: number): ProbeFigures {
  const ms = probes.map((p) => p.ms);
  return {
    count: probes.length,
    failures: probes.filter((p) => !p.ok).length,
    p50Ms: percentile(ms, 50),
    p99Ms: percentile(ms, 99),
    maxMs: ms.length === 0 ? Number.NaN : Math.max(...ms),
    over: ms.filter((m) => m > limitMs).length,
  };
}

/**
 * The probes of the run after warm-up, grouped by what ran (each attack, and "normal traffic only"),
 * in the order the attacks are listed; a probe that overlapped two attacks counts in both.
 */
export function probesByPhase(
  probes: readonly Probe[],
  phases: readonly Phase[],
  attackNames: readonly string[],
  limitMs: number,
): { name: string; figures: ProbeFigures }[] {
  const groups = new Map<string, Probe[]>([...attackNames, NORMAL_ONLY].map((n) => [n, []]));
  for (const probe of probes) {
    const { during } = attribute(probe, phases);
    for (const name of during.length > 0 ? during : [NORMAL_ONLY]) {
      const group = groups.get(name) ?? [];
      group.push(probe);
      groups.set(name, group);
    }
  }
  return [...groups].map(([name, group]) => ({ name, figures: probeFigures(group, limitMs) }));
}

export const NORMAL_ONLY = 'normal traffic only';

/** The `n` slowest probes, slowest first, each with what ran meanwhile. */
export function slowestProbes(
  probes: readonly Probe[],
  phases: readonly Phase[],
  n: number,
): { probe: Probe; attribution: Attribution }[] {
  return [...probes]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, n)
    .map((probe) => ({ probe, attribution: attribute(probe, phases) }));
}

/**
 * One reading of the server's own event-loop delay: the largest since the reading before it
 * (prom-client's `nodejs_eventloop_lag_max_seconds`, which restarts at each scrape), in ms, read at
 * `atMs` (epoch ms).
 */
export interface LoopReading {
  readonly atMs: number;
  readonly maxMs: number;
}

/** Reads `nodejs_eventloop_lag_max_seconds` from a Prometheus text exposition, in ms (NaN if absent). */
export function loopDelayMaxMs(exposition: string): number {
  const m = /^nodejs_eventloop_lag_max_seconds(?:\{[^}]*\})? (\S+)$/m.exec(exposition);
  return m === null ? Number.NaN : Number(m[1]) * 1000;
}

/**
 * The server's largest event-loop delay over the readings that cover a probe: from the first
 * reading taken after it was sent to the first taken after its answer (each reading covers the
 * time since the one before). NaN when no reading came after the probe's answer.
 */
export function loopDelayDuring(probe: Probe, readings: readonly LoopReading[]): number {
  const end = probe.atMs + probe.ms;
  const last = readings.findIndex((r) => r.atMs >= end);
  if (last === -1) return Number.NaN;
  let max = readings[last]!.maxMs;
  for (let i = last - 1; i >= 0 && readings[i]!.atMs >= probe.atMs; i--)
    max = Math.max(max, readings[i]!.maxMs);
  return max;
}

/** One reading of the server's resident set size (epoch ms, MB). */
export interface RssSample {
  readonly atMs: number;
  readonly rssMb: number;
}

/**
 * RSS "after warm-up": the median of the samples of the last `windowMs` of warm-up (one reading may
 * fall just before or after a collection; the median of a few does not). NaN when there are none.
 */
export function rssAfterWarmup(samples: readonly RssSample[], warmupEndMs: number, windowMs: number): number {
  const window = samples.filter((s) => s.atMs <= warmupEndMs && s.atMs >= warmupEndMs - windowMs);
  return percentile(
    window.map((s) => s.rssMb),
    50,
  );
}

/** What the verdicts are made of, all from the run's own numbers. */
export interface SoakMeasures {
  /** Probes sent over the span the verdicts name. */
  readonly probes: ProbeFigures;
  /** Which probes count, as the verdicts say it: "after warm-up", "from the first attack on". */
  readonly probeSpan: string;
  readonly probeLimitMs: number;
  readonly rssBaselineMb: number;
  /** Highest RSS after warm-up. */
  readonly rssMaxMb: number;
  /** Said beside the RSS verdict's figures (another baseline, for comparison). */
  readonly rssNote?: string;
  readonly rssFactorLimit: number;
  /** Log lines at error or fatal, and lines on stdout that are not pino's. */
  readonly errorLines: number;
  readonly stderrLines: number;
}

/**
 * The verdicts of the issue's "Done when": `/health` never slower than 100 ms after warm-up (and
 * answering at all: a probe that failed is a verdict of its own, its time says little), RSS within
 * 1.5× of its value after warm-up, and no error in the log.
 */
export function soakTargets(m: SoakMeasures): Target[] {
  return [
    {
      name: `\`/health\` never slower than ${m.probeLimitMs} ms ${m.probeSpan} (slowest of ${m.probes.count} probes)`,
      op: '<=',
      limit: m.probeLimitMs,
      measured: m.probes.count === 0 ? Number.NaN : m.probes.maxMs,
      unit: 'ms',
      ...(m.probes.over > 0
        ? { note: `${m.probes.over} probe${m.probes.over === 1 ? '' : 's'} over ${m.probeLimitMs} ms` }
        : {}),
    },
    {
      name: `\`/health\` answered 200 to every probe ${m.probeSpan} (failed or timed-out probes)`,
      op: '<=',
      limit: 0,
      measured: m.probes.count === 0 ? Number.NaN : m.probes.failures,
      unit: 'count',
    },
    {
      name: `RSS within ${m.rssFactorLimit}× of its value after warm-up (${Number.isNaN(m.rssBaselineMb) ? 'n/a' : `${m.rssBaselineMb.toFixed(0)} MB`}), at its highest after warm-up`,
      op: '<=',
      limit: m.rssFactorLimit,
      measured: m.rssBaselineMb > 0 ? m.rssMaxMb / m.rssBaselineMb : Number.NaN,
      unit: 'x',
      note: `highest ${Number.isNaN(m.rssMaxMb) ? 'n/a' : `${m.rssMaxMb.toFixed(0)} MB`}${m.rssNote === undefined ? '' : `; ${m.rssNote}`}`,
    },
    {
      name: 'no error in the log (pino lines at `error` or `fatal`, other stdout lines, stderr lines)',
      op: '<=',
      limit: 0,
      measured: m.errorLines + m.stderrLines,
      unit: 'count',
    },
  ];
}

/**
 * The highest RSS sampled while each attack ran (a sample taken between an attack's start and end),
 * and in the rest of the run after warm-up under {@link NORMAL_ONLY}: which attack the memory went
 * with.
 */
export function rssByPhase(
  samples: readonly RssSample[],
  phases: readonly Phase[],
  fromMs: number,
): Map<string, number> {
  const highest = new Map<string, number>();
  const raise = (name: string, mb: number) => highest.set(name, Math.max(highest.get(name) ?? 0, mb));
  for (const s of samples) {
    if (s.atMs < fromMs) continue;
    const running = phases.filter((p) => p.startMs <= s.atMs && p.endMs >= s.atMs);
    if (running.length === 0) raise(NORMAL_ONLY, s.rssMb);
    for (const p of running) raise(p.name, s.rssMb);
  }
  return highest;
}
