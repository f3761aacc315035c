/**
 * The control catalogue (issue #36): every control a client sends, once. Each entry is an HTTP
 * control header (as the docs spell it: `X-Echo-Delay`), what it does and the form it takes, and,
 * for those a gRPC call reads too, its metadata key and, where they differ, what it does to a call
 * and the form it takes there; two entries are metadata keys alone. scripts/readme-tables.ts
 * renders from it the header table of docs/service/control-headers.md and the metadata table of
 * docs/service/grpc.md, so the two cannot drift apart (test/readme.integration.test.ts proves the
 * pages fresh; test/echo/control-catalogue.test.ts holds it to the HTTP parser and to the keys of
 * `GRPC_METADATA_KEYS`, whose order the metadata table keeps). Data: no import from the parsers it describes.
 */
import assert from 'node:assert/strict';
import { GRPC_METADATA_KEYS } from './grpc/metadata.ts';

/** How a gRPC call reads a control: its key and, where they differ from the header's, what it does and takes. */
export interface GrpcReading {
  /** The metadata key, lower case: `x-echo-delay`. */
  readonly key: string;
  /** What it does to a call; absent: what the header does. */
  readonly what?: string;
  /** The form it takes; absent: the header's. */
  readonly form?: string;
}

/** A control header: a row of the header table, and of the metadata table when `grpc` is set. */
export interface HeaderControl {
  /** The header as the docs spell it: `X-Echo-Delay`, `X-Echo-Set-Header-<Name>`. */
  readonly header: string;
  /** What it does over HTTP. */
  readonly what: string;
  /** The form it takes over HTTP. */
  readonly form: string;
  readonly grpc?: GrpcReading;
}

/** A metadata key with no header of its name (`x-echo-status-message`). */
export interface MetadataControl {
  readonly header?: undefined;
  readonly grpc: Required<GrpcReading>;
}

export type Control = HeaderControl | MetadataControl;

/** The statuses a chaos draw of a gRPC call picks from (`GRPC_CHAOS_CODES` of src/echo/grpc/faults.ts). */
const CHAOS_STATUSES =
  '`UNAVAILABLE`, `INTERNAL`, `DEADLINE_EXCEEDED`, `RESOURCE_EXHAUSTED`, `ABORTED`, `UNKNOWN`';

