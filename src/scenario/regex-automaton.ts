/**
 * A `re:` pattern's RE2 program run as a bit-parallel automaton: the set of live rune instructions
 * is two 32-bit words, and one character costs a table lookup and one OR per live instruction that
 * accepts it. re2js's own matcher runs a lazy DFA, and on a text whose states do not fit its cache
 * (`[ab/]*a[ab/]{30}b` on random `a`, `b`, `/`) it drops the cache again and again or steps a thread
 * list per instruction: linear still, but 0.5-2 ms on a 1 KiB path. This runs the same program in
 * tens of microseconds there, keeps no cache that grows with the texts it sees (about 2 KiB a
 * pattern, built on the first match), and gives the same verdict (test/scenario/regex-automaton
 * .test.ts compares the two on generated patterns and texts). docs/adr/0028.
 */

/** The instruction kinds of an RE2 program (re2js's `Inst` numbering). */
const ALT = 1;
const ALT_MATCH = 2;
const CAPTURE = 3;
const EMPTY_WIDTH = 4;
const FAIL = 5;
const MATCH = 6;
const NOP = 7;
const RUNE = 8;
const RUNE1 = 9;
const RUNE_ANY = 10;
const RUNE_ANY_NOT_NL = 11;

/** The empty-width conditions (re2js's `Utils.EMPTY_*`). */
const BEGIN_LINE = 1;
const END_LINE = 2;
const BEGIN_TEXT = 4;
const END_TEXT = 8;
const WORD_BOUNDARY = 16;
const NO_WORD_BOUNDARY = 32;

/** One instruction of a compiled program, as re2js's `Prog.inst` holds it (the fields read here). */
export interface ProgramInstruction {
  readonly op: number;
  readonly out: number;
  readonly arg: number;
  /** RUNE: ranges as [lo, hi] pairs, or one rune (folded when `arg` says so); RUNE1: one rune. */
  readonly runes: Int32Array;
  matchRune(rune: number): boolean;
}

/** A compiled RE2 program: its instructions and where it starts. */
export interface Program {
  readonly inst: readonly ProgramInstruction[];
  readonly start: number;
}

/** The most rune instructions a program may hold here: two 32-bit words, one bit kept for MATCH. */
export const MAX_AUTOMATON_RUNES = 63;

/** RE2's word characters: `[0-9A-Za-z_]`. */
function isWordRune(rune: number): boolean {
  return (
    (rune >= 48 && rune <= 57) || (rune >= 65 && rune <= 90) || (rune >= 97 && rune <= 122) || rune === 95
  );
}

/** The empty-width conditions that hold between `before` and `after` (-1 for the ends of the text). */
function context(before: number, after: number): number {
  let flags = 0;
  if (before < 0) flags |= BEGIN_TEXT | BEGIN_LINE;
  if (before === 10) flags |= BEGIN_LINE;
  if (after < 0) flags |= END_TEXT | END_LINE;
  if (after === 10) flags |= END_LINE;
  flags |= isWordRune(before) !== isWordRune(after) ? WORD_BOUNDARY : NO_WORD_BOUNDARY;
  return flags;
}

/** FOLD_CASE in a RUNE instruction's `arg` (re2js's `RE2Flags.FOLD_CASE`). */
const FOLD_CASE = 1;

/**
 * Which runes past ASCII an instruction accepts: every one, none, or some (asked one by one). A
 * folded letter is "some": `k` also accepts U+212A KELVIN SIGN.
 */
function nonAsciiReach(inst: ProgramInstruction): 'all' | 'none' | 'some' {
  if (inst.op === RUNE_ANY || inst.op === RUNE_ANY_NOT_NL) return 'all';
  const runes = inst.runes;
  if (inst.op === RUNE1) return runes[0]! < 128 ? 'none' : 'some';
  if (runes.length === 1) return runes[0]! < 128 && (inst.arg & FOLD_CASE) === 0 ? 'none' : 'some';
  if (runes.length % 2 !== 0) return 'some';
  let reachesPast = false;
  for (let j = 0; j < runes.length; j += 2) {
    const lo = runes[j]!;
    const hi = runes[j + 1]!;
    if (lo <= 128 && hi >= 0x10ffff) return 'all';
    if (hi >= 128) reachesPast = true;
  }
  return reachesPast ? 'some' : 'none';
}

