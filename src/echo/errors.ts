/**
 * Every error of the echo service: the ones it answers with, and the one that stops its startup.
 * Injected faults are not here: they are responses, not errors. A stable `code` to match on
 * ({@link isEchoError}), the HTTP status, the message template (`util.format`) and when it happens.
 * Its class binds obs's one base `CodedError` to this catalogue; the README's error table is generated from
 * `ECHO_ERRORS` and a test keeps the two in step.
 */
import { CodedError, type ErrorDefinition, hasCodeOf } from '@echo-chaos/obs';

/** The catalogue: code, HTTP status, message template (`util.format`) and when it is raised. */
export const ECHO_ERRORS = {
  ECHO_ERR_CONFIG: {
    status: 500,
    message: '%s',
    when: 'A setting (environment variable, `CERT_FILE`/`KEY_FILE`, `ECHO_SCENARIO_FILE`) is invalid; `problems` lists each one, and startup stops with one line per problem',
  },
  ECHO_ERR_INVALID_HEADER: {
    status: 400,
    message: 'invalid control header: %s',
    when: 'An `X-Echo-*` control header is malformed or above its ceiling; `details` lists each one',
  },
  ECHO_ERR_INVALID_JSON: {
    status: 400,
    message: 'request body is not valid JSON: %s',
    when: '`POST /scenario` or `POST /replay` got a body that does not parse as JSON',
  },
  ECHO_ERR_FORBIDDEN_JSON_KEY: {
    status: 400,
    message:
      'request body has a key named "__proto__", or "constructor" holding "prototype": refused, as such a key can poison object prototypes (prototype pollution); rename it',
    when: 'A JSON body of a service route (`POST /scenario`, `POST /replay`, `PUT /control/*`, ...) is valid JSON with a `__proto__` key, or a `constructor` key holding `prototype`; nothing changes',
  },
  ECHO_ERR_UNSUPPORTED_CONTENT_ENCODING: {
    status: 415,
    message: 'unsupported content encoding %s: the service routes take uncompressed bodies only',
    when: 'A body sent to a service route (`POST /scenario`, `POST /replay`, `PUT /control/*`, ...) with a `Content-Encoding` other than `identity` (`gzip`, ...); nothing changes. Echo paths mirror any body as it is',
  },
  ECHO_ERR_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message:
      'unsupported content type %s: send application/json (POST /scenario also takes application/yaml)',
    when: '`POST /scenario` or `POST /replay` got a body that is not JSON (or YAML, for /scenario)',
  },
  ECHO_ERR_INVALID_SCENARIOS: {
    status: 400,
    message: 'invalid scenarios: %s',
    when: '`POST /scenario` got scenarios that fail validation; `details` lists every problem; the old set stays',
  },
  ECHO_ERR_SCENARIO_SET_HELD: {
    status: 412,
    message: 'the scenario set is already %s (If-None-Match): nothing was replaced, its positions go on',
    when: '`POST /scenario` with `If-None-Match` naming the set this process already holds (the operator sends it with every push, so a pod that holds the set is not restarted by a push)',
  },
  ECHO_ERR_SCENARIO_SET_CHANGED: {
    status: 412,
    message: 'the scenario set changed since it was read (If-Match %s, now %s): nothing was replaced',
    when: '`POST /scenario` with `If-Match` naming a set this process no longer holds: someone else replaced it since (the console sends the tag of the set it read, so two tabs cannot overwrite each other unseen)',
  },
  ECHO_ERR_INVALID_SCENARIO_STATE: {
    status: 400,
    message: 'invalid scenario state request: %s',
    when: '`POST /scenario/reset` or `PUT /scenario/state` body is malformed (a `session` not in the `X-Echo-Session` form included), `GET /scenario/state` got a parameter other than one `session` of that form, `PUT /scenario/state` names more than one scenario by `path` or one of `order: random`, or its `position` is out of range; nothing changes',
  },
  ECHO_ERR_SCENARIO_NOT_FOUND: {
    status: 404,
    message: 'no scenario has %s',
    when: '`POST /scenario/reset` or `PUT /scenario/state` names a `name` or `path` no current scenario has; nothing changes',
  },
  ECHO_ERR_INVALID_REPLAY: {
    status: 400,
    message: 'invalid replay request: %s',
    when: '`POST /replay` body is not an object with a string `id`, a field has the wrong type, or `modify_headers` names a host, framing or hop-by-hop header or has a value HTTP cannot carry',
  },
  ECHO_ERR_REPLAY_GRPC: {
    status: 400,
    message: 'cannot replay gRPC call %s: %s',
    when: "`POST /replay` names a gRPC call that cannot be replayed: a streaming method (only unary `Echo` calls replay), a `target` (a gRPC call replays to this service's own gRPC port), a `modify_body` that is not an `EchoRequest` as JSON, or no gRPC server in this process. Nothing was sent",
  },
  ECHO_ERR_INVALID_CONTROL: {
    status: 400,
    message: 'invalid control request: %s',
    when: '`PUT /control/readiness` body is not `{"ready": true|false}`, `PUT /control/liveness` body is not `{"healthy": true|false}`, or `PUT /control/faults` body is not `{"enabled": true|false}`',
  },
  ECHO_ERR_METHOD_NOT_ALLOWED: {
    status: 405,
    message: '%s is not allowed on %s: use %s',
    when: 'a service route (`/health`, `/scenario`, `/control/faults`, ...) is called with a method it does not serve; `Allow` lists the ones it does. It is never echoed',
  },
  ECHO_ERR_INVALID_HISTORY_QUERY: {
    status: 400,
    message: 'invalid history query: %s',
    when: '`GET /history` or `GET /history/count` got a filter (`path`, `method`, `status`, `fault`, `session`, `since`) not in its form, a `limit` that is not an integer from 1 to 1000 or a `cursor` that is not one it handed out (`GET /history` only), a parameter twice or an unknown one; or `DELETE /history` got any parameter. `details` names each, with the value given, and the message says what is expected; nothing changes',
  },
  ECHO_ERR_INVALID_TARGET: {
    status: 400,
    message: 'invalid replay target %s: expected an absolute http:// or https:// URL',
    when: '`POST /replay` `target` is not an absolute http(s) URL',
  },
  ECHO_ERR_REPLAY_NOT_FOUND: {
    status: 404,
    message: 'no request with id %s in history',
    when: '`POST /replay` names an id that is not (or no longer) in history',
  },
  ECHO_ERR_HISTORY_ENTRY_NOT_FOUND: {
    status: 404,
    message: 'no request with id %s in history',
    when: '`GET /console/api/entries/<id>` names an id that is not (or no longer) in history',
  },
  ECHO_ERR_BODY_TOO_LARGE: {
    status: 413,
    message: 'request body exceeds MAX_BODY_SIZE (%s bytes)',
    when: 'The request body is larger than `MAX_BODY_SIZE`',
  },
  ECHO_ERR_UNAUTHORIZED: {
    status: 401,
    message: '%s needs Authorization: Bearer <ECHO_ADMIN_TOKEN>',
    when: 'An admin route (`POST`/`PUT` on `/scenario*` and `/control*`, `POST /replay`, any method on `/history*` and `/console/api/*`, `POST` under `/actuator`) was called without the token `ECHO_ADMIN_TOKEN` (or `ECHO_ADMIN_TOKEN_FILE`) sets, or with another; `WWW-Authenticate: Bearer realm="echo-chaos"`. Nothing changed',
  },
  ECHO_ERR_REPLAY_TARGET_REFUSED: {
    status: 403,
    message: 'replay target %s refused: %s',
    when: '`POST /replay` `target` is not allowed by `ECHO_REPLAY_ALLOWED_TARGETS`: by default a link-local or cloud metadata address (checked on every address the name resolves to). Nothing was sent',
  },
  ECHO_ERR_SCENARIO_BODY_TOO_LARGE: {
    status: 413,
    message: 'request body exceeds ECHO_MAX_SCENARIO_BODY (%s bytes)',
    when: 'The body of `POST /scenario` is larger than `ECHO_MAX_SCENARIO_BODY` (32 MiB by default); the old set stays',
  },
  ECHO_ERR_SCENARIO_YAML_TOO_LARGE: {
    status: 413,
    message:
      'a YAML scenario set is at most %s bytes (reading YAML holds the service for about 20 ms a MiB); send a larger set as JSON',
    when: 'A YAML body of `POST /scenario` is larger than 1 MiB (JSON sets may be up to `ECHO_MAX_SCENARIO_BODY`); the old set stays',
  },
  ECHO_ERR_CONTROL_BODY_TOO_LARGE: {
    status: 413,
    message: 'request body exceeds %s bytes, the most a control request accepts',
    when: 'The body of `PUT /control/*`, `PUT /scenario/state` or `POST /scenario/reset` is larger than 16 KiB',
  },
  ECHO_ERR_BODY_TOO_COMPLEX: {
    status: 400,
    message: 'request body %s',
    when: 'A JSON body of a service route nests deeper than 32 levels, or holds more than 100,000 values (`POST /scenario`: 32,768, its YAML too); nothing changes',
  },
  ECHO_ERR_RATE_LIMITED: {
    status: 429,
    message: 'rate limit of %s requests per second exceeded',
    when: 'The global rate limit (`ECHO_RATE_LIMIT_RPS`) is exhausted; `Retry-After` says when to come back',
  },
  ECHO_ERR_PROXY_UNREACHABLE: {
    status: 502,
    message: 'upstream %s unreachable: %s',
    when: 'With `ECHO_UPSTREAM` set, the upstream refused the connection, could not be reached, or closed it before its answer',
  },
  ECHO_ERR_PROXY_TIMEOUT: {
    status: 504,
    message: 'upstream %s did not answer within %s ms (ECHO_UPSTREAM_TIMEOUT): %s',
    when: "With `ECHO_UPSTREAM` set, the upstream did not connect and send its answer's head within `ECHO_UPSTREAM_TIMEOUT` (a body that then stalls that long ends the answer: its connection closes, and history names the cause)",
  },
  ECHO_ERR_PROXY_LOOP: {
    status: 508,
    message:
      'the request has come round to this proxy again (Via names %s): the upstream %s forwards back here',
    when: 'With `ECHO_UPSTREAM` set, a request whose `Via` header already names this echo-chaos: its upstream (or one behind it) forwards back to it',
  },
  ECHO_ERR_UPSTREAM_UNREACHABLE: {
    status: 502,
    message: 'replay target unreachable: %s',
    when: '`POST /replay` could not connect to the target or the connection failed',
  },
  ECHO_ERR_UPSTREAM_TIMEOUT: {
    status: 504,
    message: 'replay target did not answer within %s ms',
    when: '`POST /replay` target did not answer within `ECHO_REPLAY_TIMEOUT`',
  },
  ECHO_ERR_REPLAY_BUDGET_EXHAUSTED: {
    status: 504,
    message: 'replay refused: the timeout budget of this request is exhausted (%s ms left)',
    when: '`POST /replay` with `OBS_TIMEOUT_BUDGET_ABORT_ON_EXHAUSTION=true` (ENFORCING mode) arrived with `minimum-budget` or less of its deadline left; nothing was sent to the target',
  },
  ECHO_ERR_UPGRADE_REQUIRED: {
    status: 426,
    message: '%s is a WebSocket endpoint: connect with an HTTP/1.1 WebSocket upgrade',
    when: 'A plain (non-WebSocket) request to `/ws`',
  },
  ECHO_ERR_TOO_MANY_STREAMS: {
    status: 503,
    message: 'too many open streams: ECHO_MAX_STREAMS is %s',
    when: '`/sse` or `/console/api/live` while `ECHO_MAX_STREAMS` WebSocket and SSE connections (consoles included) are open (`/ws` closes with 1013 instead)',
  },
  ECHO_ERR_TOO_MANY_CONNECTIONS: {
    status: 503,
    message: 'too many open connections: ECHO_MAX_CONNECTIONS is %s',
    when: 'A new connection while `ECHO_MAX_CONNECTIONS` are open: answered on the raw connection (HTTP/2: a GOAWAY instead) and closed',
  },
  ECHO_ERR_DRAINING: {
    status: 503,
    message: 'the server is shutting down: connect again',
    when: '`/sse` or `/console/api/live` while the server drains (`/ws` closes with 1001 instead)',
  },
  ECHO_ERR_CONSOLE_UNAVAILABLE: {
    status: 503,
    message: 'the console cannot be served: %s',
    when: '`/console` of an installation that was neither built (`npm run build` writes `dist/echo/console/static/`) nor has esbuild (a devDependency) to bundle it from the sources',
  },
  ECHO_ERR_INVALID_CONSOLE_REQUEST: {
    status: 400,
    message: 'invalid console request: %s',
    when: "A call of the console's API (`/console/api/*`) got a body not in its form; nothing changes",
  },
  ECHO_ERR_BAD_REQUEST: {
    status: 400,
    message: 'bad request: %s',
    when: 'Any other malformed request the HTTP layer rejects (bad content length, bad encoding)',
  },
  ECHO_ERR_HEADERS_TOO_LARGE: {
    status: 431,
    message: 'the request head is larger than the server accepts (16 KiB)',
    when: 'The request line and headers together are above what the HTTP parser accepts; the connection is closed',
  },
  ECHO_ERR_REQUEST_TIMEOUT: {
    status: 408,
    message: 'the request did not arrive in time',
    when: 'A client sent its request head or body too slowly; the connection is closed',
  },
  ECHO_ERR_NOT_FOUND: {
    status: 404,
    message: 'no route for %s %s',
    when: 'A method the echo route does not serve (every path is echoed, so this is rare)',
  },
  ECHO_ERR_INTERNAL: {
    status: 500,
    message: 'internal error',
    when: 'A bug in echo-chaos; the log has the details',
  },
} as const satisfies Readonly<Record<string, ErrorDefinition>>;

