/**
 * Shared settings of the property and fuzz tests (fast-check). In CI every property runs with one
 * fixed seed and a small budget, so a run is reproducible and takes seconds; locally, raise the
 * budget with `FUZZ_RUNS` (runs per property) and explore other inputs with `FUZZ_SEED`:
 *
 *   FUZZ_RUNS=20000 FUZZ_SEED=7 npx node --test test/fuzz/controls.test.ts
 *
 * Inputs that once failed are kept in `test/fuzz/corpus/<file>.json` (`{ "<property>": [{ "args":
 * [...], "why": "..." }] }`; `{"$buffer": "text"}` for bytes) and replayed first by their property,
 * whatever the seed.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';

/** The seed of every property in CI; `FUZZ_SEED` picks another. */
export const FUZZ_SEED = envNumber('FUZZ_SEED') ?? 0x14_2026;

function envNumber(name: string): number | undefined {
  const text = process.env[name];
  if (text === undefined || text.trim() === '') return undefined;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 0)
    throw new Error(`${name} must be a non-negative integer, got ${text}`);
  return n;
}

/** The number of runs of a property: `ciRuns`, or `FUZZ_RUNS` when set. */
export function fuzzRuns(ciRuns: number): number {
  return envNumber('FUZZ_RUNS') ?? ciRuns;
}

interface CorpusEntry {
  readonly args: readonly unknown[];
  readonly why?: string;
}

/** The past failures of one property, from `test/fuzz/corpus/<file>.json`, as fast-check examples. */
export function corpus<Ts extends unknown[]>(file: string, property: string): Ts[] {
  let text: string;
  try {
    text = readFileSync(new URL(`./corpus/${file}.json`, import.meta.url), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  // JSON has no bytes: `{"$buffer": "text"}` stands for the Buffer of that (Latin-1) text.
  const all = JSON.parse(text, (_key, value: unknown) =>
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { $buffer?: unknown }).$buffer === 'string'
      ? Buffer.from((value as { $buffer: string }).$buffer, 'latin1')
      : value,
  ) as Record<string, readonly CorpusEntry[]>;
  const entries = Object.hasOwn(all, property) ? (all[property] ?? []) : [];
  return entries.map((entry) => [...entry.args] as Ts);
}

/**
 * Parameters of one property: the fixed seed, its budget and its corpus.
 * @param file the corpus file (`test/fuzz/corpus/<file>.json`)
 * @param property the property's name in that file
 */
export function fuzzParameters<Ts extends unknown[]>(
  file: string,
  property: string,
  ciRuns: number,
): fc.Parameters<Ts> {
  return { seed: FUZZ_SEED, numRuns: fuzzRuns(ciRuns), examples: corpus<Ts>(file, property) };
}

/** Pieces of the control grammars, to build values near the accepted forms (and just off them). */
export const GRAMMAR_PIECES = [
  '0',
  '1',
  '7',
  '42',
  '100',
  '101',
  '200',
  '429',
  '503',
  '599',
  '600',
  '999',
  '1000',
  '2147483647',
  '2147483648',
  '99999999999999999',
  '1e3',
  '0x10',
  '1.5',
  '0.0001',
  '.5',
  '-',
  '-1',
  ',',
  ':',
  ' ',
  '\t',
  '.',
  'ms',
  's',
  'm',
  'h',
  'd',
  'lognormal:',
  'B/s',
  'KB/s',
  'kib/s',
  'MiB/s',
  'GB/s',
  '/s',
  'true',
  'false',
  'TRUE',
  'gzip',
  'br',
  'deflate',
  'random',
  'timeout',
  'reset',
  'close',
  'empty',
  'truncate',
  'malformed',
  'garbage',
  'slow-close',
  'blackhole',
  'slow_close',
  'black',
  'hole',
  'internal',
  'unavailable',
  'constructor',
  '__proto__',
  'toString',
  'hasOwnProperty',
  'Infinity',
  'NaN',
  'application/json',
  'text/plain; charset=utf-8',
  '%',
  ';',
  '"',
  'é',
  'ÿ',
] as const;

/** A header value: grammar pieces glued together, or any Latin-1 text (what HTTP can carry). */
export const headerValue: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.array(fc.constantFrom(...GRAMMAR_PIECES), { maxLength: 8 }).map((p) => p.join('')),
  },
  {
    weight: 1,
    arbitrary: fc.string({
      unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)),
      maxLength: 40,
    }),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
);

/** Sources of randomness: the ends of [0, 1) and anything between. */
export const randomValue: fc.Arbitrary<number> = fc.oneof(
  fc.constant(0),
  fc.constant(1 - 2 ** -53),
  fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
);
