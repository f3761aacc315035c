/**
 * The live scenario set of one echo process, and where each scenario stands for the requests
 * without a session and for each session. `match` sits on the hot path of every echo request, so
 * all the work (validation, pattern compilation, delay parsing, header normalisation) happens once,
 * in `replace` (`entry.ts`).
 */
import {
  Cursor,
  Entry,
  LazyRequest,
  type ScenarioHandle,
  type ScenarioRequest,
  type ScenarioState,
  type ScenarioStep,
} from './entry.ts';
import { ScenarioInvalidError } from './errors.ts';
import type { FaultLimits } from './faults.ts';
import { scenarioSetHash } from './hash.ts';
import { type IndexedItem, PathIndex } from './path-index.ts';
import { peekEntries, type ScenarioPeek } from './peek.ts';
import { MAX_TIMER_DELAY_MS, type Scenario } from './schema.ts';
import { SessionTable } from './sessions.ts';
import { copyScenario, isPlainPath, type ValidateScenariosOptions, validateScenarios } from './validate.ts';

/** Where a cursor stands in a shared home: what `take` reads and moves. */
export interface SharedCursorState {
  readonly position: number;
  readonly positionServed: number;
  readonly total: number;
  /** How often each response was served (missing ones: 0). */
  readonly served: readonly number[];
}

/** What one shared step served, and where its cursor stands after it. */
export interface SharedStep {
  /** The response served, 0-based. */
  readonly response: number;
  readonly position: number;
  readonly positionServed: number;
  readonly total: number;
}

/** How one scenario's cursor moves: what `take` needs to know of the scenario. */
export interface CursorRule {
  /** The scenario's place in the set. */
  readonly index: number;
  readonly repeats: readonly number[];
  readonly cycle: boolean;
  /** Under `order: random`, the response drawn here for a run that starts now; -1 otherwise. */
  readonly candidate: number;
}

/**
 * A home for the cursors of a set that several processes share (issue #33, `ECHO_STATE_URL`):
 * every step is atomic there, so requests spread over processes take distinct steps. `set` is the
 * set's content hash; `session` is `undefined` for the requests without one. A method that
 * rejects leaves the caller to its own memory.
 */
export interface SharedCursors {
  /** Whether the home is reachable now. */
  readonly up: boolean;
  /** One `take`: the response served, and the cursor after it. */
  step(set: string, rule: CursorRule, session: string | undefined): Promise<SharedStep>;
  /** The cursors of the first `count` scenarios (`undefined`: never stepped). */
  read(
    set: string,
    count: number,
    session: string | undefined,
  ): Promise<Array<SharedCursorState | undefined>>;
  /** Starts cursors again: all (`indices` undefined) or those scenarios', for everyone or one session. */
  reset(set: string, indices: readonly number[] | undefined, session: string | undefined): Promise<void>;
  /** Sets one cursor's position (positionServed 0, its counts kept). */
  setPosition(set: string, index: number, session: string | undefined, position: number): Promise<void>;
}

/** Names one scenario (or, by `path`, every scenario with that `path` or `pathPattern`). */
export type ScenarioSelector = { readonly name: string } | { readonly path: string };

/** Options of a {@link ScenarioStore}. */
export interface ScenarioStoreOptions {
  /** The clock of `activeFor`, in epoch milliseconds; default `Date.now` (tests pass a fake one). */
  readonly now?: () => number;
}

/** What a store has counted since it was made, for the meters: never reset, never lower. */
export interface ScenarioStoreCounts {
  /** Scenarios whose `activeFor` ended (once per set or reset). */
  readonly expiredActiveFor: number;
  /** Scenarios that answered their `times` (once per session, or for requests without one, per set or reset). */
  readonly expiredTimes: number;
  /** Sessions kept now. */
  readonly sessions: number;
  /** Sessions dropped because one of the session bounds was reached, least recently used first. */
  readonly sessionsEvicted: number;
}

/** The outcome of {@link ScenarioStore.setPosition}. */
export type SetPositionResult =
  | { readonly ok: true; readonly state: ScenarioState }
  | {
      readonly ok: false;
      readonly reason: 'not-found' | 'ambiguous' | 'out-of-range' | 'random';
      readonly message: string;
    };