/** Every control, in the order of the header table (a metadata key alone beside its kin). */
export const CONTROLS: readonly Control[] = [
  {
    header: 'X-Echo-Delay',
    what: 'fixed delay',
    form: 'a duration: `250ms`, `1.5s`, `2m`, or a bare number of ms; or a weighted list `100ms:90,2s:10` (see [Distributions and seeds](#distributions-and-seeds))',
    grpc: { key: 'x-echo-delay' },
  },
  {
    header: 'X-Echo-Jitter',
    what: 'delay of base ± jitter (uniform)',
    form: '`base,jitter` in ms, e.g. `200,50`',
    grpc: { key: 'x-echo-jitter' },
  },
  {
    header: 'X-Echo-Random-Delay',
    what: 'delay drawn uniformly from a range',
    form: '`min,max` in ms, e.g. `100,500`',
    grpc: { key: 'x-echo-random-delay' },
  },
  {
    header: 'X-Echo-Exponential',
    what: 'backoff delay `base * 2^(attempt-1)` ± 25%',
    form: '`base_ms,attempt`, attempt 1-32',
    grpc: { key: 'x-echo-exponential' },
  },
  {
    header: 'X-Echo-Latency',
    what: 'fixed, ranged or distributed latency',
    form: 'a duration; `min-max` with a unit: `100-500ms`; a weighted list `100ms:90,1-2s:10`; `lognormal:<median>,<sigma>` (sigma above 0, at most 5; draws capped at `ECHO_MAX_DELAY`)',
    grpc: { key: 'x-echo-latency' },
  },
  {
    header: 'X-Echo-Status',
    what: 'response status',
    form: '100-599; a 1xx is sent as an interim response before a 200; 101 is refused; or a weighted list `503:10,500:5` (the rest: status unchanged). A 408, however it is asked for (here, `X-Echo-Error`, chaos, a scenario), says `Connection: close` and closes the connection over HTTP/1.1, as servers do (RFC 9110)',
    grpc: {
      key: 'x-echo-status',
      what: 'the call ends with this status (`OK`: the normal answer), after the delay',
      form: 'a gRPC status code 0-16 or its name, any case (`14`, `UNAVAILABLE`); or a weighted list `UNAVAILABLE:30,OK:70` (the rest: the normal answer)',
    },
  },
  {
    grpc: {
      key: 'x-echo-status-message',
      what: 'the message of the status of `x-echo-status` (default: one naming what asked for it)',
      form: 'text of at most 1024 characters; only with `x-echo-status` (or `x-echo-error: trailers-only`)',
    },
  },
  {
    header: 'X-Echo-Error',
    what: 'simulate a failure',
    form: 'a status 400-599; `internal` 500, `bad-gateway` 502, `unavailable` 503, `gateway-timeout` 504, `rate-limit` 429 (with `Retry-After`); `random` (one of 500, 502, 503, 504, 429); `timeout` (hold until `ECHO_ERROR_TIMEOUT` or the client leaves, then 504); `reset` (TCP reset); `close` (close the connection without a response); broken bodies `empty`, `truncate`, `malformed`, `garbage` (see [Slow and broken bodies](../faults/bodies.md)); connection faults `slow-close` (the usual answer, then the connection stays open `ECHO_ERROR_TIMEOUT` before it closes) and `blackhole` (the request is read, nothing is ever sent; the connection closes after `ECHO_REQUEST_TIMEOUT` or when the client leaves; see [Connection faults](../faults/error.md#connection-faults-slow-close-and-blackhole)); or a weighted list of these `503:10,reset:5` (the rest: no error)',
    grpc: {
      key: 'x-echo-error',
      what: "simulate a failure: `reset` (the stream is reset: `RST_STREAM`), `goaway` (the connection gets `GOAWAY` and closes), `drop` (no answer until the client's deadline, or `ECHO_REQUEST_TIMEOUT` when it set none), `trailers-only` (the call ends with a Trailers-Only response: no headers, no message; the status of `x-echo-status`, else `UNAVAILABLE`)",
      form: '`reset`, `goaway`, `drop` or `trailers-only`; or a weighted list of these `reset:5,drop:5` (the rest: no error)',
    },
  },
  {
    header: 'X-Echo-Chaos',
    what: 'random failure percentage',
    form: 'integer 0-100',
    grpc: {
      key: 'x-echo-chaos',
      what: `percentage of calls that end in a status drawn from ${CHAOS_STATUSES}`,
    },
  },
  {
    header: 'X-Echo-Response-Size',
    what: 'respond with N random bytes',
    form: 'integer bytes, at most `ECHO_MAX_RESPONSE_SIZE`; or a weighted list `1024:50,1048576:10` (the rest: the usual echo)',
    grpc: {
      key: 'x-echo-response-size',
      what: "each answer message's payload is this many bytes",
      form: 'integer bytes, at most `ECHO_MAX_RESPONSE_SIZE`; or a weighted list `1024:50,1048576:10` (the rest: the usual payload)',
    },
  },
  {
    grpc: {
      key: 'x-echo-stream-fail-after',
      what: 'a streaming answer (`ServerStream`, `BidiStream`) fails after N messages with the status of `x-echo-status` (or the failure of `x-echo-error`), else `UNAVAILABLE`; refused on `Echo` and `ClientStream`',
      form: 'integer N, 0-10000',
    },
  },
  {
    header: 'X-Echo-Seed',
    what: 'every random choice of the request (chaos, lists, jitter, `random`, generated bytes) is a function of the seed; the response carries `X-Echo-Seed`',
    form: 'integer 0-4294967295',
    grpc: {
      key: 'x-echo-seed',
      what: "every random choice of the call (chaos, lists, jitter) is a function of the seed; the answer's initial metadata carries `x-echo-seed`",
    },
  },
  {
    header: 'X-Echo-Session',
    what: 'the scenario session: its own position in every scenario and its own `times`, apart from other sessions and from requests without one (see [Scenarios](../scenarios.md))',
    form: "1-128 letters, digits and `` !#$%&'*+-.^_`|~ ``",
    grpc: { key: 'x-echo-session' },
  },
  {
    header: 'X-Echo-Compress',
    what: 'compress the response (streaming), sets `Content-Encoding` and `Vary`',
    form: "`gzip`, `br` (quality 4: brotli's default 11 runs at about 2 MB/s of CPU) or `deflate`",
  },
  {
    header: 'X-Echo-Throttle',
    what: "cap the body's bandwidth (bytes on the wire, after compression)",
    form: 'a rate of at least `1B/s`: `500B/s`, `10KB/s`, `1MB/s` (KB = 1000 bytes; `KiB/s`, `MiB/s` for 1024)',
  },
  {
    header: 'X-Echo-Chunk-Delay',
    what: 'wait between chunks of the body',
    form: 'a duration, at most `ECHO_MAX_DELAY`',
  },
  {
    header: 'X-Echo-Chunk-Size',
    what: 'the chunk size of `X-Echo-Chunk-Delay` (alone: cut the body into chunks, no delay)',
    form: 'integer bytes 1-1048576; default 16384',
  },
  {
    header: 'X-Echo-Body-Delay',
    what: 'send the headers, wait, then the body (`X-Echo-Delay` waits before the headers)',
    form: 'a duration, at most `ECHO_MAX_DELAY`',
  },
  {
    header: 'X-Echo-Retry-After',
    what: "the answer's `Retry-After`, whatever its status. Without it every 429 and 503 the echo answers on purpose (`X-Echo-Error`, `X-Echo-Status`, chaos, a scenario that sets none) says `Retry-After: 1`",
    form: 'whole seconds 0-86400 or an HTTP date (`Wed, 21 Oct 2026 07:28:00 GMT`)',
  },
  { header: 'X-Echo-Content-Type', what: 'override the response `Content-Type`', form: 'a media type' },
  {
    header: 'X-Echo-Set-Header-<Name>',
    what: 'set response header `<Name>` (dash-cased: `x-echo-set-header-cache-control` sets `Cache-Control`)',
    form: 'any value; framing headers (`Content-Length`, `Transfer-Encoding`, `Connection`, …) are refused',
  },
  {
    header: 'X-Echo-Headers',
    what: 'echo the listed request headers back as `X-Echoed-<Name>`',
    form: 'comma-separated names, at most 64',
  },
  {
    header: 'X-Echo-Server-Info',
    what: 'add `X-Echo-Server` (host name), `X-Echo-Version`, `X-Echo-Uptime`',
    form: '`true` or `false` (default `ECHO_SERVER_INFO`)',
  },
  {
    header: 'X-Echo-History-Enabled',
    what: '`false` keeps this request out of history',
    form: '`true` or `false`',
  },
  {
    header: 'X-Echo-Explain',
    what: 'list every applied fault, its control, source and drawn value in the JSON header `X-Echo-Applied`',
    form: '`true` or `false`',
  },
  {
    header: 'X-Request-ID',
    what: 'correlation id, kept and returned; generated when absent',
    form: 'any string',
    grpc: {
      key: 'x-request-id',
      what: "the call's request id, echoed in the answer's initial metadata (and its `request_id`); a new UUID otherwise",
      form: '1-128 visible ASCII characters',
    },
  },
];

