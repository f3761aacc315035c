/**
 * The live scenario set of one echo process. `match` sits on the hot path of every echo request, so
 * all the work (validation, pattern compilation, delay parsing, header normalisation) happens once,
 * in `replace`.
 */
import { jsonDepthWithin } from './bounds.ts';
import { type DelaySpec, parseDelaySpec } from './duration.ts';
import { ScenarioInvalidError } from './errors.ts';
import { type FaultLimits, type FaultSpec, readFault, SCENARIO_FAULT_FIELDS } from './faults.ts';
import { scenarioSetHash } from './hash.ts';
import {
  compilePathPattern,
  compileTextMatcher,
  type PatternMatcher,
  pointedText,
  type TextMatcher,
  textMatches,
} from './matchers.ts';
import { type IndexedItem, PathIndex } from './path-index.ts';
import { type BodyCondition, MAX_TIMER_DELAY_MS, type Scenario, type ScenarioResponse } from './schema.ts';
import { copyScenario, isPlainPath, type ValidateScenariosOptions, validateScenarios } from './validate.ts';

/** The response a scenario supplies for one request: ready to send, nothing left to parse. */
export interface ScenarioStep {
  /** HTTP status, 100-599. */
  readonly status: number;
  /** Response body; `undefined` when the scenario response has none. */
  readonly body: string | undefined;
  /** Response headers, names lowercased (HTTP names are case-insensitive); frozen, may be empty. */
  readonly headers: Readonly<Record<string, string>>;
  /** Delay before responding, pre-parsed; `undefined` when there is none. */
  readonly delay: DelaySpec | undefined;
  /**
   * The response's fault fields (`error`, `size`, `throttle`, ...), read by their headers' parsers
   * and drawn per request by the echo; `undefined` when it has none.
   */
  readonly faults: FaultSpec | undefined;
  /** Position of this response in its scenario's cycle, 0-based. */
  readonly index: number;
}

/** What a scenario may match on, from one request. */
export interface ScenarioRequest {
  /** The request method, e.g. `GET` (compared case-insensitively). */
  readonly method: string;
  /** The request path, without the query. */
  readonly path: string;
  /** The query string without its `?`; `''` when there is none. */
  readonly query: string;
  /** Request headers as Node gives them: names lowercased. */
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** The request body; `undefined` when there is none. */
  readonly body: Buffer | string | undefined;
}

/** The scenario a request matched, before anything is served: see {@link ScenarioStore.take}. */
export interface ScenarioHandle {
  /** The scenario's name, else its `path`, else its `pathPattern`: how faults and logs name it. */
  readonly label: string;
  /** The response {@link ScenarioStore.take} would serve now, 0-based. */
  readonly position: number;
}

/** Names one scenario (or, by `path`, every scenario with that `path` or `pathPattern`). */
export type ScenarioSelector = { readonly name: string } | { readonly path: string };

/** Where one scenario stands: what `GET /scenario/state` lists. */
export interface ScenarioState {
  /** Position of the scenario in the set, 0-based (the order that decides which matches first). */
  readonly index: number;
  readonly name?: string;
  readonly path?: string;
  readonly pathPattern?: string;
  /** Whether the scenario starts again after its last response. */
  readonly cycle: boolean;
  /** The response the next matching request gets, 0-based. */
  readonly position: number;
  /** How often the response at `position` was served in its current run (below its `repeat`). */
  readonly positionServed: number;
  /** How often each response was served since the set was loaded or reset. */
  readonly served: number[];
  /** All responses served since the set was loaded or reset. */
  readonly total: number;
}

/** The outcome of {@link ScenarioStore.setPosition}. */
export type SetPositionResult =
  | { readonly ok: true; readonly state: ScenarioState }
  | {
      readonly ok: false;
      readonly reason: 'not-found' | 'ambiguous' | 'out-of-range';
      readonly message: string;
    };

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

type CompiledBody =
  | { readonly kind: 'contains'; readonly text: string }
  | { readonly kind: 'equals'; readonly text: string }
  | { readonly kind: 'pointer'; readonly pointer: string; readonly value: TextMatcher };

/** One compiled scenario and its state. Fixed size: the counters are one per response. */
class Entry implements ScenarioHandle {
  readonly index: number;
  readonly scenario: Scenario;
  readonly label: string;
  readonly pattern: PatternMatcher | undefined;
  readonly methods: ReadonlySet<string> | undefined;
  readonly headers: ReadonlyArray<readonly [string, TextMatcher]> | undefined;
  readonly query: ReadonlyArray<readonly [string, TextMatcher]> | undefined;
  readonly body: CompiledBody | undefined;
  readonly steps: readonly ScenarioStep[];
  readonly repeats: Uint32Array;
  readonly cycle: boolean;
  readonly served: Float64Array;
  position = 0;
  positionServed = 0;
  total = 0;

