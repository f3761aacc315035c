/**
 * Properties of the `pathPattern` glob and `re:` grammars (issue #30): compiling never throws, a
 * refused pattern comes with a reason, and every accepted pattern, pathological ones included
 * (nested and alternated repetition, many `**`, overlapping stars, long literal runs), matches a
 * 1 KiB text within 1 ms. Globs agree with a reference matcher, `re:` patterns with JavaScript's
 * own engine on short texts, and the literal prefix the store indexes by starts every match.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import fc from 'fast-check';
import { compilePathPattern, compileTextMatcher, type PatternMatcher } from '../../src/scenario/index.ts';
import { regexLiteralPrefix } from '../../src/scenario/matchers.ts';
import { fuzzParameters } from './fuzz.ts';

const FILE = 'patterns';
/** The issue's bound: no accepted pattern takes more than this on a 1 KiB path. */
const BUDGET_MS = 1;
const KIB = 1024;

/**
 * The fastest of five runs of the same match, in milliseconds: a loaded machine can stretch any one
 * run, but seldom all five, so the minimum measures the matcher and not the neighbours. Over
 * the budget, it is measured again as the fastest of 50 runs, a few milliseconds apart: a machine
 * busy with other work for a moment fails no test, and a matcher that backtracks (seconds on a
 * 1 KiB text) fails every run.
 */
function minMatchMs(matcher: PatternMatcher, text: string): number {
  const fastest = (runs: number, pauseMs: number) => {
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < runs; i++) {
      if (pauseMs > 0) Atomics.wait(PAUSE, 0, 0, pauseMs);
      const started = performance.now();
      matcher.test(text);
      best = Math.min(best, performance.now() - started);
    }
    return best;
  };
  const best = fastest(5, 0);
  return best < BUDGET_MS ? best : Math.min(best, fastest(50, 2));
}
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/** Texts of about 1 KiB built to make a backtracking engine try every split. */
function hostileTexts(alphabet: string): string[] {
  const a = alphabet[0] ?? 'a';
  const b = alphabet[1] ?? 'b';
  let mixed = '/';
  for (let i = 0; mixed.length < KIB; i++) mixed += alphabet[(i * 7 + (i >> 3)) % alphabet.length];
  // Pseudo-random text (a fixed LCG): the one that makes RE2's DFA meet new states at every step.
  let noisy = '/';
  for (let x = 7; noisy.length < KIB; ) {
    x = (x * 1_103_515_245 + 12_345) >>> 0;
    noisy += 'ab/'[(x >>> 16) % 3];
  }
  return [
    noisy,
    `/${a.repeat(KIB - 1)}`,
    `/${a.repeat(KIB - 2)}!`,
    `/${(a + b).repeat(KIB / 2 - 1)}/`,
    `/${`${a}/`.repeat(KIB / 2 - 1)}${b}`,
    mixed.slice(0, KIB),
  ];
}

// ---- the glob grammar -------------------------------------------------------------------------

const globPiece = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('a', 'b', '/', '.', '-', 'ab', 'api', 'v1') },
  { weight: 3, arbitrary: fc.constantFrom('*', '**', '***') },
  { weight: 1, arbitrary: fc.constantFrom('(', ')', '[', ']', '?', '+', '$', '^', '|', '{', '}', '\\') },
);
const glob = fc.array(globPiece, { maxLength: 24 }).map((pieces) => `/${pieces.join('')}`);
/** Pathological globs: many `**` and `*` separated by one letter, long literal runs. */
const pathologicalGlob = fc.oneof(
  fc.integer({ min: 1, max: 12 }).map((n) => `/${'**a'.repeat(n)}**b`),
  fc.integer({ min: 1, max: 20 }).map((n) => `/${'*a'.repeat(n)}*b`),
  fc.integer({ min: 1, max: 8 }).map((n) => `/${'**a*'.repeat(n)}b`),
  fc.integer({ min: 50, max: 500 }).map((n) => `/**${'a'.repeat(n)}**b`),
  fc.integer({ min: 1, max: 8 }).map((n) => `/${'a/**/'.repeat(n)}*${'a'.repeat(60)}`),
);

