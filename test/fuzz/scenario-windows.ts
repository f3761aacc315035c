/**
 * Arbitraries of a scenario's order and windows (`order`, `weight`, `activeFor`, `times`), shared by
 * the body and HTTP fuzz tests: values of every form, and one field given a value it does not take.
 */
import fc from 'fast-check';
import { parseDurationMs } from '../../src/obs/core/duration.ts';
import { MAX_TIMES } from '../../src/scenario/index.ts';
import { GRAMMAR_PIECES } from './fuzz.ts';

const pick = <T>(...items: T[]) => fc.constantFrom(...items);

/** `activeFor` texts: grammar pieces, valid durations, and the edges around them. */
export const activeForArb = fc.oneof(
  fc.array(pick(...GRAMMAR_PIECES), { maxLength: 4 }).map((p) => p.join('')),
  pick('30s', '0', '0s', '0.4ms', '1.5h', '366d', '367d', '1w', ' 30s', 'soon', `${'0'.repeat(40)}1s`),
);

/** The ceiling of `activeFor`, written out here rather than read from the code under test. */
const DAYS_366_MS = 366 * 86_400_000;
/** Terms with units (`1h30m`), or a bare number of milliseconds. */
const DURATION = /^(?:(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+|\d+(?:\.\d+)?)$/;

const isInteger = (value: unknown, min: number, max: number) =>
  Number.isInteger(value) && (value as number) >= min && (value as number) <= max;

/**
 * Whether a value is one the field takes, by the documented rules (an oracle of its own, not the
 * validator's code). A `weight` is bad under `order: cycle` whatever its value.
 */
const VALID_WINDOW_VALUE: Readonly<Record<WindowField, (value: unknown) => boolean>> = {
  order: (value) => value === 'cycle' || value === 'random',
  activeFor: (value) => {
    if (typeof value !== 'string' || value.length > 32 || !DURATION.test(value)) return false;
    const ms = parseDurationMs(value);
    return ms !== undefined && ms > 0 && ms <= DAYS_366_MS;
  },
  times: (value) => isInteger(value, 1, 1_000_000_000),
  weight: () => false,
};
export type WindowField = 'order' | 'activeFor' | 'times' | 'weight';

/** One field of order and windows with a value it does not take, anything at all otherwise. */
export const badWindowFieldArb: fc.Arbitrary<[WindowField, unknown]> = fc
  .tuple(
    pick<WindowField>('order', 'activeFor', 'times', 'weight'),
    fc.oneof(
      pick<unknown>(
        'cycle',
        'random',
        'RANDOM',
        0,
        -1,
        1.5,
        2 ** 53,
        '30s',
        '0s',
        '367d',
        null,
        true,
        [],
        {},
      ),
      activeForArb,
      fc.integer({ min: -2, max: MAX_TIMES + 2 }),
      fc.jsonValue({ maxDepth: 2 }),
    ),
  )
  .filter(([field, value]) => value !== undefined && !VALID_WINDOW_VALUE[field](value));

/** A set of two scenarios whose second carries the bad field, and where that field is. */
export function withBadWindowField([field, value]: [WindowField, unknown]): { set: unknown[]; at: string } {
  const ok = { path: '/ok', responses: [{ status: 200 }] };
  if (field === 'weight') {
    // A weight the field takes is still bad beside order: cycle (written or not).
    const order = isInteger(value, 0, 1_000_000)
      ? typeof value === 'number' && value % 2
        ? {}
        : { order: 'cycle' }
      : { order: 'random' };
    return {
      set: [ok, { path: '/bad', ...order, responses: [{ status: 200, weight: value }, { status: 503 }] }],
      at: '/1/responses/0/weight',
    };
  }
  const base = field === 'order' ? {} : { order: 'random' };
  return {
    set: [ok, { path: '/bad', ...base, [field]: value, responses: [{ status: 200 }] }],
    at: `/1/${field}`,
  };
}
