/**
 * The methods of `echochaos.v1.EchoService` (proto/echochaos/v1/echo.proto). Each call reads its
 * metadata first (a bad value ends it in `INVALID_ARGUMENT` naming the key), holds its answer for
 * `x-echo-delay`, then answers, or ends with the status of `x-echo-status`. A hold ends early when
 * the client goes or its deadline passes (grpc-js then tells the client `DEADLINE_EXCEEDED`, and
 * nothing more is written), and when the service closes (the answer goes at once, as HTTP's do).
 */
import {
  type handleBidiStreamingCall,
  type handleClientStreamingCall,
  type handleServerStreamingCall,
  type handleUnaryCall,
  Metadata,
  type ServerErrorResponse,
  type ServerUnaryCall,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { FaultLimits } from '../../scenario/faults.ts';
import type { FaultMeters } from '../applied.ts';
import {
  echoedMetadata,
  type GrpcFaults,
  INVALID_ARGUMENT,
  type MetadataValues,
  RESOURCE_EXHAUSTED,
  readGrpcFaults,
  requestIdOf,
} from './metadata.ts';
import { readStreamRequest, type StreamRequestFields } from './request.ts';

/** An `EchoRequest` as proto-loader hands it. */
interface EchoRequest {
  readonly message: string;
  readonly payload: Buffer;
}

/** An `EchoResponse` as proto-loader takes it. */
interface EchoResponse {
  readonly message: string;
  readonly payload: Buffer;
  readonly metadata: Record<string, string>;
  readonly request_id: string;
  readonly sequence: number;
}

/** What the methods need from the service. */
export interface EchoServiceOptions {
  /** `ECHO_MAX_DELAY` and `ECHO_MAX_RESPONSE_SIZE`. */
  readonly limits: FaultLimits;
  /** `MAX_BODY_SIZE`: the most a client stream's messages may hold together. */
  readonly maxBodyBytes: number;
  /** The master switch of faults (`ECHO_FAULTS_ENABLED`, `PUT /control/faults`), read per call. */
  readonly faultsEnabled: () => boolean;
  /** Randomness of the delay draws. */
  readonly random: () => number;
  /** Aborted when the service closes: holds end and answers go at once. */
  readonly closing: AbortSignal;
  /** Where an applied fault is counted (`echo_faults_injected_total{kind}`: `delay`, `status`). */
  readonly meters: Pick<FaultMeters, 'faultInjected'>;
}

/** What a call starts with, once its metadata is read. */
interface Started {
  readonly requestId: string;
  readonly metadata: Record<string, string>;
  readonly faults: GrpcFaults;
}

/** What every call has, whatever its kind (grpc-js does not export its own name for it). */
type ServerSurfaceCall = Pick<
  ServerUnaryCall<unknown, unknown>,
  'cancelled' | 'metadata' | 'getDeadline' | 'sendMetadata'
> & {
  once(event: 'cancelled', listener: () => void): unknown;
  removeListener(event: 'cancelled', listener: () => void): unknown;
};

const error = (code: number, details: string): Partial<ServerErrorResponse> => ({ code, details });

function valuesOf(metadata: Metadata): MetadataValues {
  const out: Record<string, Array<string | Buffer>> = {};
  for (const key of Object.keys(metadata.getMap())) out[key] = metadata.get(key);
  return out;
}

/** When the client's deadline passes, in epoch milliseconds; Infinity when it set none. */
function deadlineOf(call: ServerSurfaceCall): number {
  const deadline = call.getDeadline();
  return deadline instanceof Date ? deadline.getTime() : deadline;
}

/** Whether the call may still be written to: the client is there and its deadline has not passed. */
function open(call: ServerSurfaceCall): boolean {
  return !call.cancelled && Date.now() < deadlineOf(call);
}

/**
 * Waits `ms`, or less: until the client goes, its deadline passes or the service closes. Never
 * longer than the deadline, so nothing waits for an answer nobody will read.
 */
function hold(call: ServerSurfaceCall, ms: number, closing: AbortSignal): Promise<void> {
  const waitMs = Math.min(ms, deadlineOf(call) - Date.now());
  if (waitMs <= 0 || call.cancelled || closing.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      call.removeListener('cancelled', done);
      closing.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, waitMs);
    call.once('cancelled', done);
    closing.addEventListener('abort', done, { once: true });
  });
}

/** Waits until a stream that said "enough" takes more, or the call ends. */
function writable(call: NodeJS.EventEmitter): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      call.removeListener('drain', done);
      call.removeListener('cancelled', done);
      call.removeListener('close', done);
      resolve();
    };
    call.once('drain', done);
    call.once('cancelled', done);
    call.once('close', done);
  });
}

