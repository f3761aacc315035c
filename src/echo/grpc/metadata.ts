/**
 * The plain parts of a gRPC call's metadata, read without grpc-js (it sees the metadata as a plain
 * map of values): the status names and codes, the keys the service reads, the request id, and the
 * map the answer echoes. The faults are read and drawn by faults.ts. */
import { randomUUID } from 'node:crypto';

/** A call's metadata as grpc-js's `Metadata.getMap()` holds it... but every value of each key. */
export type MetadataValues = Readonly<Record<string, ReadonlyArray<string | Buffer>>>;

/** The status codes and their names: the scenario module's (`grpcStatus` reads them the same way). */
export { GRPC_STATUS_NAMES, parseGrpcStatus } from '../../scenario/index.ts';

/** `INVALID_ARGUMENT`: what a bad value of the metadata or the request ends in. */
export const INVALID_ARGUMENT = 3;
/** `RESOURCE_EXHAUSTED`: what a client stream past its bound ends in. */
export const RESOURCE_EXHAUSTED = 8;

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

/** Longest request id taken from `x-request-id`. */
export const MAX_REQUEST_ID_LENGTH = 128;

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

/** grpc-js's peer (`127.0.0.1:51234`, `[::1]:51234`) as its address and port; the text as it is otherwise. */
export function peerOf(peer: string): { readonly address: string; readonly port?: number } {
  const found = /^\[([^\]]+)\]:(\d+)$/.exec(peer) ?? /^([^:]+):(\d+)$/.exec(peer);
  return found === null ? { address: peer } : { address: found[1] as string, port: Number(found[2]) };
}
