/**
 * A de-duplicating work queue with per-key exponential backoff, in the manner of client-go's
 * workqueue: a key is in the queue at most once, is never handed to two workers at a time, and a
 * key added while it is being processed is queued again when that processing is done.
 */

/** Options of {@link WorkQueue}. */
export interface WorkQueueOptions {
  /** First retry delay of a failing key, in milliseconds. Default 50. */
  readonly baseDelayMs?: number;
  /** Longest retry delay, in milliseconds. Default 30000. */
  readonly maxDelayMs?: number;
}

export const DEFAULT_BASE_DELAY_MS = 50;
export const DEFAULT_MAX_DELAY_MS = 30_000;

export class WorkQueue {
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #queue: string[] = [];
  readonly #dirty = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #failures = new Map<string, number>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #later = new Map<string, NodeJS.Timeout>();
  #waiters: Array<(key: string | undefined) => void> = [];
  #shutDown = false;

  constructor(options: WorkQueueOptions = {}) {
    this.#baseDelayMs = options.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
    this.#maxDelayMs = options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
  }

  /** Keys waiting (not those being processed or waiting out a backoff). */
  get length(): number {
    return this.#queue.length;
  }

  add(key: string): void {
    if (this.#shutDown || this.#dirty.has(key)) return;
    this.#dirty.add(key);
    if (this.#processing.has(key)) return;
    this.#push(key);
  }

  /** Adds `key` after its backoff: base × 2^(failures so far), capped. Returns the delay in ms. */
  addRateLimited(key: string): number {
    const failures = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, failures);
    const delayMs = Math.min(this.#baseDelayMs * 2 ** (failures - 1), this.#maxDelayMs);
    if (this.#shutDown || this.#timers.has(key)) return delayMs;
    const timer = setTimeout(() => {
      this.#timers.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.#timers.set(key, timer);
    return delayMs;
  }

  /**
   * Adds `key` once `delayMs` have passed (a requeue-after): at most one such timer per key, the
   * sooner one kept. Cleared by {@link cancelAfter} and {@link shutDown}.
   */
  addAfter(key: string, delayMs: number): void {
    if (this.#shutDown) return;
    const due = Date.now() + delayMs;
    const existing = this.#later.get(key) as (NodeJS.Timeout & { due?: number }) | undefined;
    if (existing !== undefined) {
      if ((existing.due ?? 0) <= due) return;
      clearTimeout(existing);
    }
    const timer = setTimeout(
      () => {
        this.#later.delete(key);
        this.add(key);
      },
      Math.max(0, delayMs),
    ) as NodeJS.Timeout & { due?: number };
    timer.due = due;
    timer.unref();
    this.#later.set(key, timer);
  }

  /** Drops `key`'s requeue-after timer (its object is gone). */
  cancelAfter(key: string): void {
    clearTimeout(this.#later.get(key));
    this.#later.delete(key);
  }

  /** Keys with a requeue-after timer. */
  get delayed(): number {
    return this.#later.size;
  }

  /** How many times in a row `key` has failed. */
  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** Ends `key`'s backoff after a success. */
  forget(key: string): void {
    this.#failures.delete(key);
  }

  /** The next key, once there is one; `undefined` after {@link shutDown}. */
  get(): Promise<string | undefined> {
    const key = this.#queue.shift();
    if (key !== undefined) return Promise.resolve(this.#take(key));
    if (this.#shutDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Marks `key`, handed out by {@link get}, as processed. */
  done(key: string): void {
    this.#processing.delete(key);
    if (this.#dirty.has(key)) this.#push(key);
  }

  shutDown(): void {
    this.#shutDown = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    for (const timer of this.#later.values()) clearTimeout(timer);
    this.#later.clear();
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const resolve of waiters) resolve(undefined);
  }

  #take(key: string): string {
    this.#dirty.delete(key);
    this.#processing.add(key);
    return key;
  }

  #push(key: string): void {
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) waiter(this.#take(key));
    else this.#queue.push(key);
  }
}
