/**
 * Validation of a scenario set against the one schema, plus the checks a structural schema cannot
 * express. Lists every problem with its location and never throws because of the input.
 */
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { measureTree, type TreeBound } from './bounds.ts';
import { DELAY_SPEC_FORM, parseDelayBounds } from './duration.ts';
import { type FaultLimits, readFault, SCENARIO_FAULT_FIELDS } from './faults.ts';
import {
  GRPC_STATUS_OK,
  grpcMetadataKeyProblem,
  grpcMetadataValueProblem,
  parseGrpcStatus,
} from './grpc-answer.ts';
import { compilePathPattern, compileTextMatcher, REGEX_PREFIX } from './matchers.ts';
import { describe, escapePointer, quote, schemaMessage } from './problem-messages.ts';
import { MAX_PROBLEMS, ProblemList, type ScenarioProblem } from './problems.ts';
import {
  HEADER_NAME_PATTERN,
  MAX_CONDITIONS,
  MAX_HEADER_NAME_LENGTH,
  MAX_RESPONSES,
  MAX_SCENARIOS,
  MAX_SET_DEPTH,
  MAX_SET_NODES,
  MAX_SET_PATTERNS,
  MAX_SET_SIZE,
  MAX_TIMER_DELAY_MS,
  type Scenario,
  ScenarioListSchema,
  type ScenarioResponse,
  UNSETTABLE_HEADERS,
} from './schema.ts';
import { parseUpstreamUrl, UPSTREAM_FORM } from './upstream.ts';
import { readActiveFor } from './windows.ts';

// Part of validateScenarios' contract, so exported with it.
export { MAX_PROBLEMS, type ScenarioProblem };

/** Options of {@link validateScenarios}. */
export interface ValidateScenariosOptions {
  /**
   * Longest delay a response may ask for, in milliseconds (for a range, its upper bound); the
   * service's `ECHO_MAX_DELAY`. Default: no ceiling of the caller's own, only `MAX_TIMER_DELAY_MS`.
   */
  readonly maxDelayMs?: number;
  /**
   * Largest `size` a response may ask for, in bytes; the service's `ECHO_MAX_RESPONSE_SIZE`.
   * Default: no ceiling of the caller's own.
   */
  readonly maxResponseBytes?: number;
}

/** The outcome of {@link validateScenarios}: the validated set, or every problem found. */
export type ValidateScenariosResult =
  | { readonly ok: true; readonly scenarios: Scenario[] }
  | { readonly ok: false; readonly problems: ScenarioProblem[] };

const HEADER_NAME = new RegExp(HEADER_NAME_PATTERN);
const checker = TypeCompiler.Compile(ScenarioListSchema);
const HEADER_NAME_CHARS = "letters, digits and !#$%&'*+-.^_`|~";

/**
 * The texts of `input` that {@link validateScenarios} may compile as patterns (`pathPattern`, the
 * values of `headers` and `query`, `body.value`), for `checkPatternsAhead`: what a valid set
 * can hold and no more (none for a list past {@link MAX_SCENARIOS}, nor for a map past
 * {@link MAX_CONDITIONS}), since validation refuses the rest without compiling it.
 */
export function scenarioPatternTexts(input: unknown): string[] {
  const texts: string[] = [];
  if (!Array.isArray(input) || input.length > MAX_SCENARIOS) return texts;
  const valuesOf = (map: unknown) => {
    if (!isRecord(map)) return;
    const found: string[] = [];
    let keys = 0;
    for (const key in map) {
      if (!Object.hasOwn(map, key)) continue;
      if (++keys > MAX_CONDITIONS) return;
      const value = map[key];
      if (typeof value === 'string') found.push(value);
    }
    texts.push(...found);
  };
  for (const item of input) {
    if (!isRecord(item)) continue;
    if (typeof item['pathPattern'] === 'string') texts.push(item['pathPattern']);
    valuesOf(item['headers']);
    valuesOf(item['query']);
    const body = item['body'];
    if (isRecord(body) && typeof body['value'] === 'string') texts.push(body['value']);
  }
  return texts;
}

