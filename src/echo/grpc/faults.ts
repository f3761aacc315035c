/**
 * The faults of a gRPC call (issue #36 item 3, docs/service/grpc.md): what its metadata asks for
 * and, for what it leaves unset, the environment's defaults (`ECHO_DELAY`... as for HTTP, ADR 0033),
 * read and then drawn in one fixed order from the call's randomness, so a seeded call replays.
 * Pure: no grpc-js here; echo-service.ts acts on the plan.
 *
 * The same vocabulary as the headers, each key read by its header's parser where the value means
 * the same (`x-echo-delay` and every delay form, `x-echo-chaos`, `x-echo-response-size`,
 * `x-echo-seed`, `x-echo-session`); gRPC's own forms where it does not: `x-echo-status` takes a
 * gRPC code or name, `x-echo-error` the gRPC failures (`reset`, `goaway`, `drop`, `trailers-only`).
 * The environment speaks HTTP, so its status and error defaults are mapped to gRPC by the table of
 * gRPC's own HTTP-to-status mapping (doc/http-grpc-status-mapping.md of grpc/grpc).
 */
import {
  FAULT_FIELDS,
  type FaultField,
  type FaultLimits,
  type FaultSpec,
  parseErrorFault,
  readFault,
} from '../../scenario/faults.ts';
import { drawWeighted, parseWeightedList, type WeightedList } from '../../scenario/weighted.ts';
import type { FaultKind } from '../applied.ts';
import { isSessionId, SESSION_FORM } from '../controls.ts';
import { parseSeed } from '../random.ts';
import { GRPC_STATUS_NAMES, type MetadataValues, parseGrpcStatus } from './metadata.ts';

/** Longest `x-echo-status-message`, in characters. */
export const MAX_STATUS_MESSAGE_LENGTH = 1024;
/** Highest `x-echo-stream-fail-after`: a stream never holds more messages (`ServerStream`'s count too). */
export const MAX_STREAM_FAIL_AFTER = 10_000;

/** The gRPC failures of `x-echo-error`. */
export const GRPC_ERROR_KINDS = ['reset', 'goaway', 'drop', 'trailers-only'] as const;
export type GrpcErrorKind = (typeof GRPC_ERROR_KINDS)[number];

/** The statuses a chaos draw picks from (gRPC's kin of HTTP's 500, 502, 503, 504, 408, 429). */
export const GRPC_CHAOS_CODES = [14, 13, 4, 8, 10, 2] as const;

/** `UNAVAILABLE`: the status of `trailers-only` and of `x-echo-stream-fail-after` when none is asked for. */
export const UNAVAILABLE = 14;
const INTERNAL = 13;

/**
 * The gRPC status of an HTTP status (gRPC's HTTP-to-status table): 2xx and 3xx are `OK` (no fault),
 * 400 INTERNAL, 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 UNIMPLEMENTED, 429, 502, 503 and 504
 * UNAVAILABLE, any other UNKNOWN.
 */
export function grpcStatusOfHttp(status: number): number {
  if (status < 400) return 0;
  switch (status) {
    case 400:
      return INTERNAL;
    case 401:
      return 16;
    case 403:
      return 7;
    case 404:
      return 12;
    case 429:
    case 502:
    case 503:
    case 504:
      return UNAVAILABLE;
    default:
      return 2;
  }
}

/** One entry of an error list: a gRPC failure, or (from `ECHO_ERROR`) a status. */
export type GrpcErrorEntry =
  | { readonly kind: GrpcErrorKind }
  | { readonly kind: 'status'; readonly code: number; readonly text: string }
  /** `ECHO_ERROR=random`: one of HTTP's random error statuses, drawn per call and mapped. */
  | { readonly kind: 'random' };

/** A source's faults, read and not yet drawn. */
export interface GrpcFaultSpec {
  delay?: FaultSpec['delay'];
  statuses?: WeightedList<number>;
  errors?: WeightedList<GrpcErrorEntry>;
  chaosPercent?: number;
  sizes?: WeightedList<number>;
}

/** Where a fault's control came from: the metadata key, or the variable. */
export interface GrpcControl {
  readonly control: string;
  readonly source: 'metadata' | 'scenario' | 'env';
}

/**
 * How the call ends instead of its normal answer: a status (a status fault, chaos, or an error
 * entry that is a status), or one of the failures of `x-echo-error`.
 */
