import type { IncomingHttpHeaders } from 'node:http';
import { DURATION_FORM, nearestName, parseDurationMs } from '@echo-chaos/obs';
import { type DelaySpec, drawDelayMs, readDelaySpec } from '../scenario/duration.ts';
import { drawWeighted, parseWeightedList, type WeightedList } from '../scenario/weighted.ts';
import type { ErrorDetail } from './errors.ts';
import { ERROR_FAULT_FORM, type ErrorFault, parseErrorFault } from './faults.ts';
import { TOKEN, UNSETTABLE_HEADERS } from './http-grammar.ts';
import { parseSeed, type RandomSource } from './random.ts';
import { MAX_CHUNK_BYTES, parseRate, RATE_FORM } from './shaping.ts';

export type Compression = 'gzip' | 'br' | 'deflate';

/** The parsed `X-Echo-*` control headers of one request. Absent means "not asked for". */
export interface Controls {
  delayMs?: number;
  status?: number;
  error?: ErrorFault;
  chaosPercent?: number;
  responseSize?: number;
  compress?: Compression;
  contentType?: string;
  setHeaders?: Array<readonly [string, string]>;
  echoHeaders?: string[];
  historyEnabled?: boolean;
  /** The delay header that decided `delayMs` (`X-Echo-Delay`, `X-Echo-Jitter`, ...). */
  delayControl?: string;
  /** `X-Echo-Explain: true`: list the applied faults in `X-Echo-Applied`. */
  explain?: boolean;
  /** `X-Echo-Throttle`: the body's bandwidth cap, as asked (`200KB/s`) and in bytes per second. */
  throttle?: { readonly text: string; readonly bytesPerSecond: number };
  /** `X-Echo-Chunk-Delay`: the wait between two chunks of the body. */
  chunkDelayMs?: number;
  /** `X-Echo-Chunk-Size`: the size of those chunks. */
  chunkBytes?: number;
  /** `X-Echo-Body-Delay`: the wait after the headers, before the body. */
  bodyDelayMs?: number;
  /** `X-Echo-Retry-After`: the answer's `Retry-After`, whole seconds or an HTTP date, as sent. */
  retryAfter?: string;
}

/** Ceilings the parser enforces (from the service's configuration). */
export interface ControlLimits {
  readonly maxDelayMs: number;
  readonly maxResponseBytes: number;
}

export type ParseResult = { readonly controls: Controls; readonly problems: readonly ErrorDetail[] };

const EXPONENTIAL_MAX_ATTEMPT = 32;
const MAX_ECHOED_HEADERS = 64;
const MEDIA_TYPE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*;[^\r\n]*)?$/;
const NON_NEGATIVE_INT = /^\d{1,16}$/;
/** Response-only headers a client may reflect back at us; they control nothing. */
const IGNORED = new Set([
  'x-echo-request-count',
  'x-echo-fault',
  'x-echo-server',
  'x-echo-version',
  'x-echo-uptime',
  'x-echo-replay-of',
  'x-echo-applied',
  'x-echo-history-id',
]);
export const SET_HEADER_PREFIX = 'x-echo-set-header-';

/** Context handed to each header parser. */
interface ParseContext {
  readonly limits: ControlLimits;
  readonly random: RandomSource;
  readonly controls: Controls;
  readonly problems: ErrorDetail[];
  /** The winning delay header so far, drawn once all headers are checked. */
  delay?: { readonly name: string; readonly draw: Draw };
  /** Weighted lists, drawn once all headers are checked, in a fixed order (see `drawControls`). */
  statuses?: WeightedList<number>;
  errors?: WeightedList<string>;
  sizes?: WeightedList<number>;
}

type HeaderParser = (value: string, ctx: ParseContext, name: string) => void;

function problem(ctx: ParseContext, field: string, value: string, message: string): void {
  ctx.problems.push({ field, value, message });
}

