/**
 * The matching forms of a scenario, compiled once: a path glob or `re:` regex, and the `re:` values
 * of header, query and body conditions. `validateScenarios` uses the same compilers to report a bad
 * pattern, so whatever validates compiles in the store.
 */
import safeRegex from 'safe-regex2';
import { MAX_PATTERN_LENGTH } from './schema.ts';

/** The prefix that makes a condition value, or a `pathPattern`, a regular expression. */
export const REGEX_PREFIX = 're:';

/** An exact text, or a regular expression that must match the whole text. */
export type TextMatcher = string | RegExp;

/** The outcome of compiling a pattern: the matcher, or why it does not compile. */
export type Compiled<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly reason: string };

/**
 * Compiles `re:<regex>` (ECMAScript syntax, no flags) anchored at both ends, so it must match the
 * whole text; any other text is an exact value. Length-bounded by {@link MAX_PATTERN_LENGTH}.
 */
export function compileTextMatcher(text: string): Compiled<TextMatcher> {
  if (!text.startsWith(REGEX_PREFIX)) return { ok: true, value: text };
  return compileRegex(text.slice(REGEX_PREFIX.length), text.length);
}

/**
 * Compiles a `pathPattern`: `re:<regex>` as in {@link compileTextMatcher}, else a glob where `**`
 * matches any characters, `*` any characters but `/`, and every other character itself.
 */
export function compilePathPattern(pattern: string): Compiled<RegExp> {
  if (pattern.startsWith(REGEX_PREFIX))
    return compileRegex(pattern.slice(REGEX_PREFIX.length), pattern.length);
  if (pattern.length > MAX_PATTERN_LENGTH) return tooLong(pattern.length);
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!;
    if (char !== '*') source += char.replace(/[\\^$.|?+()[\]{}]/, '\\$&');
    else if (pattern[i + 1] === '*') {
      source += '.*';
      while (pattern[i + 1] === '*') i++;
    } else source += '[^/]*';
  }
  return { ok: true, value: new RegExp(`^${source}$`) };
}

function compileRegex(source: string, length: number): Compiled<RegExp> {
  if (length > MAX_PATTERN_LENGTH) return tooLong(length);
  if (source === '') return { ok: false, reason: 'the regular expression after re: is empty' };
  try {
    // Compiled alone first, so that `a)|(b` is refused rather than balanced by the anchoring group.
    new RegExp(source);
    // JavaScript's engine backtracks: a repeated group that itself repeats, `(a+)+`, can take
    // exponential time on a short path and would hold every request behind it.
    if (!safeRegex(source)) {
      return {
        ok: false,
        reason:
          'the regular expression nests repetition (such as (a+)+ or (a*)*), which can take exponential time; write it without a repeated group that itself repeats',
      };
    }
    return { ok: true, value: new RegExp(`^(?:${source})$`) };
  } catch (error) {
    return { ok: false, reason: `not a valid regular expression: ${(error as Error).message}` };
  }
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