/** The documented glob semantics, by dynamic programming over (pattern, path) positions. */
function referenceGlob(pattern: string, path: string): boolean {
  const tokens: string[] = [];
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] !== '*') tokens.push(pattern[i]!);
    else {
      let run = 1;
      while (pattern[i + 1] === '*') {
        run++;
        i++;
      }
      tokens.push(run === 1 ? '*' : '**');
    }
  }
  // can[j]: the first i tokens match the first j characters.
  let can = new Array<boolean>(path.length + 1).fill(false);
  can[0] = true;
  for (const token of tokens) {
    const next = new Array<boolean>(path.length + 1).fill(false);
    for (let j = 0; j <= path.length; j++) {
      if (token === '**') next[j] = can[j]! || (j > 0 && next[j - 1]!);
      else if (token === '*') next[j] = can[j]! || (j > 0 && path[j - 1] !== '/' && next[j - 1]!);
      else next[j] = j > 0 && can[j - 1]! && path[j - 1] === token;
    }
    can = next;
  }
  return can[path.length]!;
}

test('glob pathPattern – compiling never throws; accepted globs match like the documented semantics', () => {
  const path = fc.array(fc.constantFrom('a', 'b', '/', '.', 'ab', 'api', 'v1', '('), { maxLength: 16 });
  fc.assert(
    fc.property(
      fc.oneof(glob, pathologicalGlob),
      fc.array(path, { minLength: 1, maxLength: 8 }),
      (pattern, paths) => {
        const compiled = compilePathPattern(pattern);
        if (!compiled.ok) {
          assert.match(compiled.reason, /at most 8 \*\* and 16 wildcards|at most 512 characters/);
          return;
        }
        for (const pieces of paths) {
          const text = `/${pieces.join('')}`;
          assert.equal(compiled.value.test(text), referenceGlob(pattern, text), `${pattern} on ${text}`);
          if (compiled.value.test(text)) assert.ok(text.startsWith(compiled.value.literalPrefix));
        }
      },
    ),
    fuzzParameters(FILE, 'glob semantics', 300),
  );
});

test('glob pathPattern – every accepted glob, pathological ones included, matches a 1 KiB path within 1 ms', () => {
  fc.assert(
    fc.property(fc.oneof(glob, pathologicalGlob), (pattern) => {
      const compiled = compilePathPattern(pattern);
      if (!compiled.ok) return;
      for (const text of hostileTexts('ab/')) {
        const ms = minMatchMs(compiled.value, text);
        assert.ok(ms < BUDGET_MS, `${pattern} took ${ms.toFixed(3)} ms on a ${text.length}-character path`);
      }
    }),
    fuzzParameters(FILE, 'glob budget', 200),
  );
});

// ---- the re: grammar --------------------------------------------------------------------------

const atom = fc.constantFrom('a', 'b', '/', '.', '\\d', '\\w', '\\s', '[ab]', '[^/]', '\\.', '\\/', 'x');
const quantifier = fc.constantFrom('', '', '*', '+', '?', '{2}', '{1,3}', '{0,40}', '*?', '+?');
/** Regex sources from a small grammar: atoms, groups, alternation, repetition, nested. */
const regexSource: fc.Arbitrary<string> = fc.letrec<{ node: string }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.tuple(atom, quantifier).map(([a, q]) => a + q),
    fc
      .tuple(fc.array(tie('node'), { minLength: 1, maxLength: 4 }), quantifier)
      .map(([parts, q]) => `(${parts.join('')})${q}`),
    fc
      .tuple(fc.array(tie('node'), { minLength: 2, maxLength: 3 }), quantifier)
      .map(([parts, q]) => `(?:${parts.join('|')})${q}`),
  ),
})).node;
/** What the issue named, and its relatives: nested, alternated and overlapping repetition. */
const pathologicalRegex = fc.oneof(
  fc.constantFrom(
    '/(a|a)*$',
    '(a|aa)+$',
    '(a+)+$',
    '(a*)*b',
    '(a|a?)+b',
    '(.*a){12}',
    'a*a*a*a*a*a*a*b',
    '(?:a+){20}b',
    '(\\w+\\s?)*$',
    '(a|b|ab)*c',
    '([ab/]*a[ab/]{30}b)',
    '[ab/]*a[ab/]{26}b',
    '[ab/]*a[ab/]{55}b',
    '(?:[ab/]*a[ab/]{12}b){3}',
    '(?:a|b|/)*a(?:a|b|/){8}b(?:a|b|/)*a(?:a|b|/){8}b',
    '(?:a?){25}a{25}',
    '(?:a?){40}a{40}',
    '.{1000}x',
    '(x+x+)+y',
  ),
  fc.integer({ min: 2, max: 30 }).map((n) => `${'a*'.repeat(n)}b`),
  fc.integer({ min: 2, max: 10 }).map((n) => `${'('.repeat(n)}a${')*'.repeat(n)}b`),
  fc.integer({ min: 50, max: 500 }).map((n) => `/${'a'.repeat(n)}.*b`),
);
const refusedRegex = fc.constantFrom(
  '(a)\\1',
  '(?=a)a',
  '(?!b)a',
  '(?<=a)b',
  '(?<!a)b',
  '\\k<n>(?<n>a)',
  '\\z',
  '[[:alpha:]]',
);

