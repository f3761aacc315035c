/**
 * Bounds on parsed documents (scenario sets in JSON or YAML, the service's JSON bodies): how deep
 * they nest, how many values they hold and how much text, measured before anything else reads them.
 * Both walks are iterative, so no input can exhaust the stack, and the tree walk follows each object
 * once, so YAML aliases (which repeat a node by reference) cost nothing to measure however far they
 * would expand.
 */

/** Deepest nesting of arrays and objects in a document: far beyond any valid body or scenario set. */
export const MAX_DOCUMENT_DEPTH = 32;

/** What {@link measureTree} checks; `maxChars` is optional. */
export interface TreeLimits {
  /** Most levels of arrays and objects (a scalar is 0, `[]` is 1, `[[1]]` is 2). */
  readonly maxDepth: number;
  /** Most values (arrays, objects and scalars; not keys), aliases expanded. */
  readonly maxNodes: number;
  /** Most text: every string and key, plus one a value, aliases expanded. */
  readonly maxChars?: number;
}

/** The bound a document went over, and that bound's value. */
export type TreeBound = 'depth' | 'nodes' | 'chars';

/** The measures of a document within its limits, or the first bound it goes over. */
export type TreeMeasure =
  | { readonly ok: true; readonly depth: number; readonly nodes: number; readonly chars: number }
  | { readonly ok: false; readonly bound: TreeBound; readonly limit: number };

/** Nodes of at least this many values are measured once however often they are repeated. */
const MEMO_NODES = 32;

interface Sizes {
  depth: number;
  nodes: number;
  chars: number;
}

interface Frame {
  readonly node: object;
  readonly keys: readonly string[] | undefined;
  readonly values: readonly unknown[];
  index: number;
  readonly sizes: Sizes;
}

/**
 * Measures a document as if every shared node were written out in full (the tree a YAML alias
 * stands for), without expanding it: each object is measured once and its measures reused. A
 * cycle nests without end, so it is refused as too deep. Never throws for JSON or YAML values
 * (plain arrays, objects and scalars).
 */
export function measureTree(value: unknown, limits: TreeLimits): TreeMeasure {
  const maxChars = limits.maxChars ?? Number.POSITIVE_INFINITY;
  const memo = new Map<object, Sizes>();
  const over = (sizes: Sizes): TreeMeasure | undefined => {
    if (sizes.nodes > limits.maxNodes) return { ok: false, bound: 'nodes', limit: limits.maxNodes };
    if (sizes.chars > maxChars) return { ok: false, bound: 'chars', limit: maxChars };
    return undefined;
  };
  if (!isContainer(value)) {
    const sizes = scalar(value);
    return over(sizes) ?? { ok: true, ...sizes };
  }
  const stack: Frame[] = [];
  const open = (node: object): Frame => {
    const keys = Array.isArray(node) ? undefined : Object.keys(node);
    const values =
      keys === undefined ? (node as unknown[]) : keys.map((k) => (node as Record<string, unknown>)[k]);
    return { node, keys, values, index: 0, sizes: { depth: 1, nodes: 1, chars: 1 } };
  };
  if (limits.maxDepth < 1) return { ok: false, bound: 'depth', limit: limits.maxDepth };
  stack.push(open(value));
  let done: Sizes | undefined;
  while (stack.length > 0) {
    const frame = stack[stack.length - 1] as Frame;
    if (frame.index >= frame.values.length) {
      stack.pop();
      // Small nodes are walked again where repeated (at most MEMO_NODES steps an edge): the memo
      // is for the large ones an alias can repeat, and costs no memory for a plain JSON body.
      if (frame.sizes.nodes > MEMO_NODES) memo.set(frame.node, frame.sizes);
      done = frame.sizes;
      const parent = stack[stack.length - 1];
      if (parent !== undefined) {
        const failed = add(parent, frame.sizes, over);
        if (failed !== undefined) return failed;
      }
      continue;
    }
    const child = frame.values[frame.index];
    if (frame.keys !== undefined) frame.sizes.chars += (frame.keys[frame.index] as string).length;
    frame.index += 1;
    if (!isContainer(child)) {
      const failed = add(frame, scalar(child), over);
      if (failed !== undefined) return failed;
      continue;
    }
    const known = memo.get(child);
    if (known !== undefined) {
      if (stack.length + known.depth > limits.maxDepth) {
        return { ok: false, bound: 'depth', limit: limits.maxDepth };
      }
      const failed = add(frame, known, over);
      if (failed !== undefined) return failed;
      continue;
    }
    if (stack.length + 1 > limits.maxDepth) return { ok: false, bound: 'depth', limit: limits.maxDepth };
    stack.push(open(child));
  }
  const sizes = done as Sizes;
  return over(sizes) ?? { ok: true, ...sizes };
}