export type GrpcEnd =
  | (GrpcControl & {
      readonly kind: 'status';
      /** The kind counted in `echo_faults_injected_total`: `status`, `chaos` or `error`. */
      readonly fault: Extract<FaultKind, 'status' | 'chaos' | 'error' | 'scenario'>;
      readonly code: number;
      readonly message: string;
    })
  | (GrpcControl & { readonly kind: 'reset' | 'goaway' | 'drop' })
  | (GrpcControl & { readonly kind: 'trailers-only'; readonly code: number; readonly message: string });

/** The faults of one call, drawn. */
export interface GrpcPlan {
  /** The call's seed (`x-echo-seed`, else the next of `ECHO_SEED`'s sequence), sent back. */
  readonly seed?: number;
  /** `x-echo-session`: whose scenario positions the call uses. */
  readonly session?: string;
  readonly delay?: GrpcControl & { readonly ms: number };
  /** The delay of the scenario response the call takes, added to `delay`. */
  readonly scenarioDelay?: GrpcControl & { readonly ms: number };
  readonly end?: GrpcEnd;
  /** Each answer's payload, in bytes (`x-echo-response-size`). */
  readonly responseBytes?: GrpcControl & { readonly bytes: number };
  /** A streaming answer's `end` comes after this many messages (`x-echo-stream-fail-after`). */
  readonly failAfter?: number;
}

/** What the metadata of a call says, read (not drawn), or the problem of its first bad value. */
export type GrpcMetadataRead =
  | {
      readonly ok: true;
      readonly spec: GrpcFaultSpec;
      readonly statusMessage?: string;
      readonly failAfter?: number;
      readonly seed?: number;
      readonly session?: string;
      /** The key that decided each read field, for the messages and the fault's control. */
      readonly delayKey?: string;
      readonly statusText?: string;
      readonly chaosText?: string;
    }
  | { readonly ok: false; readonly problem: string };

/** The metadata key of each fault field (`x-echo-delay`...). */
const KEY: Readonly<Record<FaultField, string>> = Object.fromEntries(
  FAULT_FIELDS.map((f) => [f.field, f.header]),
) as Record<FaultField, string>;
const ENV: Readonly<Record<FaultField, string>> = Object.fromEntries(
  FAULT_FIELDS.map((f) => [f.field, f.env]),
) as Record<FaultField, string>;
const DELAY_FIELDS = ['delay', 'jitter', 'randomDelay', 'exponential', 'latency'] as const;

const STATUS_FORM = 'a status code 0-16 or its name, such as 14 or UNAVAILABLE';
const ERROR_FORM = `one of ${GRPC_ERROR_KINDS.join(', ')}`;

/** The one text value of `key`, or a problem when it is binary or given more than once. */
function single(metadata: MetadataValues, key: string): { value?: string; problem?: string } {
  const values = metadata[key];
  if (values === undefined || values.length === 0) return {};
  if (values.length > 1) return { problem: `${key}: expected one value, got ${values.length}` };
  const value = values[0];
  return typeof value === 'string' ? { value } : { problem: `${key}: expected a text value` };
}

const bad = (key: string, value: string, message: string) => ({
  ok: false as const,
  problem: `${key}=${JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value)}: ${message}`,
});

/**
 * Reads the faults of a call's metadata against the service's ceilings. The first bad value is the
 * problem (a call has one status to answer with).
 */
