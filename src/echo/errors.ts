import createError from '@fastify/error';

/**
 * Every error the echo service itself answers with. Injected faults are not here: they are
 * responses, not errors. The README's error table is generated from `ECHO_ERRORS` and a test keeps
 * the two in step.
 */
export const ECHO_ERRORS = {
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
  ECHO_ERR_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message: 'unsupported content type %s, expected %s',
    when: '`POST /scenario` or `POST /replay` got a body that is not JSON (or YAML, for /scenario)',
  },
  ECHO_ERR_INVALID_SCENARIOS: {
    status: 400,
    message: 'invalid scenarios: %s',
    when: '`POST /scenario` got scenarios that fail validation; `details` lists every problem; the old set stays',
  },
  ECHO_ERR_INVALID_REPLAY: {
    status: 400,
    message: 'invalid replay request: %s',
    when: '`POST /replay` body is not an object with a string `id`, or a field has the wrong type',
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
  ECHO_ERR_BODY_TOO_LARGE: {
    status: 413,
    message: 'request body exceeds MAX_BODY_SIZE (%s bytes)',
    when: 'The request body is larger than `MAX_BODY_SIZE`',
  },
  ECHO_ERR_RATE_LIMITED: {
    status: 429,
    message: 'rate limit of %s requests per second exceeded',
    when: 'The global rate limit (`ECHO_RATE_LIMIT_RPS`) is exhausted; `Retry-After` says when to come back',
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
  ECHO_ERR_UPGRADE_REQUIRED: {
    status: 426,
    message: '%s is a WebSocket endpoint: connect with an HTTP/1.1 WebSocket upgrade',
    when: 'A plain (non-WebSocket) request to `/ws`',
  },
  ECHO_ERR_TOO_MANY_STREAMS: {
    status: 503,
    message: 'too many open streams: ECHO_MAX_STREAMS is %s',
    when: '`/sse` while `ECHO_MAX_STREAMS` WebSocket and SSE connections are open (`/ws` closes with 1013 instead)',
  },
  ECHO_ERR_DRAINING: {
    status: 503,
    message: 'the server is shutting down: connect again',
    when: '`/sse` while the server drains (`/ws` closes with 1001 instead)',
  },
  ECHO_ERR_BAD_REQUEST: {
    status: 400,
    message: 'bad request: %s',
    when: 'Any other malformed request the HTTP layer rejects (bad content length, bad encoding)',
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
} as const;

export type EchoErrorCode = keyof typeof ECHO_ERRORS;

function define<C extends EchoErrorCode>(code: C) {
  const def = ECHO_ERRORS[code];
  return createError(code, def.message, def.status);
}

export const InvalidHeaderError = define('ECHO_ERR_INVALID_HEADER');
export const InvalidJsonError = define('ECHO_ERR_INVALID_JSON');
export const UnsupportedMediaTypeError = define('ECHO_ERR_UNSUPPORTED_MEDIA_TYPE');
export const InvalidScenariosError = define('ECHO_ERR_INVALID_SCENARIOS');
export const InvalidReplayError = define('ECHO_ERR_INVALID_REPLAY');
export const InvalidTargetError = define('ECHO_ERR_INVALID_TARGET');
export const ReplayNotFoundError = define('ECHO_ERR_REPLAY_NOT_FOUND');
export const BodyTooLargeError = define('ECHO_ERR_BODY_TOO_LARGE');
export const RateLimitedError = define('ECHO_ERR_RATE_LIMITED');
export const UpstreamUnreachableError = define('ECHO_ERR_UPSTREAM_UNREACHABLE');
export const UpstreamTimeoutError = define('ECHO_ERR_UPSTREAM_TIMEOUT');
export const UpgradeRequiredError = define('ECHO_ERR_UPGRADE_REQUIRED');
export const TooManyStreamsError = define('ECHO_ERR_TOO_MANY_STREAMS');
export const DrainingError = define('ECHO_ERR_DRAINING');
export const BadRequestError = define('ECHO_ERR_BAD_REQUEST');
export const NotFoundError = define('ECHO_ERR_NOT_FOUND');
export const InternalError = define('ECHO_ERR_INTERNAL');

/** One item of an error's `details`: what was wrong, where. */
export interface ErrorDetail {
  readonly field: string;
  readonly message: string;
  readonly value?: string;
}

/** Attaches `details` (listed in the JSON error body) to an error. */
export function withDetails<E extends Error>(error: E, details: readonly ErrorDetail[]): E {
  (error as E & { details: readonly ErrorDetail[] }).details = details;
  return error;
}

/** Raised by `loadConfig` with one line per bad setting. */
export class ConfigError extends Error {
  readonly code = 'ECHO_ERR_CONFIG';
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}