/** Whether `inst` accepts the ASCII character `c` (any-character instructions by their kind). */
function acceptsAscii(inst: ProgramInstruction, c: number): boolean {
  if (inst.op === RUNE_ANY) return true;
  if (inst.op === RUNE_ANY_NOT_NL) return c !== 10;
  return inst.matchRune(c);
}

/**
 * Whether a program matches a whole text (anchored at both ends, as `RE2Set.ANCHOR_BOTH`). Built
 * from a program with at most {@link MAX_AUTOMATON_RUNES} rune instructions.
 */
export class BitParallelRegex {
  /** The rune instructions, numbered by their bit. */
  readonly #runes: ProgramInstruction[] = [];
  /** Each instruction's bit (-1 for one that consumes nothing). */
  readonly #bitOf: Int32Array;
  readonly #program: Program;
  /** The bit that stands for MATCH. */
  readonly #matchBit: number;
  /** For each ASCII character, the rune instructions that accept it: [lo, hi] words. */
  readonly #ascii = new Int32Array(256);
  /** Rune instructions that accept every non-ASCII rune ([lo, hi] words). */
  readonly #allNonAscii = new Int32Array(2);
  /** Rune instructions that accept some non-ASCII runes and not others: asked rune by rune. */
  readonly #someNonAscii = new Int32Array(2);
  /** The empty-width conditions the program tests: others need not tell two contexts apart. */
  readonly #conditions: number;
  /**
   * Per context (masked by #conditions): for each rune bit, the closure of its `out` as [lo, hi],
   * and at the end the closure of the start.
   */
  readonly #closures: Array<Int32Array | undefined> = new Array(64).fill(undefined);

