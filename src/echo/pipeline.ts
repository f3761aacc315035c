import { isAscii } from 'node:buffer';
import { ServerResponse, STATUS_CODES } from 'node:http';
import { constants as http2Constants } from 'node:http2';
import type { Readable } from 'node:stream';
import { TLSSocket } from 'node:tls';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ScenarioStep } from '../scenario/index.ts';
import { applyFault, type FaultGate, faultsAllowed } from './applied.ts';
import {
  type CompressionSlots,
  compressor,
  hasBody,
  RandomBody,
  readRawBody,
  requestSummary,
} from './bodies.ts';
import { brokenContent, type ScriptedAnswer, sendBrokenBody } from './broken-bodies.ts';
import { CLIENT_CLOSED_STATUS, NO_RESPONSE_STATUS, recordCompletion } from './completion.ts';
import type { EchoConfig } from './config.ts';
import {
  type Controls,
  dashCase,
  hasControlHeader,
  NO_CONTROLS,
  originOf,
  parseControls,
} from './controls.ts';
import { errorBody } from './error-handler.ts';
import { EchoError, isEchoError } from './errors.ts';
import {
  createFaultDecider,
  type FaultDecision,
  forwardTo,
  type ScenarioMatcher,
  scenarioRequestOf,
} from './fault-decision.ts';
import type { History } from './history.ts';
import { TOKEN } from './http-grammar.ts';
import type { EchoMetrics } from './metrics.ts';
import {
  StreamedBody,
  type Upstream,
  type UpstreamAnswer,
  type UpstreamOutcome,
  type Upstreams,
} from './proxy.ts';
import { drawSeed, type RandomSource, requestSeed, seededBytes, seededRandom } from './random.ts';
import { stateOf } from './request-state.ts';
import type { ShapingStream } from './shaping.ts';
import { type ApplyFault, shapeBody, shapingFor } from './slow-bodies.ts';
import { http2StreamOf } from './transport/index.ts';

/** What the echo pipeline needs from the app. */
export interface PipelineDeps {
  readonly config: EchoConfig;
  /** Randomness of a request without a seed. */
  readonly random: RandomSource;
  /** `ECHO_SEED`'s sequence: each echoed request draws its own seed from it, in arrival order. */
  readonly seeds?: RandomSource;
  readonly history: History;
  readonly scenarios: ScenarioMatcher;
  readonly metrics: EchoMetrics;
  /** The safety valve and master switch of faults. */
  readonly faults: FaultGate;
  /** Aborted when the drain runs out of time (or the app closes): delays end early and the request is answered. */
  readonly drainSignal: AbortSignal;
  /** `ECHO_UPSTREAM`: where a request no scenario answers is forwarded (reverse proxy); unset: echoed. */
  readonly upstream?: Upstream;
  /** Every upstream, by URL: a scenario's `upstream` is forwarded through it. */
  readonly upstreams?: Upstreams;
  /** The compressions that may run at once (`ECHO_MAX_CONCURRENT_COMPRESSION`). */
  readonly compression: CompressionSlots;
}

/**
 * fastify parses no body for GET and HEAD, nor an HTTP/2 body sent without a length or a type;
 * the echo reads such a body itself (bounded) before the handler and the body loggers run, so it
 * is echoed, recorded and logged like any other. An empty one counts as no body.
 */
export function createBodylessMethodReader(maxBodyBytes: number) {
  // A callback hook, not an async one: almost every request has nothing to read, and should not
  // pay for a promise and a microtask to learn it.
  return function readBodyOfBodylessMethod(
    request: FastifyRequest,
    _reply: FastifyReply,
    done: (error?: Error) => void,
  ): void {
    if (request.body !== undefined || !hasBody(request.raw)) {
      done();
      return;
    }
    readRawBody(request.raw, maxBodyBytes).then(
      (body) => {
        if (body === undefined) done(new EchoError('ECHO_ERR_BODY_TOO_LARGE', [maxBodyBytes]));
        else {
          if (body.length > 0) request.body = body;
          done();
        }
      },
      (error: unknown) => done(error instanceof Error ? error : new Error(String(error))),
    );
  };
}

type Outcome = 'done' | 'client-gone';

/**
 * The echo handler: validate controls, record history, delay, chaos, error, scenario, response
 * (decisions.md 1.1). A request pays only for what its headers ask for.
 */