/**
 * Validates a scenario set: the parsed body of `POST /scenario`, a scenario file or the operator's
 * merged array. Checks the schema (types, required and unknown fields, status 100-599, `delay`
 * grammar, lengths and counts) and what it cannot express: exactly one of `path` and `pathPattern`,
 * a pattern or `re:` value that does not compile, a body condition with not exactly one of
 * `contains`, `equals` and `jsonPointer` (and `value` only beside `jsonPointer`), a reversed delay
 * range, a delay above `maxDelayMs` (or {@link MAX_TIMER_DELAY_MS}), a `name` used twice, an exact
 * `path` without other conditions used twice (a second one could never match), header names that
 * are not HTTP tokens, repeat in another case, or are reserved (`Connection`, `Content-Length`, ...),
 * an `activeFor` of 0 or past 366 days, a `weight` on a scenario whose `order` is not `random`, a
 * `random` one whose weights are all 0 or that says `cycle: false`, a `grpcMessage` without a
 * `grpcStatus` or beside `OK` (or not well-formed Unicode), gRPC metadata keys (in `grpcMetadata`,
 * `grpcTrailers`) that are not lower-case gRPC keys or are reserved (`grpc-*`, `content-type`, ...),
 * and a value under a `-bin` key that is not base64.
 * A `method` given as one string is taken as a list of one.
 *
 * Never throws because of the input: anything at all (null, strings, cycles, huge arrays) gives a
 * result. Counts are checked before contents, so an oversized array costs no deep walk; the whole
 * set is first measured (nesting at most {@link MAX_SET_DEPTH}, at most {@link MAX_SET_NODES} values
 * and {@link MAX_SET_SIZE} characters, YAML aliases expanded) without being expanded or recursed into.
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
    const measured = measureTree(input, {
      maxDepth: MAX_SET_DEPTH,
      maxNodes: MAX_SET_NODES,
      maxChars: MAX_SET_SIZE,
    });
    if (!measured.ok) return failure([{ path: '', message: BOUND_MESSAGES[measured.bound] }]);
    const patterns = countPatterns(scenarioPatternTexts(input));
    if (patterns > MAX_SET_PATTERNS) {
      return failure([
        {
          path: '',
          message: `the scenarios hold ${patterns} re: patterns in all (path patterns and header, query and body conditions), more than ${MAX_SET_PATTERNS}; split the set, or match with exact values and globs`,
        },
      ]);
    }
    const problems = new ProblemList();
    const view = boundedView(input, problems);
    if (!checker.Check(view)) collectSchemaProblems(view, problems);
    const limits: FaultLimits = {
      maxDelayMs: delayLimitMs,
      maxResponseBytes: options.maxResponseBytes ?? Number.MAX_SAFE_INTEGER,
    };
    collectSemanticProblems(view, problems, delayLimitMs, maxDelayMs !== undefined, limits);
    if (problems.size > 0) return failure(problems.sorted());
    return { ok: true, scenarios: (view as Scenario[]).map(copyScenario) };
  } catch (error) {
    // Only exotic objects (throwing getters, proxies) get here; JSON and YAML never do.
    return failure([{ path: '', message: `input could not be read: ${(error as Error)?.message ?? error}` }]);
  }
}

/** The `re:` texts among `texts`. */
function countPatterns(texts: readonly string[]): number {
  let count = 0;
  for (const text of texts) if (text.startsWith(REGEX_PREFIX)) count++;
  return count;
}

const BOUND_MESSAGES: Readonly<Record<TreeBound, string>> = {
  chars: `the scenarios hold more than ${MAX_SET_SIZE} characters in all (bodies, headers, patterns and names, YAML aliases expanded); split the set or shorten the bodies`,
  nodes: `the scenarios hold more than ${MAX_SET_NODES} values in all (YAML aliases expanded); split the set`,
  depth: `the scenarios nest deeper than ${MAX_SET_DEPTH} levels of arrays and objects (a valid set nests 5 deep)`,
};

function failure(problems: ScenarioProblem[]): ValidateScenariosResult {
  return { ok: false, problems };
}

/** A deep copy of a validated scenario, keeping only the schema's fields. */
export function copyScenario(scenario: Scenario): Scenario {
  const copy: Scenario = {} as Scenario;
  if (scenario.name !== undefined) copy.name = scenario.name;
  if (scenario.path !== undefined) copy.path = scenario.path;
  if (scenario.pathPattern !== undefined) copy.pathPattern = scenario.pathPattern;
  if (scenario.method !== undefined) copy.method = [...scenario.method];
  if (scenario.headers !== undefined) copy.headers = Object.fromEntries(Object.entries(scenario.headers));
  if (scenario.query !== undefined) copy.query = Object.fromEntries(Object.entries(scenario.query));
  if (scenario.body !== undefined) copy.body = { ...scenario.body };
  if (scenario.cycle !== undefined) copy.cycle = scenario.cycle;
  if (scenario.upstream !== undefined) copy.upstream = scenario.upstream;
  if (scenario.order !== undefined) copy.order = scenario.order;
  if (scenario.activeFor !== undefined) copy.activeFor = scenario.activeFor;
  if (scenario.times !== undefined) copy.times = scenario.times;
  copy.responses = scenario.responses.map(copyResponse);
  return copy;
}

