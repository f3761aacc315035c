/**
 * The methods of `echochaos.v1.EchoService` (proto/echochaos/v1/echo.proto). Each call reads its
 * metadata first (a bad value ends it in `INVALID_ARGUMENT` naming the key), draws its faults
 * (faults.ts: the metadata's, else the environment's), holds its answer for the delay, then
 * answers, or ends as a fault asks: a status, a reset stream, a GOAWAY, no answer at all, a
 * Trailers-Only answer; a streaming answer may fail after some messages. A hold ends early when
 * the client goes or its deadline passes (grpc-js then tells the client `DEADLINE_EXCEEDED`, and
 * nothing more is written), and when the service closes (the answer goes at once, as HTTP's do).
 */
import { constants as http2 } from 'node:http2';
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
import { drawDelayMs } from '../../scenario/duration.ts';
import type { FaultLimits } from '../../scenario/faults.ts';
import type { ScenarioStep } from '../../scenario/index.ts';
import { WHOLE_WEIGHT } from '../../scenario/weighted.ts';
import type { FaultGate, FaultKind, FaultMeters } from '../applied.ts';
import type { ScenarioMatcher } from '../fault-decision.ts';
import { drawSeed, type RandomSource, seededRandom } from '../random.ts';
import {
  drawGrpcPlan,
  faultKindOf,
  type GrpcControl,
  type GrpcEnd,
  type GrpcFaultSpec,
  type GrpcPlan,
  type GrpcScenarioLayer,
  grpcErrorOfHttp,
  grpcStatusOfHttp,
  readGrpcMetadata,
} from './faults.ts';
import {
  GRPC_PROTOCOL,
  type GrpcCallRecord,
  type GrpcHistory,
  metadataHeaders,
  rememberCall,
} from './history.ts';
import {
  echoedMetadata,
  GRPC_STATUS_NAMES,
  INVALID_ARGUMENT,
  type MetadataValues,
  peerOf,
  RESOURCE_EXHAUSTED,
  requestIdOf,
} from './metadata.ts';
import { DEADLINE_SLACK_MS, injectedEnd } from './observe.ts';
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
  /** `ECHO_REQUEST_TIMEOUT`: how long `drop` holds a call that has no deadline before resetting it. */
  readonly requestTimeoutMs: number;
  /**
   * The master switch (`ECHO_FAULTS_ENABLED`, `PUT /control/faults`, read per call) and the safety
   * valve (`ECHO_MAX_ACTIVE_FAULTS`): a call with faults holds a slot until it ends, and a call
   * that finds none free is answered plainly (counted in `echo_faults_overflow_total`).
   */
  readonly gate: Pick<FaultGate, 'enabled' | 'acquire' | 'release'>;
  /** The environment's defaults, as gRPC reads them (`grpcEnvDefaults`). */
  readonly env: GrpcFaultSpec;
  /** Randomness of a call without a seed. */
  readonly random: RandomSource;
  /** `ECHO_SEED`'s sequence: each call without `x-echo-seed` draws its seed from it, in arrival order. */
  readonly seeds?: RandomSource;
  /** Aborted when the service closes: holds end and answers go at once. */
  readonly closing: AbortSignal;
  /** The scenario set (`POST /scenario`, `ECHO_SCENARIO_FILE`): a scenario on a method path scripts its calls. */
  readonly scenarios?: ScenarioMatcher;
  /** Where each call is recorded (`GET /history`); none when history is off. */
  readonly history?: GrpcHistory;
  /** Where an applied fault is counted (`echo_faults_injected_total{kind}`), and an overflow. */
  readonly meters: FaultMeters;
}

/** What a call starts with, once its metadata is read and its faults drawn. */
interface Started {
  readonly requestId: string;
  readonly metadata: Record<string, string>;
  readonly plan: GrpcPlan;
  /** The kinds applied so far, in order (the `x-echo-fault` trailer). */
  readonly applied: FaultKind[];
  /** The call's history entry and its faults, until it ends. */
  readonly record?: GrpcCallRecord;
  /** The scenario response the call takes: its metadata and trailers are added to the answer's. */
  readonly step?: ScenarioStep;
  /** Gives the safety valve's slot back (once). */
  readonly release: () => void;
}