export function createEchoHandler(deps: PipelineDeps) {
  const { config, history, metrics } = deps;
  const limits = { maxDelayMs: config.maxDelayMs, maxResponseBytes: config.maxResponseBytes };
  const waits = new Waits(deps.drainSignal);
  const decide = createFaultDecider(config, deps.scenarios);
  const { compression } = deps;

  const echo = async function echo(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const raw = request.raw;
    const state = stateOf(request);
    // A seeded request draws everything from its own source, so its answer is a function of the
    // seed alone: `X-Echo-Seed`, else the next seed of `ECHO_SEED`'s sequence (drawn by every
    // echoed request, so the n-th request of a run always gets the n-th seed).
    const processSeed = deps.seeds === undefined ? undefined : drawSeed(deps.seeds);
    const seed = requestSeed(raw.headers) ?? processSeed;
    const random = seed === undefined ? deps.random : seededRandom(seed);
    const parsed = parseControls(raw.headers, limits, random);
    const problems = parsed.problems;
    let controls = parsed.controls;
    if (problems.length > 0) {
      throw new EchoError('ECHO_ERR_INVALID_HEADER', [problems.map((p) => p.field).join(', ')], {
        details: problems,
      });
    }
    if (seed !== undefined) reply.header('x-echo-seed', String(seed));

    // In proxy mode a long body arrives streamed: its head is what scenarios and history see.
    const arrived = request.body as Buffer | StreamedBody | undefined;
    const body = arrived instanceof StreamedBody ? arrived.head : arrived;

    if (controls.historyEnabled !== false) {
      // A streamed body's head is all history keeps: its size is the announced one, so the entry
      // says it was cut (a chunked one's is unknown, and shows as its head's).
      const bodySize =
        arrived instanceof StreamedBody ? streamedSize(raw.headers['content-length'], body) : undefined;
      recordHistory(history, request, reply, body, bodySize);
    }

    if (controls.explain === true) state.explain = true;
    const gate = deps.faults;
    const fault: ApplyFault = (kind, control, source, value) =>
      applyFault(state, reply, gate, metrics, { kind, control, source, value });
    // Slow bodies, decided as a body is about to go (a broken or bodiless answer gets none).
    const slow = () => shapingFor(request, controls, config.maxDelayMs, deps.drainSignal, fault);

    const url = raw.url ?? '/';
    const deciding = decide({
      parsed,
      random,
      scenarioRequest: () => scenarioRequestOf(raw.method, url, raw.headers, body),
      fault,
      allowed: () => faultsAllowed(state, gate),
    });
    // A promise only when the step is taken in a shared home (ECHO_STATE_URL).
    const decided = deciding instanceof Promise ? await deciding : deciding;
    const { step, chaosStatus, delayMs } = decided;
    controls = decided.controls;
    // The meters' fault label, so the service's SLOs count its own answers only. The chaos and the
    // error below take over when they strike.
    if (decided.scenarioApplied) state.fault = 'scenario';
    else if (delayMs > 0) state.fault = 'delay';
    if (delayMs > 0 && (await waits.wait(delayMs, reply)) === 'client-gone') {
      return abandon(request, reply, deps);
    }

    if (chaosStatus !== undefined) {
      const fromHeader = decided.chaosFromHeader;
      if (
        fault('chaos', fromHeader ? 'X-Echo-Chaos' : 'ECHO_CHAOS', fromHeader ? 'header' : 'env', chaosStatus)
      ) {
        metrics.recordFault('chaos');
        state.fault = 'chaos';
        return underway(sendFault(reply, compression, controls, chaosStatus, 'chaos', slow()));
      }
    }

    const error = controls.error;
    if (error !== undefined) {
      const from = originOf(controls, 'error');
      const applied =
        error.kind === 'status'
          ? fault('error', from.control, from.source, error.status)
          : fault(error.kind === 'timeout' ? 'error' : error.kind, from.control, from.source, error.kind);
      if (applied) {
        state.fault = 'error';
        switch (error.kind) {
          case 'status':
            metrics.recordFault(error.name);
            return underway(sendFault(reply, compression, controls, error.status, 'error', slow()));
          case 'timeout':
            metrics.recordFault('timeout');
            if ((await waits.wait(config.errorTimeoutMs, reply)) === 'client-gone') {
              return abandon(request, reply, deps);
            }
            return underway(sendFault(reply, compression, controls, 504, 'timeout', slow()));
          case 'reset':
          case 'close':
            metrics.recordFault(error.kind);
            return endWithoutResponse(request, reply, deps, error.kind);
          case 'blackhole':
            // The request is read; nothing is ever sent. Node's ECHO_REQUEST_TIMEOUT stops counting
            // once a request is whole, so the hold ends itself at that bound (or when the client
            // leaves, or the drain ends), and only then does the connection close.
            metrics.recordFault('blackhole');
            reply.hijack();
            if ((await waits.wait(config.requestTimeoutMs, reply)) === 'client-gone') {
              return abandon(request, reply, deps);
            }
            return endWithoutResponse(request, reply, deps, 'blackhole');
          case 'slow-close':
            // Answered below as any request is; its sender (connection-faults.ts) holds the close.
            metrics.recordFault('slow-close');
            break;
          case 'empty':
          case 'truncate':
          case 'malformed':
          case 'garbage': {
            metrics.recordFault(error.kind);
            const summary = () => requestSummary(raw, request.ip, protocolOf(request));
            // A scenario's own answer is what breaks: its status, headers and body (unless a size);
            // in proxy mode, without a scenario, the upstream's answer (truncate, malformed).
            let scripted: ScriptedAnswer | undefined = step;
            const found = upstreamOf(deps, decided);
            const target = found instanceof Promise ? await found : found;
            if (target !== undefined && (error.kind === 'truncate' || error.kind === 'malformed')) {
              const answer = await callUpstream(target, request, reply, deps, arrived);
              if (answer === undefined) return;
              if (answer === 'answered') return UNDER_WAY;
              const upstreamAnswer = await upstreamToBreak(answer);
              scripted = {
                status: step?.status ?? upstreamAnswer.status,
                body: upstreamAnswer.body,
                headers: { ...upstreamAnswer.headers, ...step?.headers },
              };
            }
            if (scripted !== undefined) {
              for (const name in scripted.headers) reply.header(name, scripted.headers[name]);
            }
            const content = brokenContent(request, controls, body, summary, scripted);
            const sent = sendBrokenBody(request, reply, error.kind, content, random);
            return recordCompletion(request, reply, metrics, sent);
          }
        }
      }
    }

    // Reverse proxy: what no scenario answers goes to the upstream; the faults above already acted
    // (the upstream is never called for an aborted request), those on an answer act on its answer.
    const found = upstreamOf(deps, decided);
    const target = found instanceof Promise ? await found : found;
    if (target !== undefined) {
      if (await forward(target, request, reply, deps, controls, arrived, fault, slow, step)) return UNDER_WAY;
      return;
    }

    let status = step?.status ?? 200;
    const statusFrom = controls.status === undefined ? undefined : originOf(controls, 'status');
    if (
      controls.status !== undefined &&
      fault('status', statusFrom!.control, statusFrom!.source, controls.status)
    ) {
      status = controls.status;
      if (state.fault === 'none' || state.fault === 'delay') state.fault = 'status';
    }
    // A 1xx is sent first, then 200 (and never set as the status: HTTP/2's response refuses it).
    if (status < 200) sendInterim(reply, status);
    reply.code(status < 200 ? 200 : status);
    if (step !== undefined) {
      for (const name in step.headers) reply.header(name, step.headers[name]);
    }
    if (NO_CONTENT_STATUSES.has(reply.statusCode)) {
      // No content may follow 204, 205 or 304: a Content-Length announcing the echo that never comes
      // breaks strict clients (undici fails the response), so send none.
      applyModifiers(reply, controls);
      return underway(reply.send());
    }

    if (controls.responseSize !== undefined) {
      reply.type(controls.contentType ?? contentTypeOf(request, 'application/octet-stream'));
      if (controls.compress === undefined) reply.header('content-length', controls.responseSize);
      // A seeded body's bytes come from the request's source too (its last draw), so they replay.
      const bytes = seed === undefined ? undefined : seededBytes(drawSeed(random));
      return underway(
        send(reply, compression, controls, new RandomBody(controls.responseSize, bytes), slow()),
      );
    }
    if (step !== undefined && step.body !== undefined) {
      reply.type(
        controls.contentType ??
          step.headers['content-type'] ??
          step.headers['Content-Type'] ??
          'text/plain; charset=utf-8',
      );
      return underway(send(reply, compression, controls, step.body, slow()));
    }
    if (body === undefined && (raw.method === 'GET' || raw.method === 'HEAD')) {
      reply.type(controls.contentType ?? 'text/plain; charset=utf-8');
      return underway(
        send(reply, compression, controls, requestSummary(raw, request.ip, protocolOf(request)), slow()),
      );
    }
    reply.type(controls.contentType ?? contentTypeOf(request, 'text/plain'));
    return underway(send(reply, compression, controls, body ?? EMPTY, slow()));
  };

  /**
   * The common case, answered at once (issue #39, item 4): a request with no `X-Echo-*` header to a
   * service with no scenario, no fault of the environment (`ECHO_CHAOS`, `ECHO_LATENCY`, ...), no
   * `ECHO_SEED` and no upstream gets its echo, and nothing else can happen to it. The same answer
   * and history entry the pipeline above would give, without the decision, its closures and its
   * promise (`test/echo/plain-route.test.ts` compares the two).
   */
  const plainService = () =>
    deps.scenarios.size === 0 &&
    config.chaosPercent === 0 &&
    config.faultDefaults === undefined &&
    deps.seeds === undefined &&
    deps.upstream === undefined;
  const plain = (request: FastifyRequest, reply: FastifyReply): void => {
    const raw = request.raw;
    const body = request.body as Buffer | undefined;
    recordHistory(history, request, reply, body, undefined);
    reply.code(200);
    if (body === undefined && (raw.method === 'GET' || raw.method === 'HEAD')) {
      reply.type('text/plain; charset=utf-8');
      send(reply, compression, NO_CONTROLS, requestSummary(raw, request.ip, protocolOf(request)));
      return;
    }
    reply.type(contentTypeOf(request, 'text/plain'));
    send(reply, compression, NO_CONTROLS, body ?? EMPTY);
  };

  // A handler that returns nothing: fastify would adopt the promise of an async one and then look
  // at what it resolved with (settle() does that part here, for what this handler resolves with).
  return function echoRoute(request: FastifyRequest, reply: FastifyReply): void {
    if (plainService() && !hasControlHeader(request.raw.headers)) {
      try {
        plain(request, reply);
      } catch (error) {
        fail(reply, error);
      }
      return;
    }
    echo(request, reply).then(
      (result) => settle(request, reply, result),
      (error: unknown) => fail(reply, error),
    );
  };
}

