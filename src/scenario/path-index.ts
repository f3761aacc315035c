/**
 * Which scenarios a request path can match, without trying every one: a scenario with an exact
 * `path` is found by that path, a pattern by the literal text every path it matches starts with
 * (a character trie over those prefixes). Trying a thousand `re:` scenarios one by one cut
 * throughput from 3,970 to 1,430 req/s; a request now tries the few that share its path or prefix.
 */

/** One indexed item: by its exact path, or by a prefix of the paths it can match (`''`: any path). */
export type IndexedItem<T> =
  | { readonly item: T; readonly exact: string }
  | { readonly item: T; readonly prefix: string };

/**
 * Longest prefix indexed, in characters: a longer one is indexed by its first 64 (still a text every
 * matching path starts with), so the trie holds at most 64 nodes a scenario.
 */
export const MAX_INDEXED_PREFIX = 64;

interface Node<T> {
  readonly children: Map<number, Node<T>>;
  readonly items: T[];
}

/** Items indexed by exact path and literal prefix; each list keeps the order items were given in. */
export class PathIndex<T> {
  readonly #exact = new Map<string, T[]>();
  readonly #root: Node<T> = { children: new Map(), items: [] };
  readonly #deepest: number;
  /** Reused by {@link candidates}: its caller reads it before asking again. */
  readonly #scratch: Array<readonly T[]> = [];
  /** Number of items indexed. */
  readonly size: number;

  constructor(items: ReadonlyArray<IndexedItem<T>>) {
    let deepest = 0;
    for (const indexed of items) {
      if ('exact' in indexed) {
        const list = this.#exact.get(indexed.exact);
        if (list === undefined) this.#exact.set(indexed.exact, [indexed.item]);
        else list.push(indexed.item);
        continue;
      }
      const prefix = indexed.prefix.slice(0, MAX_INDEXED_PREFIX);
      let node = this.#root;
      for (let i = 0; i < prefix.length; i++) {
        const code = prefix.charCodeAt(i);
        let child = node.children.get(code);
        if (child === undefined) {
          child = { children: new Map(), items: [] };
          node.children.set(code, child);
        }
        node = child;
      }
      node.items.push(indexed.item);
      deepest = Math.max(deepest, prefix.length);
    }
    this.#deepest = deepest;
    this.size = items.length;
  }

  /**
   * The lists of items that can match `path`, each in the order given: the items of that exact
   * path and those whose prefix `path` starts with. The array is reused by the next call.
   */
  candidates(path: string): ReadonlyArray<readonly T[]> {
    const lists = this.#scratch;
    lists.length = 0;
    const exact = this.#exact.get(path);
    if (exact !== undefined) lists.push(exact);
    let node: Node<T> | undefined = this.#root;
    const depth = Math.min(path.length, this.#deepest);
    for (let i = 0; ; i++) {
      if (node.items.length > 0) lists.push(node.items);
      if (i >= depth) break;
      node = node.children.get(path.charCodeAt(i));
      if (node === undefined) break;
    }
    return lists;
  }
}
