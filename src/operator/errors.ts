/**
 * Every error of the operator, one catalogue: a stable `code` to match on, the HTTP status it maps
 * to, the message template (`util.format`) and when it happens. Callers and logs match on `code`
 * ({@link isOperatorError}), never on the message or the class. Its class binds obs's one base
 * `CodedError` to this catalogue; src/operator/README.md's error table is generated from this one.
 */
import { CodedError, type ErrorDefinition, hasCodeOf } from '@echo-chaos/obs';

/** The catalogue: code, HTTP status, message template (`util.format`) and when it is raised. */
export const OPERATOR_ERRORS = {
  OPERATOR_ERR_CONFIG: {
    status: 500,
    message: 'invalid operator configuration: %s',
    when: 'A setting (environment variable) is invalid; `problems` lists each one, and startup stops with one line for each',
  },
  OPERATOR_ERR_PUSH: {
    status: 502,
    message: 'POST %s: %s',
    when: 'Pushing scenarios to an echo pod failed (unreachable, timed out or not a 2xx answer); the EchoScenario reports `PushFailed` with this message and the push is retried with backoff',
  },
  OPERATOR_ERR_READ_BACK: {
    status: 502,
    message: 'GET %s: %s',
    when: "Reading an echo pod's scenarios back after a push failed (unreachable, timed out, not a 200 or 304, or a 200 that is not a JSON array); the pod counts as not synced and the push is retried with backoff",
  },
  OPERATOR_ERR_ABORT_QUERY: {
    status: 502,
    message: 'Prometheus query GET %s failed: %s',
    when: "A query of an EchoScenario's `spec.abortWhen` failed (unreachable, timed out, an answer over 1 MiB, not JSON, not a success, or no vector or scalar); the message names the URL queried; the query is tried again at the next interval, and after `failureThreshold` failures in a row the EchoScenario's `AbortCheckHealthy` condition turns False and `onError` applies (`Suspend` by default: off its pods until a check succeeds)",
  },
  OPERATOR_ERR_POD_SYNC: {
    status: 502,
    message: 'pod %s/%s: %s',
    when: "Reconciling an echo pod left endpoints that do not hold what they should (each one's push or read-back error, joined with '; '); logged as `reconcile failed; retrying` and retried with backoff",
  },
  OPERATOR_ERR_NOT_APPLIED: {
    status: 502,
    message: 'GET %s: the pod holds %s, not the %s pushed',
    when: 'An echo pod answered a push with a 2xx but reading its scenarios back gave another content hash (it dropped or changed the push); the pod counts as not synced and the push is retried with backoff',
  },
} as const satisfies Readonly<Record<string, ErrorDefinition>>;

/** A code of the operator. */
export type OperatorErrorCode = keyof typeof OPERATOR_ERRORS;

/**
 * Base class of every operator error: a stable `code`, the HTTP `statusCode` the catalogue gives it
 * and the message of its template.
 * @param args the values of the template's `%s`, in order.
 * @param options `cause`: the error behind this one.
 */
export class OperatorError extends CodedError<OperatorErrorCode> {
  constructor(code: OperatorErrorCode, args: readonly unknown[], options?: { cause?: unknown }) {
    super(OPERATOR_ERRORS, code, args, options);
    this.name = 'OperatorError';
  }
}

/** Whether `error` is an operator error: an object whose `code` is a code of {@link OPERATOR_ERRORS}. */
export function isOperatorError(error: unknown): error is OperatorError {
  return hasCodeOf(OPERATOR_ERRORS, error);
}

/** The settings are invalid; `problems` lists every problem, one line each. */
export class OperatorConfigError extends OperatorError {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super('OPERATOR_ERR_CONFIG', [problems.join('; ')]);
    this.name = 'OperatorConfigError';
    this.problems = problems;
  }
}