const EMPTY = Buffer.alloc(0);
/** Statuses whose responses carry no content (RFC 9110 15.3.5, 15.3.6, 15.4.5). */
const NO_CONTENT_STATUSES: ReadonlySet<number> = new Set([204, 205, 304]);

/**
 * Records the request in history. A sent id that another stored entry has is stored suffixed: the
 * client learns its entry's id (`X-Echo-History-Id`).
 */
function recordHistory(
  history: History,
  request: FastifyRequest,
  reply: FastifyReply,
  body: Buffer | undefined,
  bodySize: number | undefined,
): void {
  const raw = request.raw;
  const state = stateOf(request);
  state.historyEntry = history.record({
    requestId: request.id,
    method: raw.method ?? 'GET',
    url: raw.url ?? '/',
    headers: raw.headers,
    body,
    bodySize,
    remoteAddr: request.ip,
    protocol: protocolOf(request),
    // fastify took the id from X-Request-ID when the client sent one, else made a random UUID.
    idMayRepeat: raw.headers['x-request-id'] === request.id,
  });
  const stored = state.historyEntry?.id;
  if (stored !== undefined && stored !== request.id) reply.header('x-echo-history-id', stored);
}

/** The size a streamed body announced (`Content-Length`), else its head's. */
function streamedSize(length: string | undefined, head: Buffer | undefined): number | undefined {
  const announced = length === undefined ? Number.NaN : Number(length);
  return Number.isSafeInteger(announced) ? announced : head?.length;
}

