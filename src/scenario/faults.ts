/**
 * The one fault vocabulary (docs/adr/0033-one-fault-vocabulary.md): every fault a request can be
 * given, by its field name, with the one parser of each grammar. A control header
 * (`X-Echo-Status`), an environment default (`ECHO_STATUS`) and a scenario response's field
 * (`status`... `error`, `throttle`) all read their text here into a {@link FaultSpec}, the parsed
 * and not yet drawn value; the echo draws it per request. So `503:10` means the same thing in a
 * header, a variable, a YAML file and an `EchoScenario`, and nothing else parses it.
 */
import { DURATION_FORM, parseDurationMs } from '@echo-chaos/obs/internal';
import { type DelaySpec, drawDelayMs, readDelaySpec } from './duration.ts';
import { parseWeightedList, type WeightedList } from './weighted.ts';

export type Compression = 'gzip' | 'br' | 'deflate';

/**
 * A response broken on purpose: `empty` (the connection closes with nothing sent), `truncate`
 * (a `Content-Length` promises the whole body, half comes), `malformed` (an invalid chunk in a
 * chunked body), `garbage` (random bytes, nothing HTTP-shaped, then the connection closes).
 */
export type BrokenBodyKind = 'empty' | 'truncate' | 'malformed' | 'garbage';

/**
 * A connection that misbehaves around a whole answer, as toxiproxy's toxics do
 * (docs/adr/0035-slow-close-and-blackhole.md): `slow-close` (the answer goes whole, the connection
 * closes `ECHO_ERROR_TIMEOUT` later) and `blackhole` (the request is read and nothing is ever sent;
 * the connection closes after `ECHO_REQUEST_TIMEOUT`, or when the client leaves). Neither takes a
 * parameter here: `:` already separates a weighted list's weight (`blackhole:10`).
 */
export type ConnectionFaultKind = 'slow-close' | 'blackhole';

/** What an error fault asked for. A status fault carries the status it answers with. */
export type ErrorFault =
  | { readonly kind: 'status'; readonly name: string; readonly status: number }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'reset' }
  | { readonly kind: 'close' }
  | { readonly kind: BrokenBodyKind }
  | { readonly kind: ConnectionFaultKind };

/** Statuses a chaos draw and an `error` of `random` pick from. */
export const CHAOS_STATUSES = [500, 502, 503, 504, 408, 429] as const;
export const RANDOM_ERROR_STATUSES = [500, 502, 503, 504, 429] as const;

/** Named error values that answer with a status. */
export const NAMED_ERRORS: Readonly<Record<string, number>> = {
  internal: 500,
  'bad-gateway': 502,
  unavailable: 503,
  'gateway-timeout': 504,
  'rate-limit': 429,
};

/** The form of an error value, for the messages a bad one gets. */
export const ERROR_FAULT_FORM =
  'a status 400-599, one of internal, bad-gateway, unavailable, gateway-timeout, rate-limit, random, timeout, reset, close, empty, truncate, malformed, garbage, slow-close, blackhole';

/** One of `items`, drawn from `random`. */
function pick<T>(items: readonly T[], random: () => number): T {
  return items[Math.min(items.length - 1, Math.floor(random() * items.length))] as T;
}

/** Reads an error value (case-insensitive); `random` draws its status now. */
export function parseErrorFault(value: string, random: () => number): ErrorFault | undefined {
  const v = value.trim().toLowerCase();
  if (/^\d{3}$/.test(v)) {
    const status = Number(v);
    return status >= 400 && status <= 599 ? { kind: 'status', name: v, status } : undefined;
  }
  // Own properties only: `constructor` or `__proto__` must not find Object's.
  const named = Object.hasOwn(NAMED_ERRORS, v) ? NAMED_ERRORS[v] : undefined;
  if (named !== undefined) return { kind: 'status', name: v, status: named };
  switch (v) {
    case 'random':
      return { kind: 'status', name: 'random', status: pick(RANDOM_ERROR_STATUSES, random) };
    case 'timeout':
    case 'reset':
    case 'close':
    case 'empty':
    case 'truncate':
    case 'malformed':
    case 'garbage':
    case 'slow-close':
    case 'blackhole':
      return { kind: v };
    default:
      return undefined;
  }
}

/** The ceiling of a chunk size. */
export const MAX_CHUNK_BYTES = 1024 * 1024;
/** The lowest throttle rate. */
export const MIN_BYTES_PER_SECOND = 1;

const UNIT_BYTES: Readonly<Record<string, number>> = {
  b: 1,
  kb: 1000,
  mb: 1000 ** 2,
  gb: 1000 ** 3,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
};
const RATE = /^(\d{1,12}(?:\.\d{1,3})?)\s*(b|kb|mb|gb|kib|mib|gib)\/s$/i;