export function readGrpcMetadata(metadata: MetadataValues, limits: FaultLimits): GrpcMetadataRead {
  const spec: GrpcFaultSpec = {};
  const faultSpec: FaultSpec = {};
  const read: {
    statusMessage?: string;
    failAfter?: number;
    seed?: number;
    session?: string;
    delayKey?: string;
    statusText?: string;
    chaosText?: string;
  } = {};
  for (const field of [...DELAY_FIELDS, 'chaos', 'size'] as const) {
    const key = KEY[field];
    const { value, problem } = single(metadata, key);
    if (problem !== undefined) return { ok: false, problem };
    if (value === undefined) continue;
    const message = readFault(field, value.trim(), faultSpec, limits);
    if (message !== undefined) return bad(key, value, message);
    if (field === 'chaos') read.chaosText = value.trim();
  }
  if (faultSpec.delay !== undefined) {
    spec.delay = faultSpec.delay;
    read.delayKey = KEY[faultSpec.delay.field];
  }
  if (faultSpec.chaosPercent !== undefined) spec.chaosPercent = faultSpec.chaosPercent;
  if (faultSpec.sizes !== undefined) spec.sizes = faultSpec.sizes;

  const status = single(metadata, 'x-echo-status');
  const message = single(metadata, 'x-echo-status-message');
  const error = single(metadata, 'x-echo-error');
  const failAfter = single(metadata, 'x-echo-stream-fail-after');
  const seed = single(metadata, 'x-echo-seed');
  const session = single(metadata, 'x-echo-session');
  for (const r of [status, message, error, failAfter, seed, session])
    if (r.problem !== undefined) return { ok: false, problem: r.problem };

  if (status.value !== undefined) {
    const parsed = parseWeightedList(status.value, parseGrpcStatus, STATUS_FORM);
    if (!parsed.ok) return bad('x-echo-status', status.value, parsed.message);
    spec.statuses = parsed.list;
    read.statusText = status.value.trim();
  }
  if (message.value !== undefined) {
    if (status.value === undefined && !error.value?.includes('trailers-only'))
      return {
        ok: false,
        problem:
          'x-echo-status-message: given without x-echo-status (or x-echo-error: trailers-only); expected both',
      };
    if (message.value.length > MAX_STATUS_MESSAGE_LENGTH)
      return {
        ok: false,
        problem: `x-echo-status-message: expected at most ${MAX_STATUS_MESSAGE_LENGTH} characters, got ${message.value.length}`,
      };
    read.statusMessage = message.value;
  }
  if (error.value !== undefined) {
    const parsed = parseWeightedList<GrpcErrorEntry>(
      error.value,
      (text) => {
        const kind = text.toLowerCase();
        return (GRPC_ERROR_KINDS as readonly string[]).includes(kind)
          ? { kind: kind as GrpcErrorKind }
          : undefined;
      },
      ERROR_FORM,
    );
    if (!parsed.ok) return bad('x-echo-error', error.value, parsed.message);
    spec.errors = parsed.list;
  }
  if (failAfter.value !== undefined) {
    const text = failAfter.value.trim();
    const n = /^\d{1,5}$/.test(text) ? Number(text) : -1;
    if (n < 0 || n > MAX_STREAM_FAIL_AFTER)
      return bad(
        'x-echo-stream-fail-after',
        failAfter.value,
        `expected a number of messages 0-${MAX_STREAM_FAIL_AFTER}`,
      );
    read.failAfter = n;
  }
  if (seed.value !== undefined) {
    const parsed = parseSeed(seed.value);
    if (parsed === undefined) return bad('x-echo-seed', seed.value, 'expected an integer 0-4294967295');
    read.seed = parsed;
  }
  if (session.value !== undefined) {
    if (!isSessionId(session.value)) return bad('x-echo-session', session.value, `expected ${SESSION_FORM}`);
    read.session = session.value;
  }
  return { ok: true, spec, ...read };
}

/**
 * The environment's defaults as gRPC reads them: `ECHO_DELAY` (and the other delay variables),
 * `ECHO_RESPONSE_SIZE` as they are, `ECHO_CHAOS`'s percentage, `ECHO_STATUS` mapped by
 * {@link grpcStatusOfHttp}, `ECHO_ERROR` by {@link grpcErrorOfHttp}. The other variables shape
 * HTTP bodies and do nothing to a gRPC call.
 */
export function grpcEnvDefaults(faults: FaultSpec | undefined, chaosPercent: number): GrpcFaultSpec {
  const spec: GrpcFaultSpec = {};
  if (chaosPercent > 0) spec.chaosPercent = chaosPercent;
  if (faults === undefined) return spec;
  if (faults.delay !== undefined) spec.delay = faults.delay;
  if (faults.sizes !== undefined) spec.sizes = faults.sizes;
  if (faults.statuses !== undefined)
    spec.statuses = {
      total: faults.statuses.total,
      entries: faults.statuses.entries.map((e) => ({ value: grpcStatusOfHttp(e.value), weight: e.weight })),
    };
  if (faults.errors !== undefined)
    spec.errors = {
      total: faults.errors.total,
      entries: faults.errors.entries.map((e) => ({ value: grpcErrorOfHttp(e.value), weight: e.weight })),
    };
  return spec;
}

/**
 * An `ECHO_ERROR` entry as a gRPC failure: a status (`503`, `unavailable`, `random`) by the status
 * table; `reset` a reset stream; `close` and `slow-close` a GOAWAY; `timeout` and `blackhole` no
 * answer (`drop`); `empty` a Trailers-Only answer; a broken body (`truncate`, `malformed`,
 * `garbage`) INTERNAL, what a client reports of a message it cannot parse.
 */
