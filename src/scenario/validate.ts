/**
 * Validation of a scenario set against the one schema, plus the checks a structural schema cannot
 * express. Lists every problem with its location and never throws because of the input.
 */
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { DELAY_SPEC_FORM, parseDelayBounds } from './duration.ts';
import { describe, escapePointer, quote, schemaMessage } from './problem-messages.ts';
import { MAX_PROBLEMS, ProblemList, type ScenarioProblem } from './problems.ts';
import {
  HEADER_NAME_PATTERN,
  MAX_HEADER_NAME_LENGTH,
  MAX_RESPONSES,
  MAX_SCENARIOS,
  MAX_TIMER_DELAY_MS,
  type Scenario,
  ScenarioListSchema,
  type ScenarioResponse,
} from './schema.ts';

// Part of validateScenarios' contract, so exported with it.
export { MAX_PROBLEMS, type ScenarioProblem };

/** Options of {@link validateScenarios}. */
export interface ValidateScenariosOptions {
  /**
   * Longest delay a response may ask for, in milliseconds (for a range, its upper bound); the
   * service's `ECHO_MAX_DELAY`. Default: no ceiling of the caller's own, only `MAX_TIMER_DELAY_MS`.
   */
  readonly maxDelayMs?: number;
}

/** The outcome of {@link validateScenarios}: the validated set, or every problem found. */
export type ValidateScenariosResult =
  | { readonly ok: true; readonly scenarios: Scenario[] }
  | { readonly ok: false; readonly problems: ScenarioProblem[] };

/**
 * Headers a scenario may not set: they manage the connection or the message framing, which the
 * server owns, and HTTP/2 forbids the connection-specific ones outright (Node throws on them).
 */
const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'content-length',
  'keep-alive',
  'proxy-connection',
  'te',
  'transfer-encoding',
  'upgrade',
]);

const HEADER_NAME = new RegExp(HEADER_NAME_PATTERN);
const checker = TypeCompiler.Compile(ScenarioListSchema);
const HEADER_NAME_CHARS = "letters, digits and !#$%&'*+-.^_`|~";

/**
 * Validates a scenario set: the parsed body of `POST /scenario`, a scenario file or the operator's
 * merged array. Checks the schema (types, required and unknown fields, status 100-599, `delay`
 * grammar, lengths and counts) and what it cannot express: a reversed delay range, a delay above
 * `maxDelayMs` (or {@link MAX_TIMER_DELAY_MS}), a `path` used twice, header names that are not HTTP
 * tokens, repeat in another case, or are reserved (`Connection`, `Content-Length`, ...).
 *
 * Never throws because of the input: anything at all (null, strings, cycles, huge arrays) gives a
 * result. Counts are checked before contents, so an oversized array costs no deep walk.
 * @returns `{ ok: true, scenarios }` with a fresh copy of the input, or `{ ok: false, problems }`
 *   listing every problem (at most {@link MAX_PROBLEMS}), in input order, one per location.
 * @throws RangeError when `options.maxDelayMs` is not a non-negative number (a programming error).
 */
export function validateScenarios(
  input: unknown,
  options: ValidateScenariosOptions = {},
): ValidateScenariosResult {
  const { maxDelayMs } = options;
  if (maxDelayMs !== undefined && !(typeof maxDelayMs === 'number' && maxDelayMs >= 0)) {
    throw new RangeError(
      `maxDelayMs must be a non-negative number of milliseconds, got ${String(maxDelayMs)}`,
    );
  }
  const delayLimitMs = Math.min(maxDelayMs ?? MAX_TIMER_DELAY_MS, MAX_TIMER_DELAY_MS);
  try {
    if (!Array.isArray(input)) {
      return failure([{ path: '', message: `input must be an array of scenarios, got ${describe(input)}` }]);
    }
    if (input.length > MAX_SCENARIOS) {
      return failure([
        { path: '', message: `input must hold at most ${MAX_SCENARIOS} scenarios, got ${input.length}` },
      ]);
    }
    const problems = new ProblemList();
    const view = boundedView(input, problems);
    if (!checker.Check(view)) collectSchemaProblems(view, problems);
    collectSemanticProblems(view, problems, delayLimitMs, maxDelayMs !== undefined);
    if (problems.size > 0) return failure(problems.sorted());
    return { ok: true, scenarios: (view as Scenario[]).map(copyScenario) };
  } catch (error) {
    // Only exotic objects (throwing getters, proxies) get here; JSON and YAML never do.
    return failure([{ path: '', message: `input could not be read: ${(error as Error)?.message ?? error}` }]);
  }
}

function failure(problems: ScenarioProblem[]): ValidateScenariosResult {
  return { ok: false, problems };
}

/** A deep copy of a validated scenario, keeping only the schema's fields. */
export function copyScenario(scenario: Scenario): Scenario {
  return { path: scenario.path, responses: scenario.responses.map(copyResponse) };
}

