/**
 * A de-duplicating work queue with per-key exponential backoff, in the manner of client-go's
 * workqueue: a key is in the queue at most once, is never handed to two workers at a time, and a
 * key added while it is being processed is queued again when that processing is done. Keys are
 * typed (the operator's {@link WorkKey}s); two keys are the same when their `idOf` is. Time comes
 * from an injected {@link QueueClock}, so backoff and requeue-after are tested without waiting.
 */

/** The time a queue reads and the timers it sets: the process's by default. */
export interface QueueClock {
  /** Milliseconds, monotonic enough to order deadlines (`Date.now()` by default). */
  now(): number;
  /** Calls `fn` once `ms` have passed; the handle is given back to {@link clearTimeout}. */
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The process's clock; its timers never keep the process alive. */
export const SYSTEM_CLOCK: QueueClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Options of {@link WorkQueue}. */
export interface WorkQueueOptions<K> {
  /** First retry delay of a failing key, in milliseconds. Default 50. */
  readonly baseDelayMs?: number;
  /** Longest retry delay, in milliseconds. Default 30000. */
  readonly maxDelayMs?: number;
  /** What makes two keys the same. Default `String(key)`. */
  readonly idOf?: (key: K) => string;
  /** Default {@link SYSTEM_CLOCK}. */
  readonly clock?: QueueClock;
}

export const DEFAULT_BASE_DELAY_MS = 50;
export const DEFAULT_MAX_DELAY_MS = 30_000;

/** A requeue-after timer and when it is due. */
interface Later {
  readonly handle: unknown;
  readonly due: number;
}

export class WorkQueue<K = string> {
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #idOf: (key: K) => string;
  readonly #clock: QueueClock;
  /** Waiting ids, in order; each id's key is in `#keys`. */
  readonly #queue: string[] = [];
  /** The key of every id the queue knows of (waiting, processing, failing or timed). */
  readonly #keys = new Map<string, K>();
  readonly #dirty = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #failures = new Map<string, number>();
  readonly #timers = new Map<string, unknown>();
  readonly #later = new Map<string, Later>();
  #waiters: Array<(key: K | undefined) => void> = [];
  #shutDown = false;

  constructor(options: WorkQueueOptions<K> = {}) {
    this.#baseDelayMs = options.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
    this.#maxDelayMs = options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
    this.#idOf = options.idOf ?? ((key) => String(key));
    this.#clock = options.clock ?? SYSTEM_CLOCK;
  }

  /** Keys waiting (not those being processed or waiting out a backoff). */
  get length(): number {
    return this.#queue.length;
  }

  add(key: K): void {
    const id = this.#remember(key);
    if (this.#shutDown || this.#dirty.has(id)) return;
    this.#dirty.add(id);
    if (this.#processing.has(id)) return;
    this.#push(id);
  }

  /** Adds `key` after its backoff: base × 2^(failures so far), capped. Returns the delay in ms. */
  addRateLimited(key: K): number {
    const id = this.#remember(key);
    const failures = (this.#failures.get(id) ?? 0) + 1;
    this.#failures.set(id, failures);
    const delayMs = Math.min(this.#baseDelayMs * 2 ** (failures - 1), this.#maxDelayMs);
    if (this.#shutDown || this.#timers.has(id)) return delayMs;
    const handle = this.#clock.setTimeout(() => {
      this.#timers.delete(id);
      this.add(key);
    }, delayMs);
    this.#timers.set(id, handle);
    return delayMs;
  }

  /**
   * Adds `key` once `delayMs` have passed (a requeue-after): at most one such timer per key, the
   * sooner one kept. Cleared by {@link cancelAfter} and {@link shutDown}.
   */
  addAfter(key: K, delayMs: number): void {
    if (this.#shutDown) return;
    const id = this.#remember(key);
    const due = this.#clock.now() + delayMs;
    const existing = this.#later.get(id);
    if (existing !== undefined) {
      if (existing.due <= due) return;
      this.#clock.clearTimeout(existing.handle);
    }
    const handle = this.#clock.setTimeout(
      () => {
        this.#later.delete(id);
        this.add(key);
      },
      Math.max(0, delayMs),
    );
    this.#later.set(id, { handle, due });
  }

  /** Drops `key`'s requeue-after timer (its object is gone). */
  cancelAfter(key: K): void {
    const id = this.#idOf(key);
    const later = this.#later.get(id);
    if (later !== undefined) this.#clock.clearTimeout(later.handle);
    this.#later.delete(id);
    this.#release(id);
  }

  /** Keys with a requeue-after timer. */
  get delayed(): number {
    return this.#later.size;
  }

  /** How many times in a row `key` has failed. */
  failures(key: K): number {
    return this.#failures.get(this.#idOf(key)) ?? 0;
  }

  /** Ends `key`'s backoff after a success. */
  forget(key: K): void {
    const id = this.#idOf(key);
    this.#failures.delete(id);
    this.#release(id);
  }

  /** The next key, once there is one; `undefined` after {@link shutDown}. */
  get(): Promise<K | undefined> {
    const id = this.#queue.shift();
    if (id !== undefined) return Promise.resolve(this.#take(id));
    if (this.#shutDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Marks `key`, handed out by {@link get}, as processed. */
  done(key: K): void {
    const id = this.#idOf(key);
    this.#processing.delete(id);
    if (this.#dirty.has(id)) this.#push(id);
    else this.#release(id);
  }

  shutDown(): void {
    this.#shutDown = true;
    for (const handle of this.#timers.values()) this.#clock.clearTimeout(handle);
    this.#timers.clear();
    for (const later of this.#later.values()) this.#clock.clearTimeout(later.handle);
    this.#later.clear();
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const resolve of waiters) resolve(undefined);
  }

  /** How many keys the queue holds on to: memory stays bounded by the keys in use. */
  get known(): number {
    return this.#keys.size;
  }

  #remember(key: K): string {
    const id = this.#idOf(key);
    if (!this.#keys.has(id)) this.#keys.set(id, key);
    return id;
  }

  /** Forgets `id`'s key once nothing refers to it any more. */
  #release(id: string): void {
    if (
      this.#dirty.has(id) ||
      this.#processing.has(id) ||
      this.#failures.has(id) ||
      this.#timers.has(id) ||
      this.#later.has(id)
    )
      return;
    this.#keys.delete(id);
  }

  #take(id: string): K {
    this.#dirty.delete(id);
    this.#processing.add(id);
    return this.#keys.get(id) as K;
  }

  #push(id: string): void {
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) waiter(this.#take(id));
    else this.#queue.push(id);
  }
}
