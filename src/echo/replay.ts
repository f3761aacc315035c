import type { Readable } from 'node:stream';
import { createBudgetInterceptor, isObsError } from '@echo-chaos/obs';
import type { Dispatcher } from 'undici';
import { HEADER_VALUE_PATTERN } from '../scenario/index.ts';
import { EchoError, isEchoError } from './errors.ts';
import type { HistoryEntry, HistoryReader } from './history.ts';
import { replayableEntry } from './history-secrets.ts';
import { TOKEN } from './http-grammar.ts';
import { NOT_REPLAYED_HEADERS } from './replay-headers.ts';

const HEADER_VALUE = new RegExp(HEADER_VALUE_PATTERN);

/** The body of `POST /replay`. */
export interface ReplayRequest {
  readonly id: string;
  readonly modify_headers?: Readonly<Record<string, string>>;
  readonly modify_body?: string;
  readonly target?: string;
}

/** What the replayed call answered; the body is streamed, never buffered whole. */
export interface ReplayResult {
  readonly status: number;
  readonly contentType: string | undefined;
  /** The target's `Location` (a redirect is answered as it is, never followed). */
  readonly location: string | undefined;
  readonly body: Readable;
}

export interface ReplayOptions {
  /** Where to send when the request names no `target`: this server's own address. */
  readonly selfBaseUrl: string;
  readonly timeoutMs: number;
  readonly dispatcher?: Dispatcher;
  /**
   * `ECHO_REPLAY_CREDENTIALS`: `masked` sends what `GET /history` shows with secrets masked, less
   * the credential headers; `original` sends the request as it was received.
   */
  readonly credentials: ReplayCredentials;
}

/** The values of `ECHO_REPLAY_CREDENTIALS`. */
export type ReplayCredentials = 'original' | 'masked';

/** Request headers not replayed (replay-headers.ts). */
const DROPPED: ReadonlySet<string> = new Set(NOT_REPLAYED_HEADERS);

const MAX_MODIFIED_HEADERS = 100;

/** Checks the shape of a `POST /replay` body; throws `ECHO_ERR_INVALID_REPLAY` naming the field. */
export function parseReplayRequest(body: unknown): ReplayRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new EchoError('ECHO_ERR_INVALID_REPLAY', ['expected a JSON object with a string field "id"']);
  }
  const b = body as { readonly [K in keyof ReplayRequest]?: unknown };
  if (typeof b['id'] !== 'string' || b['id'].length === 0)
    throw new EchoError('ECHO_ERR_INVALID_REPLAY', ['"id" must be a non-empty string']);
  for (const key of Object.keys(b)) {
    if (!['id', 'modify_headers', 'modify_body', 'target'].includes(key)) {
      throw new EchoError('ECHO_ERR_INVALID_REPLAY', [
        `unknown field "${key}"; expected id, modify_headers, modify_body, target`,
      ]);
    }
  }
  const headers = b['modify_headers'];
  if (headers !== undefined) {
    if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) {
      throw new EchoError('ECHO_ERR_INVALID_REPLAY', ['"modify_headers" must be an object of string values']);
    }
    const entries = Object.entries(headers);
    if (entries.length > MAX_MODIFIED_HEADERS) {
      throw new EchoError('ECHO_ERR_INVALID_REPLAY', [
        `"modify_headers" has more than ${MAX_MODIFIED_HEADERS} entries`,
      ]);
    }
    for (const [name, value] of entries) {
      // What undici would refuse (a control character, a character above U+00FF) is refused here,
      // as a 400, rather than failing the call as a 502.
      if (typeof value !== 'string' || !TOKEN.test(name) || !HEADER_VALUE.test(value)) {
        throw new EchoError('ECHO_ERR_INVALID_REPLAY', [
          `"modify_headers.${name}" must be a valid header name with a string value of visible ASCII, space, tab or Latin-1`,
        ]);
      }
      if (DROPPED.has(name.toLowerCase())) {
        throw new EchoError('ECHO_ERR_INVALID_REPLAY', [
          `"modify_headers.${name}" cannot be set: the replay's own connection decides it (host, framing and hop-by-hop headers)`,
        ]);
      }
    }
  }
  if (b['modify_body'] !== undefined && typeof b['modify_body'] !== 'string') {
    throw new EchoError('ECHO_ERR_INVALID_REPLAY', ['"modify_body" must be a string']);
  }
  if (b['target'] !== undefined && typeof b['target'] !== 'string')
    throw new EchoError('ECHO_ERR_INVALID_REPLAY', ['"target" must be a string']);
  // Each of its fields was checked above, and there are no others.
  return b as ReplayRequest;
}

