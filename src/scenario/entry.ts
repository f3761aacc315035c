/**
 * One scenario of a store, compiled once when its set is stored: its conditions as matchers, its
 * responses as ready steps, its order and windows; and where it stands, in cursors (one for the
 * requests without a session, one per session that used it), with the types a request and a
 * step are seen through. `store.ts` decides which entry a request gets and moves its cursor.
 */
import assert from 'node:assert/strict';
import { jsonDepthWithin } from './bounds.ts';
import { type DelaySpec, parseDelaySpec } from './duration.ts';
import { type FaultLimits, type FaultSpec, readFault, SCENARIO_FAULT_FIELDS } from './faults.ts';
import { type GrpcMetadataValue, parseGrpcStatus, toGrpcMetadata } from './grpc-answer.ts';
import {
  compilePathPattern,
  compileTextMatcher,
  type PatternMatcher,
  pointedText,
  type TextMatcher,
  textMatches,
} from './matchers.ts';
import { DEFAULT_WEIGHT, type ScenarioOrder, WeightedOrder } from './order.ts';
import type { BodyCondition, Scenario, ScenarioResponse } from './schema.ts';
import type { ScenarioState } from './state.ts';
import { readActiveFor } from './windows.ts';

export type { ScenarioState } from './state.ts';

/**
 * The response a scenario supplies for one request: ready to send, nothing left to parse. An HTTP
 * request uses `status`, `body`, `headers` and `faults`, a gRPC call `grpcStatus`, `grpcMessage`,
 * `grpcMetadata` and `grpcTrailers`; both use `delay`.
 */
export interface ScenarioStep {
  /** HTTP status, 100-599; `undefined` when the response gives none. */
  readonly status: number | undefined;
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
  /** The scenario's `upstream`: the request is forwarded there, with this response's faults. */
  readonly upstream: string | undefined;
  /**
   * gRPC status code a gRPC call ends with, 0-16 (a name in the scenario is read to its code);
   * `undefined` when the response gives none. 0 (`OK`) answers the call as usual.
   */
  readonly grpcStatus: number | undefined;
  /** Status message of a gRPC answer (never beside `OK`); `undefined` when the response has none. */
  readonly grpcMessage: string | undefined;
  /**
   * Metadata to add to a gRPC answer's initial metadata, keys lower-case, values ready for grpc-js's
   * `Metadata` (a `Buffer` under a `-bin` key, decoded from the scenario's base64, else a string);
   * frozen, may be empty. Shared by every call the step answers: never written.
   */
  readonly grpcMetadata: Readonly<Record<string, GrpcMetadataValue>>;
  /** Metadata to add to a gRPC answer's trailers, as {@link ScenarioStep.grpcMetadata}. */
  readonly grpcTrailers: Readonly<Record<string, GrpcMetadataValue>>;
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
  /** The scenario's `upstream`: where what it matches goes, even when its faults are not applied. */
  readonly upstream: string | undefined;
  /**
   * The response {@link ScenarioStore.take} would serve now, read without taking it: whether it
   * forwards and what it changes decide whether taking it is a `scenario` fault.
   */
  readonly next: ScenarioStep | undefined;
}

/** The condition of a scenario a request does not meet, and how: see {@link Entry.mismatch}. */
export interface Mismatch {
  /** The scenario's field whose condition fails. */
  readonly field: 'path' | 'method' | 'headers' | 'query' | 'body';
  readonly message: string;
}

/** Longest condition text a {@link Mismatch} quotes. */
const MAX_QUOTED_CHARS = 100;