/** The form of a throttle rate, for the messages a bad one gets. */
export const RATE_FORM =
  'a rate of at least 1 B/s such as 500B/s, 10KB/s, 1MB/s (KB = 1000 bytes; KiB/s, MiB/s for 1024)';

/** Reads a rate (`10KB/s`, `1.5MiB/s`, `500B/s`) as bytes per second; `undefined` when it is not one. */
export function parseRate(value: string): number | undefined {
  const m = RATE.exec(value.trim());
  if (m === null) return undefined;
  const rate = Number(m[1]) * (UNIT_BYTES[(m[2] ?? '').toLowerCase()] ?? 0);
  return rate >= MIN_BYTES_PER_SECOND ? rate : undefined;
}

/** The longest `Retry-After` in seconds a fault sets: a day. */
export const MAX_RETRY_AFTER_SECONDS = 86_400;

/** What a `Retry-After` fault takes, for the messages a bad value gets. */
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

/** Highest attempt of an exponential delay. */
export const EXPONENTIAL_MAX_ATTEMPT = 32;
const MEDIA_TYPE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*;[^\r\n]*)?$/;
const NON_NEGATIVE_INT = /^\d{1,16}$/;

/**
 * Every fault field, in the order a spec is drawn and listed. The header of each is
 * `X-Echo-<Field>` and its environment default `ECHO_<FIELD>` (see {@link FAULT_FIELDS}).
 */
export type FaultField =
  | 'delay'
  | 'jitter'
  | 'randomDelay'
  | 'exponential'
  | 'latency'
  | 'status'
  | 'error'
  | 'chaos'
  | 'size'
  | 'compress'
  | 'contentType'
  | 'throttle'
  | 'chunkDelay'
  | 'chunkSize'
  | 'bodyDelay'
  | 'retryAfter';

/** The five delay fields, in precedence order: the first one set decides a source's delay. */
export const DELAY_FIELDS: readonly FaultField[] = [
  'delay',
  'jitter',
  'randomDelay',
  'exponential',
  'latency',
];

/** A fault field's names: its control header (lower case) and its environment variable. */
export interface FaultFieldNames {
  readonly field: FaultField;
  readonly header: string;
  readonly env: string;
}

function names(field: FaultField, header: string, env: string): FaultFieldNames {
  return { field, header, env };
}

/** Every fault field with its header and variable, in draw order. */
export const FAULT_FIELDS: readonly FaultFieldNames[] = [
  names('delay', 'x-echo-delay', 'ECHO_DELAY'),
  names('jitter', 'x-echo-jitter', 'ECHO_JITTER'),
  names('randomDelay', 'x-echo-random-delay', 'ECHO_RANDOM_DELAY'),
  names('exponential', 'x-echo-exponential', 'ECHO_EXPONENTIAL'),
  names('latency', 'x-echo-latency', 'ECHO_LATENCY'),
  names('status', 'x-echo-status', 'ECHO_STATUS'),
  names('error', 'x-echo-error', 'ECHO_ERROR'),
  names('chaos', 'x-echo-chaos', 'ECHO_CHAOS'),
  names('size', 'x-echo-response-size', 'ECHO_RESPONSE_SIZE'),
  names('compress', 'x-echo-compress', 'ECHO_COMPRESS'),
  names('contentType', 'x-echo-content-type', 'ECHO_CONTENT_TYPE'),
  names('throttle', 'x-echo-throttle', 'ECHO_THROTTLE'),
  names('chunkDelay', 'x-echo-chunk-delay', 'ECHO_CHUNK_DELAY'),
  names('chunkSize', 'x-echo-chunk-size', 'ECHO_CHUNK_SIZE'),
  names('bodyDelay', 'x-echo-body-delay', 'ECHO_BODY_DELAY'),
  names('retryAfter', 'x-echo-retry-after', 'ECHO_RETRY_AFTER'),
];

/**
 * The fault fields a scenario response takes besides `status` and `delay` (which it has always
 * had, `delay` taking every delay form): the text of each is what its header takes.
 */
export const SCENARIO_FAULT_FIELDS = [
  'error',
  'size',
  'compress',
  'contentType',
  'throttle',
  'chunkDelay',
  'chunkSize',
  'bodyDelay',
  'retryAfter',
] as const satisfies readonly FaultField[];
export type ScenarioFaultField = (typeof SCENARIO_FAULT_FIELDS)[number];

/** Draws a delay in milliseconds. */
export type DelayDraw = (random: () => number) => number;

/**
 * A source's faults, parsed and not yet drawn: what its header, variable or scenario field said.
 * Fields absent were not given. Weighted lists and delays are drawn per request ({@link FaultSpec}
 * is shared by every request of a process or a scenario response, so it is never changed after
 * it is read).
 */
