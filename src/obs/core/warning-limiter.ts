/**
 * The rate limit of obs's repeated warnings (retry amplification, fan-out, N+1 and slow queries): at
 * most one warning per key per interval, the next one admitted saying how many were suppressed
 * since. Time is given, never read, so the features inject their clocks.
 */

/**
 * At most one warning per key per `intervalMs`. Remembers at most `maxKeys` keys: a new key past
 * that forgets the one warned about longest ago (its pending count is lost from the next message,
 * not from {@link suppressed}). A clock that went back admits the warning.
 */
export class WarningLimiter {
  readonly #intervalMs: number;
  readonly #maxKeys: number;
  readonly #last = new Map<string, { atMs: number; suppressed: number }>();
  #suppressed = 0;
  #logged = 0;

  constructor(intervalMs: number, maxKeys: number) {
    this.#intervalMs = intervalMs;
    this.#maxKeys = Math.max(1, maxKeys);
  }

  /** The warning may be logged, with the count suppressed before it; undefined: suppress it. */
  admit(key: string, nowMs: number): { readonly suppressed: number } | undefined {
    const last = this.#last.get(key);
    if (last !== undefined && nowMs - last.atMs >= 0 && nowMs - last.atMs < this.#intervalMs) {
      last.suppressed += 1;
      this.#suppressed += 1;
      return undefined;
    }
    if (last === undefined && this.#last.size >= this.#maxKeys) {
      const oldest = this.#last.keys().next();
      if (oldest.done !== true) this.#last.delete(oldest.value);
    }
    // Deleted and set again, so the map's order is the order of the last warnings.
    this.#last.delete(key);
    this.#last.set(key, { atMs: nowMs, suppressed: 0 });
    this.#logged += 1;
    return { suppressed: last?.suppressed ?? 0 };
  }

  /** Warnings admitted. */
  get logged(): number {
    return this.#logged;
  }
  /** Warnings suppressed. */
  get suppressed(): number {
    return this.#suppressed;
  }
  /** Keys remembered now (at most `maxKeys`). */
  get size(): number {
    return this.#last.size;
  }
}
