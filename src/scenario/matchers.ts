/**
 * The matching forms of a scenario, compiled once: a path glob or `re:` regex, and the `re:` values
 * of header, query and body conditions. `validateScenarios` uses the same compilers to report a bad
 * pattern, so whatever validates compiles in the store.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { RE2JS, RE2Set } from 're2js';
import { countWildcards, GlobMatcher, MAX_GLOB_GLOBSTARS, MAX_GLOB_WILDCARDS } from './glob.ts';
import { BitParallelRegex } from './regex-automaton.ts';
import { MAX_PATTERN_LENGTH, MAX_REGEX_PROGRAM_SIZE, MAX_SET_PATTERNS } from './schema.ts';

/** The prefix that makes a condition value, or a `pathPattern`, a regular expression. */
export const REGEX_PREFIX = 're:';

/** A compiled pattern: whether it matches a whole text, in time linear in the text. */
export interface PatternMatcher {
  /** Whether the pattern matches the whole text. */
  test(text: string): boolean;
  /** Text every match starts with (`''` when none is known): what the store indexes a scenario by. */
  readonly literalPrefix: string;
}

/** An exact text, or a pattern that must match the whole text. */
export type TextMatcher = string | PatternMatcher;

/** The outcome of compiling a pattern: the matcher, or why it does not compile. */
export type Compiled<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly reason: string };

/**
 * Compiles `re:<regex>` to match the whole text; any other text is an exact value. The regex is
 * written in JavaScript syntax (no flags) and runs on re2js, a linear-time RE2 engine: what RE2
 * cannot run in linear time (backreferences, lookaround) is refused. Length-bounded by
 * {@link MAX_PATTERN_LENGTH}.
 */
export function compileTextMatcher(text: string): Compiled<TextMatcher> {
  if (!text.startsWith(REGEX_PREFIX)) return { ok: true, value: text };
  return compileRegex(text);
}

/**
 * Compiles a `pathPattern`: `re:<regex>` as in {@link compileTextMatcher}, else a glob where `**`
 * matches any characters, `*` any characters but `/`, and every other character itself, with at
 * most {@link MAX_GLOB_GLOBSTARS} `**` and {@link MAX_GLOB_WILDCARDS} wildcards in all.
 */
export function compilePathPattern(pattern: string): Compiled<PatternMatcher> {
  if (pattern.startsWith(REGEX_PREFIX)) return compileRegex(pattern);
  if (pattern.length > MAX_PATTERN_LENGTH) return tooLong(pattern.length);
  const { globstars, stars } = countWildcards(pattern);
  if (globstars > MAX_GLOB_GLOBSTARS || globstars + stars > MAX_GLOB_WILDCARDS) {
    return {
      ok: false,
      reason: `a glob may hold at most ${MAX_GLOB_GLOBSTARS} ** and ${MAX_GLOB_WILDCARDS} wildcards (* and **) in all, got ${globstars} ** and ${globstars + stars} wildcards; use fewer, or a re: pattern`,
    };
  }
  return { ok: true, value: new GlobMatcher(pattern) };
}

/** The linear-time engine refuses these; said in every refusal so the reader knows why. */
const ENGINE_NOTE =
  're: patterns run on a linear-time engine (RE2 syntax): backreferences and lookaround are not supported';
/** The start of a refusal for what RE2 reads otherwise (an escape, a POSIX class). */
const DIALECT_NOTE = 're: patterns run on a linear-time engine (RE2 syntax)';

/** Letters that escape the same class or character in JavaScript and RE2 (`\\d`, `\\n`, `\\x41`). */
const SHARED_ESCAPES = new Set('dDwWsSbBnrtfv0xuc');

/**
 * Why JavaScript and RE2 would read `source` differently, or `undefined`: a backreference, or an
 * escape each engine gives its own meaning (`\\a` is `a` in JavaScript and BEL in RE2, `\\z` the
 * end of text in RE2), or a POSIX class (`[[:alpha:]]`).
 */
function divergence(source: string): string | undefined {
  for (let i = 0; i < source.length; i++) {
    if (source[i] !== '\\') continue;
    const next = source[i + 1] ?? '';
    i++;
    if (/[1-9]/.test(next) || next === 'k') return `${ENGINE_NOTE} (\\${next} is a backreference)`;
    if (/[A-Za-z]/.test(next) && !SHARED_ESCAPES.has(next))
      return `${DIALECT_NOTE}; \\${next} means one thing in JavaScript and another in RE2, write the character or class itself`;
  }
  if (/\[:[a-z]+:\]/.test(source))
    return `${DIALECT_NOTE}; POSIX classes such as [[:alpha:]] are not supported`;
  return undefined;
}

/**
 * A `re:` pattern, anchored at both ends: re2js parses and compiles it to an RE2 program, and the
 * program runs on a bit-parallel automaton (`regex-automaton.ts`) rather than on re2js's lazy DFA.
 * The DFA is fast on ordinary texts but, on a text that defeats it, drops its cache of states at
 * every few characters (0.5-2 ms for 1 KiB), and each pattern's cache grows with the texts it sees;
 * the automaton takes tens of microseconds on any 1 KiB text and holds about 2 KiB (docs/adr/0028).
 */