/** Validates a replay target: an absolute http(s) URL, without query or fragment. */
export function parseTarget(target: string): string {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new EchoError('ECHO_ERR_INVALID_TARGET', [JSON.stringify(target)]);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '') {
    throw new EchoError('ECHO_ERR_INVALID_TARGET', [JSON.stringify(target)]);
  }
  return url.href.replace(/\/+$/, '');
}

let undici: Promise<typeof import('undici')> | undefined;

/**
 * undici, imported on the first replay: it is the largest package the service uses (about 30 MB of
 * resident memory), and most runs never replay (ADR 0013).
 */
export function loadUndici(): Promise<typeof import('undici')> {
  undici ??= import('undici');
  return undici;
}

/**
 * Re-sends a stored request: same method, path and query, headers (less hop-by-hop and length
 * headers, and the stored request's deadline headers) and body, with the request's modifications
 * applied. With `credentials: 'masked'` (the default of `ECHO_REPLAY_CREDENTIALS`) it is the entry
 * as `GET /history` shows it with secrets masked, less the credential headers. The call goes
 * through obs's timeout-budget interceptor, so it carries the deadline of the `POST /replay`
 * request; with `obs.timeout-budget.abort-on-exhaustion` and no budget left it is refused
 * (`ECHO_ERR_REPLAY_BUDGET_EXHAUSTED`) and nothing reaches the target.
 */
export async function replay(
  history: Pick<HistoryReader, 'get'>,
  req: ReplayRequest,
  options: ReplayOptions,
): Promise<ReplayResult> {
  const base = req.target === undefined ? options.selfBaseUrl : parseTarget(req.target);
  const stored = history.get(req.id);
  if (stored === undefined) throw new EchoError('ECHO_ERR_REPLAY_NOT_FOUND', [req.id]);
  // A credential is re-sent only when the service is told to: the default replays the masked view,
  // and `modify_headers` may add a credential of the caller's choosing.
  const entry = options.credentials === 'original' ? stored : replayableEntry(stored);
  const headers = replayHeaders(entry, req.modify_headers);
  const body = req.modify_body !== undefined ? req.modify_body : storedBody(entry);
  const bodyAllowed = entry.method !== 'GET' && entry.method !== 'HEAD';
  const { errors, getGlobalDispatcher, request } = await loadUndici();
  try {
    const res = await request(base + entry.url, {
      method: entry.method as Dispatcher.HttpMethod,
      headers,
      body: bodyAllowed || body.length > 0 ? body : undefined,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      dispatcher: (options.dispatcher ?? getGlobalDispatcher()).compose(createBudgetInterceptor()),
    });
    const ct = res.headers['content-type'];
    const location = res.headers['location'];
    return {
      status: res.statusCode,
      contentType: Array.isArray(ct) ? ct[0] : ct,
      location: Array.isArray(location) ? location[0] : location,
      body: res.body,
    };
  } catch (err) {
    // The guarded connector's refusal (ECHO_ERR_REPLAY_TARGET_REFUSED), as it is.
    if (isEchoError(err)) throw err;
    if (isObsError(err) && err.code === 'OBS_ERR_TIMEOUT_BUDGET_EXHAUSTED') {
      throw new EchoError('ECHO_ERR_REPLAY_BUDGET_EXHAUSTED', [
        (err as { remainingMs?: number }).remainingMs,
      ]);
    }
    if (
      err instanceof errors.HeadersTimeoutError ||
      err instanceof errors.BodyTimeoutError ||
      err instanceof errors.ConnectTimeoutError
    ) {
      throw new EchoError('ECHO_ERR_UPSTREAM_TIMEOUT', [options.timeoutMs]);
    }
    throw new EchoError('ECHO_ERR_UPSTREAM_UNREACHABLE', [describe(err)]);
  }
}

function replayHeaders(
  entry: HistoryEntry,
  modify: Readonly<Record<string, string>> | undefined,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  // Headers the sender named in `Connection` are hop-by-hop too (RFC 9110, section 7.6.1).
  const connection = entry.headers['connection'];
  const named = new Set(
    (Array.isArray(connection) ? connection.join(',') : (connection ?? ''))
      .split(',')
      .map((token) => token.trim().toLowerCase()),
  );
  for (const [name, value] of Object.entries(entry.headers)) {
    if (value !== undefined && !DROPPED.has(name) && !named.has(name) && !name.startsWith(':'))
      out[name] = value;
  }
  if (modify !== undefined) {
    for (const [name, value] of Object.entries(modify)) out[name.toLowerCase()] = value;
  }
  out['x-echo-replay-of'] = entry.id;
  return out;
}

function storedBody(entry: HistoryEntry): Buffer {
  return Buffer.from(entry.body, entry.body_encoding === 'base64' ? 'base64' : 'utf8');
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as Error & { code?: string }).code;
    const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
    return cause?.code ?? code ?? err.message;
  }
  return String(err);
}