/** What the caller of {@link ScenarioStore.replace} says of a replacement, for {@link ScenarioStore.onReplace}. */
export interface ReplaceHow {
  /**
   * A conditional replacement (`POST /scenario` with `If-None-Match`): a shared store takes the set
   * only if the set it shares is another, so pushing one set to every replica restarts it once.
   */
  readonly ifChanged?: boolean;
}

/**
 * In-memory scenarios, matched in list order. Replacing is atomic: a request sees the old set or
 * the new one, never a mix, and every scenario starts again at its first response. A request may
 * name a session (`X-Echo-Session`): the session has its own position and `times` count in every
 * scenario, apart from the requests without one and from other sessions.
 */
export class ScenarioStore {
  #scenarios: readonly Scenario[] = [];
  #hash: string | undefined;
  #entries: readonly Entry[] = [];
  /** Scenarios matching on their exact `path` alone, by path: the fast path. */
  #plain: ReadonlyMap<string, Entry> = new Map();
  /** Every other scenario, indexed by the exact path or the literal prefix a matching path has. */
  #conditional: PathIndex<Entry> = new PathIndex([]);
  readonly #now: () => number;
  readonly #sessions: SessionTable<Entry, Cursor>;
  #expiredActiveFor = 0;
  #expiredTimes = 0;
  #routes = false;

  constructor(options: ScenarioStoreOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#sessions = new SessionTable((entry, session) => new Cursor(entry, session));
  }

  /**
   * The shared home of the cursors (issue #33), when there is one: while it is up, {@link takeShared}
   * and the `...Shared` state methods go through it; down, the store answers from its own memory.
   */
  shared: SharedCursors | undefined = undefined;

  /** Whether cursors are kept in a shared home now (there is one, and it is up). */
  get sharing(): boolean {
    return this.shared?.up === true;
  }

  /**
   * {@link take} through the shared home: one atomic step there, mirrored into this process's
   * cursor. `undefined`: the scenario's `times` ran out on the fleet (the request is answered as if
   * it matched nothing). A home that fails takes the step here instead.
   */
  async takeShared(handle: ScenarioHandle): Promise<ScenarioStep | undefined> {
    const shared = this.shared;
    if (!(handle instanceof Cursor)) throw new TypeError('takeShared: not a handle from ScenarioStore.match');
    if (shared === undefined) return this.take(handle);
    const entry = handle.entry;
    const rule: CursorRule = {
      index: entry.index,
      repeats: Array.from(entry.repeats),
      cycle: entry.cycle,
      candidate: entry.random === undefined ? -1 : handle.position,
    };
    let moved: SharedStep;
    try {
      moved = await shared.step(this.contentHash(), rule, handle.session);
    } catch {
      return this.take(handle);
    }
    // The step as this process saw it: what its state shows until the next.
    handle.position = moved.position;
    handle.positionServed = moved.positionServed;
    handle.total = moved.total;
    if (handle.served !== undefined && moved.response < handle.served.length)
      handle.served[moved.response]! += 1;
    if (entry.times !== undefined) {
      if (moved.total > entry.times) return undefined;
      if (moved.total === entry.times) this.#expiredTimes += 1;
    }
    return entry.steps[moved.response];
  }

  /** {@link states} from the shared home (its cursors, this process's windows). */
  async statesShared(session?: string): Promise<ScenarioState[]> {
    const shared = this.shared;
    if (shared === undefined) return this.states(session);
    const entries = this.#entries;
    const cursors = await shared.read(this.contentHash(), entries.length, session);
    const now = this.#now();
    this.#countEnded(entries, now);
    return entries.map((entry, i) => entry.state(mirror(entry, session, cursors[i]), now));
  }

  /** {@link reset}, here and in the shared home. */
  async resetShared(selector?: ScenarioSelector, session?: string): Promise<ScenarioState[]> {
    const shared = this.shared;
    const local = this.reset(selector, session);
    if (shared === undefined) return local;
    const entries = selector === undefined ? undefined : this.#select(selector);
    await shared.reset(
      this.contentHash(),
      entries?.map((e) => e.index),
      session,
    );
    const states = await this.statesShared(session);
    return entries === undefined ? states : entries.map((e) => states[e.index]!);
  }