  constructor(scenario: Scenario, index: number, limits: FaultLimits) {
    this.index = index;
    this.scenario = scenario;
    this.label = scenario.name ?? scenario.path ?? scenario.pathPattern ?? '';
    // Validated in `replace`, so every pattern compiles.
    this.pattern =
      scenario.pathPattern === undefined ? undefined : compiled(compilePathPattern(scenario.pathPattern));
    this.methods =
      scenario.method === undefined ? undefined : new Set(scenario.method.map((m) => m.toUpperCase()));
    this.headers = conditions(scenario.headers, (name) => name.toLowerCase());
    this.query = conditions(scenario.query, (name) => name);
    this.body = compileBody(scenario.body);
    this.steps = scenario.responses.map((response, i) => toStep(response, i, limits));
    this.repeats = Uint32Array.from(scenario.responses, (r) => r.repeat ?? 1);
    this.cycle = scenario.cycle ?? true;
    this.served = new Float64Array(scenario.responses.length);
  }

  matches(request: ScenarioRequest, lazy: LazyRequest): boolean {
    if (this.pattern === undefined ? this.scenario.path !== request.path : !this.pattern.test(request.path))
      return false;
    if (this.methods !== undefined && !this.methods.has(request.method.toUpperCase())) return false;
    if (this.headers !== undefined) {
      for (const [name, matcher] of this.headers) {
        // Own properties only: a condition on `constructor` must not find Object's.
        const value = Object.hasOwn(request.headers, name) ? request.headers[name] : undefined;
        if (value === undefined) return false;
        if (
          typeof value === 'string'
            ? !textMatches(matcher, value)
            : !value.some((v) => textMatches(matcher, v))
        )
          return false;
      }
    }
    if (this.query !== undefined) {
      const params = lazy.params();
      for (const [name, matcher] of this.query) {
        if (!params.getAll(name).some((v) => textMatches(matcher, v))) return false;
      }
    }
    if (this.body !== undefined) {
      const body = this.body;
      if (body.kind === 'contains') return lazy.text().includes(body.text);
      if (body.kind === 'equals') return lazy.text() === body.text;
      const document = lazy.json();
      if (document === NOT_JSON) return false;
      const found = pointedText(document, body.pointer);
      return found !== undefined && textMatches(body.value, found);
    }
    return true;
  }

  reset(): void {
    this.position = 0;
    this.positionServed = 0;
    this.total = 0;
    this.served.fill(0);
  }

  state(): ScenarioState {
    const { name, path, pathPattern } = this.scenario;
    return {
      index: this.index,
      ...(name === undefined ? {} : { name }),
      ...(path === undefined ? {} : { path }),
      ...(pathPattern === undefined ? {} : { pathPattern }),
      cycle: this.cycle,
      position: this.position,
      positionServed: this.positionServed,
      served: Array.from(this.served),
      total: this.total,
    };
  }
}

const NOT_JSON = Symbol('not JSON');
/** Deepest request body a `jsonPointer` condition reads; a deeper one is taken as not JSON. */
const MAX_BODY_MATCH_DEPTH = 1000;

/** The parts of a request only some conditions need, each worked out once per request, at first use. */
class LazyRequest {
  readonly #request: ScenarioRequest;
  #params: URLSearchParams | undefined;
  #text: string | undefined;
  #json: unknown = undefined;
  #jsonDone = false;

  constructor(request: ScenarioRequest) {
    this.#request = request;
  }

  params(): URLSearchParams {
    this.#params ??= new URLSearchParams(this.#request.query);
    return this.#params;
  }

  text(): string {
    const body = this.#request.body;
    this.#text ??= body === undefined ? '' : typeof body === 'string' ? body : body.toString('utf8');
    return this.#text;
  }

  json(): unknown {
    if (!this.#jsonDone) {
      this.#jsonDone = true;
      try {
        const text = this.text();
        // A body nesting deeper than any condition could mean costs seconds to parse: not JSON here.
        this.#json = jsonDepthWithin(text, MAX_BODY_MATCH_DEPTH) === undefined ? NOT_JSON : JSON.parse(text);
      } catch {
        this.#json = NOT_JSON;
      }
    }
    return this.#json;
  }
}