export function grpcErrorOfHttp(text: string): GrpcErrorEntry {
  const fault = parseErrorFault(text, () => 0);
  switch (fault?.kind) {
    case 'status':
      return fault.name === 'random'
        ? { kind: 'random' }
        : { kind: 'status', code: grpcStatusOfHttp(fault.status), text: text.trim() };
    case 'reset':
      return { kind: 'reset' };
    case 'close':
    case 'slow-close':
      return { kind: 'goaway' };
    case 'timeout':
    case 'blackhole':
      return { kind: 'drop' };
    case 'empty':
      return { kind: 'trailers-only' };
    default:
      return { kind: 'status', code: INTERNAL, text: text.trim() };
  }
}

/**
 * The response of the scenario a call matched, as gRPC reads it: its fault fields (a status of its
 * own, or its HTTP one mapped; its error and size), its delay (added to the call's, as HTTP's), the
 * message of its status, and the metadata and trailers it adds.
 */
export interface GrpcScenarioLayer {
  /** `scenario <label>`: the control its faults are recorded under. */
  readonly control: string;
  readonly spec: GrpcFaultSpec;
  /** The status's message (`grpcMessage`). */
  readonly message?: string;
  /** Its own delay, drawn; added to the metadata's or the environment's. */
  readonly delayMs?: number;
}

/** What {@link drawGrpcPlan} needs. */
export interface GrpcDrawInput {
  readonly random: () => number;
  readonly seed?: number;
  readonly session?: string;
  /** The metadata's reading, for its messages and keys. */
  readonly metadata: Extract<GrpcMetadataRead, { ok: true }>;
  /** The scenario response the call takes, if any: between the metadata and the environment. */
  readonly scenario?: GrpcScenarioLayer;
  /** The environment's defaults ({@link grpcEnvDefaults}). */
  readonly env: GrpcFaultSpec;
  /** `ECHO_MAX_DELAY`. */
  readonly maxDelayMs: number;
}

/** An `ECHO_ERROR=random` status: one of HTTP's random error statuses, mapped. */
const RANDOM_HTTP_STATUSES = [500, 502, 503, 504, 429] as const;

const name = (code: number) => GRPC_STATUS_NAMES[code] ?? 'UNKNOWN';

type Field = keyof GrpcFaultSpec;

/**
 * Draws the call's faults: each field from the metadata, else the scenario's response, else the
 * environment (ADR 0033's order), in the order chaos, error, status, delay, size (one draw each at
 * most, so a seeded call replays). Chaos, an error and a status end the call instead of its
 * answer, the first drawn winning.
 */