class LinearRegex implements PatternMatcher {
  readonly #translated: string;
  // Built on the first match, not when the set is loaded: a set of a thousand patterns is loaded in
  // one turn of the loop, while a request tries only the few its path's prefix leads to.
  #automaton: BitParallelRegex | undefined;
  readonly literalPrefix: string;

  constructor(translated: string, prefix: string) {
    this.#translated = translated;
    this.literalPrefix = prefix;
  }

  test(text: string): boolean {
    if (this.#automaton === undefined) {
      // RE2Set is re2js's one public API that hands out its compiled program (`prog`); the set,
      // and the DFA it makes, are dropped once the program is read.
      const set = new RE2Set(RE2Set.ANCHOR_BOTH);
      set.add(this.#translated);
      set.compile();
      this.#automaton = new BitParallelRegex(set.prog);
    }
    return this.#automaton.test(text);
  }
}

/** What checking a `re:` source found: RE2's text of it and its literal prefix, or why it is refused. */
type RegexVerdict =
  | { readonly ok: true; readonly translated: string; readonly prefix: string }
  | { readonly ok: false; readonly reason: string };

/**
 * Verdicts of the sources checked lately, the oldest dropped past {@link VERDICTS_KEPT}: a set is
 * checked when it is validated and again when the store loads it, and RE2's parse and compile is
 * most of what loading a thousand patterns costs (a turn of the event loop every request waits
 * behind). Only text is kept, at most about 4 KiB an entry; each load makes matchers of its own.
 */
const verdicts = new Map<string, RegexVerdict>();
const VERDICTS_KEPT = 2048;

/** Verdicts checked ahead for the set being loaded (see {@link withPatternVerdicts}), read first. */
let pinned: ReadonlyMap<string, RegexVerdict> | undefined;

/** The verdicts of one set's `re:` patterns, checked ahead by {@link checkPatternsAhead}. */
export interface PatternVerdicts {
  /** How many distinct sources were checked. */
  readonly size: number;
}

class VerdictMap implements PatternVerdicts {
  readonly map = new Map<string, RegexVerdict>();
  get size(): number {
    return this.map.size;
  }
}

/** The longest a slice of {@link checkPatternsAhead} runs before it lets the event loop turn. */
export const PATTERN_CHECK_SLICE_MS = 5;

/**
 * Checks the `re:` texts among `texts` (each as {@link compileTextMatcher} would), a few
 * milliseconds at a time with a turn of the event loop between: RE2's parse and compile takes tens
 * of microseconds a pattern, and a set may hold 66,000 of them (1,000 scenarios, each with a
 * pattern, 32 header, 32 query and a body condition), seconds of work that done in one go would
 * stop the process answering. Run validation and the store's load inside
 * {@link withPatternVerdicts} with the result, and neither checks a pattern again.
 */
export async function checkPatternsAhead(
  texts: Iterable<string>,
  sliceMs: number = PATTERN_CHECK_SLICE_MS,
): Promise<PatternVerdicts> {
  const ahead = new VerdictMap();
  let sliceStart = performance.now();
  for (const text of texts) {
    // Past what a set may hold, validation refuses the set without compiling a pattern.
    if (ahead.map.size > MAX_SET_PATTERNS) break;
    if (!text.startsWith(REGEX_PREFIX) || text.length > MAX_PATTERN_LENGTH) continue;
    if (ahead.map.has(text)) continue;
    const source = text.slice(REGEX_PREFIX.length);
    ahead.map.set(text, verdicts.get(source) ?? checkRegex(source));
    if (performance.now() - sliceStart >= sliceMs) {
      await nextTurn();
      sliceStart = performance.now();
    }
  }
  return ahead;
}

/**
 * Runs `run` (synchronous: validating a set, loading it into a store) with `ahead`'s verdicts read
 * before the shared cache, which keeps only the latest {@link VERDICTS_KEPT}.
 */
export function withPatternVerdicts<T>(ahead: PatternVerdicts, run: () => T): T {
  if (!(ahead instanceof VerdictMap)) throw new TypeError('ahead must come from checkPatternsAhead');
  const previous = pinned;
  pinned = ahead.map;
  try {
    return run();
  } finally {
    pinned = previous;
  }
}

/** Compiles `re:<source>` (the whole text, prefix included). */
function compileRegex(text: string): Compiled<PatternMatcher> {
  if (text.length > MAX_PATTERN_LENGTH) return tooLong(text.length);
  // Keyed by the whole text: validation and the store pass the set's own strings, whose hash the
  // engine has kept since the first lookup (a slice would be a new string each time).
  let verdict = pinned?.get(text);
  if (verdict === undefined) {
    const source = text.slice(REGEX_PREFIX.length);
    verdict = verdicts.get(source);
    if (verdict === undefined) {
      verdict = checkRegex(source);
      if (verdicts.size >= VERDICTS_KEPT) verdicts.delete(verdicts.keys().next().value!);
      verdicts.set(source, verdict);
    }
  }
  return verdict.ok
    ? { ok: true, value: new LinearRegex(verdict.translated, verdict.prefix) }
    : { ok: false, reason: verdict.reason };
}

function checkRegex(source: string): RegexVerdict {
  if (source === '') return { ok: false, reason: 'the regular expression after re: is empty' };
  try {
    // The documented syntax is JavaScript's: what it refuses is not a regular expression at all.
    new RegExp(source);
  } catch (error) {
    return { ok: false, reason: `not a valid regular expression: ${(error as Error).message}` };
  }
  const diverges = divergence(source);
  if (diverges !== undefined) return { ok: false, reason: diverges };
  let regex: RE2JS;
  let translated: string;
  try {
    // JavaScript's own engine backtracks: `(a|aa)+$` took 11 s on 28 characters. RE2 never does.
    translated = RE2JS.translateRegExp(source);
    regex = RE2JS.compile(translated);
  } catch (error) {
    // RE2's own parse error calls a lookbehind an "invalid named capture": name it.
    if (/\(\?<[=!]/.test(source))
      return { ok: false, reason: `${ENGINE_NOTE} (\`${/\(\?<[=!]/.exec(source)![0]}\` is a lookbehind)` };
    return { ok: false, reason: `${ENGINE_NOTE}; it cannot compile this one (${(error as Error).message})` };
  }
  // Linear in the text, but also in the program: on a text that defeats the DFA every instruction
  // may be live at every character.
  const size = regex.programSize();
  if (size > MAX_REGEX_PROGRAM_SIZE) {
    return {
      ok: false,
      reason: `the regular expression compiles to ${size} instructions, more than ${MAX_REGEX_PROGRAM_SIZE} (about one a character or class, {n} repeating its group n times): {n} counts as n copies, so past about 60 repeats use + or * ([0-9a-f]+ rather than [0-9a-f]{64}), or a glob for long literal parts`,
    };
  }
  return { ok: true, translated, prefix: regexLiteralPrefix(source) };
}

/** Characters that stand for themselves in a regex, outside a class. */
const PLAIN = /[A-Za-z0-9/_~%!@#&=:;,'"<> -]/;
/** Characters that, escaped with `\\`, stand for themselves. */
const ESCAPED_PLAIN = /[\\^$.*+?()[\]{}|/-]/;

/**
 * The literal text every match of a regex (JavaScript syntax, already known to compile) starts with,
 * read conservatively: the run of plain characters from the start, less the last one when a
 * quantifier follows it; `''` when the regex has an alternation outside any group (`a|b`).
 */
export function regexLiteralPrefix(source: string): string {
  let depth = 0;
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const char = source[i];
    if (char === '\\') i++;
    else if (inClass) inClass = char !== ']';
    else if (char === '[') inClass = true;
    else if (char === '(') depth++;
    else if (char === ')') depth--;
    else if (char === '|' && depth === 0) return '';
  }
  let prefix = '';
  let i = 0;
  while (i < source.length) {
    const char = source[i]!;
    if (PLAIN.test(char)) {
      prefix += char;
      i += 1;
    } else if (char === '\\' && i + 1 < source.length && ESCAPED_PLAIN.test(source[i + 1]!)) {
      prefix += source[i + 1];
      i += 2;
    } else break;
  }
  if (i < source.length && '?*+{'.includes(source[i]!)) prefix = prefix.slice(0, -1);
  return prefix;
}

function tooLong(length: number): Compiled<never> {
  return {
    ok: false,
    reason: `a pattern must be at most ${MAX_PATTERN_LENGTH} characters long, got ${length} characters`,
  };
}

/** Whether `value` is the exact text, or matches the regular expression. */
export function textMatches(matcher: TextMatcher, value: string): boolean {
  return typeof matcher === 'string' ? matcher === value : matcher.test(value);
}

/**
 * The value a JSON Pointer (RFC 6901) names in a parsed JSON document, as text: a string as is,
 * anything else as its JSON text; `undefined` when the pointer names nothing (or a node nesting too
 * deep to print).
 */
export function pointedText(document: unknown, pointer: string): string | undefined {
  let node = document;
  if (pointer !== '') {
    for (const raw of pointer.slice(1).split('/')) {
      const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
      if (Array.isArray(node)) {
        if (!/^(?:0|[1-9]\d*)$/.test(key)) return undefined;
        node = node[Number(key)];
      } else if (typeof node === 'object' && node !== null && Object.hasOwn(node, key)) {
        node = (node as Record<string, unknown>)[key];
      } else return undefined;
      if (node === undefined) return undefined;
    }
  }
  if (typeof node === 'string') return node;
  try {
    return JSON.stringify(node);
  } catch {
    // A request body nesting thousands deep cannot be printed back (a RangeError): it matches nothing.
    return undefined;
  }
}
