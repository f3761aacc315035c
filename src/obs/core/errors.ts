/**
 * Every error of the obs library, one catalogue (fastify's habit): a stable `code` to match on, the
 * HTTP status it maps to when it reaches a client, and when it happens. Callers match on `code`
 * ({@link isObsError}), never on the message or the class: a second copy of obs in an application's
 * `node_modules` has classes of its own. Setup errors (configuration, misuse of the plugin API) are
 * thrown while the application starts; a request never fails because of telemetry.
 *
 * Every coded error of echo-chaos has one base, {@link CodedError} (undici's habit: one base class, a
 * `code` on each failure); each area binds it to its own catalogue (`ECHO_ERRORS`/`EchoError`,
 * `SCENARIO_ERRORS`/`ScenarioError`, `OPERATOR_ERRORS`/`OperatorError`, and here `ObsError`), and a
 * service may bind it to a catalogue of its own. `test/errors.test.ts` holds them together.
 */
import { format } from 'node:util';

/** One entry of an error catalogue: the HTTP status, the message template (`util.format`), when it happens. */
export interface ErrorDefinition {
  readonly status: number;
  readonly message: string;
  readonly when: string;
}

/**
 * The one base of coded errors: a stable `code` to match on, the HTTP `statusCode` the catalogue gives
 * it and the message of its template. Subclass it once per catalogue (see {@link ObsError}) and once
 * per failure that carries more than a message (see {@link ObsConfigError}).
 * @param catalogue the codes this error may carry, each with its status and message template.
 * @param args the values of the template's `%s`, in order.
 * @param options `cause`: the error behind this one.
 */
export class CodedError<Code extends string = string> extends Error {
  readonly code: Code;
  readonly statusCode: number;

  constructor(
    catalogue: Readonly<Record<Code, ErrorDefinition>>,
    code: Code,
    args: readonly unknown[],
    options?: { cause?: unknown },
  ) {
    const def = catalogue[code];
    super(format(def.message, ...args), options);
    this.name = 'CodedError';
    this.code = code;
    this.statusCode = def.status;
  }
}

/**
 * Whether `error` carries a code of `catalogue`: an object whose `code` is one of its keys. Match on
 * this and on `code` rather than with `instanceof`, which fails across two copies of a package.
 */
export function hasCodeOf<Code extends string>(
  catalogue: Readonly<Record<Code, ErrorDefinition>>,
  error: unknown,
): error is CodedError<Code> {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && Object.hasOwn(catalogue, code);
}

