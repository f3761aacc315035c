/**
 * Every error of the scenario area, one catalogue (fastify's habit): a stable `code` to match on,
 * the HTTP status it maps to, and when it happens. Callers match on `code`, never on the message.
 */
import { createError, type FastifyError } from '@fastify/error';
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
} as const;

/** A code of the scenario area. */
export type ScenarioErrorCode = keyof typeof SCENARIO_ERRORS;

type Cause = { cause: unknown };

/** Constructor of `SCENARIO_ERR_INVALID`; prefer {@link invalidScenariosError}, which sets `problems`. */
export const SCENARIO_ERR_INVALID = createError<'SCENARIO_ERR_INVALID', 400, [string, string]>(
  'SCENARIO_ERR_INVALID',
  SCENARIO_ERRORS.SCENARIO_ERR_INVALID.message,
  SCENARIO_ERRORS.SCENARIO_ERR_INVALID.status,
);
/** Constructor of `SCENARIO_ERR_FILE_SYNTAX`: source, line, column, reason. */
export const SCENARIO_ERR_FILE_SYNTAX = createError<
  'SCENARIO_ERR_FILE_SYNTAX',
  400,
  [string, number, number, string, Cause?]
>(
  'SCENARIO_ERR_FILE_SYNTAX',
  SCENARIO_ERRORS.SCENARIO_ERR_FILE_SYNTAX.message,
  SCENARIO_ERRORS.SCENARIO_ERR_FILE_SYNTAX.status,
);
/** Constructor of `SCENARIO_ERR_FILE_NOT_FOUND`: path. */
export const SCENARIO_ERR_FILE_NOT_FOUND = createError<'SCENARIO_ERR_FILE_NOT_FOUND', 500, [string, Cause?]>(
  'SCENARIO_ERR_FILE_NOT_FOUND',
  SCENARIO_ERRORS.SCENARIO_ERR_FILE_NOT_FOUND.message,
  SCENARIO_ERRORS.SCENARIO_ERR_FILE_NOT_FOUND.status,
);
/** Constructor of `SCENARIO_ERR_FILE_UNREADABLE`: path, reason. */
export const SCENARIO_ERR_FILE_UNREADABLE = createError<
  'SCENARIO_ERR_FILE_UNREADABLE',
  500,
  [string, string, Cause?]
>(
  'SCENARIO_ERR_FILE_UNREADABLE',
  SCENARIO_ERRORS.SCENARIO_ERR_FILE_UNREADABLE.message,
  SCENARIO_ERRORS.SCENARIO_ERR_FILE_UNREADABLE.status,
);
/** Constructor of `SCENARIO_ERR_FILE_TOO_LARGE`: path, size in bytes, limit in bytes. */
export const SCENARIO_ERR_FILE_TOO_LARGE = createError<
  'SCENARIO_ERR_FILE_TOO_LARGE',
  500,
  [string, number, number]
>(
  'SCENARIO_ERR_FILE_TOO_LARGE',
  SCENARIO_ERRORS.SCENARIO_ERR_FILE_TOO_LARGE.message,
  SCENARIO_ERRORS.SCENARIO_ERR_FILE_TOO_LARGE.status,
);

/** `SCENARIO_ERR_INVALID`: the set was rejected; every problem is in `problems`. */
export interface ScenarioInvalidError extends FastifyError {
  readonly code: 'SCENARIO_ERR_INVALID';
  readonly statusCode: 400;
  /** Every problem found, as `validateScenarios` lists them. */
  readonly problems: readonly ScenarioProblem[];
  /** What was validated: a file path, `request body`, ... */
  readonly source: string;
}

/** `SCENARIO_ERR_FILE_SYNTAX`: the document does not parse; the position is 1-based. */
export interface ScenarioSyntaxError extends FastifyError {
  readonly code: 'SCENARIO_ERR_FILE_SYNTAX';
  readonly statusCode: 400;
  readonly source: string;
  /** Line of the error, 1-based. */
  readonly line: number;
  /** Column of the error, 1-based. */
  readonly column: number;
  /** The parser's reason, without position or snippet. */
  readonly reason: string;
}

/** How many problems the message of {@link invalidScenariosError} spells out; `problems` has all. */
const PROBLEMS_IN_MESSAGE = 20;

/**
 * Builds `SCENARIO_ERR_INVALID` for a rejected set. The message names the source and the first
 * 20 problems on one line (log-friendly); the `problems` property carries all of them.
 * @param source what was validated, e.g. a file path; default `scenarios`.
 */
export function invalidScenariosError(
  problems: readonly ScenarioProblem[],
  source = 'scenarios',
): ScenarioInvalidError {
  const shown = problems
    .slice(0, PROBLEMS_IN_MESSAGE)
    .map((p) => (p.path === '' ? p.message : `${p.path}: ${p.message}`));
  const more =
    problems.length > PROBLEMS_IN_MESSAGE ? `; and ${problems.length - PROBLEMS_IN_MESSAGE} more` : '';
  const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
  const error = new SCENARIO_ERR_INVALID(source, `${count}: ${shown.join('; ')}${more}`);
  return Object.assign(error, { problems: [...problems], source });
}

/** Builds `SCENARIO_ERR_FILE_SYNTAX` from a position (1-based) and the parser's reason. */
export function scenarioSyntaxError(
  source: string,
  line: number,
  column: number,
  reason: string,
  cause?: unknown,
): ScenarioSyntaxError {
  const error = new SCENARIO_ERR_FILE_SYNTAX(source, line, column, reason, { cause });
  return Object.assign(error, { source, line, column, reason });
}
