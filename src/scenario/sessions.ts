/**
 * The sessions of a scenario store (`X-Echo-Session`): each keeps its own state per scenario it
 * used, so parallel tests against one server do not move each other's sequences. Bounded in
 * sessions and in states: past either bound the least recently used session is dropped, and
 * counted. See docs/adr/0034-scenario-order-windows-sessions.md.
 */

/** Most sessions a store keeps; past it the least recently used one is dropped. */
export const MAX_SESSIONS = 10_000;
/**
 * Most states (one per session and scenario it used) a store keeps in all: 10,000 sessions of ten
 * scenarios each, a few megabytes. A session that used every scenario of the largest set holds
 * 1,000 states, so without this bound 10,000 such sessions would hold ten million.
 */
export const MAX_SESSION_STATES = 100_000;

/**
 * Sessions by id, least recently used first (a `Map` keeps insertion order: a use re-inserts),
 * each a map from a key (a scenario) to its state.
 */
export class SessionTable<K extends object, V> {
  readonly #sessions = new Map<string, Map<K, V>>();
  readonly #make: (key: K, session: string) => V;
  readonly #maxSessions: number;
  readonly #maxStates: number;
  #states = 0;
  #evicted = 0;
  /** The session used last, so that a run of requests of one session re-inserts nothing. */
  #last: string | undefined;

  /**
   * @param make builds the state of a key in a session, at its first use.
   * @param limits the bounds; default {@link MAX_SESSIONS} and {@link MAX_SESSION_STATES}.
   */
  constructor(
    make: (key: K, session: string) => V,
    limits: { readonly maxSessions?: number; readonly maxStates?: number } = {},
  ) {
    this.#make = make;
    this.#maxSessions = limits.maxSessions ?? MAX_SESSIONS;
    this.#maxStates = limits.maxStates ?? MAX_SESSION_STATES;
  }

  /** Sessions kept now. */
  get size(): number {
    return this.#sessions.size;
  }

  /** Sessions dropped to stay within the bounds since the table was made (never reset). */
  get evicted(): number {
    return this.#evicted;
  }

  /**
   * The ids of at most `limit` sessions, the most recently used first; not a use. One walk of the
   * table (at most {@link MAX_SESSIONS}).
   */
  ids(limit: number): string[] {
    const all = [...this.#sessions.keys()];
    return all.slice(Math.max(0, all.length - limit)).reverse();
  }

  /** The state of `key` in `session`, if it has one; not a use (the order stays). */
  find(session: string, key: K): V | undefined {
    return this.#sessions.get(session)?.get(key);
  }

  /**
   * The state of `key` in `session`, made at its first use; a use, so the session becomes the most
   * recently used, and a new state may drop the least recently used sessions.
   */
  use(session: string, key: K): V {
    let states = this.#sessions.get(session);
    if (states === undefined) {
      states = new Map();
      this.#sessions.set(session, states);
    } else if (this.#last !== session) {
      this.#sessions.delete(session);
      this.#sessions.set(session, states);
    }
    this.#last = session;
    let state = states.get(key);
    if (state === undefined) {
      state = this.#make(key, session);
      states.set(key, state);
      this.#states += 1;
      this.#evict();
    }
    return state;
  }

  /** Drops one session's states, or, with `keys`, only those. */
  drop(session: string, keys?: Iterable<K>): void {
    const states = this.#sessions.get(session);
    if (states === undefined) return;
    if (keys === undefined) {
      this.#remove(session, states);
      return;
    }
    for (const key of keys) if (states.delete(key)) this.#states -= 1;
  }

  /** Drops the states of `keys` in every session. */
  dropKeys(keys: readonly K[]): void {
    for (const states of this.#sessions.values()) {
      for (const key of keys) if (states.delete(key)) this.#states -= 1;
    }
  }

  /** Drops every session (a new set, a reset of all); not counted as evictions. */
  clear(): void {
    this.#sessions.clear();
    this.#states = 0;
    this.#last = undefined;
  }

  /** The least recently used sessions go while either bound is passed; the one just used stays. */
  #evict(): void {
    while (this.#sessions.size > this.#maxSessions || this.#states > this.#maxStates) {
      const oldest = this.#sessions.keys().next().value;
      if (oldest === undefined || oldest === this.#last) return;
      this.#remove(oldest, this.#sessions.get(oldest)!);
      this.#evicted += 1;
    }
  }

  #remove(session: string, states: Map<K, V>): void {
    this.#states -= states.size;
    this.#sessions.delete(session);
    if (this.#last === session) this.#last = undefined;
  }
}