/** Whether a scenario matches on its exact `path` alone: no pattern, no other condition. */
export function isPlainPath(scenario: Scenario): boolean {
  return (
    scenario.path !== undefined &&
    scenario.method === undefined &&
    scenario.headers === undefined &&
    scenario.query === undefined &&
    scenario.body === undefined
  );
}

function copyResponse(response: ScenarioResponse): ScenarioResponse {
  const copy: ScenarioResponse = {};
  if (response.status !== undefined) copy.status = response.status;
  if (response.delay !== undefined) copy.delay = response.delay;
  if (response.body !== undefined) copy.body = response.body;
  if (response.repeat !== undefined) copy.repeat = response.repeat;
  if (response.weight !== undefined) copy.weight = response.weight;
  // fromEntries defines own properties, so even a header named `__proto__` survives the copy.
  if (response.headers !== undefined) copy.headers = Object.fromEntries(Object.entries(response.headers));
  for (const field of SCENARIO_FAULT_FIELDS) {
    const text = response[field];
    if (text !== undefined) copy[field] = text;
  }
  if (response.grpcStatus !== undefined) copy.grpcStatus = response.grpcStatus;
  if (response.grpcMessage !== undefined) copy.grpcMessage = response.grpcMessage;
  if (response.grpcMetadata !== undefined)
    copy.grpcMetadata = Object.fromEntries(Object.entries(response.grpcMetadata));
  if (response.grpcTrailers !== undefined)
    copy.grpcTrailers = Object.fromEntries(Object.entries(response.grpcTrailers));
  return copy;
}

/**
 * The input with every `responses` array cut to {@link MAX_RESPONSES}, so that the schema walk never
 * goes through a huge array: the excess is reported here, once. A `method` written as one string
 * becomes a list of one (the CRD, which cannot express a union, takes only the list).
 */
function boundedView(input: unknown[], problems: ProblemList): unknown[] {
  let view: unknown[] | undefined;
  for (let i = 0; i < input.length; i++) {
    const item = input[i];
    if (!isRecord(item)) continue;
    let scenario: Record<string, unknown> = item;
    if (typeof item['method'] === 'string') {
      view ??= input.slice();
      scenario = { ...item, method: [item['method']] };
      view[i] = scenario;
    }
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
  limits: FaultLimits,
): void {
  const firstByPath = new Map<string, number>();
  const firstByName = new Map<string, number>();
  for (let i = 0; i < view.length && !problems.full; i++) {
    const scenario = view[i];
    if (!isRecord(scenario)) continue;
    const path = scenario['path'];
    const pathLocation = `/${i}/path`;
    const pattern = scenario['pathPattern'];
    const patternLocation = `/${i}/pathPattern`;
    if ((path === undefined) === (pattern === undefined)) {
      problems.add(
        path === undefined ? pathLocation : patternLocation,
        path === undefined
          ? 'path or pathPattern is required: a scenario gives exactly one of them'
          : 'pathPattern cannot be given beside path: a scenario gives exactly one of them',
      );
    }
    if (typeof path === 'string' && !problems.has(pathLocation) && isPlainPath(scenario as Scenario)) {
      const first = firstByPath.get(path);
      if (first === undefined) firstByPath.set(path, i);
      else
        problems.add(
          pathLocation,
          `path ${quote(path)} without other conditions is already used by scenario ${first}; such paths must be unique`,
        );
    }
    if (typeof pattern === 'string' && !problems.has(patternLocation)) {
      const compiled = compilePathPattern(pattern);
      if (!compiled.ok) problems.add(patternLocation, `pathPattern ${quote(pattern)}: ${compiled.reason}`);
    }
    const name = scenario['name'];
    if (typeof name === 'string' && !problems.has(`/${i}/name`)) {
      const first = firstByName.get(name);
      if (first === undefined) firstByName.set(name, i);
      else
        problems.add(
          `/${i}/name`,
          `name ${quote(name)} is already used by scenario ${first}; names must be unique`,
        );
    }
    checkNames(scenario['headers'], `/${i}/headers`, problems, 'header condition');
    checkNames(scenario['query'], `/${i}/query`, problems, 'query');
    checkConditionValues(scenario['headers'], `/${i}/headers`, problems);
    checkConditionValues(scenario['query'], `/${i}/query`, problems);
    checkBodyCondition(scenario['body'], `/${i}/body`, problems);
    const upstream = scenario['upstream'];
    if (
      typeof upstream === 'string' &&
      !problems.has(`/${i}/upstream`) &&
      parseUpstreamUrl(upstream) === undefined
    )
      problems.add(`/${i}/upstream`, `upstream ${quote(upstream)} must be ${UPSTREAM_FORM}`);
    checkActiveFor(scenario['activeFor'], `/${i}/activeFor`, problems);
    const responses = scenario['responses'];
    if (!Array.isArray(responses)) continue;
    checkOrder(scenario, responses, i, problems);
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
      checkNames(response['headers'], `${location}/headers`, problems, 'response header');
      checkFaults(response, location, problems, limits);
      checkGrpcAnswer(response, location, problems);
    }
  }
}