/** The page of the header table, relative to docs/service/grpc.md (both are in docs/service/). */
const HEADER_PAGE = 'control-headers.md';
/** A header's text on the metadata table: its links to anchors of its own page point to that page. */
const relink = (text: string) => text.replaceAll('](#', `](${HEADER_PAGE}#`);

/** One row of a rendered table, its cells as markdown (not yet escaped for a table). */
export interface Row {
  readonly name: string;
  readonly what: string;
  readonly form: string;
}

/** The rows of the header table: every control with a header, in catalogue order. */
export function headerRows(): Row[] {
  return CONTROLS.flatMap((c) =>
    c.header === undefined ? [] : [{ name: c.header, what: c.what, form: c.form }],
  );
}

/**
 * The rows of the metadata table, in the order of `GRPC_METADATA_KEYS` (the keys the gRPC service reads): a key's own meaning and form, else
 * its header's (a link to an anchor of the header page made to point there). Throws when a key of
 * the catalogue is not in the order or is there twice, or a key of the order not in the catalogue.
 */
export function metadataRows(): Row[] {
  const byKey = new Map<string, Control>();
  for (const c of CONTROLS) {
    if (c.grpc === undefined) continue;
    assert.ok(!byKey.has(c.grpc.key), `metadata key ${c.grpc.key} is in CONTROLS twice`);
    byKey.set(c.grpc.key, c);
  }
  const unlisted = [...byKey.keys()].filter(
    (key) => !(GRPC_METADATA_KEYS as readonly string[]).includes(key),
  );
  assert.equal(
    unlisted.length,
    0,
    `metadata keys the gRPC service does not read (GRPC_METADATA_KEYS): ${unlisted.join(', ')}`,
  );
  return GRPC_METADATA_KEYS.map((key) => {
    const c = byKey.get(key);
    assert.ok(c !== undefined, `${key} of GRPC_METADATA_KEYS has no entry in CONTROLS`);
    if (c.header === undefined) return { name: key, what: c.grpc.what, form: c.grpc.form };
    return { name: key, what: c.grpc?.what ?? relink(c.what), form: c.grpc?.form ?? relink(c.form) };
  });
}