/**
 * In-memory scenarios, matched in list order. Replacing is atomic: a request sees the old set or
 * the new one, never a mix, and every scenario starts again at its first response.
 */
export class ScenarioStore {
  #scenarios: readonly Scenario[] = [];
  #hash: string | undefined;
  #entries: readonly Entry[] = [];
  /** Scenarios matching on their exact `path` alone, by path: the fast path. */
  #plain: ReadonlyMap<string, Entry> = new Map();
  /** Every other scenario, indexed by the exact path or the literal prefix a matching path has. */
  #conditional: PathIndex<Entry> = new PathIndex([]);

  /** Number of scenarios in the current set. */
  get size(): number {
    return this.#scenarios.length;
  }

  /**
   * Swaps in a whole new set and restarts every scenario. The set is validated first (schema,
   * patterns, delays, unique names and plain paths, header names), with `options` as
   * {@link validateScenarios} takes them; when it is invalid nothing changes.
   * @throws {ScenarioInvalidError} `SCENARIO_ERR_INVALID` listing every problem.
   */
  replace(scenarios: readonly Scenario[], options: ValidateScenariosOptions = {}): void {
    const result = validateScenarios(scenarios, options);
    if (!result.ok) throw new ScenarioInvalidError(result.problems, 'scenario store');
    const limits: FaultLimits = {
      maxDelayMs: options.maxDelayMs ?? MAX_TIMER_DELAY_MS,
      maxResponseBytes: options.maxResponseBytes ?? Number.MAX_SAFE_INTEGER,
    };
    const entries = result.scenarios.map((scenario, index) => new Entry(scenario, index, limits));
    const plain = new Map<string, Entry>();
    const conditional: Array<IndexedItem<Entry>> = [];
    for (const entry of entries) {
      const { path } = entry.scenario;
      if (isPlainPath(entry.scenario)) plain.set(path!, entry);
      else if (path !== undefined) conditional.push({ item: entry, exact: path });
      else conditional.push({ item: entry, prefix: entry.pattern!.literalPrefix });
    }
    this.#scenarios = result.scenarios;
    this.#hash = undefined;
    this.#entries = entries;
    this.#plain = plain;
    this.#conditional = new PathIndex(conditional);
  }

  /**
   * The content hash of the current set ({@link scenarioSetHash}, what `GET /scenario` sends as its
   * ETag), worked out once per set: a set of megabytes takes tens of milliseconds to hash.
   */
  contentHash(): string {
    this.#hash ??= scenarioSetHash(this.#scenarios);
    return this.#hash;
  }

  /** The current scenarios, as deep copies: changing them does not change the store. */
  list(): Scenario[] {
    return this.#scenarios.map(copyScenario);
  }

  /**
   * The first scenario, in list order, that matches the request; nothing advances (see
   * {@link take}). A set of plain exact paths costs one map lookup and allocates nothing. Only the
   * scenarios that can match the path are tried: those with that exact `path`, and the patterns
   * whose literal prefix (`/api/` of `/api/*` or of `re:/api/v[0-9]+`) the path starts with.
   * @returns the handle, or `undefined` when no scenario matches.
   */
  match(request: ScenarioRequest): ScenarioHandle | undefined {
    const plain = this.#plain.get(request.path);
    const conditional = this.#conditional;
    if (conditional.size === 0) return plain;
    let best: Entry | undefined = plain;
    let lazy: LazyRequest | undefined;
    // Each list is in set order, so its first match is its earliest; the earliest of those wins.
    for (const list of conditional.candidates(request.path)) {
      for (const entry of list) {
        if (best !== undefined && entry.index > best.index) break;
        lazy ??= new LazyRequest(request);
        if (entry.matches(request, lazy)) {
          best = entry;
          break;
        }
      }
    }
    return best;
  }

  /**
   * Serves the matched scenario's current response and moves it on: after the response's `repeat`
   * servings to the next one, after the last back to the first (or, with `cycle: false`, staying).
   * A handle of a set since replaced moves only that old set.
   */
  take(handle: ScenarioHandle): ScenarioStep {
    if (!(handle instanceof Entry)) throw new TypeError('take: not a handle from ScenarioStore.match');
    const position = handle.position;
    const step = handle.steps[position]!;
    handle.served[position]! += 1;
    handle.total += 1;
    handle.positionServed += 1;
    if (handle.positionServed >= handle.repeats[position]!) {
      handle.positionServed = 0;
      if (position + 1 < handle.steps.length) handle.position = position + 1;
      else if (handle.cycle) handle.position = 0;
    }
    return step;
  }