/** The catalogue: code, HTTP status, message template (`util.format`) and when it is raised. */
export const OBS_ERRORS = {
  OBS_ERR_CONFIG: {
    status: 500,
    message: 'invalid obs configuration (%s):\n%s',
    when: 'The `obs.*` configuration has unknown keys, bad values or keys of a planned (not yet built) feature; `problems` lists each one. Startup stops',
  },
  OBS_ERR_INVALID_MODE: {
    status: 400,
    message: 'invalid enforcement mode %s: expected ENFORCING or DRY_RUN',
    when: '`POST /actuator/obs/enforcement` (or `Enforcement.set`) got anything but `ENFORCING` or `DRY_RUN` (case, blanks and `-`/`_` aside)',
  },
  OBS_ERR_INVALID_JSON: {
    status: 400,
    message: 'request body is not valid JSON: %s',
    when: '`POST /actuator/obs/enforcement` got a body that does not parse as JSON',
  },
  OBS_ERR_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message: 'unsupported content type %s, expected application/json',
    when: '`POST /actuator/obs/enforcement` got a body that is not `application/json` (or a malformed or empty `Content-Type`)',
  },
  OBS_ERR_BODY_TOO_LARGE: {
    status: 413,
    message: 'request body exceeds %s bytes',
    when: 'A body sent to an actuator route is larger than the route accepts',
  },
  OBS_ERR_BAD_REQUEST: {
    status: 400,
    message: 'bad request: %s',
    when: 'Any other malformed request fastify rejects before an actuator route runs (bad content length, bad encoding)',
  },
  OBS_ERR_TRACE_CONTEXT_MISSING: {
    status: 400,
    message:
      'request has no valid W3C traceparent header; this service requires trace context (obs.trace-guard.fail-on-missing)',
    when: 'ENFORCING mode with `obs.trace-guard.fail-on-missing`: a request to a guarded route came without a valid `traceparent` (DRY_RUN only logs and counts it)',
  },
  OBS_ERR_TIMEOUT_BUDGET_EXHAUSTED: {
    status: 504,
    message: '%s call refused: the timeout budget is exhausted (%s ms left, minimum-budget %s ms)',
    when: 'ENFORCING mode with `obs.timeout-budget.abort-on-exhaustion`: an outbound HTTP call made inside a request with `minimum-budget` or less left; nothing was sent (`TimeoutBudgetExhaustedError`). DRY_RUN counts the call and lets it run',
  },
  OBS_ERR_INVALID_RETRY_OPTION: {
    status: 500,
    message: 'invalid obs.retry option %s = %s: expected %s',
    when: '`obs.retry(fn, options)` was given a `fn` that is not a function or an option out of its bounds (`attempts` 1 to 10, `delayMs` and `maxDelayMs` 0 to 60000, `backoff` `exponential` or `fixed`, `retryOn` and `sleep` functions, `signal` an `AbortSignal`); thrown at the call, before any attempt',
  },
  OBS_ERR_INVALID_JOB: {
    status: 500,
    message: 'invalid obs job %s: %s',
    when: '`obs.job`, `obs.every` or `instrumentCron(...).schedule` was given a job name that is not 1 to 64 of `A-Z a-z 0-9 _ . : -`, a job that is not a function, an interval that is not an integer from 1 to 2147483647 ms, or a 201st distinct job; thrown at registration (a programming error)',
  },
  OBS_ERR_DUPLICATE_NAME: {
    status: 500,
    message: '%s %s is already registered',
    when: '`addSnapshotSection`, `addReadinessCheck` or `addHealthComponent` was called twice with one name, or `instrumentCache` with the name of another cache',
  },
  OBS_ERR_INVALID_CACHE_NAME: {
    status: 500,
    message: 'invalid cache name %s: expected 1 to 64 letters, digits, _ . : or -',
    when: '`instrumentCache(cache, obs, { name })` was given a name that cannot be a label value of the cache meters; thrown at the call, the cache is left as it is',
  },
  OBS_ERR_SLO_NOT_CONFIGURED: {
    status: 404,
    message: 'no SLO rules: %s',
    when: '`GET /actuator/obs/slo` while `obs.slo.enabled` is false or `obs.slo.objectives` is empty',
  },
  OBS_ERR_SLO_OBJECTIVE: {
    status: 500,
    message: 'SLO objective %s does not fit its metric: %s',
    when: "When the app is ready, an `obs.slo.objectives` entry names a metric of the registry of the wrong kind (availability: a counter; latency: a histogram) or a latency threshold that is not one of the histogram's buckets. Startup stops",
  },
  OBS_ERR_INTERNAL: {
    status: 500,
    message: 'internal error',
    when: 'An actuator route failed unexpectedly (a bug in obs, or in what the application plugged into it); the log has the details',
  },
} as const satisfies Readonly<Record<string, ErrorDefinition>>;

/** A code of the obs library. */
export type ObsErrorCode = keyof typeof OBS_ERRORS;

/**
 * Base class of every obs error: a stable `code`, the HTTP `statusCode` the catalogue gives it and
 * the message of its template.
 * @param args the values of the template's `%s`, in order.
 * @param options `cause`: the error behind this one.
 */
export class ObsError extends CodedError<ObsErrorCode> {
  constructor(code: ObsErrorCode, args: readonly unknown[], options?: { cause?: unknown }) {
    super(OBS_ERRORS, code, args, options);
    this.name = 'ObsError';
  }
}

/**
 * Whether `error` is an error of obs: an object whose `code` is a code of {@link OBS_ERRORS}. Match
 * on this and on `code` rather than with `instanceof`, which fails across two copies of obs.
 */
export function isObsError(error: unknown): error is ObsError {
  return hasCodeOf(OBS_ERRORS, error);
}

/** One configuration problem: which key, what value, from where, and what was expected. */
export interface ConfigProblem {
  /** The `obs.*` key (or the environment variable when it maps to no key). */
  readonly key: string;
  /** The offending value as written, or `undefined` for a missing one. */
  readonly value: unknown;
  /** Where the value came from: `defaults`, `preset dev`, `file /etc/obs.yml`, `env OBS_X`, `options`. */
  readonly source: string;
  /** The accepted form, or the nearest valid key for an unknown one. */
  readonly expected: string;
  /** The whole problem on one line. */
  readonly message: string;
}

/** The configuration could not be resolved; `problems` lists every problem, one line each. */
export class ObsConfigError extends ObsError {
  readonly problems: readonly ConfigProblem[];

  constructor(problems: readonly ConfigProblem[]) {
    const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
    super('OBS_ERR_CONFIG', [count, problems.map((p) => `  - ${p.message}`).join('\n')]);
    this.name = 'ObsConfigError';
    this.problems = problems;
  }
}