/** The `EchoService` implementation, for `server.addService(definition, ...)`. */
export function echoService(options: EchoServiceOptions): UntypedServiceImplementation {
  const { limits, closing, meters } = options;

  /** Reads the call's metadata: its id, its echo, its faults; a problem is the call's `INVALID_ARGUMENT`. */
  const start = (call: ServerSurfaceCall): { started: Started } | { problem: string; requestId: string } => {
    const values = valuesOf(call.metadata);
    const requestId = requestIdOf(values);
    const read = options.faultsEnabled()
      ? readGrpcFaults(values, limits, options.random)
      : ({ ok: true, faults: {} } as const);
    if (!read.ok) return { problem: read.problem, requestId };
    return { started: { requestId, metadata: echoedMetadata(values), faults: read.faults } };
  };

  /** Sends the initial metadata (`x-request-id`) when the answer begins. */
  const sendHead = (call: ServerSurfaceCall, requestId: string): void => {
    const head = new Metadata();
    head.set('x-request-id', requestId);
    call.sendMetadata(head);
  };

  const response = (started: Started, request: EchoRequest, sequence: number): EchoResponse => ({
    message: request.message,
    payload: request.payload,
    metadata: started.metadata,
    request_id: started.requestId,
    sequence,
  });

  /** The status fault to end the call with, counted as it is applied; undefined without one. */
  const statusOf = (faults: GrpcFaults) => {
    if (faults.status === undefined) return undefined;
    meters.faultInjected('status');
    return error(faults.status, faults.statusMessage ?? '');
  };

  /** Holds the answer for the call's `x-echo-delay`, counted as it begins (as HTTP's). */
  const delay = (call: ServerSurfaceCall, faults: GrpcFaults): Promise<void> => {
    const ms = faults.delayMs ?? 0;
    if (ms > 0) meters.faultInjected('delay');
    return hold(call, ms, closing);
  };

  const echo: handleUnaryCall<EchoRequest, EchoResponse> = async (call, callback) => {
    const begun = start(call);
    if (!('started' in begun)) {
      sendHead(call, begun.requestId);
      return callback(error(INVALID_ARGUMENT, begun.problem));
    }
    const { started } = begun;
    await delay(call, started.faults);
    if (!open(call)) return;
    sendHead(call, started.requestId);
    const status = statusOf(started.faults);
    if (status !== undefined) return callback(status);
    callback(null, response(started, call.request, 0));
  };

  const serverStream: handleServerStreamingCall<StreamRequestFields, EchoResponse> = async (call) => {
    const begun = start(call);
    const plan = readStreamRequest(call.request, limits.maxResponseBytes);
    sendHead(call, 'started' in begun ? begun.started.requestId : begun.requestId);
    if (!('started' in begun)) return void call.emit('error', error(INVALID_ARGUMENT, begun.problem));
    if (!plan.ok) return void call.emit('error', error(INVALID_ARGUMENT, plan.problem));
    const { started } = begun;
    await delay(call, started.faults);
    if (!open(call)) return;
    const status = statusOf(started.faults);
    if (status !== undefined) return void call.emit('error', status);
    const { count, intervalMs, responseBytes } = plan.plan;
    // One payload for every answer: its bytes are never changed.
    const payload = Buffer.alloc(responseBytes, 'x');
    for (let sequence = 1; sequence <= count; sequence++) {
      if (sequence > 1 && intervalMs > 0) await hold(call, intervalMs, closing);
      if (!open(call)) return;
      const more = call.write(response(started, { message: `${sequence} of ${count}`, payload }, sequence));
      if (!more) await writable(call);
    }
    if (open(call)) call.end();
  };

  const clientStream: handleClientStreamingCall<EchoRequest, EchoResponse> = (call, callback) => {
    const begun = start(call);
    if (!('started' in begun)) {
      sendHead(call, begun.requestId);
      return callback(error(INVALID_ARGUMENT, begun.problem));
    }
    const { started } = begun;
    const messages: string[] = [];
    const payloads: Buffer[] = [];
    let bytes = 0;
    let refused = false;
    call.on('data', (request: EchoRequest) => {
      if (refused) return;
      bytes += Buffer.byteLength(request.message) + request.payload.length;
      if (bytes > options.maxBodyBytes) {
        refused = true;
        sendHead(call, started.requestId);
        return callback(
          error(
            RESOURCE_EXHAUSTED,
            `the stream's messages hold more than MAX_BODY_SIZE (${options.maxBodyBytes} bytes) together`,
          ),
        );
      }
      messages.push(request.message);
      payloads.push(request.payload);
    });
    call.on('end', async () => {
      if (refused) return;
      await delay(call, started.faults);
      if (!open(call)) return;
      sendHead(call, started.requestId);
      const status = statusOf(started.faults);
      if (status !== undefined) return callback(status);
      callback(null, response(started, { message: messages.join(''), payload: Buffer.concat(payloads) }, 0));
    });
  };

  const bidiStream: handleBidiStreamingCall<EchoRequest, EchoResponse> = (call) => {
    const begun = start(call);
    if (!('started' in begun)) {
      sendHead(call, begun.requestId);
      return void call.emit('error', error(INVALID_ARGUMENT, begun.problem));
    }
    const { started } = begun;
    let sequence = 0;
    let ended = false;
    // Each message is echoed in turn, after the call's delay; what comes meanwhile waits in order.
    let turn: Promise<void> = delay(call, started.faults).then(() => {
      if (!open(call)) {
        ended = true;
        return;
      }
      sendHead(call, started.requestId);
      const status = statusOf(started.faults);
      if (status !== undefined) {
        ended = true;
        call.emit('error', status);
      }
    });
    call.on('data', (request: EchoRequest) => {
      turn = turn.then(async () => {
        if (ended || !open(call)) return;
        if (!call.write(response(started, request, ++sequence))) await writable(call);
      });
    });
    call.on('end', () => {
      turn = turn.then(() => {
        if (!ended && open(call)) call.end();
      });
    });
  };

  return {
    Echo: echo,
    ServerStream: serverStream,
    ClientStream: clientStream,
    BidiStream: bidiStream,
  };
}
