/**
 * What a `re:` match costs on the texts built to be worst for it (issue #30: "none takes more than
 * a millisecond on a 1 KiB path"): the bit-parallel automaton echo-chaos runs against re2js's own
 * matcher (an `RE2Set` with the 64 KiB DFA budget used before), on the same programs and texts, in
 * the same process. Only the ratio means anything on a shared machine.
 *
 *   node bench/regex-automaton.ts            # prints a markdown table; writes nothing
 */
import { RE2JS, RE2Set } from 're2js';
import { BitParallelRegex, type Program } from '../src/scenario/regex-automaton.ts';

const KIB = 1024;
/** Pseudo-random `a`, `b`, `/` (a fixed LCG): a new DFA state at nearly every character. */
function noise(seed: number): string {
  let text = '/';
  for (let x = seed; text.length < KIB; ) {
    x = (x * 1_103_515_245 + 12_345) >>> 0;
    text += 'ab/'[(x >>> 16) % 3];
  }
  return text;
}
const TEXTS = [noise(7), noise(11), noise(13), `/${'a'.repeat(KIB - 1)}`, `/${'ab'.repeat(KIB / 2 - 1)}/`];
const PATTERNS = [
  '[ab/]*a[ab/]{30}b',
  '[ab/]*a[ab/]{55}b',
  '(?:[ab/]*a[ab/]{12}b){3}',
  '(a|aa)+$',
  '/api/v[0-9]+/.*',
];

/** µs of one match: the best of 9 batches of 20 runs over every text. */
function micros(test: (text: string) => boolean): { best: number; worst: number } {
  const perText: number[] = [];
  for (const text of TEXTS) {
    let best = Number.POSITIVE_INFINITY;
    for (let batch = 0; batch < 9; batch++) {
      const started = performance.now();
      for (let i = 0; i < 20; i++) test(text);
      best = Math.min(best, ((performance.now() - started) * 1000) / 20);
    }
    perText.push(best);
  }
  return { best: Math.min(...perText), worst: Math.max(...perText) };
}

console.log(
  '| pattern | automaton, µs (fastest text - slowest) | re2js DFA, µs | ratio on the slowest text |',
);
console.log('| --- | --- | --- | --- |');
for (const pattern of PATTERNS) {
  const translated = RE2JS.translateRegExp(pattern);
  const set = new RE2Set(RE2Set.ANCHOR_BOTH, 0, 64 * KIB);
  set.add(translated);
  set.compile();
  const automaton = new BitParallelRegex(set.prog as unknown as Program);
  for (const text of TEXTS) {
    if (automaton.test(text) !== set.match(text).length > 0) throw new Error(`${pattern}: verdicts differ`);
  }
  const ours = micros((t) => automaton.test(t));
  const theirs = micros((t) => set.match(t).length > 0);
  console.log(
    `| \`${pattern.replaceAll('|', '\\|')}\` | ${ours.best.toFixed(1)} - ${ours.worst.toFixed(1)} | ${theirs.best.toFixed(1)} - ${theirs.worst.toFixed(1)} | ${(ours.worst / theirs.worst).toFixed(2)} |`,
  );
}
