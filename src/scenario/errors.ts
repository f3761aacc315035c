/**
 * Every error of the scenario area, one catalogue (fastify's habit): a stable `code` to match on,
 * the HTTP status it maps to, the message template (`util.format`) and when it happens. Callers
 * match on `code` ({@link isScenarioError}), never on the message or the class. Its class binds
 * obs's one base `CodedError` to this catalogue; the README's scenario error table is generated from this one.
 */
import { CodedError, type ErrorDefinition, hasCodeOf } from '@echo-chaos/obs';
import type { ScenarioProblem } from './validate.ts';

/** The catalogue: code, HTTP status, message template (`util.format`) and when it is thrown. */
export const SCENARIO_ERRORS = {
  SCENARIO_ERR_INVALID: {
    status: 400,
    message: '%s: invalid scenarios: %s',
    when: 'A scenario set fails validation; `problems` lists every problem, `source` names the input',
  },
  SCENARIO_ERR_FILE_SYNTAX: {
    status: 400,
    message: '%s:%s:%s: invalid YAML: %s',
    when: 'A scenario document is not YAML (or JSON); `line` and `column` (1-based) point at the error',
  },
  SCENARIO_ERR_FILE_NOT_FOUND: {
    status: 500,
    message: 'scenario file %s does not exist',
    when: 'The scenario file (or its directory) does not exist',
  },
  SCENARIO_ERR_FILE_UNREADABLE: {
    status: 500,
    message: 'cannot read scenario file %s: %s',
    when: 'The scenario file exists but cannot be read (permissions, a directory, not UTF-8 text, I/O error)',
  },
  SCENARIO_ERR_FILE_TOO_LARGE: {
    status: 500,
    message: 'scenario file %s is %s bytes, more than the limit of %s bytes',
    when: 'The scenario file is larger than `maxFileBytes`',
  },
} as const satisfies Readonly<Record<string, ErrorDefinition>>;

/** A code of the scenario area. */
export type ScenarioErrorCode = keyof typeof SCENARIO_ERRORS;

/**
 * Base class of every scenario error: a stable `code`, the HTTP `statusCode` the catalogue gives it
 * and the message of its template.
 * @param args the values of the template's `%s`, in order.
 * @param options `cause`: the error behind this one.
 */
export class ScenarioError extends CodedError<ScenarioErrorCode> {
  constructor(code: ScenarioErrorCode, args: readonly unknown[], options?: { cause?: unknown }) {
    super(SCENARIO_ERRORS, code, args, options);
    this.name = 'ScenarioError';
  }
}

/** Whether `error` is a scenario error: an object whose `code` is a code of {@link SCENARIO_ERRORS}. */
export function isScenarioError(error: unknown): error is ScenarioError {
  return hasCodeOf(SCENARIO_ERRORS, error);
}

/** How many problems the message of {@link ScenarioInvalidError} spells out; `problems` has all. */
const PROBLEMS_IN_MESSAGE = 20;

/**
 * `SCENARIO_ERR_INVALID`: a set was rejected. The message names the source and the first 20
 * problems on one line (log-friendly); `problems` carries all of them.
 */
export class ScenarioInvalidError extends ScenarioError {
  /** Every problem found, as `validateScenarios` lists them. */
  readonly problems: readonly ScenarioProblem[];
  /** What was validated: a file path, `request body`, ... */
  readonly source: string;

  /** @param source what was validated, e.g. a file path; default `scenarios`. */
  constructor(problems: readonly ScenarioProblem[], source = 'scenarios') {
    const shown = problems
      .slice(0, PROBLEMS_IN_MESSAGE)
      .map((p) => (p.path === '' ? p.message : `${p.path}: ${p.message}`));
    const more =
      problems.length > PROBLEMS_IN_MESSAGE ? `; and ${problems.length - PROBLEMS_IN_MESSAGE} more` : '';
    const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
    super('SCENARIO_ERR_INVALID', [source, `${count}: ${shown.join('; ')}${more}`]);
    this.name = 'ScenarioInvalidError';
    this.problems = [...problems];
    this.source = source;
  }
}

/** `SCENARIO_ERR_FILE_SYNTAX`: a document does not parse; the position is 1-based. */
export class ScenarioSyntaxError extends ScenarioError {
  readonly source: string;
  /** Line of the error, 1-based. */
  readonly line: number;
  /** Column of the error, 1-based. */
  readonly column: number;
  /** The parser's reason, without position or snippet. */
  readonly reason: string;

  constructor(source: string, line: number, column: number, reason: string, options?: { cause?: unknown }) {
    super('SCENARIO_ERR_FILE_SYNTAX', [source, line, column, reason], options);
    this.name = 'ScenarioSyntaxError';
    this.source = source;
    this.line = line;
    this.column = column;
    this.reason = reason;
  }
}