export interface FaultSpec {
  /** The source's delay: the field that won by precedence and its draw. */
  delay?: { readonly field: FaultField; readonly draw: DelayDraw; readonly worstMs: number };
  statuses?: WeightedList<number>;
  /** Each entry an error text, read again with the request's randomness at the draw (`random`). */
  errors?: WeightedList<string>;
  chaosPercent?: number;
  sizes?: WeightedList<number>;
  compress?: Compression;
  contentType?: string;
  /** The body's bandwidth cap, as asked (`200KB/s`) and in bytes per second. */
  throttle?: { readonly text: string; readonly bytesPerSecond: number };
  chunkDelayMs?: number;
  chunkBytes?: number;
  bodyDelayMs?: number;
  /** `Retry-After`, whole seconds or an HTTP date, as normalised by {@link parseRetryAfter}. */
  retryAfter?: string;
}

/** Ceilings a fault's text is checked against (the service's `ECHO_MAX_DELAY`, `ECHO_MAX_RESPONSE_SIZE`). */
export interface FaultLimits {
  readonly maxDelayMs: number;
  readonly maxResponseBytes: number;
}

/** Checks an error entry without drawing: `random` is drawn for real at the draw. */
const CHECK_ONLY = () => 0;

function parseStatus(text: string): number | undefined {
  const status = /^\d{3}$/.test(text) ? Number(text) : 0;
  return status < 100 || status > 599 || status === 101 ? undefined : status;
}

function pair(value: string): [number, number] | undefined {
  const parts = value.split(',');
  if (parts.length !== 2) return undefined;
  const a = parseDurationMs(parts[0] ?? '');
  const b = parseDurationMs(parts[1] ?? '');
  return a === undefined || b === undefined ? undefined : [a, b];
}

function aboveMaxDelay(ms: number, limits: FaultLimits): string {
  return `delay of ${ms} ms is above ECHO_MAX_DELAY (${limits.maxDelayMs} ms)`;
}

/** A single duration of at most `ECHO_MAX_DELAY` (the slow-body waits). */
function boundedDuration(text: string, limits: FaultLimits): number | string {
  const ms = parseDurationMs(text);
  if (ms === undefined) return `expected ${DURATION_FORM}`;
  return ms > limits.maxDelayMs ? aboveMaxDelay(ms, limits) : ms;
}

/**
 * Offers a delay: only the winner by precedence ({@link DELAY_FIELDS}) is kept, so a losing field
 * is never drawn and a seeded run stays reproducible.
 */
function setDelay(spec: FaultSpec, field: FaultField, draw: DelayDraw, worstMs: number, limits: FaultLimits) {
  if (worstMs > limits.maxDelayMs) return aboveMaxDelay(worstMs, limits);
  const current = spec.delay;
  if (current === undefined || DELAY_FIELDS.indexOf(field) < DELAY_FIELDS.indexOf(current.field)) {
    spec.delay = { field, draw, worstMs };
  }
  return undefined;
}

/** A delay of every form (`delay`'s list, `latency`'s distributions): a range checked, its worst case bounded. */
function delayForms(
  text: string,
  field: FaultField,
  spec: FaultSpec,
  limits: FaultLimits,
): string | undefined {
  const read = readDelaySpec(text);
  if (!read.ok) return read.message;
  const parsed: DelaySpec = read.spec;
  if (parsed.minMs > parsed.maxMs) {
    return `a range goes from low to high, got ${parsed.minMs}ms-${parsed.maxMs}ms`;
  }
  if (field === 'delay' && parsed.lognormal !== undefined) return 'lognormal is for X-Echo-Latency';
  const capMs = limits.maxDelayMs;
  return setDelay(spec, field, (random) => drawDelayMs(parsed, random, capMs), parsed.maxMs, limits);
}

type FieldReader = (
  text: string,
  spec: FaultSpec,
  limits: FaultLimits,
  field: FaultField,
) => string | undefined;

