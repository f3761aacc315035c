/**
 * The gRPC answer a scenario response may script (issue #36 item 4): `grpcStatus`, `grpcMessage`,
 * `grpcMetadata` and `grpcTrailers`, with the status names, their forms and bounds, and the
 * ready-to-send form a step carries. A response may carry HTTP fields and gRPC fields together: an
 * HTTP request uses the HTTP ones, a gRPC call the gRPC ones. Metadata keys and values follow the
 * gRPC over HTTP/2 specification (PROTOCOL-HTTP2.md), so grpc-js's `Metadata` takes every one.
 */

/** The gRPC status codes by number, 0 (`OK`) to 16 (`UNAUTHENTICATED`): grpc-js's `status` enum. */
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

/** The name of a gRPC status code. */
export type GrpcStatusName = (typeof GRPC_STATUS_NAMES)[number];

/** `OK`: the call succeeds; it carries no status message. */
export const GRPC_STATUS_OK = 0;
/** Highest gRPC status code, 16 (`UNAUTHENTICATED`). */
export const MAX_GRPC_STATUS = GRPC_STATUS_NAMES.length - 1;
/** Longest `grpcStatus` text, in characters: the longest name (`FAILED_PRECONDITION`, 19). */
export const MAX_GRPC_STATUS_LENGTH = Math.max(...GRPC_STATUS_NAMES.map((name) => name.length));

/** Every letter in either case, as a class: `Ok` → `[Oo][Kk]` (RE2 and ECMAScript alike, no flags). */
function caseless(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `[${letter}${letter.toLowerCase()}]`);
}

/**
 * A `grpcStatus` given as text: a code 0-16 in one or two digits (`14`, `05`), or a status name in
 * any case (`UNAVAILABLE`, `unavailable`); what {@link parseGrpcStatus} reads, without spaces.
 * Exact, so the CRD refuses what the service refuses.
 */
export const GRPC_STATUS_PATTERN = `^(?:0?[0-9]|1[0-6]|${GRPC_STATUS_NAMES.map(caseless).join('|')})$`;

/** The forms of a `grpcStatus`, for messages. */
export const GRPC_STATUS_FORM = `a gRPC status code 0-${MAX_GRPC_STATUS} or its name in any case (${GRPC_STATUS_NAMES.join(', ')})`;

/**
 * A gRPC status as a scenario (a number or text) or a control key (text) gives it: an integer
 * 0-16, or text holding a code of one or two digits or a name in any case, spaces around it
 * ignored.
 * @returns the code, 0-16, or `undefined` when `value` is none of those.
 */
export function parseGrpcStatus(value: number | string): number | undefined {
  if (typeof value === 'number') {
    return Number.isInteger(value) && value >= 0 && value <= MAX_GRPC_STATUS ? value : undefined;
  }
  const text = value.trim();
  if (/^\d{1,2}$/.test(text)) {
    const code = Number(text);
    return code <= MAX_GRPC_STATUS ? code : undefined;
  }
  const index = (GRPC_STATUS_NAMES as readonly string[]).indexOf(text.toUpperCase());
  return index === -1 ? undefined : index;
}

/**
 * Longest `grpcMessage`, in characters (the status message of `x-echo-status-message` has the
 * same bound): 1 KiB of text explains a status; grpc-js percent-encodes it on the wire.
 */
export const MAX_GRPC_MESSAGE_LENGTH = 1024;
/** Most entries in one response's `grpcMetadata`, and apart in its `grpcTrailers`. */
export const MAX_GRPC_METADATA = 64;
/** Longest metadata key, in characters (a header name's bound). */
export const MAX_GRPC_METADATA_KEY_LENGTH = 256;
/**
 * Longest metadata value, in characters (a header value's bound): 8 KiB. Clients bound the
 * metadata they take in all (gRPC C-core, so grpcio, at 8 KiB by default), which a scenario may
 * well want to test.
 */
export const MAX_GRPC_METADATA_VALUE_LENGTH = 8192;

