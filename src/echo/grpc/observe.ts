/**
 * The gRPC calls' meters (issue #36 item 6, docs/adr/0050-grpc.md): a grpc-js server interceptor
 * that counts every call once, when it ends, in `echo_grpc_requests_total{method,code}` and
 * `echo_grpc_request_duration_seconds{method}`. A call ends in one of three ways, and each one
 * reaches the interceptor's `onCancel` exactly once (grpc-js calls it after the status went out,
 * and when the stream closes without one): the status the handlers sent (OK, a status fault,
 * INVALID_ARGUMENT...), the deadline (grpc-js's own timer sends DEADLINE_EXCEEDED beside the
 * interceptors, so a call with no status sent whose deadline passed is DEADLINE_EXCEEDED), or the
 * client going first (CANCELLED). A client resets its call when its own deadline passes, which
 * reaches the server about when the server's copy of the deadline does (sent as a rounded-up
 * timeout, so a little later): a call that ends without a status within
 * {@link DEADLINE_SLACK_MS} of its deadline ended because of it.
 */

import {
  type Deadline,
  type Metadata,
  ResponderBuilder,
  ServerInterceptingCall,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  ServerListenerBuilder,
  status,
} from '@grpc/grpc-js';
import {
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
} from '@opentelemetry/api';
import { peerOf } from './metadata.ts';

const tracer = trace.getTracer('echo-chaos.grpc');

/** Reads a call's metadata for the propagators (`traceparent`, `tracestate`, `baggage`). */
const METADATA_GETTER: TextMapGetter<Metadata> = {
  keys: (metadata) => Object.keys(metadata.getMap()),
  get: (metadata, key) => {
    const values = metadata.get(key).filter((v): v is string => typeof v === 'string');
    return values.length === 0 ? undefined : values.length === 1 ? values[0] : values;
  },
};

/**
 * The statuses that mark a server span as an error, by the OpenTelemetry gRPC conventions: the
 * server's own failures (UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS);
 * a status the client caused (INVALID_ARGUMENT, NOT_FOUND...) leaves the span unset.
 */
export const SERVER_ERROR_CODES: ReadonlySet<number> = new Set([2, 4, 12, 13, 14, 15]);

/**
 * A SERVER span of a call, as the OpenTelemetry RPC conventions name it (`<service>/<method>`, with
 * `rpc.system`, `rpc.service`, `rpc.method` and the peer), a child of the trace its metadata carries.
 * Without the SDK (no `OTEL_*`) the API's tracer is a no-op and this costs next to nothing.
 */
function startSpan(path: string, metadata: Metadata, peer: string): Span {
  const [service = '', method = ''] = path.replace(/^\//, '').split('/');
  const parent = propagation.extract(ROOT_CONTEXT, metadata, METADATA_GETTER);
  const { address, port } = peerOf(peer);
  return tracer.startSpan(
    `${service}/${method}`,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'rpc.system': 'grpc',
        'rpc.service': service,
        'rpc.method': method,
        'network.peer.address': address,
        ...(port === undefined ? {} : { 'network.peer.port': port }),
      },
    },
    parent,
  );
}

/** Ends a call's span with its status code (`rpc.grpc.status_code`), an error for the server's failures. */
function endSpan(span: Span, code: number): void {
  span.setAttribute('rpc.grpc.status_code', code);
  if (SERVER_ERROR_CODES.has(code)) span.setStatus({ code: SpanStatusCode.ERROR, message: statusName(code) });
  span.end();
}

/** The method label of a path outside the known set. */
export const OTHER_METHOD = 'other';

/** The reflection methods (`@grpc/reflection` serves both versions). */
export const REFLECTION_METHODS = [
  '/grpc.reflection.v1.ServerReflection/ServerReflectionInfo',
  '/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo',
] as const;

/** How close to its deadline a call the client reset counts as DEADLINE_EXCEEDED, not CANCELLED. */
export const DEADLINE_SLACK_MS = 50;