export function protocolOf(request: FastifyRequest): string {
  return `HTTP/${request.raw.httpVersion}`;
}

function contentTypeOf(request: FastifyRequest, fallback: string): string {
  return request.headers['content-type'] ?? fallback;
}

/**
 * The waits of one app's echoed requests (delays, `X-Echo-Error: timeout` and `blackhole`). Each
 * wait is a plain timer and one `close` listener on its response; the drain ends them all through
 * one listener on the drain signal and a set, rather than a listener (and an AbortController) per
 * waiting request, so thousands of concurrent delays cost what their timers cost.
 */
class Waits {
  readonly #pending = new Set<() => void>();
  readonly #drainSignal: AbortSignal;

  constructor(drainSignal: AbortSignal) {
    this.#drainSignal = drainSignal;
    drainSignal.addEventListener(
      'abort',
      () => {
        for (const end of [...this.#pending]) end();
      },
      { once: true },
    );
  }

  /** Waits `ms`, ending early when the client goes away (no work left) or the server drains (answer now). */
  wait(ms: number, reply: FastifyReply): Promise<Outcome> {
    if (this.#drainSignal.aborted) return DONE;
    const res = reply.raw;
    if (res.destroyed || res.writableEnded) return CLIENT_GONE;
    return new Promise<Outcome>((resolve) => {
      // libuv keeps time in whole milliseconds, so a timer can fire up to 1 ms before `ms` have
      // passed on a finer clock (10ms measured as 9.3): an injected delay is never shorter than
      // asked, so a timer that fired early waits out the rest.
      const due = performance.now() + ms;
      const finish = (outcome: Outcome) => {
        clearTimeout(timer);
        res.removeListener('close', onClose);
        this.#pending.delete(onEnd);
        resolve(outcome);
      };
      const onClose = () => finish('client-gone');
      const onEnd = () => finish('done');
      const onTimer = () => {
        const left = due - performance.now();
        if (left > 0) timer = setTimeout(onTimer, Math.ceil(left));
        else onEnd();
      };
      let timer = setTimeout(onTimer, ms);
      res.on('close', onClose);
      this.#pending.add(onEnd);
    });
  }
}

const DONE: Promise<Outcome> = Promise.resolve('done');
const CLIENT_GONE: Promise<Outcome> = Promise.resolve('client-gone');

/** The modifiers every pipeline response gets: content type, set and echoed headers, compression. */
function applyModifiers(reply: FastifyReply, controls: Controls): void {
  if (controls.setHeaders !== undefined) {
    for (const [name, value] of controls.setHeaders) reply.header(name, value);
  }
  if (controls.echoHeaders !== undefined) {
    const headers = reply.request.headers;
    for (const name of controls.echoHeaders) {
      // Own properties only: `X-Echo-Headers: constructor` must not echo Object's.
      const value = Object.hasOwn(headers, name) ? headers[name] : undefined;
      if (value !== undefined) reply.header(`X-Echoed-${dashCase(name)}`, value);
    }
  }
}

function send(
  reply: FastifyReply,
  compression: CompressionSlots,
  controls: Controls,
  body: string | Buffer | RandomBody | Readable,
  shaper?: ShapingStream,
  ownAnswer = true,
): FastifyReply {
  applyModifiers(reply, controls);
  // Retry-After, one rule: `X-Echo-Retry-After` when sent, else 1 s on every 429 and 503 the echo
  // answers on purpose (an error, a status, chaos, a scenario that sets none of its own). An
  // upstream's own answer keeps what the upstream said.
  if (controls.retryAfter !== undefined) reply.header('retry-after', controls.retryAfter);
  else if (
    ownAnswer &&
    (reply.statusCode === 429 || reply.statusCode === 503) &&
    !reply.hasHeader('retry-after')
  )
    reply.header('retry-after', '1');
  // A 408 says the server gave up on the connection (RFC 9110 15.5.9): it announces the close and
  // closes, whoever asked for it (an error fault, a chaos draw, a status, a scenario).
  if (reply.statusCode === 408 && reply.request.raw.httpVersionMajor === 1)
    reply.header('connection', 'close');
  if (controls.compress === undefined && shaper === undefined) {
    // A short text answer goes as a string when fastify sends one untouched: node writes a string
    // with the response's head in one `write`, where bytes go as a second piece of a `writev`
    // (several µs a request, bench/README.md). Otherwise as bytes, below.
    const text = asText(body);
    if (text !== undefined && sentAsIs(reply.getHeader('content-type'))) return reply.send(text);
  }
  // As bytes: fastify would append `; charset=utf-8` to a JSON-like type given with a string, and
  // X-Echo-Content-Type (or a scenario's Content-Type) must reach the client exactly as asked.
  const payload = typeof body === 'string' ? Buffer.from(body) : body;
  if (controls.compress === undefined) {
    if (shaper === undefined) {
      if (payload instanceof RandomBody) recycleOnPlainSocket(reply, payload);
      return reply.send(payload);
    }
    // Shaped, the body is a stream; it keeps the length it would have had.
    if (Buffer.isBuffer(payload)) reply.header('content-length', payload.length);
    return reply.send(shapeBody(reply, payload, shaper));
  }
  const zip = compressor(controls.compress, compression);
  reply.header('content-encoding', controls.compress);
  // Append: CORS has already put `Origin` there, and a cache must keep varying on it.
  const vary = reply.getHeader('vary');
  reply.header(
    'vary',
    vary === undefined ? 'X-Echo-Compress' : `${[vary].flat().join(', ')}, X-Echo-Compress`,
  );
  reply.removeHeader('content-length');
  if (Buffer.isBuffer(payload)) zip.end(payload);
  else payload.pipe(zip);
  // Shaped after compression: a throttle limits the bytes on the wire.
  return reply.send(shaper === undefined ? zip : shapeBody(reply, zip, shaper));
}

/**
 * Lets a generated body reuse its chunks when it goes straight to an HTTP/1.1 response on a plain
 * TCP socket, the one path where `writableLength` (the response's buffer and its socket's) counts
 * every byte not yet handed to the kernel. TLS and HTTP/2 keep data in buffers of their own, and a
 * compressor or a throttle holds chunks in between: those keep a new buffer per chunk.
 */
function recycleOnPlainSocket(reply: FastifyReply, body: RandomBody): void {
  const res = reply.raw;
  if (!(res instanceof ServerResponse) || res.socket instanceof TLSSocket) return;
  body.recycleWhen(() => res.writableLength === 0);
}

/**
 * Forwards the request to the upstream and answers with the upstream's answer, streamed (`false`:
 * the client left first and nothing is sent), with the
 * faults that act on an answer: `X-Echo-Status` (and its sources) replaces the status; set headers,
 * the content type, compression (unless the upstream encoded its body) and slow bodies apply. A
 * failed forward is answered 502 or 504, naming the upstream and the cause. The upstream's
 * side (its status and own time, or the failure) goes in the history entry and its own meters.
 */
async function forward(
  upstream: Upstream,
  request: FastifyRequest,
  reply: FastifyReply,
  deps: PipelineDeps,
  controls: Controls,
  body: Buffer | StreamedBody | undefined,
  fault: ApplyFault,
  slow: () => ShapingStream | undefined,
  step: ScenarioStep | undefined,
): Promise<boolean> {
  const answer = await callUpstream(upstream, request, reply, deps, body);
  if (answer === undefined || answer === 'answered') return answer === 'answered';
  return answerWith(answer, request, reply, deps.compression, controls, fault, slow, step);
}

/**
 * Where a request is forwarded: its scenario's `upstream`, else (no scenario answers it)
 * `ECHO_UPSTREAM`'s; `undefined`: it is answered here. A promise only for a scenario's upstream, so
 * a request that forwards nowhere awaits nothing.
 */
function upstreamOf(
  deps: PipelineDeps,
  decided: Pick<FaultDecision, 'step' | 'route'>,
): Upstream | Promise<Upstream> | undefined {
  const to = forwardTo(decided);
  if (to === 'default') return deps.upstream;
  return to === undefined || deps.upstreams === undefined ? undefined : deps.upstreams.get(to);
}

/**
 * Calls the upstream. Resolves with its answer (head, and its body not yet read); `'answered'` when
 * it failed and the 502 or 504 naming it was sent; `undefined` when the client left first.
 */
async function callUpstream(
  upstream: Upstream,
  request: FastifyRequest,
  reply: FastifyReply,
  deps: PipelineDeps,
  body: Buffer | StreamedBody | undefined,
): Promise<UpstreamAnswer | 'answered' | undefined> {
  const leaving = new AbortController();
  const res = reply.raw;
  const onClose = () => leaving.abort();
  res.once('close', onClose);
  // undici checks its own head timeout about once a second: this timer holds ECHO_UPSTREAM_TIMEOUT
  // to the millisecond (undici's stays, as a backstop).
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    leaving.abort();
  }, upstream.settings.timeoutMs);
  const outcome: UpstreamOutcome = { url: upstream.label, status: null, duration_ms: null };
  const entry = stateOf(request).historyEntry;
  if (entry !== undefined) entry.upstream = outcome;
  const started = performance.now();
  let answer: UpstreamAnswer;
  try {
    answer = await upstream.forward(request, body, leaving.signal);
  } catch (error) {
    clearTimeout(timer);
    res.removeListener('close', onClose);
    if (leaving.signal.aborted && !timedOut) {
      abandon(request, reply, deps);
      return undefined;
    }
    const failure = timedOut ? upstream.timedOut() : isEchoError(error) ? error : upstream.failure(error);
    outcome.error = failure.message;
    outcome.duration_ms = Math.round(performance.now() - started);
    deps.metrics.upstreamAnswered('error', 0);
    // The access line says 502 or 504; this line says why, as a proxy's error log does.
    request.log.warn(
      { upstream: upstream.label, code: failure.code, cause: failure.message },
      'upstream failed',
    );
    // An upstream that is down is an answer of this service (502, 504), not one of its own errors:
    // sent here, in the JSON error shape, rather than thrown past obs's exception handler.
    reply
      .code(failure.statusCode)
      .type('application/json; charset=utf-8')
      .send(errorBody(failure.code, failure.message, request.id));
    return 'answered';
  }
  clearTimeout(timer);
  outcome.status = answer.status;
  outcome.duration_ms = Math.round(answer.headMs);
  deps.metrics.upstreamAnswered(answer.status, answer.headMs / 1000);
  // From here fastify ends the body's stream when the client leaves.
  res.removeListener('close', onClose);
  // A body that fails once the head has gone (a stall past ECHO_UPSTREAM_TIMEOUT, a reset): the
  // client's connection ends, as a proxy's does; history keeps the answer's status and the cause.
  answer.body.once('error', (error: Error) => {
    outcome.error = upstream.failure(error).message;
    if (res.headersSent) recordCompletion(request, reply, deps.metrics, reply.statusCode);
  });
  return answer;
}

/** Answers with the upstream's answer and the faults that act on an answer (see {@link forward}). */
function answerWith(
  answer: UpstreamAnswer,
  request: FastifyRequest,
  reply: FastifyReply,
  compression: CompressionSlots,
  controls: Controls,
  fault: ApplyFault,
  slow: () => ShapingStream | undefined,
  step: ScenarioStep | undefined,
): boolean {
  // A forwarding scenario's response gives its status (when it has one) and adds its headers.
  let status = step?.status ?? answer.status;
  let injected = step?.status !== undefined;
  if (controls.status !== undefined) {
    const from = originOf(controls, 'status');
    if (fault('status', from.control, from.source, controls.status)) {
      status = controls.status;
      injected = true;
      const state = stateOf(request);
      if (state.fault === 'none' || state.fault === 'delay') state.fault = 'status';
    }
  }
  if (status < 200) sendInterim(reply, status);
  reply.code(status < 200 ? 200 : status);
  for (const name in answer.headers) reply.header(name, answer.headers[name]);
  if (step !== undefined) for (const name in step.headers) reply.header(name, step.headers[name]);
  if (controls.contentType !== undefined) reply.type(controls.contentType);
  if (NO_CONTENT_STATUSES.has(reply.statusCode) || request.raw.method === 'HEAD') {
    answer.body.resume();
    applyModifiers(reply, controls);
    reply.send();
    return true;
  }
  // An answer the upstream already encoded is not encoded again.
  const own =
    answer.headers['content-encoding'] === undefined ? controls : { ...controls, compress: undefined };
  // A short body that has already arrived whole goes with the head in one piece (see `send`);
  // one still arriving is piped as it comes.
  const whole = arrivedWhole(answer);
  if (whole !== undefined) {
    answer.body.resume();
    send(reply, compression, own, whole, slow(), injected);
    return true;
  }
  // The head goes as soon as fastify pipes the body, not with its first byte: a body that then fails
  // ends a started answer, never one fastify's error handling would answer as its own 500.
  if (answer.body.readableLength === 0 && !answer.body.readableEnded) {
    reply.raw.once('pipe', () => reply.raw.flushHeaders());
  }
  send(reply, compression, own, answer.body, slow(), injected);
  return true;
}

/**
 * The upstream's body, taken from its stream, when it has a `Content-Length` of at most 16 KiB and
 * every byte of it has already arrived (a small answer usually comes in the head's packet);
 * undefined otherwise, and the stream is left as it was.
 */
export function arrivedWhole(answer: Pick<UpstreamAnswer, 'headers' | 'body'>): Buffer | undefined {
  const announced = answer.headers['content-length'];
  if (typeof announced !== 'string') return undefined;
  const length = Number(announced);
  if (!(length > 0 && length <= TEXT_BODY_MAX_BYTES) || answer.body.readableLength !== length)
    return undefined;
  const bytes: unknown = answer.body.read(length);
  if (Buffer.isBuffer(bytes) && bytes.length === length) return bytes;
  if (Buffer.isBuffer(bytes)) answer.body.unshift(bytes);
  return undefined;
}

/** The most of an upstream's answer `truncate` and `malformed` read before breaking it: 16 MiB. */
export const MAX_BROKEN_UPSTREAM_BYTES = 16 * 1024 * 1024;

/**
 * An upstream's answer as the answer `truncate` or `malformed` breaks: its status, its headers
 * (without `Content-Length`, which the break sets) and its body, read up to
 * {@link MAX_BROKEN_UPSTREAM_BYTES} (a longer one is broken as if it were that long).
 */
async function upstreamToBreak(answer: UpstreamAnswer): Promise<ScriptedAnswer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of answer.body) {
    const piece = chunk as Buffer;
    chunks.push(piece.subarray(0, MAX_BROKEN_UPSTREAM_BYTES - size));
    size += piece.length;
    if (size >= MAX_BROKEN_UPSTREAM_BYTES) {
      answer.body.destroy();
      break;
    }
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(answer.headers)) {
    if (name !== 'content-length') headers[name] = [value].flat().join(', ');
  }
  return { status: answer.status, body: Buffer.concat(chunks), headers };
}