/** What every call has, whatever its kind (grpc-js does not export its own name for it). */
type ServerSurfaceCall = Pick<
  ServerUnaryCall<unknown, unknown>,
  'cancelled' | 'metadata' | 'getDeadline' | 'sendMetadata' | 'getPath' | 'getPeer'
> & {
  once(event: 'cancelled', listener: () => void): unknown;
  removeListener(event: 'cancelled', listener: () => void): unknown;
};

/** The part of an HTTP/2 stream a `reset` and a `goaway` use. */
interface Http2StreamLike {
  readonly id?: number;
  readonly bufferSize?: number;
  readonly writableLength?: number;
  close(code: number): void;
  readonly session?: { goaway(code: number, lastStreamId?: number): void; destroy(): void };
}

const error = (code: number, details: string, trailers?: Metadata): Partial<ServerErrorResponse> => ({
  code,
  details,
  ...(trailers === undefined ? {} : { metadata: trailers }),
});

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

/**
 * The HTTP/2 stream under a call. grpc-js (1.14) gives a handler no way to reset its stream or
 * close its connection, so `reset` and `goaway` reach the stream through the call's chain
 * (`call` → the interceptors' `nextCall` → grpc-js's own call, which holds `stream`), outside its
 * typed API: a test of each fault proves the path still holds on the grpc-js the package allows.
 */
export function http2StreamOf(call: object): Http2StreamLike | undefined {
  let node: unknown = call;
  for (let depth = 0; depth < 8 && typeof node === 'object' && node !== null; depth++) {
    const holder = node as { stream?: unknown; call?: unknown; nextCall?: unknown };
    const stream = holder.stream as Http2StreamLike | undefined;
    if (typeof stream?.close === 'function' && typeof stream.session === 'object') return stream;
    node = holder.nextCall ?? holder.call;
  }
  return undefined;
}

const noop = () => {};

/** JSON.stringify's replacer: bytes (a payload) as base64 text. */
function jsonOfBytes(_key: string, value: unknown): unknown {
  const bytes = value as { type?: unknown; data?: unknown } | null;
  return typeof bytes === 'object' && bytes !== null && bytes.type === 'Buffer' && Array.isArray(bytes.data)
    ? Buffer.from(bytes.data as number[]).toString('base64')
    : value;
}