/** Delay headers in precedence order: the first present one decides the delay. */
const DELAY_RANK: Readonly<Record<string, number>> = {
  'x-echo-delay': 0,
  'x-echo-jitter': 1,
  'x-echo-random-delay': 2,
  'x-echo-exponential': 3,
  'x-echo-latency': 4,
};

/**
 * Offers a delay header's draw. Only the winner by precedence is drawn (after every header is
 * checked), so a losing header consumes no randomness and a seeded run stays reproducible.
 */
function setDelay(ctx: ParseContext, name: string, value: string, draw: Draw, worstMs: number): void {
  if (worstMs > ctx.limits.maxDelayMs) {
    problem(ctx, name, value, `delay of ${worstMs} ms is above ECHO_MAX_DELAY (${ctx.limits.maxDelayMs} ms)`);
    return;
  }
  const current = ctx.delay;
  if (current !== undefined && (DELAY_RANK[current.name] ?? 99) < (DELAY_RANK[name] ?? 99)) return;
  ctx.delay = { name, draw };
}

type Draw = (random: RandomSource) => number;

/** Checks an `X-Echo-Error` entry without drawing: `random` is drawn for real at the draw. */
const CHECK_ONLY: RandomSource = () => 0;

function parseStatus(text: string): number | undefined {
  const status = /^\d{3}$/.test(text) ? Number(text) : 0;
  return status < 100 || status > 599 || status === 101 ? undefined : status;
}

/**
 * `X-Echo-Delay` (a list) and `X-Echo-Latency` (every form): worst case checked against
 * `ECHO_MAX_DELAY`; a log-normal delay's median is, and its draws are capped at it.
 */
const delaySpec: HeaderParser = (value, ctx, name) => {
  const read = readDelaySpec(value);
  if (!read.ok) return problem(ctx, name, value, read.message);
  const spec: DelaySpec = read.spec;
  if (spec.minMs > spec.maxMs) {
    return problem(ctx, name, value, `a range goes from low to high, got ${spec.minMs}ms-${spec.maxMs}ms`);
  }
  if (name === 'x-echo-delay' && spec.lognormal !== undefined) {
    return problem(ctx, name, value, 'lognormal is for X-Echo-Latency');
  }
  const capMs = ctx.limits.maxDelayMs;
  setDelay(ctx, name, value, (random) => drawDelayMs(spec, random, capMs), spec.maxMs);
};

function pair(value: string): [number, number] | undefined {
  const parts = value.split(',');
  if (parts.length !== 2) return undefined;
  const a = parseDurationMs(parts[0] ?? '');
  const b = parseDurationMs(parts[1] ?? '');
  return a === undefined || b === undefined ? undefined : [a, b];
}

function bool(ctx: ParseContext, name: string, value: string): boolean | undefined {
  const v = value.trim().toLowerCase();
  if (v === 'true') return true;
  if (v === 'false') return false;
  problem(ctx, name, value, 'expected true or false');
  return undefined;
}

/** A single duration of at most `ECHO_MAX_DELAY` (the slow-body waits). */
function boundedDuration(ctx: ParseContext, name: string, value: string): number | undefined {
  const ms = parseDurationMs(value);
  if (ms === undefined) problem(ctx, name, value, `expected ${DURATION_FORM}`);
  else if (ms > ctx.limits.maxDelayMs) {
    problem(ctx, name, value, `delay of ${ms} ms is above ECHO_MAX_DELAY (${ctx.limits.maxDelayMs} ms)`);
  } else return ms;
  return undefined;
}

