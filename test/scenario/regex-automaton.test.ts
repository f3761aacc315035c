/**
 * The bit-parallel automaton runs re2js's compiled program: it must give re2js's own verdict (an
 * `RE2Set` anchored at both ends) on every pattern and text, including what only some programs
 * hold: empty-width assertions (`^`, `$`, `\b`, `\B`, multi-line), case folding, non-ASCII and
 * astral characters, and empty loops.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { RE2Set } from 're2js';
import { compileTextMatcher } from '../../src/scenario/index.ts';
import { BitParallelRegex, MAX_AUTOMATON_RUNES, type Program } from '../../src/scenario/regex-automaton.ts';
import { MAX_REGEX_PROGRAM_SIZE } from '../../src/scenario/schema.ts';
import { fuzzParameters } from '../fuzz/fuzz.ts';

function compiled(source: string): { automaton: BitParallelRegex; set: RE2Set } {
  const set = new RE2Set(RE2Set.ANCHOR_BOTH);
  set.add(source);
  set.compile();
  return { automaton: new BitParallelRegex(set.prog as unknown as Program), set };
}

function agree(source: string, texts: readonly string[]): void {
  const { automaton, set } = compiled(source);
  for (const text of texts) {
    assert.equal(automaton.test(text), set.match(text).length > 0, `${source} on ${JSON.stringify(text)}`);
  }
}

// Characters that make programs take different paths: word and non-word, a newline, a letter
// that folds to a non-ASCII one (k, K and U+212A KELVIN SIGN), other non-ASCII, an astral
// character (two UTF-16 units, one rune) and a lone surrogate.
const ALPHABET = ['a', 'b', 'k', 'K', '\u212a', '/', '_', ' ', '\n', 'é', '😀', '\ud800', '1'];
const text = fc.array(fc.constantFrom(...ALPHABET), { maxLength: 12 }).map((c) => c.join(''));

const atom = fc.constantFrom(
  'a',
  'b',
  'k',
  '/',
  '.',
  '[ab]',
  '[^/]',
  '[^a]',
  '\\w',
  '\\W',
  '\\s',
  '\\d',
  '[é-ü]',
  '😀',
  '\\b',
  '\\B',
  '^',
  '$',
  '(?:)',
);
const regex: fc.Arbitrary<string> = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    atom,
    fc.tuple(tie('node'), tie('node')).map(([x, y]) => `${x}${y}`),
    fc.tuple(tie('node'), tie('node')).map(([x, y]) => `(?:${x}|${y})`),
    fc
      .tuple(tie('node'), fc.constantFrom('*', '+', '?', '{2}', '{0,2}', '*?'))
      .map(([x, q]) => `(?:${x})${q}`),
  ),
})).node as fc.Arbitrary<string>;
const flags = fc.constantFrom('', '(?i)', '(?s)', '(?m)', '(?im)');

test('bit-parallel regex – gives re2js its own verdict on generated programs and texts', () => {
  fc.assert(
    fc.property(flags, regex, fc.array(text, { minLength: 1, maxLength: 8 }), (flag, source, texts) => {
      const set = new RE2Set(RE2Set.ANCHOR_BOTH);
      set.add(flag + source);
      set.compile();
      if (set.prog.inst.length > MAX_REGEX_PROGRAM_SIZE) return;
      const automaton = new BitParallelRegex(set.prog as unknown as Program);
      for (const t of texts) {
        assert.equal(automaton.test(t), set.match(t).length > 0, `${flag}${source} on ${JSON.stringify(t)}`);
      }
    }),
    fuzzParameters('regex-automaton', 'agrees with re2js', 600),
  );
});

test('bit-parallel regex – assertions, folding, non-ASCII and empty loops, case by case', () => {
  agree('(?i)k', ['k', 'K', '\u212a', 'x', '']);
  agree('^a$', ['a', 'aa', '']);
  agree('(?m)a$\\n^b', ['a\nb', 'ab', 'a\n\nb']);
  agree('a\\bb', ['ab']);
  agree('a\\b /', ['a /', 'a/']);
  agree('\\Ba', ['a']);
  agree('(?:a*)*b', ['aaab', 'b', 'aaa', '']);
  agree('(?:|a)+', ['', 'a', 'aa', 'b']);
  agree('[^/]+', ['é😀\ud800', 'a/b', '']);
  agree('.', ['😀', '\n', 'é', '', 'ab']);
  agree('(?s).', ['\n']);
  agree('😀+x', ['😀😀x', '\ud83dx']);
  agree('[é-ü]*', ['éü', 'ê', 'e']);
});

test('bit-parallel regex – every program the scenario bound admits fits the automaton', () => {
  // A program of MAX_REGEX_PROGRAM_SIZE instructions holds a FAIL and a MATCH besides its runes.
  assert.ok(MAX_REGEX_PROGRAM_SIZE - 2 <= MAX_AUTOMATON_RUNES);
  // At the bound and past it, through the scenario compiler.
  const largest = compileTextMatcher(`re:${'a'.repeat(MAX_REGEX_PROGRAM_SIZE - 2)}`);
  assert.ok(largest.ok && typeof largest.value !== 'string');
  assert.equal(largest.value.test('a'.repeat(MAX_REGEX_PROGRAM_SIZE - 2)), true);
  assert.equal(largest.value.test('a'.repeat(MAX_REGEX_PROGRAM_SIZE - 3)), false);
  assert.equal(compileTextMatcher(`re:${'a'.repeat(MAX_REGEX_PROGRAM_SIZE - 1)}`).ok, false);
  // A program with more runes than two words hold is refused, not run wrong.
  const set = new RE2Set(RE2Set.ANCHOR_BOTH);
  set.add('a'.repeat(MAX_AUTOMATON_RUNES + 1));
  set.compile();
  assert.throws(() => new BitParallelRegex(set.prog as unknown as Program), /more than 63/);
});