/** An injected failure: plain text, as if someone else's server had failed. */
function sendFault(
  reply: FastifyReply,
  compression: CompressionSlots,
  controls: Controls,
  status: number,
  kind: string,
  shaper: ShapingStream | undefined,
): FastifyReply {
  reply.code(status);
  reply.type(controls.contentType ?? 'text/plain; charset=utf-8');
  return send(
    reply,
    compression,
    controls,
    `${status} ${STATUS_CODES[status] ?? 'Error'} (injected by echo-chaos: ${kind})\n`,
    shaper,
  );
}

/** A 1xx answer is sent as an interim response; the request is then answered with 200. */
function sendInterim(reply: FastifyReply, status: number): void {
  const res = reply.raw;
  // HTTP/2 sends any 1xx as an informational HEADERS frame (its response has no writeProcessing).
  const stream = http2StreamOf(res);
  if (stream !== undefined) stream.additionalHeaders({ ':status': status });
  else if (status === 100) res.writeContinue();
  else if (status === 102) res.writeProcessing();
  else {
    // 103 too: writeEarlyHints writes nothing at all unless it is given a Link header.
    // node's internal `_writeRaw`, with which writeContinue and writeProcessing write theirs.
    (res as ServerResponse & { _writeRaw?(s: string, e: string): void })._writeRaw?.(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Informational'}\r\n\r\n`,
      'latin1',
    );
  }
}