/** One parser per control header: a table, so a request pays one lookup per `X-Echo-*` header. */
const PARSERS: ReadonlyMap<string, HeaderParser> = new Map<string, HeaderParser>([
  [
    'x-echo-delay',
    (value, ctx, name) => {
      if (value.includes(':') && !value.trim().startsWith('lognormal:')) return delaySpec(value, ctx, name);
      const ms = parseDurationMs(value);
      if (ms === undefined) {
        return problem(
          ctx,
          name,
          value,
          `expected ${DURATION_FORM}, or a weighted list such as 100ms:90,2s:10`,
        );
      }
      setDelay(ctx, name, value, () => ms, ms);
    },
  ],
  [
    'x-echo-jitter',
    (value, ctx, name) => {
      const p = pair(value);
      if (p === undefined) return problem(ctx, name, value, 'expected base,jitter in ms, e.g. 200,50');
      const [base, jitter] = p;
      const draw: Draw = (random) => Math.max(0, base + Math.round((random() * 2 - 1) * jitter));
      setDelay(ctx, name, value, draw, base + jitter);
    },
  ],
  [
    'x-echo-random-delay',
    (value, ctx, name) => {
      const p = pair(value);
      if (p === undefined || p[0] > p[1])
        return problem(ctx, name, value, 'expected min,max in ms with min <= max, e.g. 100,500');
      const range = { minMs: p[0], maxMs: p[1] };
      setDelay(ctx, name, value, (random) => drawDelayMs(range, random), p[1]);
    },
  ],
  [
    'x-echo-exponential',
    (value, ctx, name) => {
      const parts = value.split(',');
      const base = parts.length === 2 ? parseDurationMs(parts[0] ?? '') : undefined;
      const attemptText = (parts[1] ?? '').trim();
      const attempt = /^\d{1,3}$/.test(attemptText) ? Number(attemptText) : 0;
      if (base === undefined || attempt < 1 || attempt > EXPONENTIAL_MAX_ATTEMPT) {
        return problem(
          ctx,
          name,
          value,
          `expected base_ms,attempt with attempt 1-${EXPONENTIAL_MAX_ATTEMPT}, e.g. 100,3`,
        );
      }
      const nominal = base * 2 ** (attempt - 1);
      const draw: Draw = (random) => Math.round(nominal * (0.75 + random() * 0.5));
      setDelay(ctx, name, value, draw, Math.round(nominal * 1.25));
    },
  ],
  ['x-echo-latency', (value, ctx, name) => delaySpec(value, ctx, name)],
  [
    'x-echo-status',
    (value, ctx, name) => {
      const parsed = parseWeightedList(value, parseStatus, 'an HTTP status 100-599 (101 cannot be injected)');
      if (!parsed.ok) return problem(ctx, name, value, parsed.message);
      ctx.statuses = parsed.list;
    },
  ],
  [
    'x-echo-error',
    (value, ctx, name) => {
      // Each entry is checked now; the drawn one is read again, with the request's randomness, at the draw.
      const parsed = parseWeightedList(
        value,
        (entry) => (parseErrorFault(entry, CHECK_ONLY) === undefined ? undefined : entry),
        ERROR_FAULT_FORM,
      );
      if (!parsed.ok) return problem(ctx, name, value, parsed.message);
      ctx.errors = parsed.list;
    },
  ],
  [
    'x-echo-chaos',
    (value, ctx, name) => {
      const t = value.trim();
      const pct = /^\d{1,3}$/.test(t) ? Number(t) : -1;
      if (pct < 0 || pct > 100) return problem(ctx, name, value, 'expected an integer percentage 0-100');
      ctx.controls.chaosPercent = pct;
    },
  ],
  [
    'x-echo-response-size',
    (value, ctx, name) => {
      const max = ctx.limits.maxResponseBytes;
      const parsed = parseWeightedList(
        value,
        (t) => (NON_NEGATIVE_INT.test(t) && Number(t) <= max ? Number(t) : undefined),
        `a non-negative integer number of bytes, at most ECHO_MAX_RESPONSE_SIZE (${max} bytes)`,
      );
      if (!parsed.ok) return problem(ctx, name, value, parsed.message);
      ctx.sizes = parsed.list;
    },
  ],
  [
    'x-echo-throttle',
    (value, ctx, name) => {
      const bytesPerSecond = parseRate(value);
      if (bytesPerSecond === undefined) return problem(ctx, name, value, `expected ${RATE_FORM}`);
      ctx.controls.throttle = { text: value.trim(), bytesPerSecond };
    },
  ],
  [
    'x-echo-chunk-delay',
    (value, ctx, name) => {
      const ms = boundedDuration(ctx, name, value);
      if (ms !== undefined) ctx.controls.chunkDelayMs = ms;
    },
  ],
  [
    'x-echo-chunk-size',
    (value, ctx, name) => {
      const t = value.trim();
      const size = NON_NEGATIVE_INT.test(t) ? Number(t) : 0;
      if (size < 1 || size > MAX_CHUNK_BYTES) {
        return problem(ctx, name, value, `expected an integer number of bytes 1-${MAX_CHUNK_BYTES}`);
      }
      ctx.controls.chunkBytes = size;
    },
  ],
  [
    'x-echo-body-delay',
    (value, ctx, name) => {
      const ms = boundedDuration(ctx, name, value);
      if (ms !== undefined) ctx.controls.bodyDelayMs = ms;
    },
  ],
  [
    'x-echo-retry-after',
    (value, ctx, name) => {
      const retryAfter = parseRetryAfter(value);
      if (retryAfter === undefined) return problem(ctx, name, value, RETRY_AFTER_FORM);
      ctx.controls.retryAfter = retryAfter;
    },
  ],
  [
    'x-echo-compress',
    (value, ctx, name) => {
      const v = value.trim().toLowerCase();
      if (v !== 'gzip' && v !== 'br' && v !== 'deflate')
        return problem(ctx, name, value, 'expected gzip, br or deflate');
      ctx.controls.compress = v;
    },
  ],
  [
    'x-echo-content-type',
    (value, ctx, name) => {
      const v = value.trim();
      if (!MEDIA_TYPE.test(v))
        return problem(ctx, name, value, 'expected a media type such as application/json');
      ctx.controls.contentType = v;
    },
  ],
  [
    'x-echo-headers',
    (value, ctx, name) => {
      const names = value
        .split(',')
        .map((n) => n.trim().toLowerCase())
        .filter((n) => n.length > 0);
      if (names.length === 0 || names.length > MAX_ECHOED_HEADERS || !names.every((n) => TOKEN.test(n))) {
        return problem(
          ctx,
          name,
          value,
          `expected a comma-separated list of up to ${MAX_ECHOED_HEADERS} header names`,
        );
      }
      ctx.controls.echoHeaders = names;
    },
  ],
  [
    'x-echo-server-info',
    // Only checked here: it acts on every route, the service's own too, from app.ts's onRequest.
    (value, ctx, name) => void bool(ctx, name, value),
  ],
  [
    'x-echo-seed',
    (value, ctx, name) => {
      // Only checked here: the pipeline reads it first (`requestSeed`), to seed every draw.
      if (parseSeed(value) === undefined) problem(ctx, name, value, 'expected an integer seed 0-4294967295');
    },
  ],
  [
    'x-echo-explain',
    (value, ctx, name) => {
      const b = bool(ctx, name, value);
      if (b !== undefined) ctx.controls.explain = b;
    },
  ],
  [
    'x-echo-history-enabled',
    (value, ctx, name) => {
      const b = bool(ctx, name, value);
      if (b !== undefined) ctx.controls.historyEnabled = b;
    },
  ],
]);