const READERS: Readonly<Record<FaultField, FieldReader>> = {
  delay: (text, spec, limits, field) => {
    if (text.includes(':') && !text.trim().startsWith('lognormal:'))
      return delayForms(text, field, spec, limits);
    const ms = parseDurationMs(text);
    if (ms === undefined) return `expected ${DURATION_FORM}, or a weighted list such as 100ms:90,2s:10`;
    return setDelay(spec, field, () => ms, ms, limits);
  },
  jitter: (text, spec, limits, field) => {
    const p = pair(text);
    if (p === undefined) return 'expected base,jitter in ms, e.g. 200,50';
    const [base, jitter] = p;
    const draw: DelayDraw = (random) => Math.max(0, base + Math.round((random() * 2 - 1) * jitter));
    return setDelay(spec, field, draw, base + jitter, limits);
  },
  randomDelay: (text, spec, limits, field) => {
    const p = pair(text);
    if (p === undefined || p[0] > p[1]) return 'expected min,max in ms with min <= max, e.g. 100,500';
    const range = { minMs: p[0], maxMs: p[1] };
    return setDelay(spec, field, (random) => drawDelayMs(range, random), p[1], limits);
  },
  exponential: (text, spec, limits, field) => {
    const parts = text.split(',');
    const base = parts.length === 2 ? parseDurationMs(parts[0] ?? '') : undefined;
    const attemptText = (parts[1] ?? '').trim();
    const attempt = /^\d{1,3}$/.test(attemptText) ? Number(attemptText) : 0;
    if (base === undefined || attempt < 1 || attempt > EXPONENTIAL_MAX_ATTEMPT) {
      return `expected base_ms,attempt with attempt 1-${EXPONENTIAL_MAX_ATTEMPT}, e.g. 100,3`;
    }
    const nominal = base * 2 ** (attempt - 1);
    const draw: DelayDraw = (random) => Math.round(nominal * (0.75 + random() * 0.5));
    return setDelay(spec, field, draw, Math.round(nominal * 1.25), limits);
  },
  latency: (text, spec, limits, field) => delayForms(text, field, spec, limits),
  status: (text, spec) => {
    const parsed = parseWeightedList(text, parseStatus, 'an HTTP status 100-599 (101 cannot be injected)');
    if (!parsed.ok) return parsed.message;
    spec.statuses = parsed.list;
    return undefined;
  },
  error: (text, spec) => {
    // Each entry is checked now; the drawn one is read again, with the request's randomness, at the draw.
    const parsed = parseWeightedList(
      text,
      (entry) => (parseErrorFault(entry, CHECK_ONLY) === undefined ? undefined : entry),
      ERROR_FAULT_FORM,
    );
    if (!parsed.ok) return parsed.message;
    spec.errors = parsed.list;
    return undefined;
  },
  chaos: (text, spec) => {
    const t = text.trim();
    const pct = /^\d{1,3}$/.test(t) ? Number(t) : -1;
    if (pct < 0 || pct > 100) return 'expected an integer percentage 0-100';
    spec.chaosPercent = pct;
    return undefined;
  },
  size: (text, spec, limits) => {
    const max = limits.maxResponseBytes;
    const parsed = parseWeightedList(
      text,
      (t) => (NON_NEGATIVE_INT.test(t) && Number(t) <= max ? Number(t) : undefined),
      `a non-negative integer number of bytes, at most ECHO_MAX_RESPONSE_SIZE (${max} bytes)`,
    );
    if (!parsed.ok) return parsed.message;
    spec.sizes = parsed.list;
    return undefined;
  },
  compress: (text, spec) => {
    const v = text.trim().toLowerCase();
    if (v !== 'gzip' && v !== 'br' && v !== 'deflate') return 'expected gzip, br or deflate';
    spec.compress = v;
    return undefined;
  },
  contentType: (text, spec) => {
    const v = text.trim();
    if (!MEDIA_TYPE.test(v)) return 'expected a media type such as application/json';
    spec.contentType = v;
    return undefined;
  },
  throttle: (text, spec) => {
    const bytesPerSecond = parseRate(text);
    if (bytesPerSecond === undefined) return `expected ${RATE_FORM}`;
    spec.throttle = { text: text.trim(), bytesPerSecond };
    return undefined;
  },
  chunkDelay: (text, spec, limits) => {
    const ms = boundedDuration(text, limits);
    if (typeof ms === 'string') return ms;
    spec.chunkDelayMs = ms;
    return undefined;
  },
  chunkSize: (text, spec) => {
    const t = text.trim();
    const size = NON_NEGATIVE_INT.test(t) ? Number(t) : 0;
    if (size < 1 || size > MAX_CHUNK_BYTES) return `expected an integer number of bytes 1-${MAX_CHUNK_BYTES}`;
    spec.chunkBytes = size;
    return undefined;
  },
  bodyDelay: (text, spec, limits) => {
    const ms = boundedDuration(text, limits);
    if (typeof ms === 'string') return ms;
    spec.bodyDelayMs = ms;
    return undefined;
  },
  retryAfter: (text, spec) => {
    const retryAfter = parseRetryAfter(text);
    if (retryAfter === undefined) return RETRY_AFTER_FORM;
    spec.retryAfter = retryAfter;
    return undefined;
  },
};

/**
 * Reads one fault field's text into `spec`, the one parser of every source.
 * @returns `undefined` when it was read, else what is wrong with it (the expected form).
 */
export function readFault(
  field: FaultField,
  text: string,
  spec: FaultSpec,
  limits: FaultLimits,
): string | undefined {
  return READERS[field](text, spec, limits, field);
}