/** Where the interceptor records a call. */
export interface GrpcCallMeters {
  grpcCallEnded(method: string, code: string, seconds: number): void;
  /** Registers the meters before any call, so a scrape shows them from the start. */
  registerGrpcMeters?(): void;
}

/**
 * Whether the call's HTTP/2 stream was reset (the client cancelled, or its deadline passed on its
 * side) rather than closed after the status: then whatever status a handler sent never left (a
 * handler may answer a call the client has just reset: grpc-js tells it on a later tick, and sends
 * a status after messages only once the stream asks for its trailers). grpc-js's own call, the next
 * in the chain, holds the stream (1.14), outside its typed API; without it the status sent is trusted.
 */
function resetFirst(call: ServerInterceptingCallInterface): boolean {
  const stream = streamOf(call);
  return typeof stream?.rstCode === 'number' && stream.rstCode !== 0;
}

/** The HTTP/2 stream grpc-js's own call holds (see {@link resetFirst}), or undefined. */
function streamOf(call: ServerInterceptingCallInterface): { readonly rstCode?: unknown } | undefined {
  return (call as unknown as { readonly stream?: { readonly rstCode?: unknown } }).stream;
}

/**
 * The status a client sees of a call the echo service ended itself without a status: a reset
 * stream (`INTERNAL`, "Received RST_STREAM") or a GOAWAY (`UNAVAILABLE`), by the call's HTTP/2
 * stream. Without it, a stream reset is the client's leaving (`CANCELLED`).
 */
const injectedEnds = new WeakMap<object, number>();

/** Records that the echo service ended the call on `stream` itself, as its client sees it: `code`. */
export function injectedEnd(stream: object | undefined, code: number): void {
  if (stream !== undefined) injectedEnds.set(stream, code);
}

/** Told of each call's end, with its HTTP/2 stream (history.ts finds the call's entry by it). */
export type CallEnded = (stream: object | undefined, code: number, seconds: number) => void;

function deadlineMs(deadline: Deadline): number {
  return deadline instanceof Date ? deadline.getTime() : deadline;
}

/** The name of a status code (`UNAVAILABLE`), `UNKNOWN` for a number outside 0-16. */
export function statusName(code: number): string {
  const name = (status as unknown as Record<number, string | undefined>)[code];
  return typeof name === 'string' ? name : 'UNKNOWN';
}

/**
 * The interceptor that meters each call. `known` is the bounded set of method paths the label may
 * take (the server's methods); any other path is {@link OTHER_METHOD}.
 */
export function meteringInterceptor(
  meters: GrpcCallMeters,
  known: ReadonlySet<string>,
  onEnded?: CallEnded,
): ServerInterceptor {
  return (descriptor, call) => {
    const method = known.has(descriptor.path) ? descriptor.path : OTHER_METHOD;
    const startedMs = performance.now();
    let sent: number | undefined;
    let counted = false;
    const ended = () => {
      if (counted) return;
      counted = true;
      const stream = streamOf(call);
      const code =
        (stream === undefined ? undefined : injectedEnds.get(stream)) ??
        (resetFirst(call) ? undefined : sent) ??
        (Date.now() >= deadlineMs(call.getDeadline()) - DEADLINE_SLACK_MS
          ? status.DEADLINE_EXCEEDED
          : status.CANCELLED);
      const seconds = (performance.now() - startedMs) / 1000;
      meters.grpcCallEnded(method, statusName(code), seconds);
      onEnded?.(stream, code, seconds);
      if (span !== undefined) endSpan(span, code);
    };
    let span: Span | undefined;
    const listener = new ServerListenerBuilder()
      .withOnReceiveMetadata((metadata, next) => {
        span = startSpan(descriptor.path, metadata, call.getPeer());
        next(metadata);
      })
      .withOnCancel(ended)
      .build();
    const responder = new ResponderBuilder()
      .withStart((next) => next(listener))
      .withSendStatus((sending, next) => {
        sent ??= sending.code;
        next(sending);
      })
      .build();
    return new ServerInterceptingCall(call, responder);
  };
}