/** `activeFor`: a duration the schema's pattern admits may still be 0 or past the ceiling. */
function checkActiveFor(activeFor: unknown, location: string, problems: ProblemList): void {
  if (typeof activeFor !== 'string' || problems.has(location)) return;
  const read = readActiveFor(activeFor);
  if (!read.ok) problems.add(location, `${read.message}, got ${quote(activeFor)}`);
}

/**
 * What goes only with one `order`: `weight` and a weight above 0 with `random`, `cycle: false`
 * with `cycle` (a random draw has no last response to stay on; `times` or `activeFor` end it).
 */
function checkOrder(
  scenario: Record<string, unknown>,
  responses: unknown[],
  i: number,
  problems: ProblemList,
): void {
  const random = scenario['order'] === 'random';
  if (random && scenario['cycle'] === false && !problems.has(`/${i}/cycle`)) {
    problems.add(
      `/${i}/cycle`,
      'cycle: false goes only with order: cycle (a random draw has no last response to stay on; end it with times or activeFor)',
    );
  }
  // A weight that is not a number already has its problem: only all weights 0 is one more.
  let weighted = false;
  for (let j = 0; j < responses.length && !problems.full; j++) {
    const response = responses[j];
    if (!isRecord(response)) continue;
    const weight = response['weight'];
    if (random) weighted ||= weight !== 0;
    else if (weight !== undefined) {
      problems.add(`/${i}/responses/${j}/weight`, 'weight goes only with order: random on its scenario');
    }
  }
  if (random && !weighted && responses.length > 0 && !problems.has(`/${i}/responses`)) {
    problems.add(
      `/${i}/responses`,
      'under order: random at least one response needs a weight above 0 (the default is 1)',
    );
  }
}

/** A response's fault fields, each read by its control header's parser (`faults.ts`). */
function checkFaults(
  response: Record<string, unknown>,
  location: string,
  problems: ProblemList,
  limits: FaultLimits,
): void {
  for (const field of SCENARIO_FAULT_FIELDS) {
    const text = response[field];
    const at = `${location}/${field}`;
    if (typeof text !== 'string' || problems.has(at)) continue;
    const message = readFault(field, text, {}, limits);
    if (message !== undefined) problems.add(at, `${field} ${quote(text)}: ${message}`);
  }
}

/**
 * A response's gRPC fields: `grpcMessage` only beside a `grpcStatus` other than OK, and well-formed
 * (grpc-js percent-encodes it with `encodeURI`, which throws on a lone surrogate); the keys of
 * `grpcMetadata` and `grpcTrailers`, and the base64 of their `-bin` values.
 */
