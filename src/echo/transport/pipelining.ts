import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

// Pipelined HTTP/1.1 requests a client sends without reading the answers
// (docs/adr/0030-pipelined-requests.md). Node parses a whole read (up to 64 KiB, a thousand small
// requests) before it pauses a connection, and hands every request to the app at once: each starts
// its response, and those queued behind an unread one buffer their bytes. Here at most
// `MAX_PIPELINED_IN_FLIGHT` requests of a connection are being answered at once; the rest wait, as
// the bare IncomingMessage and ServerResponse that node made, with no work started, and the
// connection stops reading until its answers are taken. A connection that closes drops its waiting
// requests unanswered: nobody is left to read them.

/** Requests of one HTTP/1.1 connection being answered at once; more wait their turn unstarted. */
export const MAX_PIPELINED_IN_FLIGHT = 16;
/**
 * Requests of one connection waiting for their turn at most. Pausing stops the reading only after
 * the read in progress: one 64 KiB read holds up to 3,600 small requests (about 3.5 KiB of memory
 * each, node's request and response objects). A client past this sends far more than it reads; its
 * connection is closed, which frees them. Not lower: closing a connection costs node about 35 µs
 * for each request it had parsed on it (see `closeSoon`), so a bound that closes every flood of a
 * few hundred requests costs more of the event loop than the memory it saves (8 connections of
 * 500 unread requests: `/health` 125-190 ms with 256, under 90 ms with 512).
 */
export const MAX_PIPELINED_WAITING = 512;

interface ConnectionTurns {
  readonly socket: Socket;
  inFlight: number;
  /** Requests received and not started yet, oldest first: request, response, request, ... */
  readonly waiting: Array<IncomingMessage | ServerResponse | undefined>;
  /** Index of the oldest waiting request in `waiting` (shifting an array per request is quadratic). */
  head: number;
  /** Whether this paused the connection (and so resumes it). */
  paused: boolean;
  /** Past `maxWaiting`: the connection is to be closed, and none of its requests starts any more. */
  closing: boolean;
}

/**
 * `handler` for HTTP/1.1 requests taken in turns per connection: a request starts when fewer than
 * `maxInFlight` of its connection's are being answered, in the order received; while any wait, the
 * connection is paused (node's own pause resumes it only when its queued output has drained, and
 * this one only when every waiting request has started), and past `maxWaiting` waiting it is closed. HTTP/2 requests go straight through: their
 * streams are bounded by `SETTINGS_MAX_CONCURRENT_STREAMS` and HTTP/2's flow control.
 */
