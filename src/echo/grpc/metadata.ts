/**
 * What a gRPC call's metadata asks for, read without grpc-js (it sees the metadata as a plain map of
 * values): the faults of the first slice of issue #36 (`x-echo-delay`, `x-echo-status`,
 * `x-echo-status-message`), the request id, and the map the answer echoes. Each fault is read by
 * the one parser of its header (`src/scenario/faults.ts`), so `x-echo-delay: 100ms-300ms` means
 * what `X-Echo-Delay` means. A bad value is a problem naming the key: the call's `INVALID_ARGUMENT`.
 */
import { randomUUID } from 'node:crypto';
import { type FaultLimits, type FaultSpec, readFault } from '../../scenario/faults.ts';

/** A call's metadata as grpc-js's `Metadata.getMap()` holds it... but every value of each key. */
export type MetadataValues = Readonly<Record<string, ReadonlyArray<string | Buffer>>>;

/** The status codes of gRPC, by number (`grpc.status` of grpc-js, without importing it). */
export const GRPC_STATUS_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
] as const;

/** `INVALID_ARGUMENT`: what a bad value of the metadata or the request ends in. */
export const INVALID_ARGUMENT = 3;
/** `RESOURCE_EXHAUSTED`: what a client stream past its bound ends in. */
export const RESOURCE_EXHAUSTED = 8;

/** The metadata keys this slice reads. */
export const GRPC_FAULT_KEYS = {
  delay: 'x-echo-delay',
  status: 'x-echo-status',
  statusMessage: 'x-echo-status-message',
} as const;

/**
 * Every metadata key a call of the echo service reads (issue #36 item 3), in the order the metadata
 * table of docs/service/grpc.md lists them. The delay keys take every form of their headers.
 */
export const GRPC_METADATA_KEYS = [
  'x-echo-delay',
  'x-echo-jitter',
  'x-echo-random-delay',
  'x-echo-exponential',
  'x-echo-latency',
  'x-echo-status',
  'x-echo-status-message',
  'x-echo-chaos',
  'x-echo-error',
  'x-echo-response-size',
  'x-echo-stream-fail-after',
  'x-echo-seed',
  'x-echo-session',
  'x-request-id',
] as const;

/** Longest `x-echo-status-message`, in characters. */
export const MAX_STATUS_MESSAGE_LENGTH = 1024;
/** Longest request id taken from `x-request-id`. */
export const MAX_REQUEST_ID_LENGTH = 128;

/** The faults of one call, drawn. Absent: not asked for. */
export interface GrpcFaults {
  readonly delayMs?: number;
  /** The status to end the call with (never 0: `OK` asks for the normal answer). */
  readonly status?: number;
  /** The status's message: `x-echo-status-message`, or one saying what asked for it. */
  readonly statusMessage?: string;
}

export type GrpcFaultsRead =
  | { readonly ok: true; readonly faults: GrpcFaults }
  | { readonly ok: false; readonly problem: string };

/** A status as `x-echo-status` takes it: a code 0-16 or its name (any case), else undefined. */
export function parseGrpcStatus(text: string): number | undefined {
  const value = text.trim();
  if (/^\d{1,2}$/.test(value)) {
    const code = Number(value);
    return code < GRPC_STATUS_NAMES.length ? code : undefined;
  }
  const index = (GRPC_STATUS_NAMES as readonly string[]).indexOf(value.toUpperCase());
  return index === -1 ? undefined : index;
}

/** The one text value of `key`, or a problem when it is binary or given more than once. */
function single(metadata: MetadataValues, key: string): { value?: string; problem?: string } {
  const values = metadata[key];
  if (values === undefined || values.length === 0) return {};
  if (values.length > 1) return { problem: `${key}: expected one value, got ${values.length}` };
  const value = values[0];
  return typeof value === 'string' ? { value } : { problem: `${key}: expected a text value` };
}

/**
 * Reads the faults of `metadata` against the service's ceilings, drawing the delay with `random`.
 * The first bad value is the problem (a call has one status to answer with).
 */
export function readGrpcFaults(
  metadata: MetadataValues,
  limits: FaultLimits,
  random: () => number,
): GrpcFaultsRead {
  const delay = single(metadata, GRPC_FAULT_KEYS.delay);
  const status = single(metadata, GRPC_FAULT_KEYS.status);
  const message = single(metadata, GRPC_FAULT_KEYS.statusMessage);
  for (const read of [delay, status, message])
    if (read.problem !== undefined) return { ok: false, problem: read.problem };
  const faults: { delayMs?: number; status?: number; statusMessage?: string } = {};
  if (delay.value !== undefined) {
    const spec: FaultSpec = {};
    const problem = readFault('delay', delay.value.trim(), spec, limits);
    if (problem !== undefined)
      return { ok: false, problem: `${GRPC_FAULT_KEYS.delay}=${JSON.stringify(delay.value)}: ${problem}` };
    if (spec.delay !== undefined) faults.delayMs = spec.delay.draw(random);
  }
  if (status.value !== undefined) {
    const code = parseGrpcStatus(status.value);
    if (code === undefined)
      return {
        ok: false,
        problem: `${GRPC_FAULT_KEYS.status}=${JSON.stringify(status.value)}: expected a status code 0-16 or its name, such as 14 or UNAVAILABLE`,
      };
    if (code !== 0) faults.status = code;
  }
  if (message.value !== undefined) {
    if (status.value === undefined)
      return {
        ok: false,
        problem: `${GRPC_FAULT_KEYS.statusMessage}: given without ${GRPC_FAULT_KEYS.status}; expected both`,
      };
    if (message.value.length > MAX_STATUS_MESSAGE_LENGTH)
      return {
        ok: false,
        problem: `${GRPC_FAULT_KEYS.statusMessage}: expected at most ${MAX_STATUS_MESSAGE_LENGTH} characters, got ${message.value.length}`,
      };
  }
  if (faults.status !== undefined)
    faults.statusMessage =
      message.value ??
      `${GRPC_STATUS_NAMES[faults.status]} asked for by ${GRPC_FAULT_KEYS.status}: ${status.value?.trim()}`;
  return { ok: true, faults };
}

/** The call's request id: its `x-request-id` when acceptable (1-128 visible ASCII characters), else a new UUID. */
export function requestIdOf(metadata: MetadataValues): string {
  const given = metadata['x-request-id'];
  const value = given?.length === 1 ? given[0] : undefined;
  return typeof value === 'string' && value.length <= MAX_REQUEST_ID_LENGTH && /^[\x21-\x7e]+$/.test(value)
    ? value
    : randomUUID();
}

/** The metadata as the answer echoes it: values of one key joined with ", ", binary ones in base64. */
export function echoedMetadata(metadata: MetadataValues): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, values] of Object.entries(metadata)) {
    out[key] = values
      .map((value) => (typeof value === 'string' ? value : Buffer.from(value).toString('base64')))
      .join(', ');
  }
  return out;
}
