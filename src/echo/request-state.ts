/**
 * What the echo service keeps of one request, in one typed object (fastify keeps its own per-request
 * state behind symbols the same way): the faults applied so far, the meters' fault label, the
 * history entry, whether its completion was recorded, what the access log needs. Made on first use,
 * so a request fastify answers before any hook of ours ran (a bad URL, a 404) still has one.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RequestFaults } from './applied.ts';
import type { HistoryEntry } from './history.ts';
import type { EchoFault } from './metrics.ts';

/** A body as it appears in a log line: text cut to `MAX_LOG_BODY_SIZE`. */
export interface LoggedBody {
  readonly text: string;
  readonly size: number | null;
  readonly truncated: boolean;
}

export class EchoRequestState {
  /** The faults applied so far (`undefined`: none was asked for). */
  faults: RequestFaults | undefined = undefined;
  /** Whether the request asked for `X-Echo-Applied` (`X-Echo-Explain: true`). */
  explain = false;
  /** What fault injection did to the answer (`none`: nothing): the meters' `fault` label. */
  fault: EchoFault = 'none';
  /** The history entry of the request, completed when the response ends. */
  historyEntry: HistoryEntry | undefined = undefined;
  /** Whether the completion (meters, history) was recorded: once per request. */
  recorded = false;
  /** The response body as logged (already cut to MAX_LOG_BODY_SIZE), set by the onSend hook. */
  loggedResponseBody: LoggedBody | undefined = undefined;
  /** The client address as it was when the request arrived (set when a request line is logged). */
  remote: string | undefined = undefined;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Read it through {@link stateOf}. */
    echoState: EchoRequestState | null;
  }
}

/** Declares the one per-request slot; before any hook that reads it. */
export function registerRequestState(app: FastifyInstance): void {
  app.decorateRequest('echoState', null);
}

/** The request's state, made on first use. */
export function stateOf(request: FastifyRequest): EchoRequestState {
  let state = request.echoState;
  // Undefined too: a request of a plugin context made before the decoration has no slot of its own.
  if (state == null) {
    state = new EchoRequestState();
    request.echoState = state;
  }
  return state;
}
