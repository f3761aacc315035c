/**
 * The pure part of the benchmark (bench/run.ts): reading wrk's and h2load's output, medians and
 * ratios, the verdict on each target of issue #13, and the markdown of bench/RESULTS.md. No I/O here,
 * so test/bench/lib.test.ts checks it on captured output.
 */

/** One measurement of one server in one round. */
export interface Sample {
  readonly rps: number;
  readonly requests: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Socket errors: connect, read and write (wrk); failed and errored (h2load). */
  readonly errors: number;
  readonly timeouts: number;
  /** Responses other than 2xx or 3xx. */
  readonly non2xx: number;
}

/** A duration as wrk prints it (`812.00us`, `1.23ms`, `2.00s`, `1.50m`), in milliseconds. */
export function wrkDurationMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m|h)$/.exec(text.trim());
  if (!m) throw new Error(`not a wrk duration: ${JSON.stringify(text)}`);
  const n = Number(m[1]);
  const scale = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'us' | 'ms' | 's' | 'm' | 'h'];
  return n * scale;
}

/** wrk's report (run with `--latency`). Throws when it holds no `Requests/sec` line. */
export function parseWrk(out: string): Sample {
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out);
  const total = /(\d+) requests in ([\d.]+\w+)/.exec(out);
  if (!rps || !total) throw new Error(`cannot read wrk output:\n${out}`);
  const pct = (p: string) => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+\\w+)\\s*$`, 'm').exec(out);
    return m ? wrkDurationMs(m[1] as string) : Number.NaN;
  };
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  return {
    rps: Number(rps[1]),
    requests: Number(total[1]),
    p50Ms: pct('50'),
    p99Ms: pct('99'),
    errors: sock ? Number(sock[1]) + Number(sock[2]) + Number(sock[3]) : 0,
    timeouts: sock ? Number(sock[4]) : 0,
    non2xx: non2xx ? Number(non2xx[1]) : 0,
  };
}

/**
 * h2load's report and its `--log-file` (one line a request: start time in µs, status, µs to the end
 * of the response), from which p50 and p99 come (h2load prints no percentiles of its own).
 */
export function parseH2load(out: string, log: string): Sample {
  const rps = /finished in [\d.]+\w+, ([\d.]+) req\/s/.exec(out);
  const req =
    /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(
      out,
    );
  if (!rps || !req) throw new Error(`cannot read h2load output:\n${out}`);
  const codes = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out);
  const latencies: number[] = [];
  for (const line of log.split('\n')) {
    const cols = line.split('\t');
    if (cols.length >= 3) latencies.push(Number(cols[2]) / 1000);
  }
  return {
    rps: Number(rps[1]),
    requests: Number(req[3]),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    errors: Number(req[6]),
    timeouts: Number(req[7]),
    non2xx: codes ? Number(codes[3]) + Number(codes[4]) : 0,
  };
}

/** The p-th percentile (nearest rank) of the values; NaN of none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

/** The median (the mean of the middle two of an even count); NaN of none. */
export function median(values: readonly number[]): number {
  const xs = values.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (xs.length === 0) return Number.NaN;
  const mid = Math.floor(xs.length / 2);
  return xs.length % 2 === 1 ? (xs[mid] as number) : ((xs[mid - 1] as number) + (xs[mid] as number)) / 2;
}

/**
 * The ratio of a candidate to the baseline: the median over rounds of candidate / baseline within the
 * same round (a round's two measurements are seconds apart, so the drift of a shared machine cancels).
 */
export function roundRatio(candidate: readonly number[], baseline: readonly number[]): number {
  const ratios: number[] = [];
  for (let i = 0; i < Math.min(candidate.length, baseline.length); i++) {
    const b = baseline[i] as number;
    if (b > 0) ratios.push((candidate[i] as number) / b);
  }
  return median(ratios);
}

/** Least-squares slope of y over x; 0 with fewer than two points. */
export function slope(xs: readonly number[], ys: readonly number[]): number {
  const n = Math.min(xs.length, ys.length);
  if (n < 2) return 0;
  let sx = 0;
  let sy = 0;
  for (let i = 0; i < n; i++) {
    sx += xs[i] as number;
    sy += ys[i] as number;
  }
  const mx = sx / n;
  const my = sy / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    const dx = (xs[i] as number) - mx;
    num += dx * ((ys[i] as number) - my);
    den += dx * dx;
  }
  return den === 0 ? 0 : num / den;
}

/** A target: `measured` must be at least (`>=`) or at most (`<=`) `limit`. */
export interface Target {
  readonly name: string;
  readonly op: '>=' | '<=';
  readonly limit: number;
  /** NaN when the scenario did not run. */
  readonly measured: number;
  /** How to print the numbers: a ratio (`0.83`), a factor (`1.2×`), MB (10^6 bytes), MiB, ms, µs or a count. */
  readonly unit: 'ratio' | 'x' | 'MB' | 'MiB' | 'ms' | 'us' | 'count';
  readonly note?: string;
}

export function formatValue(value: number, unit: Target['unit']): string {
  if (Number.isNaN(value)) return 'n/a';
  switch (unit) {
    case 'ratio':
      return value.toFixed(2);
    case 'x':
      return `${value.toFixed(2)}×`;
    case 'MB':
      return `${value.toFixed(0)} MB`;
    case 'MiB':
      return `${value.toFixed(0)} MiB`;
    case 'ms':
      return `${value.toFixed(1)} ms`;
    case 'us':
      return `${value.toFixed(1)} µs`;
    case 'count':
      return String(Math.round(value));
  }
}

/**
 * `value` as {@link formatValue} prints it, with one more decimal when that print would read the same
 * as `than` (150.4 MB against a limit of 150 MB reads 150.4, not 150).
 */
export function formatApart(value: number, than: number, unit: Target['unit']): string {
  const text = formatValue(value, unit);
  if (value === than || text !== formatValue(than, unit)) return text;
  const [number = '', ...rest] = text.split(' ');
  const decimals = (number.split('.')[1] ?? '').replace(/\D/g, '').length + 1;
  const suffix = unit === 'x' ? '×' : rest.length > 0 ? ` ${rest.join(' ')}` : '';
  return `${value.toFixed(decimals)}${suffix}`;
}

/** `met`, `not met (…short/over…)` or `not measured`. */
export function verdict(t: Target): { met: boolean | undefined; text: string } {
  if (Number.isNaN(t.measured)) return { met: undefined, text: 'not measured' };
  const met = t.op === '>=' ? t.measured >= t.limit : t.measured <= t.limit;
  if (met) return { met, text: 'met' };
  if (t.op === '>=') {
    const short = t.limit - t.measured;
    return {
      met,
      text: `not met: ${formatValue(short, t.unit === 'x' ? 'ratio' : t.unit)} short (${Math.round((short / t.limit) * 100)}% below the target)`,
    };
  }
  if (t.limit === 0) return { met, text: `not met: ${formatValue(t.measured, t.unit)} instead of none` };
  return {
    met,
    text: `not met: ${(t.measured / t.limit).toFixed(2)} times the limit (${formatApart(t.measured - t.limit, 0, t.unit === 'x' ? 'ratio' : t.unit)} over)`,
  };
}

/** A markdown table. */
export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

/** The targets section of RESULTS.md. */
export function targetsSection(targets: readonly Target[]): string {
  const rows = targets.map((t) => {
    const v = verdict(t);
    return [
      t.name,
      `${t.op === '>=' ? '≥' : '≤'} ${formatValue(t.limit, t.unit)}`,
      formatApart(t.measured, t.limit, t.unit),
      v.text + (t.note ? ` (${t.note})` : ''),
    ];
  });
  const met = targets.filter((t) => verdict(t).met === true).length;
  const missing = targets.filter((t) => verdict(t).met === undefined).length;
  return [
    `${met} of ${targets.length} targets met${missing ? `, ${missing} not measured in this run` : ''}.`,
    '',
    table(['target', 'limit', 'measured', 'verdict'], rows),
  ].join('\n');
}

/**
 * The CPU time a thread or process has used, in seconds, from the text of its `/proc/<pid>/stat`
 * (or `/proc/<pid>/task/<tid>/stat`): utime plus stime, the 14th and 15th fields, in clock ticks.
 * The second field, the command in parentheses, may itself hold spaces and parentheses, so the
 * fields are counted from the last `)`.
 */
export function cpuSecondsOfStat(stat: string, ticksPerSecond: number): number {
  const end = stat.lastIndexOf(')');
  if (end === -1) throw new Error(`not a /proc stat line: ${JSON.stringify(stat.slice(0, 80))}`);
  // After ") ": state (field 3), ..., utime (field 14) and stime (field 15).
  const fields = stat
    .slice(end + 2)
    .trim()
    .split(/\s+/);
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) {
    throw new Error(`no utime and stime in ${JSON.stringify(stat.slice(0, 80))}`);
  }
  return (utime + stime) / ticksPerSecond;
}

/** A `kB` line of `/proc/<pid>/status` (`VmRSS`, `VmHWM`, ...), in KiB; NaN when it is not there. */
export function statusKb(status: string, name: string): number {
  const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
  return m ? Number(m[1]) : Number.NaN;
}

/**
 * Reads a value every `intervalMs` until `done` settles (once at the start, once after it settles):
 * the RSS of a server while a transfer runs through it. `wait` is injected (a fake clock in tests).
 */
export async function sampleUntil<T>(
  done: Promise<T>,
  read: () => number,
  wait: (ms: number) => Promise<void>,
  intervalMs: number,
): Promise<{ result: T; samples: number[] }> {
  let settled = false;
  const watched = done.finally(() => {
    settled = true;
  });
  const samples: number[] = [];
  while (!settled) {
    samples.push(read());
    await Promise.race([wait(intervalMs), watched.catch(() => undefined)]);
  }
  samples.push(read());
  return { result: await watched, samples };
}

/**
 * The highest RSS while a transfer ran, from VmHWM (the process's peak since it started) before and
 * after it and the samples taken meanwhile: a VmHWM that rose during the transfer is exact; one
 * that did not means the transfer stayed under an earlier peak (startup), and the samples tell.
 */
export function peakDuring(hwmBeforeKb: number, hwmAfterKb: number, samplesKb: readonly number[]): number {
  if (hwmAfterKb > hwmBeforeKb) return hwmAfterKb;
  const sampled = samplesKb.filter((x) => !Number.isNaN(x));
  return sampled.length === 0 ? Number.NaN : Math.max(...sampled);
}

/** The highest sample of each half (first, second): a bounded RSS stops rising in the second. */
export function halvesMax(samples: readonly number[]): [number, number] {
  const xs = samples.filter((x) => !Number.isNaN(x));
  if (xs.length === 0) return [Number.NaN, Number.NaN];
  const mid = Math.ceil(xs.length / 2);
  const second = xs.slice(mid);
  return [Math.max(...xs.slice(0, mid)), second.length === 0 ? Number.NaN : Math.max(...second)];
}

/**
 * The node arguments of package.json's `start` script (`exec node <flags> <script>`, or without
 * `exec`): what follows `node`. Throws when the script does not run node.
 */
export function startArgs(start: string): string[] {
  const words = start.trim().split(/\s+/);
  const at = words[0] === 'exec' ? 1 : 0;
  if (words[at] !== 'node' || words.length < at + 2)
    throw new Error(`the start script does not run node: ${start}`);
  return words.slice(at + 1);
}

/** A protobuf varint (an unsigned integer below 2^53). */
function varint(n: number): number[] {
  const bytes: number[] = [];
  let rest = n;
  while (rest >= 0x80) {
    bytes.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  bytes.push(rest);
  return bytes;
}

/**
 * `echochaos.v1.EchoRequest { message = 1; payload = 2 }` in protobuf's wire format: each field as
 * its tag (field number << 3 | 2, length-delimited), its length as a varint and its bytes; an empty
 * field is left out, as proto3 serialises it.
 */
export function encodeEchoRequest(message: string, payload: Uint8Array): Buffer {
  const parts: Buffer[] = [];
  const field = (number: number, bytes: Uint8Array) => {
    if (bytes.length === 0) return;
    parts.push(Buffer.from([(number << 3) | 2, ...varint(bytes.length)]), Buffer.from(bytes));
  };
  field(1, Buffer.from(message, 'utf8'));
  field(2, payload);
  return Buffer.concat(parts);
}

/** A gRPC length-prefixed message: a flag byte (0: not compressed), the length (4 bytes, big-endian), the message. */
export function grpcFrame(message: Uint8Array): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

/** The messages of a gRPC body (length-prefixed frames). Throws on a compressed or cut frame. */
export function grpcMessages(body: Uint8Array): Buffer[] {
  const buffer = Buffer.from(body);
  const out: Buffer[] = [];
  let at = 0;
  while (at < buffer.length) {
    if (buffer.length - at < 5) throw new Error(`a gRPC frame header cut at ${buffer.length - at} bytes`);
    if (buffer[at] !== 0) throw new Error(`a compressed gRPC frame (flag ${buffer[at]})`);
    const length = buffer.readUInt32BE(at + 1);
    if (buffer.length - at - 5 < length)
      throw new Error(`a gRPC frame of ${length} bytes cut at ${buffer.length - at - 5}`);
    out.push(buffer.subarray(at + 5, at + 5 + length));
    at += 5 + length;
  }
  return out;
}

/**
 * `echo_grpc_requests_total` of one method in a Prometheus text scrape: calls by status code name
 * (`OK`, `CANCELLED`...). Empty when the method has none.
 */
export function grpcCallCounts(metrics: string, method: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of metrics.split('\n')) {
    if (!line.startsWith('echo_grpc_requests_total{')) continue;
    const m = /^echo_grpc_requests_total\{(.*)\}\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = new Map(
      [...(m[1] as string).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]] as const),
    );
    if (labels.get('method') !== method) continue;
    const code = labels.get('code') ?? '';
    out.set(code, (out.get(code) ?? 0) + Number(m[2]));
  }
  return out;
}

/**
 * RESULTS.md with one section replaced: from the line `heading` (a `## ` heading) to the next `## `
 * heading or `<!-- ` block marker, or the end. A document without that heading gets the section
 * before the first line of `before` it has (the headings of the sections that follow it, then the
 * blocks kept after them), or at its end. `section` starts with the heading.
 */
export function mergeSection(
  doc: string,
  heading: string,
  section: string,
  before: readonly string[],
): string {
  const lines = doc.split('\n');
  const body = `${section.trimEnd()}\n`;
  const isBoundary = (line: string) => line.startsWith('## ') || line.startsWith('<!-- ');
  const start = lines.indexOf(heading);
  if (start !== -1) {
    let end = start + 1;
    while (end < lines.length && !isBoundary(lines[end] as string)) end++;
    const after = lines.slice(end).join('\n');
    return `${lines.slice(0, start).join('\n')}${start > 0 ? '\n' : ''}${body}${after === '' ? '' : `\n${after}`}`;
  }
  for (const anchor of before) {
    const at = lines.indexOf(anchor);
    if (at === -1) continue;
    return `${lines.slice(0, at).join('\n')}${at > 0 ? '\n' : ''}${body}\n${lines.slice(at).join('\n')}`;
  }
  return `${doc.trimEnd()}\n\n${body}`;
}