/** A metadata key: lower-case letters, digits, `_`, `.` and `-` (PROTOCOL-HTTP2.md's Header-Name). */
export const GRPC_METADATA_KEY_PATTERN = '^[0-9a-z_.-]+$';
/** A metadata value: printable ASCII, space to `~` (PROTOCOL-HTTP2.md's ASCII-Value; grpc-js's check). */
export const GRPC_METADATA_VALUE_PATTERN = '^[ -~]*$';
/** A key ending so carries binary data: its value in a scenario is base64 text. */
export const GRPC_BINARY_SUFFIX = '-bin';
/** The prefix gRPC reserves for its own keys (`grpc-status`, `grpc-message`, `grpc-timeout`, ...). */
export const GRPC_RESERVED_PREFIX = 'grpc-';
/**
 * Keys no scenario may add besides the `grpc-` ones, in lower case: those the gRPC specification
 * gives the transport (`content-type`, `te`, `user-agent`), and those that frame the message or are
 * connection-specific, which HTTP/2 forbids (RFC 9113 8.2.2; the HTTP `headers`' own rule,
 * `UNSETTABLE_HEADERS`).
 */
export const GRPC_RESERVED_METADATA_KEYS: ReadonlySet<string> = new Set([
  'connection',
  'content-length',
  'content-type',
  'http2-settings',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'user-agent',
]);

const KEY = new RegExp(GRPC_METADATA_KEY_PATTERN);
/** Base64 (RFC 4648 section 4), padded or not: gRPC takes both. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/;

/**
 * What is wrong with a metadata key, or `undefined` when a scenario may add it.
 * @param quoted the key as the message shows it.
 * @param what what the key is a key of, for the message: `metadata` or `trailer`.
 */
export function grpcMetadataKeyProblem(
  key: string,
  quoted: string,
  what: 'metadata' | 'trailer',
): string | undefined {
  if (key.length > MAX_GRPC_METADATA_KEY_LENGTH) {
    return `${what} key must be at most ${MAX_GRPC_METADATA_KEY_LENGTH} characters, got ${key.length} characters`;
  }
  if (!KEY.test(key)) {
    return KEY.test(key.toLowerCase())
      ? `${what} key must be lower-case, got ${quoted} (write ${JSON.stringify(key.toLowerCase())})`
      : `${what} key must be 1 or more of a-z, 0-9, "_", "." and "-", got ${quoted}`;
  }
  if (key.startsWith(GRPC_RESERVED_PREFIX)) {
    return `${what} key ${quoted} is reserved: keys starting with grpc- are gRPC's own (the status goes in grpcStatus and grpcMessage)`;
  }
  if (GRPC_RESERVED_METADATA_KEYS.has(key)) {
    return `${what} key ${quoted} is reserved: the server sets it (HTTP/2 and gRPC framing)`;
  }
  return undefined;
}

/**
 * What is wrong with a metadata value beyond its form (printable ASCII, bounded: the schema's), or
 * `undefined`: under a key ending in `-bin`, it must be base64 text.
 */
export function grpcMetadataValueProblem(key: string, value: string): string | undefined {
  if (key.endsWith(GRPC_BINARY_SUFFIX) && !BASE64.test(value)) {
    return `must be base64 text (A-Z, a-z, 0-9, + and /, padded with = or not): a key ending in ${GRPC_BINARY_SUFFIX} carries binary data`;
  }
  return undefined;
}

/** A metadata value ready for grpc-js's `Metadata`: a `Buffer` under a `-bin` key, else a string. */
export type GrpcMetadataValue = string | Buffer;

const NO_METADATA: Readonly<Record<string, GrpcMetadataValue>> = Object.freeze({});

/**
 * A validated `grpcMetadata` or `grpcTrailers` map, ready to send: `-bin` values decoded from
 * base64 to a `Buffer`, the others as they are; frozen, empty when `map` is `undefined`. The
 * buffers are shared by every call the step answers: read them, never write them.
 */
export function toGrpcMetadata(
  map: Readonly<Record<string, string>> | undefined,
): Readonly<Record<string, GrpcMetadataValue>> {
  if (map === undefined) return NO_METADATA;
  return Object.freeze(
    Object.fromEntries(
      Object.entries(map).map(([key, value]) => [
        key,
        key.endsWith(GRPC_BINARY_SUFFIX) ? Buffer.from(value, 'base64') : value,
      ]),
    ),
  );
}