/** The `EchoService` implementation, for `server.addService(definition, ...)`. */
export function echoService(options: EchoServiceOptions): UntypedServiceImplementation {
  const { limits, closing, meters, gate } = options;

  /** Records the call in history, its request as JSON text (a payload in base64); a stream's messages are not kept. */
  const remember = (
    call: ServerSurfaceCall,
    values: MetadataValues,
    headers: Record<string, string | string[]>,
    requestId: string,
    body: Buffer | undefined,
  ): GrpcCallRecord | undefined => {
    const entry = options.history?.record({
      requestId,
      method: 'POST',
      url: call.getPath(),
      headers,
      body,
      remoteAddr: peerOf(call.getPeer()).address,
      protocol: GRPC_PROTOCOL,
      idMayRepeat: values['x-request-id'] !== undefined,
    });
    if (entry === undefined) return undefined;
    const record = { entry, faults: [] };
    rememberCall(http2StreamOf(call), record);
    return record;
  };

  /**
   * Reads the call's metadata and draws its faults; a problem is the call's `INVALID_ARGUMENT`.
   * `streaming`: the method streams its answers, so `x-echo-stream-fail-after` may apply.
   */
  const start = async (
    call: ServerSurfaceCall,
    streaming: boolean,
    request?: object,
  ): Promise<{ started: Started } | { problem: string; requestId: string }> => {
    const values = valuesOf(call.metadata);
    const requestId = requestIdOf(values);
    const metadata = echoedMetadata(values);
    const body = request === undefined ? undefined : Buffer.from(JSON.stringify(request, jsonOfBytes));
    // The metadata as headers: what history stores and what scenarios match.
    const headers = metadataHeaders(values);
    const record = remember(call, values, headers, requestId, body);
    const plain = {
      requestId,
      metadata,
      applied: [],
      release: noop,
      ...(record === undefined ? {} : { record }),
    };
    // A bad value is refused even with faults off, as a bad header is over HTTP.
    const read = readGrpcMetadata(values, limits);
    if (!read.ok) return { problem: read.problem, requestId };
    if (!gate.enabled) return { started: { ...plain, plan: {} } };
    if (read.failAfter !== undefined && !streaming)
      return {
        problem:
          'x-echo-stream-fail-after: only for the methods that stream their answers (ServerStream, BidiStream)',
        requestId,
      };
    // Every call draws from ECHO_SEED's sequence, so the n-th call of a run always gets the n-th seed.
    const processSeed = options.seeds === undefined ? undefined : drawSeed(options.seeds);
    const seed = read.seed ?? processSeed;
    const random = seed === undefined ? options.random : seededRandom(seed);
    const seeded = seed === undefined ? {} : { plan: { seed } };

    let held = false;
    const release = () => {
      if (!held) return;
      held = false;
      gate.release();
    };
    // The scenario a call matches (its method path, its metadata as headers, its request as JSON
    // text): its position moves only once a slot of the safety valve is had, as HTTP's does.
    let taken: { step: ScenarioStep; control: string; position: number } | undefined;
    const scenarios = options.scenarios;
    if (scenarios !== undefined && scenarios.size > 0) {
      const handle = scenarios.match(
        { method: 'POST', path: call.getPath(), query: '', headers, body },
        read.session,
        random,
      );
      if (handle !== undefined) {
        if (!gate.acquire()) {
          meters.faultOverflow();
          return { started: { ...plain, plan: {}, ...seeded } };
        }
        held = true;
        // Shared across replicas (ECHO_STATE_URL): taken there; undefined when its times ran out.
        const step =
          scenarios.sharing === true && scenarios.takeShared !== undefined
            ? await scenarios.takeShared(handle)
            : scenarios.take(handle);
        if (step !== undefined)
          taken = { step, control: `scenario ${handle.label}`, position: handle.position };
      }
    }
    const plan = drawGrpcPlan({
      random,
      ...(seed === undefined ? {} : { seed }),
      ...(read.session === undefined ? {} : { session: read.session }),
      metadata: read,
      ...(taken === undefined ? {} : { scenario: scenarioLayer(taken.step, taken.control, random) }),
      env: options.env,
      maxDelayMs: limits.maxDelayMs,
    });
    const faulty = taken !== undefined || plan.delay !== undefined || plan.end !== undefined;
    if (!faulty) {
      release();
      return { started: { ...plain, plan } };
    }
    if (!held) {
      if (!gate.acquire()) {
        meters.faultOverflow();
        const {
          delay: _delay,
          scenarioDelay: _scenarioDelay,
          end: _end,
          failAfter: _failAfter,
          ...rest
        } = plan;
        return { started: { ...plain, plan: rest } };
      }
      held = true;
    }
    call.once('cancelled', release);
    const started: Started = {
      ...plain,
      release,
      plan,
      ...(taken === undefined ? {} : { step: taken.step }),
    };
    if (taken !== undefined)
      applied(started, 'scenario', { control: taken.control, source: 'scenario' }, taken.position);
    return { started };
  };

  /**
   * The step of a scenario as the plan's middle layer: its gRPC status (else its HTTP one, mapped),
   * its message, its error and size, its own delay drawn.
   */
  const scenarioLayer = (step: ScenarioStep, control: string, random: RandomSource): GrpcScenarioLayer => {
    const spec: GrpcFaultSpec = {};
    const code = step.grpcStatus ?? (step.status === undefined ? undefined : grpcStatusOfHttp(step.status));
    if (code !== undefined)
      spec.statuses = { entries: [{ value: code, weight: WHOLE_WEIGHT }], total: WHOLE_WEIGHT };
    const errors = step.faults?.errors;
    if (errors !== undefined)
      spec.errors = {
        total: errors.total,
        entries: errors.entries.map((e) => ({ value: grpcErrorOfHttp(e.value), weight: e.weight })),
      };
    if (step.faults?.sizes !== undefined) spec.sizes = step.faults.sizes;
    const delayMs = step.delay === undefined ? undefined : drawDelayMs(step.delay, random, limits.maxDelayMs);
    return {
      control,
      spec,
      ...(step.grpcMessage === undefined ? {} : { message: step.grpcMessage }),
      ...(delayMs === undefined ? {} : { delayMs }),
    };
  };

  /** Sends the initial metadata (`x-request-id`, and `x-echo-seed` for a seeded call) when the answer begins. */
  const sendHead = (
    call: ServerSurfaceCall,
    requestId: string,
    plan?: GrpcPlan,
    step?: ScenarioStep,
  ): void => {
    const head = new Metadata();
    if (step !== undefined)
      for (const [key, value] of Object.entries(step.grpcMetadata)) head.add(key, value);
    head.set('x-request-id', requestId);
    if (plan?.seed !== undefined) head.set('x-echo-seed', String(plan.seed));
    call.sendMetadata(head);
  };

  /** The trailers: `x-echo-fault` lists the kinds applied, as HTTP's `X-Echo-Fault` header does. */
  const trailers = (started: Started): Metadata => {
    const out = new Metadata();
    if (started.step !== undefined)
      for (const [key, value] of Object.entries(started.step.grpcTrailers)) out.add(key, value);
    const kinds = [...new Set(started.applied)];
    if (kinds.length > 0) out.set('x-echo-fault', kinds.join(','));
    return out;
  };

  /** Counts an applied fault, lists it for the trailer and the call's history entry. */
  const applied = (started: Started, kind: FaultKind, from: GrpcControl, value: string | number) => {
    started.applied.push(kind);
    meters.faultInjected(kind);
    started.record?.faults.push({
      kind,
      control: from.control,
      source: from.source === 'metadata' ? 'header' : from.source,
      value,
    });
  };

  const payloadOf = (started: Started, echoed: Buffer): Buffer => {
    const size = started.plan.responseBytes;
    return size === undefined ? echoed : Buffer.alloc(size.bytes, 'x');
  };

  const response = (started: Started, request: EchoRequest, sequence: number): EchoResponse => ({
    message: request.message,
    payload: payloadOf(started, request.payload),
    metadata: started.metadata,
    request_id: started.requestId,
    sequence,
  });

  /** Holds the answer for the call's delay, counted as it begins (as HTTP's). */
  const delay = (call: ServerSurfaceCall, started: Started): Promise<void> => {
    // The metadata's (or the environment's) delay, and the scenario's added to it.
    let ms = 0;
    for (const planned of [started.plan.delay, started.plan.scenarioDelay]) {
      if (planned === undefined || planned.ms <= 0) continue;
      applied(started, 'delay', planned, planned.ms);
      ms += planned.ms;
    }
    return hold(call, ms, closing);
  };

  /**
   * Ends the call as `end` asks. `fail` sends a status (the unary callback, or a stream's 'error');
   * `headSent` says whether the initial metadata already went (a Trailers-Only answer needs it not).
   */
  const finish = async (
    call: ServerSurfaceCall,
    started: Started,
    end: GrpcEnd,
    fail: (status: Partial<ServerErrorResponse>) => void,
    headSent: boolean,
  ): Promise<void> => {
    // A scenario's status is its answer: the scenario was counted when its step was taken.
    if (!(end.kind === 'status' && end.fault === 'scenario'))
      applied(
        started,
        faultKindOf(end),
        end,
        'code' in end ? (GRPC_STATUS_NAMES[end.code] ?? end.code) : end.kind,
      );
    switch (end.kind) {
      case 'status':
        if (!headSent) sendHead(call, started.requestId, started.plan, started.step);
        fail(error(end.code, end.message, trailers(started)));
        break;
      case 'trailers-only':
        // Nothing was sent: grpc-js answers a status before any metadata with one HEADERS frame.
        fail(error(end.code, end.message, trailers(started)));
        break;
      case 'reset': {
        const stream = http2StreamOf(call);
        // Messages sent before (x-echo-stream-fail-after) reach the client first.
        if (headSent) await sentOut(stream);
        injectedEnd(stream, INTERNAL_CODE);
        stream?.close(http2.NGHTTP2_INTERNAL_ERROR);
        break;
      }
      case 'goaway': {
        const stream = http2StreamOf(call);
        if (headSent) await sentOut(stream);
        injectedEnd(stream, UNAVAILABLE_CODE);
        stream?.session?.goaway(http2.NGHTTP2_NO_ERROR, stream.id);
        stream?.session?.destroy();
        break;
      }
      case 'drop': {
        // No answer: until the client's deadline or ECHO_REQUEST_TIMEOUT, whichever comes first. At
        // the deadline grpc-js sends DEADLINE_EXCEEDED itself; at the timeout the stream is reset,
        // as HTTP's blackhole closes its connection.
        await hold(call, options.requestTimeoutMs, closing);
        if (!call.cancelled && Date.now() < deadlineOf(call) - DEADLINE_SLACK_MS)
          http2StreamOf(call)?.close(http2.NGHTTP2_CANCEL);
        break;
      }
    }
    started.release();
  };

  const echo: handleUnaryCall<EchoRequest, EchoResponse> = async (call, callback) => {
    const begun = await start(call, false, call.request);
    if (!('started' in begun)) {
      sendHead(call, begun.requestId);
      return callback(error(INVALID_ARGUMENT, begun.problem));
    }
    const { started } = begun;
    const { end } = started.plan;
    if (end?.kind !== 'drop') await delay(call, started);
    if (!open(call)) return started.release();
    if (end !== undefined) return finish(call, started, end, callback, false);
    sendHead(call, started.requestId, started.plan, started.step);
    callback(null, response(started, call.request, 0), trailers(started));
    started.release();
  };

  const serverStream: handleServerStreamingCall<StreamRequestFields, EchoResponse> = async (call) => {
    const begun = await start(call, true, call.request);
    const fail = (status: Partial<ServerErrorResponse>) => void call.emit('error', status);
    if (!('started' in begun)) {
      sendHead(call, begun.requestId);
      return fail(error(INVALID_ARGUMENT, begun.problem));
    }
    const { started } = begun;
    const plan = readStreamRequest(call.request, limits.maxResponseBytes);
    if (!plan.ok) {
      sendHead(call, started.requestId, started.plan, started.step);
      started.release();
      return fail(error(INVALID_ARGUMENT, plan.problem));
    }
    const { end, failAfter } = started.plan;
    if (end?.kind !== 'drop' || failAfter !== undefined) await delay(call, started);
    if (!open(call)) return started.release();
    if (end !== undefined && failAfter === undefined) return finish(call, started, end, fail, false);
    sendHead(call, started.requestId, started.plan, started.step);
    const { count, intervalMs } = plan.plan;
    const sent = failAfter === undefined ? count : Math.min(count, failAfter);
    // One payload for every answer: its bytes are never changed.
    const payload = Buffer.alloc(started.plan.responseBytes?.bytes ?? plan.plan.responseBytes, 'x');
    for (let sequence = 1; sequence <= sent; sequence++) {
      if (sequence > 1 && intervalMs > 0) await hold(call, intervalMs, closing);
      if (!open(call)) return started.release();
      const message = { message: `${sequence} of ${count}`, payload };
      const more = call.write({ ...response(started, message, sequence), payload });
      if (!more) await writable(call);
    }
    if (!open(call)) return started.release();
    // With x-echo-stream-fail-after, the fault ends the stream in place of OK.
    if (end !== undefined) return finish(call, started, end, fail, true);
    call.end(trailers(started));
    started.release();
  };

  const clientStream: handleClientStreamingCall<EchoRequest, EchoResponse> = async (call, callback) => {
    const begun = await start(call, false);
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
        sendHead(call, started.requestId, started.plan, started.step);
        started.release();
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
      const { end } = started.plan;
      if (end?.kind !== 'drop') await delay(call, started);
      if (!open(call)) return started.release();
      if (end !== undefined) return finish(call, started, end, callback, false);
      sendHead(call, started.requestId, started.plan, started.step);
      const message = { message: messages.join(''), payload: Buffer.concat(payloads) };
      callback(null, response(started, message, 0), trailers(started));
      started.release();
    });
  };

  const bidiStream: handleBidiStreamingCall<EchoRequest, EchoResponse> = async (call) => {
    const begun = await start(call, true);
    const fail = (status: Partial<ServerErrorResponse>) => void call.emit('error', status);
    if (!('started' in begun)) {
      sendHead(call, begun.requestId);
      return fail(error(INVALID_ARGUMENT, begun.problem));
    }
    const { started } = begun;
    const { end, failAfter } = started.plan;
    let sequence = 0;
    let ended = false;
    const stop = (action?: Promise<void>) => {
      ended = true;
      return action ?? Promise.resolve(started.release());
    };
    // Each message is echoed in turn, after the call's delay; what comes meanwhile waits in order.
    let turn: Promise<void> = (async () => {
      if (end?.kind !== 'drop' || failAfter !== undefined) await delay(call, started);
      if (!open(call)) return stop();
      if (end !== undefined && failAfter === undefined) return stop(finish(call, started, end, fail, false));
      sendHead(call, started.requestId, started.plan, started.step);
      if (end !== undefined && failAfter === 0) return stop(finish(call, started, end, fail, true));
    })();
    call.on('data', (request: EchoRequest) => {
      turn = turn.then(async () => {
        if (ended) return;
        if (!open(call)) return stop();
        if (!call.write(response(started, request, ++sequence))) await writable(call);
        if (end !== undefined && sequence === failAfter) return stop(finish(call, started, end, fail, true));
      });
    });
    call.on('end', () => {
      turn = turn.then(() => {
        if (ended) return;
        if (!open(call)) return stop();
        // With x-echo-stream-fail-after, the fault ends the stream in place of OK.
        if (end !== undefined) return stop(finish(call, started, end, fail, true));
        ended = true;
        call.end(trailers(started));
        started.release();
      });
    });
  };

  return {
    Echo: (call: Parameters<typeof echo>[0], callback: Parameters<typeof echo>[1]) =>
      guard(echo(call, callback), (status) => callback(status)),
    ServerStream: (call: Parameters<typeof serverStream>[0]) =>
      guard(serverStream(call), (status) => call.emit('error', status)),
    ClientStream: (call: Parameters<typeof clientStream>[0], callback: Parameters<typeof clientStream>[1]) =>
      guard(clientStream(call, callback), (status) => callback(status)),
    BidiStream: (call: Parameters<typeof bidiStream>[0]) =>
      guard(bidiStream(call), (status) => call.emit('error', status)),
  };
}

