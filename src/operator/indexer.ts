/**
 * client-go's `cache.Indexer`, for one index: items by key, and the keys of the items by each value an
 * index function gives them (a pod under each `label=value` it carries, a slice under its Service).
 * An item is filed again on every `set`: a value it no longer gives loses its key, a value it still
 * gives keeps the key where it was.
 */
export class Indexer<T> {
  readonly #indexFunc: (item: T) => readonly string[];
  readonly #items = new Map<string, T>();
  readonly #byValue = new Map<string, Set<string>>();

  constructor(indexFunc: (item: T) => readonly string[]) {
    this.#indexFunc = indexFunc;
  }

  get(key: string): T | undefined {
    return this.#items.get(key);
  }

  set(key: string, item: T): void {
    const before = this.#items.get(key);
    this.#items.set(key, item);
    const values = this.#indexFunc(item);
    if (before !== undefined) this.#unfile(key, this.#indexFunc(before), values);
    for (const value of values) {
      const keys = this.#byValue.get(value);
      if (keys === undefined) this.#byValue.set(value, new Set([key]));
      else keys.add(key);
    }
  }

  delete(key: string): T | undefined {
    const before = this.#items.get(key);
    if (before === undefined) return undefined;
    this.#items.delete(key);
    this.#unfile(key, this.#indexFunc(before), []);
    return before;
  }

  /** The keys of the items that give `value`. */
  byIndex(value: string): ReadonlySet<string> {
    return this.#byValue.get(value) ?? EMPTY;
  }

  /** Takes `key` off each of `values` but those it still gives. */
  #unfile(key: string, values: readonly string[], kept: readonly string[]): void {
    for (const value of values) {
      if (kept.includes(value)) continue;
      const keys = this.#byValue.get(value);
      keys?.delete(key);
      if (keys?.size === 0) this.#byValue.delete(value);
    }
  }
}

const EMPTY: ReadonlySet<string> = new Set();