  /** {@link setPosition}, here and in the shared home. */
  async setPositionShared(
    selector: ScenarioSelector,
    position: number,
    session?: string,
  ): Promise<SetPositionResult> {
    const result = this.setPosition(selector, position, session);
    const shared = this.shared;
    if (!result.ok || shared === undefined) return result;
    const entry = this.#select(selector)[0]!;
    await shared.setPosition(this.contentHash(), entry.index, session, position);
    const states = await this.statesShared(session);
    return { ok: true, state: states[entry.index]! };
  }

  /**
   * Called after each {@link replace} with the new set (validated): how a shared store (issue #33)
   * learns of a set posted, loaded from a file or pushed here. `how` is what the caller of
   * {@link replace} said of it: `ifChanged`, a conditional push (the store shares it only if the
   * shared set is another).
   */
  onReplace: ((scenarios: readonly Scenario[], how: ReplaceHow) => void) | undefined = undefined;

  /** Number of scenarios in the current set. */
  get size(): number {
    return this.#scenarios.length;
  }

  /** Whether a scenario of the current set names an `upstream` (reverse proxy). */
  get routes(): boolean {
    return this.#routes;
  }

  /**
   * Swaps in a whole new set and restarts every scenario (its `activeFor` from now) and drops every
   * session. The set is validated first (schema, patterns, delays, unique names and plain paths,
   * header names, order, windows), with `options` as {@link validateScenarios} takes them; when it is
   * invalid nothing changes.
   * @throws {ScenarioInvalidError} `SCENARIO_ERR_INVALID` listing every problem.
   */
  replace(
    scenarios: readonly Scenario[],
    options: ValidateScenariosOptions = {},
    how: ReplaceHow = {},
  ): void {
    const result = validateScenarios(scenarios, options);
    if (!result.ok) throw new ScenarioInvalidError(result.problems, 'scenario store');
    const limits: FaultLimits = {
      maxDelayMs: options.maxDelayMs ?? MAX_TIMER_DELAY_MS,
      maxResponseBytes: options.maxResponseBytes ?? Number.MAX_SAFE_INTEGER,
    };
    const now = this.#now();
    const entries = result.scenarios.map((scenario, index) => new Entry(scenario, index, limits, now));
    const plain = new Map<string, Entry>();
    const conditional: Array<IndexedItem<Entry>> = [];
    for (const entry of entries) {
      const { path } = entry.scenario;
      if (isPlainPath(entry.scenario)) plain.set(path!, entry);
      else if (path !== undefined) conditional.push({ item: entry, exact: path });
      else conditional.push({ item: entry, prefix: entry.pattern!.literalPrefix });
    }
    // The windows of the old set that ended unnoticed are counted before it goes.
    this.#countEnded(this.#entries, now);
    this.#scenarios = result.scenarios;
    this.#hash = undefined;
    this.#entries = entries;
    this.#routes = result.scenarios.some((scenario) => scenario.upstream !== undefined);
    this.#plain = plain;
    this.#conditional = new PathIndex(conditional);
    this.#sessions.clear();
    this.onReplace?.(this.#scenarios, how);
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
   * The first scenario, in list order, that matches the request and is not expired (its `activeFor`
   * over, or its `times` answered for this session); nothing advances (see {@link take}). A set of
   * plain exact paths without windows costs one map lookup and allocates nothing. Only the
   * scenarios that can match the path are tried: those with that exact `path`, and the patterns
   * whose literal prefix (`/api/` of `/api/*` or of `re:/api/v[0-9]+`) the path starts with.
   * @param session the request's `X-Echo-Session`: its first match in a scenario makes its state
   *   there (the least recently used session goes past the bounds); `undefined` for none.
   * @param random the request's randomness in `[0, 1)` (seeded by `X-Echo-Seed` or `ECHO_SEED`):
   *   under `order: random`, the response is drawn from it here, once a run of `repeat` is over,
   *   so the handle's `position` is the response {@link take} serves. Default `Math.random`.
   * @returns the handle, or `undefined` when no scenario matches.
   */
  match(request: ScenarioRequest, session?: string, random?: () => number): ScenarioHandle | undefined {
    const plain = this.#plain.get(request.path);
    const conditional = this.#conditional;
    // The common case, answered at once: plain paths only, no session, no window, in turn.
    if (conditional.size === 0 && (plain === undefined || (session === undefined && plain.simple))) {
      return plain?.cursor;
    }
    let best = plain === undefined || this.#live(plain, session) ? plain : undefined;
    if (conditional.size !== 0) {
      let lazy: LazyRequest | undefined;
      // Each list is in set order, so its first match is its earliest; the earliest of those wins.
      for (const list of conditional.candidates(request.path)) {
        for (const entry of list) {
          if (best !== undefined && entry.index > best.index) break;
          if (!this.#live(entry, session)) continue;
          lazy ??= new LazyRequest(request);
          if (entry.matches(request, lazy)) {
            best = entry;
            break;
          }
        }
      }
    }
    if (best === undefined) return undefined;
    const cursor = session === undefined ? best.cursor : this.#sessions.use(session, best);
    if (best.random !== undefined && cursor.positionServed === 0) {
      cursor.position = best.random.draw(random ?? Math.random);
    }
    return cursor;
  }

  /**
   * Which scenario {@link match} would give this request now, and why each other would not (a
   * condition that fails, an `activeFor` over, `times` answered, an earlier match), with the
   * response it would serve: a dry run. Nothing changes: no position, draw, session, counter or
   * session order moves, so a store that peeks answers every later request as one that did not.
   * Under `order: random` the response is drawn when the request comes (`response: null`).
   */
  peek(request: ScenarioRequest, session?: string): ScenarioPeek {
    return peekEntries(this.#entries, request, {
      now: this.#now(),
      cursorOf: (entry) => (session === undefined ? entry.cursor : this.#sessions.find(session, entry)),
      sharing: this.sharing,
    });
  }

  /** Whether a scenario still matches for `session`: its `activeFor` and its `times` not over. */
  #live(entry: Entry, session: string | undefined): boolean {
    if (!entry.windowed) return true;
    if (entry.activeForMs !== undefined) {
      const now = this.#now();
      if (entry.ended(now)) {
        this.#countEnd(entry, now);
        return false;
      }
    }
    // Shared, `times` is counted by the fleet: the step says when it ran out (takeShared).
    if (entry.times === undefined || this.sharing) return true;
    const cursor = session === undefined ? entry.cursor : this.#sessions.find(session, entry);
    return cursor === undefined || cursor.total < entry.times;
  }

  /** Counts, once each, the `activeFor` windows of `entries` over at `now`. */
  #countEnded(entries: readonly Entry[], now: number): void {
    for (const entry of entries) this.#countEnd(entry, now);
  }

  /** Counts the end of one scenario's `activeFor`, once, when it is over at `now`. */
  #countEnd(entry: Entry, now: number): void {
    if (entry.activeForMs === undefined || entry.activeEndCounted || !entry.ended(now)) return;
    entry.activeEndCounted = true;
    this.#expiredActiveFor += 1;
  }

