import type { IncomingHttpHeaders } from 'node:http';
import { nearestName } from '@echo-chaos/obs/internal';
import {
  type Compression,
  type ErrorFault,
  FAULT_FIELDS,
  type FaultField,
  type FaultLimits,
  type FaultSpec,
  parseErrorFault,
  readFault,
} from '../scenario/faults.ts';
import { drawWeighted } from '../scenario/weighted.ts';
import type { FaultSource } from './applied.ts';
import type { ErrorDetail } from './errors.ts';
import { TOKEN, UNSETTABLE_HEADERS } from './http-grammar.ts';
import { parseSeed, type RandomSource } from './random.ts';

export type { Compression } from '../scenario/faults.ts';
export { MAX_RETRY_AFTER_SECONDS, parseRetryAfter, RETRY_AFTER_FORM } from '../scenario/faults.ts';

/** Where a control that is not the request's own header came from: a scenario or a variable. */
export interface Origin {
  /** A variable (`ECHO_STATUS`) or `scenario <label>`. */
  readonly control: string;
  readonly source: FaultSource;
}

/**
 * The controls of one request, drawn: its `X-Echo-*` headers, and (see {@link withFallbacks}) what
 * its scenario response and the environment defaults give for the fields its headers leave unset.
 * Absent means "not asked for".
 */
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
  /** `X-Echo-Session`: the session whose positions and counters the request's scenario uses. */
  session?: string;
  /** The fields a scenario or an environment default gave; a field not listed came from its header. */
  origins?: Partial<Record<FaultField, Origin>>;
}

/** Ceilings the parser enforces (from the service's configuration). */
export type ControlLimits = FaultLimits;

export type ParseResult = {
  readonly controls: Controls;
  readonly problems: readonly ErrorDetail[];
  /** The fault fields the headers gave, undrawn; `undefined` when they gave none. */
  readonly spec?: FaultSpec;
};

const MAX_ECHOED_HEADERS = 64;
/** Longest `X-Echo-Session`. */
export const MAX_SESSION_LENGTH = 128;
/** What a session id is, worded for messages: the one rule of `X-Echo-Session`, history and state routes. */
export const SESSION_FORM = `a session id of 1-${MAX_SESSION_LENGTH} letters, digits and !#$%&'*+-.^_\`|~`;

/** Whether `value` is a session id as `X-Echo-Session` takes it (an HTTP token, at most 128 characters). */
export function isSessionId(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_SESSION_LENGTH && TOKEN.test(value);
}
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
  readonly controls: Controls;
  readonly problems: ErrorDetail[];
  /** The fault fields, parsed and drawn once all headers are checked (see `drawControls`). */
  readonly spec: FaultSpec;
}

type HeaderParser = (value: string, ctx: ParseContext, name: string) => void;

function problem(ctx: ParseContext, field: string, value: string, message: string): void {
  ctx.problems.push({ field, value, message });
}

function bool(ctx: ParseContext, name: string, value: string): boolean | undefined {
  const v = value.trim().toLowerCase();
  if (v === 'true') return true;
  if (v === 'false') return false;
  problem(ctx, name, value, 'expected true or false');
  return undefined;
}

/** A fault header: its field's one parser (`src/scenario/faults.ts`). */
function faultHeader(field: FaultField): HeaderParser {
  return (value, ctx, name) => {
    const message = readFault(field, value, ctx.spec, ctx.limits);
    if (message !== undefined) problem(ctx, name, value, message);
  };
}