function checkGrpcAnswer(response: Record<string, unknown>, location: string, problems: ProblemList): void {
  const message = response['grpcMessage'];
  const at = `${location}/grpcMessage`;
  if (typeof message === 'string' && !problems.has(at)) {
    const status = response['grpcStatus'];
    const code =
      typeof status === 'number' || typeof status === 'string' ? parseGrpcStatus(status) : undefined;
    if (status === undefined) {
      problems.add(at, 'grpcMessage goes only beside grpcStatus: the status it explains');
    } else if (code === GRPC_STATUS_OK) {
      problems.add(
        at,
        `grpcMessage cannot go beside grpcStatus ${describe(status)} (OK): an OK answer carries no status message`,
      );
    } else if (!message.isWellFormed()) {
      problems.add(
        at,
        'grpcMessage must be well-formed Unicode text, got a lone surrogate (a half of a UTF-16 pair)',
      );
    }
  }
  for (const field of ['grpcMetadata', 'grpcTrailers'] as const) {
    const map = response[field];
    if (!isRecord(map)) continue;
    for (const key of Object.keys(map)) {
      if (problems.full) return;
      const keyAt = `${location}/${field}/${escapePointer(key)}`;
      const keyProblem = grpcMetadataKeyProblem(
        key,
        quote(key),
        field === 'grpcMetadata' ? 'metadata' : 'trailer',
      );
      if (keyProblem !== undefined) problems.append(keyAt, keyProblem);
      const value = map[key];
      if (typeof value !== 'string' || problems.has(keyAt)) continue;
      const valueProblem = grpcMetadataValueProblem(key, value);
      if (valueProblem !== undefined)
        problems.add(keyAt, `value of ${quote(key)} ${valueProblem}, got ${quote(value)}`);
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

/**
 * The names of a name-to-value map: a response's `headers` (HTTP tokens, not reserved), a header
 * condition (HTTP tokens) or a query condition (not empty). Header names are unique whatever their
 * case.
 */
function checkNames(
  map: unknown,
  location: string,
  problems: ProblemList,
  kind: 'response header' | 'header condition' | 'query',
): void {
  if (!isRecord(map)) return;
  const header = kind !== 'query';
  const seen = new Map<string, string>();
  for (const name of Object.keys(map)) {
    if (problems.full) return;
    const at = `${location}/${escapePointer(name)}`;
    const lower = name.toLowerCase();
    if (name.length > MAX_HEADER_NAME_LENGTH || (!header && name.length === 0)) {
      problems.append(
        at,
        `${header ? 'header' : 'query parameter'} name must be ${header ? 'at most ' : '1-'}${MAX_HEADER_NAME_LENGTH} characters, got ${name.length} characters`,
      );
    } else if (!header) {
    } else if (!HEADER_NAME.test(name)) {
      problems.append(at, `header name must be an HTTP token (${HEADER_NAME_CHARS}), got ${quote(name)}`);
    } else if (kind === 'response header' && UNSETTABLE_HEADERS.has(lower)) {
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

/** Every `re:` value of a condition map compiles, within the pattern length bound. */
function checkConditionValues(map: unknown, location: string, problems: ProblemList): void {
  if (!isRecord(map)) return;
  for (const name in map) {
    if (!Object.hasOwn(map, name)) continue;
    if (problems.full) return;
    // The location and label are made only for a problem: a set may hold 64,000 condition values.
    checkTextMatcher(
      map[name],
      () => `${location}/${escapePointer(name)}`,
      () => `value of ${quote(name)}`,
      problems,
    );
  }
}

function checkTextMatcher(
  value: unknown,
  at: () => string,
  label: () => string,
  problems: ProblemList,
): void {
  if (typeof value !== 'string') return;
  const compiled = compileTextMatcher(value);
  if (compiled.ok) return;
  const where = at();
  if (!problems.has(where)) problems.add(where, `${label()} ${quote(value)}: ${compiled.reason}`);
}

const BODY_FORMS = ['contains', 'equals', 'jsonPointer'] as const;

/** Exactly one of `contains`, `equals`, `jsonPointer`; `value` beside `jsonPointer` and only there. */
function checkBodyCondition(body: unknown, location: string, problems: ProblemList): void {
  if (!isRecord(body) || problems.has(location)) return;
  const given = BODY_FORMS.filter((form) => body[form] !== undefined);
  if (given.length !== 1) {
    problems.add(
      location,
      `body must give exactly one of contains, equals or jsonPointer (with value), got ${given.length === 0 ? 'none' : given.join(' and ')}`,
    );
  } else if (given[0] === 'jsonPointer' && body['value'] === undefined) {
    problems.add(
      `${location}/value`,
      'body.value is required beside jsonPointer: the value it must point at',
    );
  } else if (given[0] !== 'jsonPointer' && body['value'] !== undefined) {
    problems.add(`${location}/value`, 'body.value goes only beside jsonPointer');
  } else if (given[0] === 'jsonPointer') {
    checkTextMatcher(
      body['value'],
      () => `${location}/value`,
      () => 'body.value',
      problems,
    );
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