  /**
   * Serves the matched scenario's current response and moves it on (for the handle's session, or
   * for the requests without one): after the response's `repeat` servings to the next one, after
   * the last back to the first (or, with `cycle: false`, staying); under `order: random` the next
   * {@link match} draws again. Its `times`-th answer expires it. A handle of a set since replaced
   * moves only that old set.
   */
  take(handle: ScenarioHandle): ScenarioStep {
    if (!(handle instanceof Cursor)) throw new TypeError('take: not a handle from ScenarioStore.match');
    const entry = handle.entry;
    const position = handle.position;
    const step = entry.steps[position]!;
    if (handle.served !== undefined) handle.served[position]! += 1;
    handle.total += 1;
    handle.positionServed += 1;
    if (handle.positionServed >= entry.repeats[position]!) {
      handle.positionServed = 0;
      // Under order: random the next match draws.
      if (entry.random === undefined) {
        if (position + 1 < entry.steps.length) handle.position = position + 1;
        else if (entry.cycle) handle.position = 0;
      }
    }
    if (handle.total === entry.times) this.#expiredTimes += 1;
    return step;
  }

  /**
   * Matches on the path alone (method GET, no query, headers or body) and takes the step: a
   * shorthand for tools and tests.
   * @returns the step, or `undefined` when no scenario matches.
   */
  next(path: string, session?: string, random?: () => number): ScenarioStep | undefined {
    const handle = this.match(
      { method: 'GET', path, query: '', headers: {}, body: undefined },
      session,
      random,
    );
    return handle === undefined ? undefined : this.take(handle);
  }