test('re: patterns – compiling never throws; a refusal says why; backreferences and lookaround are refused', () => {
  fc.assert(
    fc.property(
      fc.oneof(regexSource, pathologicalRegex, refusedRegex, fc.string({ maxLength: 40 })),
      (source) => {
        const compiled = compileTextMatcher(`re:${source}`);
        if (!compiled.ok) {
          assert.ok(compiled.reason.length > 10, compiled.reason);
          assert.match(
            compiled.reason,
            /not a valid regular expression|linear-time engine \(RE2 syntax\)|instructions, more than 64|is empty|at most 512/,
          );
        }
      },
    ),
    fuzzParameters(FILE, 're never throws', 400),
  );
  fc.assert(
    fc.property(refusedRegex, (source) => {
      const compiled = compileTextMatcher(`re:${source}`);
      assert.equal(compiled.ok, false, source);
      if (!compiled.ok) assert.match(compiled.reason, /linear-time engine \(RE2 syntax\)/);
    }),
    fuzzParameters(FILE, 're refused', 50),
  );
});

test('re: patterns – every accepted one, pathological ones included, matches a 1 KiB text within 1 ms', () => {
  fc.assert(
    fc.property(fc.oneof(regexSource, pathologicalRegex), (source) => {
      const compiled = compileTextMatcher(`re:${source}`);
      if (!compiled.ok || typeof compiled.value === 'string') return;
      // The first, pseudo-random text is the one that defeats a DFA (RE2's own took 0.5-2 ms on it).
      for (const text of hostileTexts('ab/x')) {
        const ms = minMatchMs(compiled.value, text);
        assert.ok(ms < BUDGET_MS, `re:${source} took ${ms.toFixed(3)} ms on a ${text.length}-character text`);
      }
    }),
    fuzzParameters(FILE, 're budget', 300),
  );
});

test('re: patterns – agree with JavaScript on short texts, and every match starts with the indexed literal prefix', () => {
  const text = fc
    .array(fc.constantFrom('a', 'b', '/', '.', 'x', '1', ' ', '_'), { maxLength: 10 })
    .map((c) => c.join(''));
  fc.assert(
    fc.property(
      fc.oneof(
        regexSource,
        fc.tuple(fc.constantFrom('/api/v1/', 'ab', '/x\\.'), regexSource).map(([p, r]) => p + r),
      ),
      fc.array(text, { minLength: 1, maxLength: 6 }),
      (source, texts) => {
        const compiled = compilePathPattern(`re:${source}`);
        if (!compiled.ok) return;
        const js = new RegExp(`^(?:${source})$`);
        const prefix = regexLiteralPrefix(source);
        for (const t of [...texts, ...texts.map((x) => prefix + x)]) {
          const matched = compiled.value.test(t);
          assert.equal(matched, js.test(t), `re:${source} on ${JSON.stringify(t)}`);
          if (matched) assert.ok(t.startsWith(prefix), `re:${source} matched ${t} without ${prefix}`);
        }
      },
    ),
    fuzzParameters(FILE, 're agrees with JavaScript', 200),
  );
});
