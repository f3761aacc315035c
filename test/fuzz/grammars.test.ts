/**
 * Properties of the duration, delay and distribution grammars shared by headers, scenarios and
 * `obs.*`: parsing never throws, accepted values respect their bounds, draws stay within them, and
 * what has a formatter reads back the same.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import fc from 'fast-check';
import { formatDuration, parseDurationMs } from '../../src/obs/core/duration.ts';
import {
  DELAY_SPEC_PATTERN,
  drawDelayMs,
  drawWeighted,
  MAX_LOGNORMAL_SIGMA,
  MAX_WEIGHTED_ENTRIES,
  parseDelaySpec,
  parseWeightedList,
  readDelaySpec,
} from '../../src/scenario/index.ts';
import { formatPercent, WHOLE_WEIGHT } from '../../src/scenario/weighted.ts';
import { fuzzParameters, GRAMMAR_PIECES, headerValue, randomValue } from './fuzz.ts';

const FILE = 'grammars';
const DELAY_SPEC = new RegExp(DELAY_SPEC_PATTERN);

const duration = fc
  .tuple(
    fc.oneof(fc.nat({ max: 100_000 }), fc.constantFrom(0, 1, 2_147_483_647)),
    fc.constantFrom('', 'ms', 's', 'm', 'h', 'd'),
  )
  .map(([n, unit]) => `${n}${unit}`);
const range = fc.oneof(
  duration,
  fc.tuple(duration, duration).map(([a, b]) => `${a}-${b}`),
);
const weight = fc.oneof(
  fc.integer({ min: 0, max: 100 }).map(String),
  fc.constantFrom('0.01', '33.3333', '50.5', '100.0', '101', '0.00001'),
);
const weightedDelays = fc
  .array(
    fc.tuple(range, weight).map(([r, w]) => `${r}:${w}`),
    { minLength: 1, maxLength: MAX_WEIGHTED_ENTRIES + 2 },
  )
  .map((entries) => entries.join(','));
const lognormal = fc
  .tuple(
    duration,
    fc.oneof(
      fc.double({ min: 0, max: 6, noNaN: true }).map((s) => s.toFixed(3)),
      fc.constantFrom('0', '5', '5.000001', '1e1'),
    ),
  )
  .map(([m, s]) => `lognormal:${m},${s}`);
const delayText = fc.oneof(headerValue, duration, range, weightedDelays, lognormal);

test('parseDurationMs – never throws; a duration is a safe non-negative integer and formatDuration reads back the same', () => {
  fc.assert(
    fc.property(fc.oneof(headerValue, duration, fc.anything()), (value) => {
      const ms = parseDurationMs(value);
      if (ms === undefined) return;
      assert.ok(Number.isSafeInteger(ms) && ms >= 0, `${String(value)} → ${ms}`);
      assert.equal(parseDurationMs(formatDuration(ms)), ms);
    }),
    fuzzParameters(FILE, 'duration', 3000),
  );
});

test('readDelaySpec – never throws; an accepted delay matches the schema pattern and every draw stays in its bounds', () => {
  fc.assert(
    fc.property(
      delayText,
      fc.array(randomValue, { minLength: 2, maxLength: 4 }),
      fc.nat({ max: 10_000_000 }),
      (text, draws, capMs) => {
        const read = readDelaySpec(text);
        if (!read.ok) {
          assert.ok(read.message.length > 0);
          assert.equal(parseDelaySpec(text), undefined);
          return;
        }
        const spec = read.spec;
        assert.ok(DELAY_SPEC.test(text.trim()), `accepted but not matched by the schema pattern: ${text}`);
        if (spec.minMs > spec.maxMs) return; // reversed: reported by the callers
        let i = 0;
        const random = () => draws[i++ % draws.length] as number;
        const ms = drawDelayMs(spec, random, capMs);
        assert.ok(Number.isInteger(ms) && ms >= 0 && ms <= capMs, `${text}: drew ${ms}, cap ${capMs}`);
        if (spec.lognormal !== undefined) {
          assert.ok(spec.lognormal.sigma > 0 && spec.lognormal.sigma <= MAX_LOGNORMAL_SIGMA);
        } else {
          assert.ok(ms <= spec.maxMs, `${text}: drew ${ms} above ${spec.maxMs}`);
          if (spec.choices === undefined || spec.choices.total === WHOLE_WEIGHT) {
            assert.ok(ms >= Math.min(spec.minMs, capMs), `${text}: drew ${ms} below ${spec.minMs}`);
          }
        }
      },
    ),
    fuzzParameters(FILE, 'delay', 3000),
  );
});

const statusEntry = fc.oneof(
  fc.integer({ min: 0, max: 999 }).map(String),
  fc.constantFrom(...GRAMMAR_PIECES),
);
const weightedText = fc.oneof(
  headerValue,
  fc
    .array(
      fc.tuple(statusEntry, weight).map(([v, w]) => `${v}:${w}`),
      { minLength: 1, maxLength: MAX_WEIGHTED_ENTRIES + 2 },
    )
    .map((e) => e.join(',')),
);
const parseStatus = (t: string) => (/^\d{3}$/.test(t) ? Number(t) : undefined);

test('parseWeightedList – never throws; weights sum to at most 100%, at most 32 entries; the list written back reads the same', () => {
  fc.assert(
    fc.property(weightedText, randomValue, (text, r) => {
      const parsed = parseWeightedList(text, parseStatus, 'a status');
      if (!parsed.ok) {
        assert.ok(parsed.message.length > 0);
        return;
      }
      const { entries, total } = parsed.list;
      assert.ok(entries.length >= 1 && entries.length <= MAX_WEIGHTED_ENTRIES);
      assert.equal(
        total,
        entries.reduce((sum, e) => sum + e.weight, 0),
      );
      assert.ok(total >= 0 && total <= WHOLE_WEIGHT);
      for (const e of entries) assert.ok(Number.isInteger(e.weight) && e.weight >= 0);
      const drawn = drawWeighted(parsed.list, () => r);
      if (drawn !== undefined) assert.ok(entries.some((e) => e.value === drawn));
      const written = entries.map((e) => `${e.value}:${formatPercent(e.weight)}`).join(',');
      const again = parseWeightedList(written, parseStatus, 'a status');
      assert.ok(again.ok, `${written} (from ${text}) does not read back`);
      assert.deepEqual(again.list, parsed.list);
    }),
    fuzzParameters(FILE, 'weighted', 3000),
  );
});