export function drawGrpcPlan(input: GrpcDrawInput): GrpcPlan {
  const { random, metadata, env, scenario } = input;
  const plan: {
    seed?: number;
    session?: string;
    delay?: GrpcControl & { ms: number };
    scenarioDelay?: GrpcControl & { ms: number };
    end?: GrpcEnd;
    responseBytes?: GrpcControl & { bytes: number };
    failAfter?: number;
  } = {};
  if (input.seed !== undefined) plan.seed = input.seed;
  if (input.session !== undefined) plan.session = input.session;
  const scenarioControl: GrpcControl | undefined =
    scenario === undefined ? undefined : { control: scenario.control, source: 'scenario' };
  /** The first layer that sets `field`: its value and the control it is recorded under. */
  const pick = <F extends Field>(field: F, key: string, variable: string) => {
    const own = metadata.spec[field];
    if (own !== undefined)
      return { value: own, control: { control: key, source: 'metadata' } as GrpcControl };
    const scripted = scenario?.spec[field];
    if (scripted !== undefined) return { value: scripted, control: scenarioControl as GrpcControl };
    const fallback = env[field];
    return fallback === undefined
      ? undefined
      : { value: fallback, control: { control: variable, source: 'env' } as GrpcControl };
  };

  const chaos = pick('chaosPercent', 'x-echo-chaos', 'ECHO_CHAOS');
  if (chaos !== undefined && chaos.value > 0 && random() * 100 < chaos.value) {
    const code =
      GRPC_CHAOS_CODES[
        Math.min(GRPC_CHAOS_CODES.length - 1, Math.floor(random() * GRPC_CHAOS_CODES.length))
      ]!;
    plan.end = {
      kind: 'status',
      fault: 'chaos',
      code,
      message: `chaos: ${name(code)} drawn by ${chaos.control.control} (${chaos.value}%)`,
      ...chaos.control,
    };
  }

  const errors = pick('errors', 'x-echo-error', ENV.error);
  const error = errors === undefined ? undefined : drawWeighted(errors.value, random);
  if (errors !== undefined && error !== undefined && plan.end === undefined) {
    const control = errors.control;
    if (error.kind === 'status' || error.kind === 'random') {
      const code =
        error.kind === 'status'
          ? error.code
          : grpcStatusOfHttp(RANDOM_HTTP_STATUSES[Math.min(4, Math.floor(random() * 5))]!);
      const text = error.kind === 'status' ? error.text : 'random';
      if (code !== 0)
        plan.end = {
          kind: 'status',
          fault: 'error',
          code,
          message: `${name(code)} asked for by ${control.control}=${text}`,
          ...control,
        };
    } else if (error.kind === 'trailers-only') {
      plan.end = { kind: 'trailers-only', code: UNAVAILABLE, message: '', ...control };
    } else plan.end = { kind: error.kind, ...control };
  }

  const statuses = pick('statuses', 'x-echo-status', ENV.status);
  const status = statuses === undefined ? undefined : drawWeighted(statuses.value, random);
  if (statuses !== undefined && status !== undefined) {
    const control = statuses.control;
    const message =
      (control.source === 'metadata' ? metadata.statusMessage : undefined) ??
      (control.source === 'scenario' ? scenario?.message : undefined) ??
      `${name(status)} asked for by ${control.control}: ${control.source === 'metadata' ? metadata.statusText : name(status)}`;
    // A Trailers-Only answer takes the status, OK too; otherwise OK asks for the normal answer.
    if (plan.end?.kind === 'trailers-only')
      plan.end = { ...plan.end, code: status, message: status === 0 ? '' : message };
    else if (plan.end === undefined && status !== 0)
      // A scenario's status is its answer, counted as the scenario (as HTTP's), not as a status fault.
      plan.end = {
        kind: 'status',
        fault: control.source === 'scenario' ? 'scenario' : 'status',
        code: status,
        message,
        ...control,
      };
  }
  if (plan.end?.kind === 'trailers-only' && metadata.statusMessage !== undefined)
    plan.end = { ...plan.end, message: metadata.statusMessage };
  if (plan.end?.kind === 'trailers-only' && plan.end.message === '' && plan.end.code !== 0)
    plan.end = {
      ...plan.end,
      message: `${name(plan.end.code)}: a Trailers-Only answer asked for by ${plan.end.control}`,
    };

  const delay = pick(
    'delay',
    metadata.delayKey ?? 'x-echo-delay',
    env.delay === undefined ? 'ECHO_DELAY' : ENV[env.delay.field],
  );
  if (delay !== undefined) {
    const ms = Math.min(delay.value.draw(random), input.maxDelayMs);
    if (ms > 0) plan.delay = { ms, ...delay.control };
  }
  // A scenario's own delay adds to the call's (as HTTP's), the sum at most ECHO_MAX_DELAY.
  if (scenario?.delayMs !== undefined && scenario.delayMs > 0 && scenarioControl !== undefined) {
    const ms = Math.min(scenario.delayMs, input.maxDelayMs - (plan.delay?.ms ?? 0));
    if (ms > 0) plan.scenarioDelay = { ms, ...scenarioControl };
  }

  const sizes = pick('sizes', 'x-echo-response-size', ENV.size);
  const bytes = sizes === undefined ? undefined : drawWeighted(sizes.value, random);
  if (sizes !== undefined && bytes !== undefined) plan.responseBytes = { bytes, ...sizes.control };

  if (metadata.failAfter !== undefined) {
    plan.failAfter = metadata.failAfter;
    plan.end ??= {
      kind: 'status',
      fault: 'status',
      code: UNAVAILABLE,
      message: `UNAVAILABLE asked for by x-echo-stream-fail-after: ${metadata.failAfter}`,
      control: 'x-echo-stream-fail-after',
      source: 'metadata',
    };
  }
  return plan;
}

/** The kind of `echo_faults_injected_total` an end counts as (HTTP's kin of each failure). */
export function faultKindOf(end: GrpcEnd): FaultKind {
  switch (end.kind) {
    case 'status':
      return end.fault;
    case 'reset':
      return 'reset';
    case 'goaway':
      return 'close';
    case 'drop':
      return 'blackhole';
    case 'trailers-only':
      return 'empty';
  }
}