/** The control headers this service understands, for suggestions. */
const CONTROL_HEADER_NAMES: readonly string[] = [...PARSERS.keys()];

function setHeader(ctx: ParseContext, name: string, value: string): void {
  const target = name.slice(SET_HEADER_PREFIX.length);
  if (target.length === 0 || !TOKEN.test(target)) {
    problem(ctx, name, value, 'expected X-Echo-Set-Header-<Name> with a header name');
  } else if (UNSETTABLE_HEADERS.has(target)) {
    problem(
      ctx,
      name,
      value,
      `${target} frames the message or is connection-specific (HTTP/2 forbids it) and cannot be set`,
    );
  } else {
    ctx.controls.setHeaders ??= [];
    ctx.controls.setHeaders.push([dashCase(target), value]);
  }
}

/** `cache-control` → `Cache-Control`. */
export function dashCase(name: string): string {
  return name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}

const NO_PROBLEMS: readonly ErrorDetail[] = [];

/**
 * Parses every `X-Echo-*` header of a request once. Unknown `X-Echo-*` names are problems too
 * (with the nearest known name), so a typo never silently does nothing.
 */
export function parseControls(
  headers: IncomingHttpHeaders,
  limits: ControlLimits,
  random: RandomSource,
): ParseResult {
  let ctx: ParseContext | undefined;
  for (const name in headers) {
    if (!name.startsWith('x-echo-')) continue;
    ctx ??= { limits, random, controls: {}, problems: [] };
    const raw = headers[name];
    const value = Array.isArray(raw) ? raw.join(', ') : (raw ?? '');
    const parser = PARSERS.get(name);
    if (parser !== undefined) parser(value, ctx, name);
    else if (name.startsWith(SET_HEADER_PREFIX)) setHeader(ctx, name, value);
    else if (!IGNORED.has(name)) {
      const suggestion = nearestName(name, CONTROL_HEADER_NAMES);
      problem(
        ctx,
        name,
        value,
        `unknown control header${suggestion ? `; did you mean ${dashCase(suggestion)}?` : ''}`,
      );
    }
  }
  if (ctx === undefined) return EMPTY;
  if (ctx.problems.length > 0) return { controls: ctx.controls, problems: ctx.problems };
  drawControls(ctx, random);
  return { controls: ctx.controls, problems: NO_PROBLEMS };
}

