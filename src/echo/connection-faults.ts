/**
 * The answer of `X-Echo-Error: slow-close` (docs/adr/0035-slow-close-and-blackhole.md): the
 * request is answered as usual, whole, and then its connection stays open, silent, for
 * `ECHO_ERROR_TIMEOUT` before it closes, as a server (or a proxy such as toxiproxy's `slow_close`)
 * that is slow to close does. A client that trusts the framing is done at the last byte; one that
 * reads until the connection closes, or holds a resource until it does, waits.
 *
 * Node closes a connection whose response says `Connection: close` as soon as that response ends,
 * and fastify ends every response right after its last byte; neither has a way to keep it open. So
 * this is the last onSend hook of the echo: when the request's ledger says `slow-close` was applied,
 * it takes the finished answer (headers, status, the payload every other hook has seen) and sends
 * it itself, through node's public response API, ending the response only after the wait.
 * `X-Echo-Error: blackhole` needs no sender: it never answers (the pipeline holds it).
 */
import type { OutgoingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { wasApplied } from './applied.ts';
import { recordCompletion } from './completion.ts';
import type { EchoMetrics } from './metrics.ts';
import { stateOf } from './request-state.ts';

/** What the slow-close sender needs from the app. */
export interface SlowCloseDeps {
  /** How long the connection stays open after the answer: `ECHO_ERROR_TIMEOUT`, in ms. */
  readonly lingerMs: number;
  readonly metrics: EchoMetrics;
  /** The drain deadline: when it is aborted, a waiting connection closes at once. */
  readonly drainSignal: AbortSignal;
}

type OnSendDone = (error: Error | null, payload?: unknown) => void;

/**
 * The onSend hook that sends a `slow-close` answer; any other answer passes through untouched.
 * Register it last on the echo routes, so the answer it sends is the one every other hook made.
 */
export function createSlowCloseSender(deps: SlowCloseDeps) {
  return function sendSlowClose(
    request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    done: OnSendDone,
  ): void {
    if (!wasApplied(stateOf(request), 'slow-close')) {
      done(null, payload);
      return;
    }
    // `done` is not called: fastify would end the response, and with it the connection.
    answerThenLinger(request, reply, payload, deps);
  };
}

/** Statuses whose answer carries no content, so no length (RFC 9110 8.6, as fastify sends them). */
const NO_CONTENT = new Set([204, 304]);

/**
 * Sends the answer, then ends the response `lingerMs` after its last byte has left (at once when
 * the drain deadline passes; never when the client has gone). Over HTTP/1.1 the answer says
 * `Connection: close` (node closes the connection when the response ends): a server that means to
 * close says so, and a client does not send another request on a connection about to go. Over
 * HTTP/2 there is no such header: the stream's end (END_STREAM) is what waits, other streams of the
 * session go on. The request is recorded, with its status, when its answer is whole: the client
 * that then leaves, as most do, got everything.
 */
function answerThenLinger(
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
  deps: SlowCloseDeps,
): void {
  reply.hijack();
  const res = reply.raw;
  const signal = deps.drainSignal;
  const status = reply.statusCode;
  const source = isReadable(payload) ? payload : undefined;
  const bytes = source === undefined ? asBuffer(payload) : undefined;

  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  const end = () => {
    clearTimeout(timer);
    timer = undefined;
    signal.removeEventListener('abort', end);
    if (!closed && !res.writableEnded) res.end();
  };
  res.once('close', () => {
    closed = true;
    source?.destroy();
    end();
  });
  const linger = () => {
    if (closed) return;
    // A body-less answer (HEAD, 204, 304) has sent nothing yet: its head goes now, not at the close
    // (`headersSent` says only that the head is made). Once sent, this writes nothing.
    res.flushHeaders();
    recordCompletion(request, reply, deps.metrics);
    if (signal.aborted) return end();
    signal.addEventListener('abort', end, { once: true });
    // A timer may fire up to 1 ms early (libuv's whole milliseconds): the wait is never shorter.
    const due = performance.now() + deps.lingerMs;
    const onTimer = () => {
      const left = due - performance.now();
      if (left > 0) timer = setTimeout(onTimer, Math.ceil(left));
      else end();
    };
    timer = setTimeout(onTimer, deps.lingerMs);
  };

  res.writeHead(status, answerHeaders(request, reply, status, bytes));
  if (source !== undefined) {
    source.once('error', () => res.destroy());
    source.once('end', () => afterWrites(res, linger));
    source.pipe(res, { end: false });
  } else {
    if (bytes !== undefined && bytes.length > 0) res.write(bytes);
    afterWrites(res, linger);
  }
}

/** The reply's headers as fastify would send them, and the framing a slow close needs. */
function answerHeaders(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  bytes: Buffer | undefined,
): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) headers[name] = value;
  }
  if (status === 204) {
    delete headers['content-type'];
    delete headers['content-length'];
  } else if (bytes !== undefined && !NO_CONTENT.has(status) && headers['content-length'] === undefined) {
    // A length, so the answer is whole at its last byte, before the close.
    headers['content-length'] = bytes.length;
  }
  if (request.raw.httpVersionMajor === 1) headers.connection = 'close';
  return headers;
}

/** Calls `then` once what was written has left the response's buffer (the client has it or soon will). */
function afterWrites(res: FastifyReply['raw'], then: () => void): void {
  if (res.writableNeedDrain) res.once('drain', then);
  else then();
}

function isReadable(payload: unknown): payload is Readable {
  return typeof (payload as { pipe?: unknown } | null)?.pipe === 'function';
}

function asBuffer(payload: unknown): Buffer {
  if (payload === undefined || payload === null) return EMPTY;
  return Buffer.isBuffer(payload) ? payload : Buffer.from(String(payload));
}

const EMPTY = Buffer.alloc(0);