export function takeTurns(
  handler: RequestListener,
  maxInFlight = MAX_PIPELINED_IN_FLIGHT,
  maxWaiting = MAX_PIPELINED_WAITING,
): RequestListener {
  const turnsBySocket = new WeakMap<Socket, ConnectionTurns>();

  // One listener for every response (`this` is the response): no closure per request. 'close' comes
  // once for every response: answered, failed, or its connection gone.
  const closed = function (this: ServerResponse) {
    const turns = turnsBySocket.get(this.req.socket);
    if (turns === undefined) return;
    turns.inFlight--;
    if (turns.head < turns.waiting.length || turns.paused) next(turns);
  };

  const start = (turns: ConnectionTurns, request: IncomingMessage, response: ServerResponse) => {
    turns.inFlight++;
    response.on('close', closed);
    handler(request, response);
  };

  const next = (turns: ConnectionTurns) => {
    if (turns.closing) return;
    if (turns.socket.destroyed) return drop(turns);
    while (turns.inFlight < maxInFlight && turns.head < turns.waiting.length) {
      const request = turns.waiting[turns.head] as IncomingMessage;
      const response = turns.waiting[turns.head + 1] as ServerResponse;
      turns.waiting[turns.head] = turns.waiting[turns.head + 1] = undefined;
      turns.head += 2;
      start(turns, request, response);
    }
    if (turns.head < turns.waiting.length) return;
    turns.waiting.length = 0;
    turns.head = 0;
    if (!turns.paused) return;
    turns.paused = false;
    turns.socket.resume();
  };

  return (request, response) => {
    if (request.httpVersionMajor !== 1) return void handler(request, response);
    const socket = request.socket;
    let turns = turnsBySocket.get(socket);
    if (turns === undefined) {
      const created: ConnectionTurns = {
        socket,
        inFlight: 0,
        waiting: [],
        head: 0,
        paused: false,
        closing: false,
      };
      turns = created;
      turnsBySocket.set(socket, created);
      socket.once('close', () => drop(created));
      withoutAbortTraces(socket);
      // Node resumes a connection it paused once its queued output has drained, which says nothing
      // of the requests waiting here: while any wait, it stays paused.
      socket.on('resume', () => {
        if (created.paused) socket.pause();
      });
    }
    if (turns.closing) return;
    if (turns.inFlight < maxInFlight && turns.head === turns.waiting.length) {
      return void start(turns, request, response);
    }
    if (turns.waiting.length - turns.head >= 2 * maxWaiting) {
      turns.closing = true;
      turns.waiting.length = 0;
      turns.head = 0;
      socket.pause();
      return closeSoon(socket);
    }
    turns.waiting.push(request, response);
    if (turns.paused) return;
    turns.paused = true;
    socket.pause();
  };
}

/**
 * Connections past `maxWaiting`, closed one a turn of the event loop. Closing one makes node end
 * each request it had parsed on it with an error (a stack trace captured for each, about 35 µs):
 * the read that took a connection past the bound holds hundreds, and several connections at once
 * closed in the turn that parsed them held `/health` 140 to 190 ms.
 */
const closingSockets: (Socket | undefined)[] = [];
let closingHead = 0;
let closingScheduled = false;

function closeSoon(socket: Socket): void {
  closingSockets.push(socket);
  if (closingScheduled) return;
  closingScheduled = true;
  setImmediate(closeNext);
}

function closeNext(): void {
  closingScheduled = false;
  const socket = closingSockets[closingHead]!;
  closingSockets[closingHead++] = undefined;
  if (closingHead === closingSockets.length) {
    closingSockets.length = 0;
    closingHead = 0;
  } else {
    closingScheduled = true;
    setImmediate(closeNext);
  }
  socket.destroy();
}

/**
 * When a connection ends or closes, node ends every request it parsed on it and has not answered
 * (`abortIncoming` in node's `_http_server.js`) with an error of its own making, `new
 * ConnResetException('aborted')`, whose stack trace V8 captures: about 35 µs a request, so 8
 * connections of 500 unread requests a client drops at once held the event loop 50 ms, 144 ms in a
 * soak. The trace of those errors says only that node aborted them. So the connection's own `end` and
 * `close` run node's listeners with `Error.stackTraceLimit` at 0 (a listener put before node's sets
 * it, one after node's puts it back, a microtask too, in case a listener between throws): the errors
 * keep their message, code and name, without a trace (50 ms became 11 to 21 ms).
 */
function withoutAbortTraces(socket: Socket): void {
  for (const event of ['end', 'close'] as const) {
    socket.prependListener(event, quietTraces);
    socket.on(event, restoreTraces);
  }
}

let savedTraceLimit: number | undefined;

function quietTraces(): void {
  if (savedTraceLimit !== undefined) return;
  savedTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  queueMicrotask(restoreTraces);
}

function restoreTraces(): void {
  if (savedTraceLimit === undefined) return;
  Error.stackTraceLimit = savedTraceLimit;
  savedTraceLimit = undefined;
}

/** A closed connection's waiting requests are never started. */
function drop(turns: ConnectionTurns): void {
  turns.waiting.length = 0;
  turns.head = 0;
  turns.paused = false;
}