/**
 * Draws every distribution of the headers once, in a fixed order whatever the order of the headers
 * (delay, status, error, response size), so a seed replays. A draw in a list's rest leaves the
 * control unset: nothing is applied.
 */
function drawControls(ctx: ParseContext, random: RandomSource): void {
  const { controls } = ctx;
  if (ctx.delay !== undefined) {
    controls.delayMs = ctx.delay.draw(random);
    controls.delayControl = dashCase(ctx.delay.name);
  }
  if (ctx.statuses !== undefined) {
    const status = drawWeighted(ctx.statuses, random);
    if (status !== undefined) controls.status = status;
  }
  if (ctx.errors !== undefined) {
    const entry = drawWeighted(ctx.errors, random);
    // Checked when parsed, so it parses.
    if (entry !== undefined) controls.error = parseErrorFault(entry, random) as ErrorFault;
  }
  if (ctx.sizes !== undefined) {
    const size = drawWeighted(ctx.sizes, random);
    if (size !== undefined) controls.responseSize = size;
  }
}

const EMPTY: ParseResult = Object.freeze({ controls: Object.freeze({}) as Controls, problems: NO_PROBLEMS });

/** The longest `Retry-After` in seconds `X-Echo-Retry-After` takes: a day. */
export const MAX_RETRY_AFTER_SECONDS = 86_400;

/** What `X-Echo-Retry-After` takes, for the 400 a bad value gets. */
export const RETRY_AFTER_FORM = `expected whole seconds 0-${MAX_RETRY_AFTER_SECONDS} or an HTTP date (Sun, 06 Nov 1994 08:49:37 GMT)`;

/** RFC 9110's preferred date form (IMF-fixdate), the one `Retry-After` carries. */
const IMF_FIXDATE =
  /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/**
 * Reads a `Retry-After` value (RFC 9110 10.2.3): whole seconds (0 to a day; leading zeros dropped)
 * or an IMF-fixdate naming a real moment. Undefined for anything else.
 */
export function parseRetryAfter(value: string): string | undefined {
  const v = value.trim();
  if (/^\d{1,6}$/.test(v)) {
    const seconds = Number(v);
    return seconds <= MAX_RETRY_AFTER_SECONDS ? String(seconds) : undefined;
  }
  if (!IMF_FIXDATE.test(v)) return undefined;
  const at = Date.parse(v);
  // A date that does not exist (31 Feb) parses to another one, or to nothing: either way refused.
  return Number.isNaN(at) || new Date(at).toUTCString() !== v ? undefined : v;
}