/** A code of the echo service. */
export type EchoErrorCode = keyof typeof ECHO_ERRORS;

/** One item of an error's `details`: what was wrong, where. */
export interface ErrorDetail {
  readonly field: string;
  readonly message: string;
  readonly value?: string;
  /** Where in a text the problem is, 1-based (the console's scenario editor: its YAML line). */
  readonly line?: number;
}

/** Options of {@link EchoError}. */
export interface EchoErrorOptions {
  /** The error behind this one. */
  readonly cause?: unknown;
  /** Listed in the JSON error body (`error.details`): each bad header, each scenario problem. */
  readonly details?: readonly ErrorDetail[];
}

/**
 * Base class of every echo error: a stable `code`, the HTTP `statusCode` the catalogue gives it
 * and the message of its template.
 * @param args the values of the template's `%s`, in order.
 */
export class EchoError extends CodedError<EchoErrorCode> {
  /** Set only when given (see {@link EchoErrorOptions.details}). */
  declare readonly details?: readonly ErrorDetail[];

  constructor(code: EchoErrorCode, args: readonly unknown[], options?: EchoErrorOptions) {
    super(ECHO_ERRORS, code, args, options);
    this.name = 'EchoError';
    if (options?.details !== undefined) this.details = options.details;
  }
}

/** Whether `error` is an echo error: an object whose `code` is a code of {@link ECHO_ERRORS}. */
export function isEchoError(error: unknown): error is EchoError {
  return hasCodeOf(ECHO_ERRORS, error);
}

/** The settings are invalid; `problems` lists every problem, one line each (the message too). */
export class EchoConfigError extends EchoError {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super('ECHO_ERR_CONFIG', [problems.join('\n')]);
    this.name = 'EchoConfigError';
    this.problems = problems;
  }
}