function quoted(text: string): string {
  const cut = text.length > MAX_QUOTED_CHARS ? `${text.slice(0, MAX_QUOTED_CHARS)}…` : text;
  return JSON.stringify(cut);
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

type CompiledBody =
  | { readonly kind: 'contains'; readonly text: string }
  | { readonly kind: 'equals'; readonly text: string }
  | { readonly kind: 'pointer'; readonly pointer: string; readonly value: TextMatcher };

/**
 * One compiled scenario. Where it stands is kept in cursors: one for the requests without a
 * session, one for each session that used it.
 */
export class Entry {
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
  readonly order: ScenarioOrder;
  /** Under `order: random`, the draw by weight; `undefined` when responses are served in turn. */
  readonly random: WeightedOrder | undefined;
  /** `activeFor` in milliseconds; `undefined` without one. */
  readonly activeForMs: number | undefined;
  readonly times: number | undefined;
  /** Whether `activeFor` or `times` can expire it; when not, matching checks neither. */
  readonly windowed: boolean;
  /** Neither windowed nor random: a request without a session gets its cursor as it is. */
  readonly simple: boolean;
  /** When its `activeFor` ends, in the store's clock: from when it was stored or last reset. */
  activeUntil = Number.POSITIVE_INFINITY;
  /** Whether the end of its `activeFor` was counted (once per set or reset). */
  activeEndCounted = false;
  /** Where it stands for requests without a session. */
  readonly cursor: Cursor;

  constructor(scenario: Scenario, index: number, limits: FaultLimits, now: number) {
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
    this.steps = scenario.responses.map((response, i) => toStep(response, i, limits, scenario.upstream));
    this.repeats = Uint32Array.from(scenario.responses, (r) => r.repeat ?? 1);
    this.cycle = scenario.cycle ?? true;
    this.order = scenario.order ?? 'cycle';
    this.random =
      this.order === 'random'
        ? new WeightedOrder(scenario.responses.map((r) => r.weight ?? DEFAULT_WEIGHT))
        : undefined;
    // Validated in `replace`, so it reads.
    const activeFor = scenario.activeFor === undefined ? undefined : readActiveFor(scenario.activeFor);
    this.activeForMs = activeFor?.ok === true ? activeFor.ms : undefined;
    this.times = scenario.times;
    this.windowed = this.activeForMs !== undefined || this.times !== undefined;
    this.simple = !this.windowed && this.random === undefined;
    this.cursor = new Cursor(this, undefined);
    this.restart(now);
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

  /**
   * The first of its conditions `request` does not meet, said for a person (the console's dry run,
   * {@link ScenarioStore.peek}); `undefined` when it meets them all. It decides as {@link matches}
   * does (a test holds the two together); `matches` stays the hot path's, allocating nothing.
   */
  mismatch(request: ScenarioRequest, lazy: LazyRequest): Mismatch | undefined {
    const { scenario } = this;
    if (this.pattern === undefined ? scenario.path !== request.path : !this.pattern.test(request.path)) {
      return {
        field: 'path',
        message:
          this.pattern === undefined
            ? `path is not ${quoted(scenario.path ?? '')}`
            : `path does not match ${quoted(scenario.pathPattern ?? '')}`,
      };
    }
    if (this.methods !== undefined && !this.methods.has(request.method.toUpperCase())) {
      return { field: 'method', message: `method is not ${[...this.methods].join(' or ')}` };
    }
    const headerTexts = Object.values(scenario.headers ?? {});
    for (const [i, [name, matcher]] of (this.headers ?? []).entries()) {
      const value = Object.hasOwn(request.headers, name) ? request.headers[name] : undefined;
      if (value === undefined) return { field: 'headers', message: `no header ${name}` };
      const values = typeof value === 'string' ? [value] : value;
      if (!values.some((v) => textMatches(matcher, v))) {
        return { field: 'headers', message: `header ${name} is not ${quoted(headerTexts[i] ?? '')}` };
      }
    }
    const queryTexts = Object.values(scenario.query ?? {});
    for (const [i, [name, matcher]] of (this.query ?? []).entries()) {
      const values = lazy.params().getAll(name);
      if (values.length === 0) return { field: 'query', message: `no query parameter ${name}` };
      if (!values.some((v) => textMatches(matcher, v))) {
        return { field: 'query', message: `query parameter ${name} is not ${quoted(queryTexts[i] ?? '')}` };
      }
    }
    const body = this.body;
    if (body === undefined) return undefined;
    if (body.kind === 'contains') {
      return lazy.text().includes(body.text)
        ? undefined
        : { field: 'body', message: `body does not contain ${quoted(body.text)}` };
    }
    if (body.kind === 'equals') {
      return lazy.text() === body.text
        ? undefined
        : { field: 'body', message: `body is not ${quoted(body.text)}` };
    }
    const document = lazy.json();
    if (document === NOT_JSON) return { field: 'body', message: 'body is not JSON' };
    const found = pointedText(document, body.pointer);
    if (found === undefined) return { field: 'body', message: `body has nothing at ${quoted(body.pointer)}` };
    if (textMatches(body.value, found)) return undefined;
    return {
      field: 'body',
      message: `body at ${quoted(body.pointer)} is not ${quoted(scenario.body?.value ?? '')}`,
    };
  }

  /** Whether its `activeFor` is over at `now`. */
  ended(now: number): boolean {
    return now >= this.activeUntil;
  }

  /** Starts again as if just stored: first response, counters at zero, `activeFor` from `now`. */
  restart(now: number): void {
    this.cursor.reset();
    this.activeUntil = this.activeForMs === undefined ? Number.POSITIVE_INFINITY : now + this.activeForMs;
    this.activeEndCounted = false;
  }

  /** Where it stands for the requests of `cursor` (without a session, or of one), at `now`. */
  state(cursor: Cursor, now: number): ScenarioState {
    const { name, path, pathPattern } = this.scenario;
    const { times } = this;
    return {
      index: this.index,
      ...(name === undefined ? {} : { name }),
      ...(path === undefined ? {} : { path }),
      ...(pathPattern === undefined ? {} : { pathPattern }),
      cycle: this.cycle,
      order: this.order,
      position: cursor.position,
      positionServed: cursor.positionServed,
      ...(cursor.served === undefined ? {} : { served: Array.from(cursor.served) }),
      total: cursor.total,
      expired: this.ended(now) || (times !== undefined && cursor.total >= times),
      ...(this.activeForMs === undefined ? {} : { activeUntil: new Date(this.activeUntil).toISOString() }),
      ...(times === undefined ? {} : { remaining: Math.max(0, times - cursor.total) }),
    };
  }
}

/**
 * Where one scenario stands for the requests without a session, or for one session: the handle
 * {@link ScenarioStore.match} gives and {@link ScenarioStore.take} moves. A few numbers, plus the
 * counts per response for the requests without a session.
 */
export class Cursor implements ScenarioHandle {
  readonly entry: Entry;
  /** The session, or `undefined` for the requests without one. */
  readonly session: string | undefined;
  /** How often each response was served; kept for the requests without a session only. */
  readonly served: Float64Array | undefined;
  position = 0;
  positionServed = 0;
  total = 0;

  constructor(entry: Entry, session: string | undefined) {
    this.entry = entry;
    this.session = session;
    this.served = session === undefined ? new Float64Array(entry.steps.length) : undefined;
  }

  get label(): string {
    return this.entry.label;
  }

  get upstream(): string | undefined {
    return this.entry.steps[0]?.upstream;
  }

  get next(): ScenarioStep | undefined {
    return this.entry.steps[this.position];
  }

  reset(): void {
    this.position = 0;
    this.positionServed = 0;
    this.total = 0;
    this.served?.fill(0);
  }
}

const NOT_JSON = Symbol('not JSON');
/** Deepest request body a `jsonPointer` condition reads; a deeper one is taken as not JSON. */
const MAX_BODY_MATCH_DEPTH = 1000;

/** The parts of a request only some conditions need, each worked out once per request, at first use. */
export class LazyRequest {
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

function compiled<T>(result: { ok: true; value: T } | { ok: false; reason: string }): T {
  // Validation compiled the same pattern: a failure here is a bug.
  assert.ok(result.ok, `validated pattern failed to compile: ${(result as { reason?: string }).reason}`);
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

function toStep(
  response: ScenarioResponse,
  index: number,
  limits: FaultLimits,
  upstream: string | undefined,
): ScenarioStep {
  return Object.freeze({
    status: response.status,
    body: response.body,
    headers: response.headers === undefined ? NO_HEADERS : lowercaseNames(response.headers),
    // Validated in `replace`, so it parses.
    delay: response.delay === undefined ? undefined : Object.freeze(parseDelaySpec(response.delay)),
    faults: faultsOf(response, limits),
    index,
    upstream,
    // Validated in `replace`, so a status reads and every `-bin` value is base64.
    grpcStatus: response.grpcStatus === undefined ? undefined : parseGrpcStatus(response.grpcStatus),
    grpcMessage: response.grpcMessage,
    grpcMetadata: toGrpcMetadata(response.grpcMetadata),
    grpcTrailers: toGrpcMetadata(response.grpcTrailers),
  });
}

function lowercaseNames(headers: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  return Object.freeze(
    Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value])),
  );
}