/** One parser per control header: a table, so a request pays one lookup per `X-Echo-*` header. */
const PARSERS: ReadonlyMap<string, HeaderParser> = new Map<string, HeaderParser>([
  ...FAULT_FIELDS.map((f) => [f.header, faultHeader(f.field)] as const),
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
    'x-echo-session',
    (value, ctx, name) => {
      const v = value.trim();
      if (!isSessionId(v)) return problem(ctx, name, value, `expected ${SESSION_FORM}`);
      ctx.controls.session = v;
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
    ctx ??= { limits, controls: {}, problems: [], spec: {} };
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
  drawControls(ctx.controls, ctx.spec, random, undefined);
  return { controls: ctx.controls, problems: NO_PROBLEMS, spec: ctx.spec };
}

const HEADER_OF: Readonly<Record<string, string>> = Object.fromEntries(
  FAULT_FIELDS.map((f) => [f.field, dashCase(f.header)]),
);

/** The control that gave a field of `controls`, and where it came from: its header unless listed. */
export function originOf(controls: Controls, field: FaultField): Origin {
  return controls.origins?.[field] ?? { control: HEADER_OF[field] ?? field, source: 'header' };
}

/**
 * Draws a spec's fields into `controls`, in a fixed order whatever the order of the headers
 * (delay, status, error, response size), so a seed replays. A draw in a list's rest leaves the
 * control unset: nothing is applied. With `from`, only the fields `skip` does not give are drawn,
 * and each is listed in `controls.origins`.
 */
function drawControls(
  controls: Controls,
  spec: FaultSpec,
  random: RandomSource,
  from: { readonly origin: (field: FaultField) => Origin; readonly skip: FaultSpec } | undefined,
): void {
  const skip = from?.skip;
  const take = (field: FaultField, named: FaultField = field) => {
    if (from === undefined) return;
    controls.origins ??= {};
    controls.origins[field] = from.origin(named);
  };
  if (spec.delay !== undefined && skip?.delay === undefined) {
    controls.delayMs = spec.delay.draw(random);
    controls.delayControl = HEADER_OF[spec.delay.field];
    // A delay is listed under `delay`, named by the field that gave it (`ECHO_LATENCY`).
    take('delay', spec.delay.field);
  }
  if (spec.statuses !== undefined && skip?.statuses === undefined) {
    const status = drawWeighted(spec.statuses, random);
    if (status !== undefined) controls.status = status;
    take('status');
  }
  if (spec.errors !== undefined && skip?.errors === undefined) {
    const entry = drawWeighted(spec.errors, random);
    // Checked when parsed, so it parses.
    if (entry !== undefined) controls.error = parseErrorFault(entry, random) as ErrorFault;
    take('error');
  }
  if (spec.sizes !== undefined && skip?.sizes === undefined) {
    const size = drawWeighted(spec.sizes, random);
    if (size !== undefined) controls.responseSize = size;
    take('size');
  }
  if (spec.chaosPercent !== undefined && skip?.chaosPercent === undefined) {
    controls.chaosPercent = spec.chaosPercent;
    take('chaos');
  }
  if (spec.compress !== undefined && skip?.compress === undefined) {
    controls.compress = spec.compress;
    take('compress');
  }
  if (spec.contentType !== undefined && skip?.contentType === undefined) {
    controls.contentType = spec.contentType;
    take('contentType');
  }
  if (spec.throttle !== undefined && skip?.throttle === undefined) {
    controls.throttle = spec.throttle;
    take('throttle');
  }
  if (spec.chunkDelayMs !== undefined && skip?.chunkDelayMs === undefined) {
    controls.chunkDelayMs = spec.chunkDelayMs;
    take('chunkDelay');
  }
  if (spec.chunkBytes !== undefined && skip?.chunkBytes === undefined) {
    controls.chunkBytes = spec.chunkBytes;
    take('chunkSize');
  }
  if (spec.bodyDelayMs !== undefined && skip?.bodyDelayMs === undefined) {
    controls.bodyDelayMs = spec.bodyDelayMs;
    take('bodyDelay');
  }
  if (spec.retryAfter !== undefined && skip?.retryAfter === undefined) {
    controls.retryAfter = spec.retryAfter;
    take('retryAfter');
  }
}

/** One source a request's unset fields fall back to: its scenario response, or the environment. */
export interface Fallback {
  readonly spec: FaultSpec;
  /** The control and source that gave a field (a variable per field, one scenario for all). */
  readonly origin: (field: FaultField) => Origin;
}

/**
 * The request's controls with the fields its headers (`headerSpec`) leave unset taken from each
 * fallback in turn (its scenario response, then the environment defaults), drawn from `random`
 * in the order `drawControls` keeps. Per field, the first source that gives it wins; a source's
 * weighted list is never blended with another's. `controls` itself is not changed.
 */
export function withFallbacks(
  controls: Controls,
  headerSpec: FaultSpec | undefined,
  fallbacks: readonly Fallback[],
  random: RandomSource,
): Controls {
  const merged: Controls = { ...controls };
  if (controls.origins !== undefined) merged.origins = { ...controls.origins };
  // What is already decided, by the headers and then by each earlier fallback.
  let decided: FaultSpec = headerSpec === undefined ? {} : { ...headerSpec };
  for (const fallback of fallbacks) {
    drawControls(merged, fallback.spec, random, { origin: fallback.origin, skip: decided });
    decided = { ...fallback.spec, ...decided };
  }
  return merged;
}

/** The controls of a request that sent no `X-Echo-*` header: none. */
export const NO_CONTROLS: Controls = Object.freeze({}) as Controls;

const EMPTY: ParseResult = Object.freeze({ controls: NO_CONTROLS, problems: NO_PROBLEMS });

/** Whether a request sent any `X-Echo-*` header (a control, or one the pipeline reads itself). */
export function hasControlHeader(headers: IncomingHttpHeaders): boolean {
  for (const name in headers) if (name.startsWith('x-echo-')) return true;
  return false;
}