  /**
   * Where every scenario stands, in list order: for the requests without a session, or for
   * `session` (a session that has not used a scenario stands at its start there). Reading is not a
   * use: the session's place among the least recently used stays.
   */
  states(session?: string): ScenarioState[] {
    const now = this.#now();
    this.#countEnded(this.#entries, now);
    return this.#entries.map((entry) => entry.state(this.#view(entry, session), now));
  }

  /** The cursor of `entry` for `session`, or a fresh one (not kept) when the session has none. */
  #view(entry: Entry, session: string | undefined): Cursor {
    if (session === undefined) return entry.cursor;
    return this.#sessions.find(session, entry) ?? new Cursor(entry, session);
  }

  /**
   * The sessions this process keeps a place for (`X-Echo-Session`), at most `limit`, the most
   * recently used first. Reading is not a use.
   */
  sessionIds(limit: number): string[] {
    return this.#sessions.ids(limit);
  }

  /**
   * Starts scenarios again at their first response with their counters at zero: all of them, the
   * one with that `name`, or every one whose `path` or `pathPattern` is that `path`. Without a
   * session, for everyone: the requests without a session, every session (all of them dropped, when
   * no selector is given) and `activeFor`, which counts again from now. With one, for that session
   * only (`activeFor` runs on: it is the set's, not a session's).
   * @returns the states of the scenarios reset (for `session`, when given); empty when the selector
   *   names none.
   */
  reset(selector?: ScenarioSelector, session?: string): ScenarioState[] {
    const entries = selector === undefined ? this.#entries : this.#select(selector);
    const now = this.#now();
    if (session !== undefined) {
      this.#sessions.drop(session, selector === undefined ? undefined : entries);
    } else {
      this.#countEnded(entries, now);
      for (const entry of entries) entry.restart(now);
      if (selector === undefined) this.#sessions.clear();
      else this.#sessions.dropKeys(entries);
    }
    return entries.map((entry) => entry.state(this.#view(entry, session), now));
  }

  /**
   * Sets one scenario's position (its counters stay), for the requests without a session or for
   * `session`. The selector must name exactly one scenario, served in turn (under `order: random`
   * each answer is drawn), and the position must be one of its responses; otherwise nothing changes.
   */
  setPosition(selector: ScenarioSelector, position: number, session?: string): SetPositionResult {
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
    if (entry.random !== undefined) {
      return {
        ok: false,
        reason: 'random',
        message: `the scenario with ${named} has order: random, so each answer is drawn: it has no position to set`,
      };
    }
    if (!Number.isInteger(position) || position < 0 || position >= entry.steps.length) {
      return {
        ok: false,
        reason: 'out-of-range',
        message: `position must be an integer 0-${entry.steps.length - 1} (the scenario has ${entry.steps.length} responses), got ${position}`,
      };
    }
    const cursor = session === undefined ? entry.cursor : this.#sessions.use(session, entry);
    cursor.position = position;
    cursor.positionServed = 0;
    return { ok: true, state: entry.state(cursor, this.#now()) };
  }

  /**
   * What the store has counted since it was made, for the meters (`echo_scenario_expired_total`,
   * `echo_scenario_sessions_evicted_total`): an `activeFor` that ended without a request to notice
   * it is counted here.
   */
  counts(): ScenarioStoreCounts {
    this.#countEnded(this.#entries, this.#now());
    return {
      expiredActiveFor: this.#expiredActiveFor,
      expiredTimes: this.#expiredTimes,
      sessions: this.#sessions.size,
      sessionsEvicted: this.#sessions.evicted,
    };
  }

  #select(selector: ScenarioSelector): Entry[] {
    if ('name' in selector) return this.#entries.filter((e) => e.scenario.name === selector.name);
    return this.#entries.filter(
      (e) => e.scenario.path === selector.path || e.scenario.pathPattern === selector.path,
    );
  }
}

/** A cursor of `entry` standing where a shared one does (a fresh one when it never moved). */
function mirror(entry: Entry, session: string | undefined, state: SharedCursorState | undefined): Cursor {
  const cursor = new Cursor(entry, session);
  if (state === undefined) return cursor;
  cursor.position = state.position;
  cursor.positionServed = state.positionServed;
  cursor.total = state.total;
  if (cursor.served !== undefined) {
    for (let i = 0; i < cursor.served.length; i++) cursor.served[i] = state.served[i] ?? 0;
  }
  return cursor;
}
