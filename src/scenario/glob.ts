/**
 * A `pathPattern` glob (`**` any characters, `*` any characters but `/`, every other character
 * itself) matched by simulating its automaton: every position of the pattern a prefix of the path
 * can reach is tracked at once, one bit each, so a match costs O(path length x pattern words) and
 * nothing backtracks. A glob compiled to a JavaScript RegExp (`.*`, `[^/]*`) backtracks instead:
 * `/**a**a**a**a**a**a**a**a**b` took 5.6 s on a 45-character path.
 */

/** Most `**` in one glob: more would only slow the automaton, a useful glob needs two or three. */
export const MAX_GLOB_GLOBSTARS = 8;
/** Most wildcards (`*` and `**` together) in one glob. */
export const MAX_GLOB_WILDCARDS = 16;

const STAR = -1;
const GLOBSTAR = -2;
const SLASH = 0x2f;

/** A compiled glob; `test` tells whether it matches the whole path. */
export class GlobMatcher {
  /** The text before the first wildcard (the whole glob when it has none). */
  readonly prefix: string;
  /** Text every matching path starts with: the {@link prefix}. */
  readonly literalPrefix: string;
  readonly #suffix: string;
  readonly #wildcards: boolean;
  /** 32-bit words of state: one bit per position of the pattern between prefix and suffix, plus one. */
  readonly #words: number;
  readonly #literal: ReadonlyMap<number, Uint32Array>;
  /** The first word of each ASCII character's literal mask, for the one-word path. */
  readonly #ascii: Int32Array;
  readonly #star: Uint32Array;
  readonly #globstar: Uint32Array;
  readonly #anyStar: Uint32Array;
  readonly #acceptWord: number;
  readonly #acceptBit: number;
  // Scratch state, reused: `test` never re-enters (it calls nothing of the caller's).
  readonly #current: Uint32Array;
  readonly #next: Uint32Array;

  constructor(glob: string) {
    const tokens = tokenize(glob);
    const first = tokens.findIndex((t) => t < 0);
    this.#wildcards = first >= 0;
    if (first < 0) {
      this.prefix = glob;
      this.#suffix = '';
      tokens.length = 0;
    } else {
      let last = tokens.length - 1;
      while (tokens[last]! >= 0) last--;
      this.prefix = String.fromCharCode(...tokens.slice(0, first));
      this.#suffix = String.fromCharCode(...tokens.slice(last + 1));
      tokens.splice(last + 1);
      tokens.splice(0, first);
    }
    // One bit per state: state i means "the first i tokens of the middle are matched".
    this.literalPrefix = this.prefix;
    const states = tokens.length + 1;
    this.#words = Math.ceil(states / 32);
    const literal = new Map<number, Uint32Array>();
    this.#star = new Uint32Array(this.#words);
    this.#globstar = new Uint32Array(this.#words);
    this.#anyStar = new Uint32Array(this.#words);
    tokens.forEach((token, i) => {
      const word = i >>> 5;
      const bit = 1 << (i & 31);
      if (token === STAR) this.#star[word]! |= bit;
      else if (token === GLOBSTAR) this.#globstar[word]! |= bit;
      else {
        let mask = literal.get(token);
        if (mask === undefined) {
          mask = new Uint32Array(this.#words);
          literal.set(token, mask);
        }
        mask[word]! |= bit;
      }
      if (token < 0) this.#anyStar[word]! |= bit;
    });
    this.#literal = literal;
    this.#ascii = new Int32Array(128);
    for (const [code, mask] of literal) if (code < 128) this.#ascii[code] = mask[0]!;
    this.#acceptWord = tokens.length >>> 5;
    this.#acceptBit = 1 << (tokens.length & 31);
    this.#current = new Uint32Array(this.#words);
    this.#next = new Uint32Array(this.#words);
  }

  /** Whether the glob matches the whole `path`: O(path length x pattern length / 32). */
  test(path: string): boolean {
    if (!this.#wildcards) return path === this.prefix;
    const start = this.prefix.length;
    const end = path.length - this.#suffix.length;
    if (end < start || !path.startsWith(this.prefix) || !path.endsWith(this.#suffix)) return false;
    return this.#words === 1 ? this.#testOneWord(path, start, end) : this.#testWords(path, start, end);
  }

  /** {@link test} for a middle of at most 31 tokens (nearly every glob): the states in one int32. */
  #testOneWord(path: string, start: number, end: number): boolean {
    const star = this.#star[0]!;
    const globstar = this.#globstar[0]!;
    const anyStar = this.#anyStar[0]!;
    const ascii = this.#ascii;
    // The middle starts with a wildcard, which may match nothing: state 1 is reachable too.
    let state = 1 | ((1 & anyStar) << 1);
    for (let at = start; at < end; at++) {
      const code = path.charCodeAt(at);
      const literal = code < 128 ? ascii[code]! : (this.#literal.get(code)?.[0] ?? 0);
      let next = ((state & literal) << 1) | (state & globstar);
      if (code !== SLASH) next |= state & star;
      if (next === 0) return false;
      state = next | ((next & anyStar) << 1);
    }
    return (state & this.#acceptBit) !== 0;
  }

  #testWords(path: string, start: number, end: number): boolean {
    const words = this.#words;
    let current = this.#current;
    let next = this.#next;
    current.fill(0);
    current[0] = 1;
    this.#closure(current);
    for (let at = start; at < end; at++) {
      const code = path.charCodeAt(at);
      const literal = this.#literal.get(code);
      let carry = 0;
      let alive = 0;
      for (let w = 0; w < words; w++) {
        const state = current[w]!;
        // A literal token moves on by one state; a wildcard stays where it is.
        const moved = literal === undefined ? 0 : state & literal[w]!;
        let word = ((moved << 1) | carry) >>> 0;
        carry = moved >>> 31;
        word |= state & this.#globstar[w]!;
        if (code !== SLASH) word |= state & this.#star[w]!;
        next[w] = word;
        alive |= word;
      }
      if (alive === 0) return false;
      this.#closure(next);
      const swap = current;
      current = next;
      next = swap;
    }
    return (current[this.#acceptWord]! & this.#acceptBit) !== 0;
  }

  /** A wildcard may match nothing: from its state, the state after it is reachable at once. */
  #closure(state: Uint32Array): void {
    // Tokenizing merged adjacent wildcards, so one step reaches every state there is.
    let carry = 0;
    for (let w = 0; w < this.#words; w++) {
      const stars = state[w]! & this.#anyStar[w]!;
      const word = state[w]!;
      state[w] = (word | (stars << 1) | carry) >>> 0;
      carry = stars >>> 31;
    }
  }
}

/** How many wildcards a glob holds: `**` (any run of two or more `*`) and single `*`. */
export function countWildcards(glob: string): { globstars: number; stars: number } {
  let globstars = 0;
  let stars = 0;
  for (const token of tokenize(glob)) {
    if (token === GLOBSTAR) globstars++;
    else if (token === STAR) stars++;
  }
  return { globstars, stars };
}

/** Character codes, with a run of `*` as one token: {@link STAR} alone, {@link GLOBSTAR} for two or more. */
function tokenize(glob: string): number[] {
  const tokens: number[] = [];
  for (let i = 0; i < glob.length; i++) {
    if (glob.charCodeAt(i) !== 0x2a) {
      tokens.push(glob.charCodeAt(i));
      continue;
    }
    let run = 1;
    while (glob.charCodeAt(i + 1) === 0x2a) {
      run++;
      i++;
    }
    tokens.push(run === 1 ? STAR : GLOBSTAR);
  }
  return tokens;
}