function copyResponse(response: ScenarioResponse): ScenarioResponse {
  const copy: ScenarioResponse = { status: response.status };
  if (response.delay !== undefined) copy.delay = response.delay;
  if (response.body !== undefined) copy.body = response.body;
  // fromEntries defines own properties, so even a header named `__proto__` survives the copy.
  if (response.headers !== undefined) copy.headers = Object.fromEntries(Object.entries(response.headers));
  return copy;
}

/**
 * The input with every `responses` array cut to {@link MAX_RESPONSES}, so that the schema walk never
 * goes through a huge array: the excess is reported here, once.
 */
function boundedView(input: unknown[], problems: ProblemList): unknown[] {
  let view: unknown[] | undefined;
  for (let i = 0; i < input.length; i++) {
    const scenario = input[i];
    if (!isRecord(scenario)) continue;
    const responses = scenario['responses'];
    if (!Array.isArray(responses) || responses.length <= MAX_RESPONSES) continue;
    problems.add(
      `/${i}/responses`,
      `responses must hold at most ${MAX_RESPONSES} responses, got ${responses.length}`,
    );
    view ??= input.slice();
    view[i] = { ...scenario, responses: responses.slice(0, MAX_RESPONSES) };
  }
  return view ?? input;
}

function collectSchemaProblems(view: unknown[], problems: ProblemList): void {
  for (const error of checker.Errors(view)) {
    if (problems.full) return;
    if (problems.has(error.path)) continue;
    problems.add(error.path, schemaMessage(error));
  }
}

/** 101 is in range but cannot be answered without an actual protocol switch. */
const SWITCHING_PROTOCOLS = 101;

function collectSemanticProblems(
  view: unknown[],
  problems: ProblemList,
  delayLimitMs: number,
  callerLimit: boolean,
): void {
  const firstByPath = new Map<string, number>();
  for (let i = 0; i < view.length && !problems.full; i++) {
    const scenario = view[i];
    if (!isRecord(scenario)) continue;
    const path = scenario['path'];
    const pathLocation = `/${i}/path`;
    if (typeof path === 'string' && !problems.has(pathLocation)) {
      const first = firstByPath.get(path);
      if (first === undefined) firstByPath.set(path, i);
      else
        problems.add(
          pathLocation,
          `path ${quote(path)} is already used by scenario ${first}; paths must be unique`,
        );
    }
    const responses = scenario['responses'];
    if (!Array.isArray(responses)) continue;
    for (let j = 0; j < responses.length && !problems.full; j++) {
      const response = responses[j];
      if (!isRecord(response)) continue;
      const location = `/${i}/responses/${j}`;
      if (response['status'] === SWITCHING_PROTOCOLS && !problems.has(`${location}/status`)) {
        problems.add(
          `${location}/status`,
          'status 101 (Switching Protocols) cannot be scripted: it would break the connection',
        );
      }
      checkDelay(response['delay'], `${location}/delay`, problems, delayLimitMs, callerLimit);
      checkHeaderNames(response['headers'], `${location}/headers`, problems);
    }
  }
}

function checkDelay(
  delay: unknown,
  location: string,
  problems: ProblemList,
  delayLimitMs: number,
  callerLimit: boolean,
): void {
  if (typeof delay !== 'string' || problems.has(location)) return;
  const bounds = parseDelayBounds(delay);
  if (bounds === undefined) {
    problems.add(location, `delay must be ${DELAY_SPEC_FORM}, got ${quote(delay)}`);
  } else if (bounds.minMs > bounds.maxMs) {
    problems.add(
      location,
      `delay range must go from low to high, got ${quote(delay)} (${bounds.minMs}ms > ${bounds.maxMs}ms)`,
    );
  } else if (bounds.maxMs > delayLimitMs) {
    const limit = callerLimit
      ? `${delayLimitMs}ms (the maximum delay)`
      : `${delayLimitMs}ms (the longest timer)`;
    problems.add(location, `delay must be at most ${limit}, got ${quote(delay)} (${bounds.maxMs}ms)`);
  }
}

function checkHeaderNames(headers: unknown, location: string, problems: ProblemList): void {
  if (!isRecord(headers)) return;
  const seen = new Map<string, string>();
  for (const name of Object.keys(headers)) {
    if (problems.full) return;
    const at = `${location}/${escapePointer(name)}`;
    const lower = name.toLowerCase();
    if (name.length > MAX_HEADER_NAME_LENGTH) {
      problems.append(
        at,
        `header name must be at most ${MAX_HEADER_NAME_LENGTH} characters, got ${name.length} characters`,
      );
    } else if (!HEADER_NAME.test(name)) {
      problems.append(at, `header name must be an HTTP token (${HEADER_NAME_CHARS}), got ${quote(name)}`);
    } else if (RESERVED_HEADERS.has(lower)) {
      problems.append(
        at,
        `header ${quote(name)} cannot be set by a scenario: the server manages the connection and message framing`,
      );
    } else {
      const first = seen.get(lower);
      if (first === undefined) seen.set(lower, name);
      else
        problems.append(
          at,
          `header ${quote(name)} repeats ${quote(first)}: header names are case-insensitive`,
        );
    }
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