/** The client left during a wait: stop here, record it, send nothing. */
/**
 * What the echo handler resolves with once its answer is sent or under way: never the reply itself,
 * which is a thenable, so an async function returning it adopts it and waits for the response to end
 * (an `eos` on it: listeners and closures for every streamed answer, a microtask for every other).
 */
const UNDER_WAY = Symbol('echo-chaos.under-way');

/** {@link UNDER_WAY}, once `reply` (sent, streaming, or to be sent by fastify's hooks) is on its way. */
function underway(_reply: FastifyReply): typeof UNDER_WAY {
  return UNDER_WAY;
}

/**
 * After the echo handler: what fastify does after an async handler (its `wrap-thenable.js`), for a
 * handler that answers through `reply` itself. {@link UNDER_WAY} says its answer is on its way (a
 * stream, sent as it comes); having sent or hijacked it says so too. A handler that returned with
 * nothing sent would leave the request hanging: it gets fastify's empty answer, as before.
 */
function settle(request: FastifyRequest, reply: FastifyReply, result: unknown): void {
  if (result === UNDER_WAY || reply.sent || reply.raw.headersSent) return;
  const socket = request.raw.socket;
  if (result === undefined && (request.raw.aborted || socket === null || socket.destroyed)) return;
  try {
    reply.send(result);
  } catch (error) {
    reply.send(error instanceof Error ? error : new Error(String(error)));
  }
}