/**
 * A handler's failure (a shared scenario store that cannot be reached, a bug) ends its call in
 * `UNAVAILABLE` naming it, instead of an unhandled rejection that would end the process.
 */
export function guard(handled: unknown, fail: (status: Partial<ServerErrorResponse>) => void): void {
  if (handled instanceof Promise)
    handled.catch((err: unknown) => {
      try {
        fail(
          error(
            UNAVAILABLE_CODE,
            `echo-chaos could not answer: ${err instanceof Error ? err.message : String(err)}`,
          ),
        );
      } catch {
        // The call has already ended.
      }
    });
}

/** `UNAVAILABLE`: what a call ends in when the service cannot answer it (a store down), and a GOAWAY. */
const UNAVAILABLE_CODE = 14;
/** `INTERNAL`: what a client reports of a stream reset with code 2. */
const INTERNAL_CODE = 13;

/**
 * Waits until what was written to `stream` has left its buffers (its messages before a reset or a
 * GOAWAY reach the client, which would otherwise drop them); at most {@link FLUSH_WAIT_MS}.
 */
async function sentOut(stream: Http2StreamLike | undefined): Promise<void> {
  const until = Date.now() + FLUSH_WAIT_MS;
  const pending = () => (stream?.bufferSize ?? 0) > 0 || (stream?.writableLength ?? 0) > 0;
  while (pending() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 5));
  // The frames queued by the HTTP/2 session go out on its next turns.
  await new Promise((resolve) => setTimeout(resolve, FLUSH_SETTLE_MS));
}

/** The longest {@link sentOut} waits for a stream's buffers to empty. */
const FLUSH_WAIT_MS = 1_000;
/** What {@link sentOut} leaves the session to write its queued frames. */
const FLUSH_SETTLE_MS = 20;