function add(
  frame: Frame,
  child: Sizes,
  over: (sizes: Sizes) => TreeMeasure | undefined,
): TreeMeasure | undefined {
  const sizes = frame.sizes;
  sizes.depth = Math.max(sizes.depth, child.depth + 1);
  sizes.nodes += child.nodes;
  sizes.chars += child.chars;
  return over(sizes);
}

function isContainer(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

function scalar(value: unknown): Sizes {
  return { depth: 0, nodes: 1, chars: 1 + (typeof value === 'string' ? value.length : 0) };
}

/**
 * How deep a JSON text nests (arrays and objects), read from the text without parsing it, or
 * `undefined` as soon as it goes deeper than `maxDepth`: a check cheap enough to run before
 * `JSON.parse`, which would spend seconds building a deep body only to have it refused. Malformed
 * text is measured all the same (the parser refuses it next).
 */
export function jsonDepthWithin(text: string, maxDepth: number): number | undefined {
  const scanner = new JsonDepthScanner(maxDepth);
  scanner.write(text);
  return scanner.deepest;
}

/** A quote or a backslash: what ends a run of string characters. */
const STRING_STOP = /["\\]/g;

/**
 * {@link jsonDepthWithin} for a text that arrives in pieces, which also counts the values the text
 * holds as {@link measureTree} would count them once parsed (for valid JSON: arrays, objects and
 * scalars, not keys), so that a body of too many values is refused before `JSON.parse` builds them.
 * Each piece is read once, as it comes, and a piece may end anywhere (inside a string, after a
 * backslash). Strings are skipped by a regular-expression search, not a character at a time: a
 * set's bodies are megabytes of string.
 */
export class JsonDepthScanner {
  readonly #maxDepth: number;
  #depth = 0;
  #deepest = 0;
  #over = false;
  #inString = false;
  /** The last piece ended on a backslash inside a string: the next character is escaped. */
  #escaped = false;
  /** An array or object (or the text itself) was just opened: the next token, unless it closes it, is a value. */
  #opened = true;
  #values = 0;

  constructor(maxDepth: number) {
    this.#maxDepth = maxDepth;
  }

  /** The deepest nesting read so far, or `undefined` once it went deeper than the bound. */
  get deepest(): number | undefined {
    return this.#over ? undefined : this.#deepest;
  }

  /**
   * The values read so far: one for the text's own value, one for each element of an array and each
   * member of an object (a comma between them, one more when it is not empty). Exact for valid
   * JSON once the whole text is read; malformed text gets a count all the same (the parser refuses
   * it next). Not counted past the depth bound.
   */
  get values(): number {
    return this.#values;
  }

  /** Reads the next piece of the text; after the bound is passed, pieces are not read at all. */
  write(piece: string): void {
    if (this.#over) return;
    let i = 0;
    const end = piece.length;
    while (i < end) {
      if (this.#inString) {
        if (this.#escaped) {
          this.#escaped = false;
          i += 1;
          continue;
        }
        STRING_STOP.lastIndex = i;
        const stop = STRING_STOP.exec(piece);
        if (stop === null) return;
        i = stop.index + 1;
        if (piece.charCodeAt(stop.index) === 0x22) this.#inString = false;
        else this.#escaped = true;
        continue;
      }
      const c = piece.charCodeAt(i);
      i += 1;
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
      if (this.#opened) {
        this.#opened = false;
        if (c !== 0x5d && c !== 0x7d) this.#values += 1;
      }
      if (c === 0x22) this.#inString = true;
      else if (c === 0x2c) this.#values += 1;
      else if (c === 0x5b || c === 0x7b) {
        this.#opened = true;
        this.#depth += 1;
        if (this.#depth > this.#maxDepth) {
          this.#over = true;
          return;
        }
        if (this.#depth > this.#deepest) this.#deepest = this.#depth;
      } else if (c === 0x5d || c === 0x7d) this.#depth -= 1;
    }
  }
}