/** A failed echo handler: its error answered through fastify's error handling, as an async handler's is. */
function fail(reply: FastifyReply, error: unknown): void {
  if (reply.sent) {
    reply.log.error({ err: error }, 'Promise errored, but reply.sent = true was set');
    return;
  }
  reply.send(error instanceof Error ? error : new Error(String(error)));
}

function abandon(request: FastifyRequest, reply: FastifyReply, deps: PipelineDeps): void {
  reply.hijack();
  recordCompletion(request, reply, deps.metrics, CLIENT_CLOSED_STATUS);
}

/**
 * Ends a request's connection with no response: `reset` (TCP RST), `close` (FIN), and `blackhole`
 * at the end of its hold (FIN: the connection a silent server gives up on). Recorded as status 0.
 */
function endWithoutResponse(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: PipelineDeps,
  kind: 'reset' | 'close' | 'blackhole',
): void {
  reply.hijack();
  const stream = http2StreamOf(request.raw);
  if (stream !== undefined) {
    // HTTP/2: the connection carries other streams. `reset` resets this stream (RST_STREAM);
    // `close` ends the session (GOAWAY, then the connection closes), as closing an HTTP/1.1 one does.
    // `blackhole` held only its own stream silent, and ends only it (RST_STREAM(NO_ERROR), as the
    // request timeout of a stream does): the other streams were answered all along.
    if (kind === 'reset') stream.close(http2Constants.NGHTTP2_INTERNAL_ERROR);
    else if (kind === 'blackhole') stream.close(http2Constants.NGHTTP2_NO_ERROR);
    else stream.session?.destroy();
  } else {
    const socket = request.raw.socket;
    if (kind === 'reset') socket.resetAndDestroy();
    else socket.destroySoon();
  }
  recordCompletion(request, reply, deps.metrics, NO_RESPONSE_STATUS);
}