  constructor(program: Program) {
    this.#program = program;
    this.#bitOf = new Int32Array(program.inst.length).fill(-1);
    let conditions = 0;
    for (let pc = 0; pc < program.inst.length; pc++) {
      const inst = program.inst[pc]!;
      if (inst.op >= RUNE && inst.op <= RUNE_ANY_NOT_NL) {
        this.#bitOf[pc] = this.#runes.length;
        this.#runes.push(inst);
      } else if (inst.op === EMPTY_WIDTH) conditions |= inst.arg;
    }
    if (this.#runes.length > MAX_AUTOMATON_RUNES)
      throw new RangeError(`${this.#runes.length} rune instructions, more than ${MAX_AUTOMATON_RUNES}`);
    this.#matchBit = this.#runes.length;
    this.#conditions = conditions;
    for (let bit = 0; bit < this.#runes.length; bit++) {
      const reach = nonAsciiReach(this.#runes[bit]!);
      const mask = reach === 'all' ? this.#allNonAscii : reach === 'some' ? this.#someNonAscii : undefined;
      if (mask !== undefined) mask[bit >> 5] = mask[bit >> 5]! | (1 << (bit & 31));
    }
    for (let c = 0; c < 128; c++) {
      let lo = 0;
      let hi = 0;
      for (let bit = 0; bit < this.#runes.length; bit++) {
        if (!acceptsAscii(this.#runes[bit]!, c)) continue;
        if (bit < 32) lo |= 1 << bit;
        else hi |= 1 << (bit - 32);
      }
      this.#ascii[c * 2] = lo;
      this.#ascii[c * 2 + 1] = hi;
    }
  }

  /** Whether the program matches all of `text`. */
  test(text: string): boolean {
    const n = text.length;
    let rune = n === 0 ? -1 : text.codePointAt(0)!;
    let table = this.#closuresIn(context(-1, rune));
    const startAt = this.#runes.length * 2;
    let lo = table[startAt]!;
    let hi = table[startAt + 1]!;
    let i = 0;
    while (i < n) {
      const width = rune > 0xffff ? 2 : 1;
      const after = i + width < n ? text.codePointAt(i + width)! : -1;
      // The live rune instructions that accept this character.
      let acceptLo: number;
      let acceptHi: number;
      if (rune < 128) {
        acceptLo = lo & this.#ascii[rune * 2]!;
        acceptHi = hi & this.#ascii[rune * 2 + 1]!;
      } else {
        acceptLo = (lo & this.#allNonAscii[0]!) | this.#accepting(lo & this.#someNonAscii[0]!, 0, rune);
        acceptHi = (hi & this.#allNonAscii[1]!) | this.#accepting(hi & this.#someNonAscii[1]!, 32, rune);
      }
      if (acceptLo === 0 && acceptHi === 0) return false;
      if (this.#conditions !== 0) table = this.#closuresIn(context(rune, after));
      lo = 0;
      hi = 0;
      while (acceptLo !== 0) {
        const low = acceptLo & -acceptLo;
        const bit = 31 - Math.clz32(low);
        lo |= table[bit * 2]!;
        hi |= table[bit * 2 + 1]!;
        acceptLo ^= low;
      }
      while (acceptHi !== 0) {
        const low = acceptHi & -acceptHi;
        const bit = 63 - Math.clz32(low);
        lo |= table[bit * 2]!;
        hi |= table[bit * 2 + 1]!;
        acceptHi ^= low;
      }
      i += width;
      rune = after;
    }
    return this.#matchBit < 32
      ? (lo & (1 << this.#matchBit)) !== 0
      : (hi & (1 << (this.#matchBit - 32))) !== 0;
  }

  /** The bits of `word` (bits `offset` to `offset + 31`) whose instruction accepts `rune`. */
  #accepting(word: number, offset: number, rune: number): number {
    let out = 0;
    let rest = word;
    while (rest !== 0) {
      const low = rest & -rest;
      const bit = 31 - Math.clz32(low) + offset;
      if (this.#runes[bit]!.matchRune(rune)) out |= low;
      rest ^= low;
    }
    return out;
  }

  /** The closure table of a context, made the first time the context is met. */
  #closuresIn(flags: number): Int32Array {
    const key = flags & this.#conditions;
    let table = this.#closures[key];
    if (table === undefined) {
      const count = this.#runes.length;
      table = new Int32Array((count + 1) * 2);
      const out = new Int32Array(2);
      for (let bit = 0; bit < count; bit++) {
        this.#close(this.#runes[bit]!.out, key, out);
        table[bit * 2] = out[0]!;
        table[bit * 2 + 1] = out[1]!;
      }
      this.#close(this.#program.start, key, out);
      table[count * 2] = out[0]!;
      table[count * 2 + 1] = out[1]!;
      this.#closures[key] = table;
    }
    return table;
  }

  /** The rune instructions (and MATCH) reachable from `pc` without consuming, under `flags`: into `out`. */
  #close(pc: number, flags: number, out: Int32Array): void {
    out[0] = 0;
    out[1] = 0;
    const seen = new Uint8Array(this.#program.inst.length);
    const stack = [pc];
    while (stack.length > 0) {
      const at = stack.pop()!;
      if (seen[at] === 1) continue;
      seen[at] = 1;
      const inst = this.#program.inst[at]!;
      let bit = this.#bitOf[at]!;
      switch (inst.op) {
        case ALT:
        case ALT_MATCH:
          stack.push(inst.arg, inst.out);
          continue;
        case CAPTURE:
        case NOP:
          stack.push(inst.out);
          continue;
        case EMPTY_WIDTH:
          if ((inst.arg & ~flags) === 0) stack.push(inst.out);
          continue;
        case MATCH:
          bit = this.#matchBit;
          break;
        case FAIL:
          continue;
        default:
          if (bit < 0)
            throw new RangeError(`instruction ${at} has op ${inst.op}, which this automaton does not run`);
      }
      if (bit < 32) out[0] = out[0]! | (1 << bit);
      else out[1] = out[1]! | (1 << (bit - 32));
    }
  }
}
