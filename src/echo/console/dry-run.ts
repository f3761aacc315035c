/**
 * The console's dry run (issue #37, "which scenario matches this request?"): a request described
 * in JSON, read into what scenarios match on, and the store's answer ({@link ScenarioStore.peek}),
 * which moves nothing. Each part of the description is bounded; a description not in its form is
 * a 400 `ECHO_ERR_INVALID_CONSOLE_REQUEST` naming the part.
 */
import type { ScenarioPeek, ScenarioRequest, ScenarioStore } from '../../scenario/index.ts';
import { isSessionId, SESSION_FORM } from '../controls.ts';
import { EchoError } from '../errors.ts';
import { TOKEN } from '../http-grammar.ts';

/** Longest path (with its query) a description may give, in characters. */
export const MAX_DRY_RUN_PATH_CHARS = 8192;
/** Most headers a description may give. */
export const MAX_DRY_RUN_HEADERS = 100;
/** Longest header value, in characters. */
export const MAX_DRY_RUN_HEADER_CHARS = 8192;
/** Longest body, in characters: scenarios match on the first 64 KiB of a body at most. */
export const MAX_DRY_RUN_BODY_CHARS = 64 * 1024;

const FORM =
  'expected {"path": "/...", "method"?: "GET", "headers"?: {"name": "value"}, "query"?: "a=1&b=2", "body"?: "..."}';

function invalid(problem: string): EchoError {
  return new EchoError('ECHO_ERR_INVALID_CONSOLE_REQUEST', [`${problem} (${FORM})`]);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A described request, and its session (`X-Echo-Session` among its headers). */
export interface DryRunRequest {
  readonly request: ScenarioRequest;
  readonly session: string | undefined;
}

/** Reads a description; throws the 400 naming the first part not in its form. */
export function readDryRunRequest(body: unknown): DryRunRequest {
  if (!isPlainObject(body)) throw invalid('the body must be a JSON object');
  const unknown = Object.keys(body).filter(
    (k) => !['method', 'path', 'headers', 'query', 'body'].includes(k),
  );
  if (unknown.length > 0) {
    throw invalid(`unknown field ${JSON.stringify(unknown[0]).slice(0, 100)}`);
  }
  const method = body['method'] ?? 'GET';
  if (typeof method !== 'string' || !TOKEN.test(method) || method.length > 32) {
    throw invalid('method must be an HTTP method (a token of at most 32 characters)');
  }
  const url = body['path'];
  if (typeof url !== 'string' || !url.startsWith('/') || url.length > MAX_DRY_RUN_PATH_CHARS) {
    throw invalid(`path must be a string starting with / of at most ${MAX_DRY_RUN_PATH_CHARS} characters`);
  }
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  let query = q === -1 ? '' : url.slice(q + 1);
  const givenQuery = body['query'];
  if (givenQuery !== undefined) {
    if (typeof givenQuery !== 'string' || givenQuery.length > MAX_DRY_RUN_PATH_CHARS) {
      throw invalid(`query must be a string of at most ${MAX_DRY_RUN_PATH_CHARS} characters`);
    }
    const extra = givenQuery.startsWith('?') ? givenQuery.slice(1) : givenQuery;
    query = query === '' ? extra : extra === '' ? query : `${query}&${extra}`;
  }
  const headers: Record<string, string> = {};
  const givenHeaders = body['headers'] ?? {};
  if (!isPlainObject(givenHeaders)) throw invalid('headers must be an object of names to values');
  const entries = Object.entries(givenHeaders);
  if (entries.length > MAX_DRY_RUN_HEADERS) throw invalid(`at most ${MAX_DRY_RUN_HEADERS} headers`);
  for (const [name, value] of entries) {
    if (!TOKEN.test(name)) throw invalid(`header name ${JSON.stringify(name).slice(0, 100)} is not a token`);
    if (typeof value !== 'string' || value.length > MAX_DRY_RUN_HEADER_CHARS) {
      throw invalid(`header ${name} must be a string of at most ${MAX_DRY_RUN_HEADER_CHARS} characters`);
    }
    headers[name.toLowerCase()] = value;
  }
  const text = body['body'];
  if (text !== undefined && (typeof text !== 'string' || text.length > MAX_DRY_RUN_BODY_CHARS)) {
    throw invalid(`body must be a string of at most ${MAX_DRY_RUN_BODY_CHARS} characters`);
  }
  const session = headers['x-echo-session'];
  if (session !== undefined && !isSessionId(session)) {
    throw invalid(`X-Echo-Session must be ${SESSION_FORM}`);
  }
  return {
    request: { method, path, query, headers, body: text === undefined || text === '' ? undefined : text },
    session,
  };
}

/** What the console shows of a dry run: the request as read, and the store's answer. */
export interface DryRunAnswer extends Omit<ScenarioPeek, 'answer'> {
  /** The index of the scenario that would answer; null when none would. */
  readonly answer: number | null;
  readonly request: { method: string; path: string; query: string; session?: string };
  /** Whether faults are on: off (`PUT /control/faults`), a matching scenario is not applied. */
  readonly faultsEnabled: boolean;
  /** Whether the cursors are the fleet's (`ECHO_STATE_URL`): positions and `times` shown are this process's. */
  readonly shared: boolean;
}

export function dryRun(store: ScenarioStore, body: unknown, faultsEnabled: boolean): DryRunAnswer {
  const { request, session } = readDryRunRequest(body);
  const peek = store.peek(request, session);
  return {
    request: {
      method: request.method,
      path: request.path,
      query: request.query,
      ...(session === undefined ? {} : { session }),
    },
    faultsEnabled,
    shared: store.sharing,
    ...peek,
    answer: peek.answer ?? null,
  };
}