/** Bodies up to this size are sent as text when they are ASCII (see `asText`). */
const TEXT_BODY_MAX_BYTES = 16 * 1024;

/**
 * `body` as a string that is written as the same bytes: a string as it is, a short ASCII buffer as
 * its characters (one byte each in any encoding); undefined for anything else.
 */
export function asText(body: unknown): string | undefined {
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body) && body.length <= TEXT_BODY_MAX_BYTES && isAscii(body))
    return body.toString('latin1');
  return undefined;
}

/**
 * Whether fastify sends a string body under this `Content-Type` exactly as given (fastify's
 * `reply.send`): not when there is none or fastify cannot parse it (it sets a type of its own),
 * nor for a JSON-like type (it may append `; charset=utf-8`). The answer for the last type asked
 * is kept: a server sends the same few types again and again.
 */
export function sentAsIs(contentType: unknown): boolean {
  if (typeof contentType !== 'string') return false;
  if (contentType === lastType.type) return lastType.asIs;
  const semi = contentType.indexOf(';');
  const media = (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  // A media type as fastify's `ContentType` accepts one: a token, a slash, a token.
  const slash = media.indexOf('/');
  const asIs =
    slash > 0 &&
    TOKEN.test(media.slice(0, slash)) &&
    TOKEN.test(media.slice(slash + 1)) &&
    !media.includes('json');
  lastType = { type: contentType, asIs };
  return asIs;
}
let lastType = { type: '', asIs: false };