  /**
   * Matches on the path alone (method GET, no query, headers or body) and takes the step: a
   * shorthand for tools and tests.
   * @returns the step, or `undefined` when no scenario matches.
   */
  next(path: string): ScenarioStep | undefined {
    const handle = this.match({ method: 'GET', path, query: '', headers: {}, body: undefined });
    return handle === undefined ? undefined : this.take(handle);
  }

  /** Where every scenario stands, in list order. */
  states(): ScenarioState[] {
    return this.#entries.map((entry) => entry.state());
  }

  /**
   * Starts scenarios again at their first response with their counters at zero: all of them, the
   * one with that `name`, or every one whose `path` or `pathPattern` is that `path`.
   * @returns the states of the scenarios reset; empty when the selector names none.
   */
  reset(selector?: ScenarioSelector): ScenarioState[] {
    const entries = selector === undefined ? this.#entries : this.#select(selector);
    for (const entry of entries) entry.reset();
    return entries.map((entry) => entry.state());
  }

  /**
   * Sets one scenario's position (its counters stay). The selector must name exactly one scenario
   * and the position must be one of its responses; otherwise nothing changes.
   */
  setPosition(selector: ScenarioSelector, position: number): SetPositionResult {
    const entries = this.#select(selector);
    const named =
      'name' in selector ? `name ${JSON.stringify(selector.name)}` : `path ${JSON.stringify(selector.path)}`;
    if (entries.length === 0) return { ok: false, reason: 'not-found', message: `no scenario has ${named}` };
    if (entries.length > 1) {
      return {
        ok: false,
        reason: 'ambiguous',
        message: `${entries.length} scenarios have ${named}: name one by its name`,
      };
    }
    const entry = entries[0]!;
    if (!Number.isInteger(position) || position < 0 || position >= entry.steps.length) {
      return {
        ok: false,
        reason: 'out-of-range',
        message: `position must be an integer 0-${entry.steps.length - 1} (the scenario has ${entry.steps.length} responses), got ${position}`,
      };
    }
    entry.position = position;
    entry.positionServed = 0;
    return { ok: true, state: entry.state() };
  }

  #select(selector: ScenarioSelector): Entry[] {
    if ('name' in selector) return this.#entries.filter((e) => e.scenario.name === selector.name);
    return this.#entries.filter(
      (e) => e.scenario.path === selector.path || e.scenario.pathPattern === selector.path,
    );
  }
}

function compiled<T>(result: { ok: true; value: T } | { ok: false; reason: string }): T {
  if (!result.ok) throw new Error(`validated pattern failed to compile: ${result.reason}`);
  return result.value;
}

function conditions(
  map: Readonly<Record<string, string>> | undefined,
  key: (name: string) => string,
): Array<readonly [string, TextMatcher]> | undefined {
  if (map === undefined) return undefined;
  return Object.entries(map).map(
    ([name, value]) => [key(name), compiled(compileTextMatcher(value))] as const,
  );
}

function compileBody(body: BodyCondition | undefined): CompiledBody | undefined {
  if (body === undefined) return undefined;
  if (body.contains !== undefined) return { kind: 'contains', text: body.contains };
  if (body.equals !== undefined) return { kind: 'equals', text: body.equals };
  return {
    kind: 'pointer',
    pointer: body.jsonPointer ?? '',
    value: compiled(compileTextMatcher(body.value ?? '')),
  };
}

/** A response's fault fields as one spec; validated in `replace`, so each reads. */
function faultsOf(response: ScenarioResponse, limits: FaultLimits): FaultSpec | undefined {
  let spec: FaultSpec | undefined;
  for (const field of SCENARIO_FAULT_FIELDS) {
    const text = response[field];
    if (text === undefined) continue;
    spec ??= {};
    readFault(field, text, spec, limits);
  }
  return spec === undefined ? undefined : Object.freeze(spec);
}

function toStep(response: ScenarioResponse, index: number, limits: FaultLimits): ScenarioStep {
  return Object.freeze({
    status: response.status,
    body: response.body,
    headers: response.headers === undefined ? NO_HEADERS : lowercaseNames(response.headers),
    // Validated in `replace`, so it parses.
    delay: response.delay === undefined ? undefined : Object.freeze(parseDelaySpec(response.delay)),
    faults: faultsOf(response, limits),
    index,
  });
}

function lowercaseNames(headers: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  return Object.freeze(
    Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value])),
  );
}
