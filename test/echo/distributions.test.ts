import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseControls } from '../../src/echo/controls.ts';
import { type RandomSource, seededBytes, seededRandom } from '../../src/echo/random.ts';
import {
  DELAY_SPEC_PATTERN,
  drawDelayMs,
  parseDelayBounds,
  parseDelaySpec,
  readDelaySpec,
} from '../../src/scenario/duration.ts';
import { drawWeighted, parseWeightedList, type WeightedList } from '../../src/scenario/weighted.ts';
import { binomialViolations } from '../helpers/statistics.ts';

/**
 * Distributions and seeds, as pure logic with injected randomness: the weighted-list grammar and
 * its draw, the delay forms (lists, lognormal), the fixed draw order of the control headers, the
 * seeded byte stream, and the statistical bound the HTTP tests use (which must reject a wrong
 * distribution).
 */

const status = (t: string) => (/^\d{3}$/.test(t) ? Number(t) : undefined);

function list<T>(text: string, parse: (t: string) => T | undefined): WeightedList<T> {
  const parsed = parseWeightedList(text, parse, 'a thing');
  assert.ok(parsed.ok, `${text}: ${parsed.ok ? '' : parsed.message}`);
  return parsed.list;
}

/** A source that returns the given values in turn, and counts how many were drawn. */
function scripted(...values: number[]): RandomSource & { drawn: number } {
  const source = Object.assign(() => values[source.drawn++] ?? assert.fail('drew more than scripted'), {
    drawn: 0,
  });
  return source;
}

test('parseWeightedList – a bare value is 100%; a list keeps its weights in millionths', () => {
  assert.deepEqual(list('503', status), { entries: [{ value: 503, weight: 1_000_000 }], total: 1_000_000 });
  assert.deepEqual(list(' 503:10, 500:5 ', status), {
    entries: [
      { value: 503, weight: 100_000 },
      { value: 500, weight: 50_000 },
    ],
    total: 150_000,
  });
  assert.deepEqual(list('503:0.0001,500:99.9999', status).total, 1_000_000);
  assert.deepEqual(list('503:0', status).total, 0);
});

test('parseWeightedList – bad lists say what is wrong', () => {
  const message = (text: string) => {
    const parsed = parseWeightedList(text, status, 'a status');
    assert.equal(parsed.ok, false, text);
    return parsed.ok ? '' : parsed.message;
  };
  assert.equal(message('503:60,500:50'), 'the weights sum to 110, above 100');
  assert.equal(message('503:101'), 'entry "503:101": a weight is at most 100');
  assert.match(message('abc:10'), /^entry "abc:10": expected value:percent/);
  assert.match(message('503:ten'), /^entry "503:ten"/);
  assert.match(message('503:10,500'), /^entry "500"/);
  assert.match(message('503:1.00001'), /^entry/, 'at most 4 decimals');
  assert.match(message('503:-1'), /^entry/);
  assert.equal(message('abc'), 'expected a status', 'a bare value keeps its own message');
  assert.match(message('503,500'), /^expected a status, or a weighted list/);
  const many = Array.from({ length: 33 }, () => '200:1').join(',');
  assert.equal(message(many), 'at most 32 entries in a weighted list, got 33');
  assert.ok(parseWeightedList(Array.from({ length: 32 }, () => '200:1').join(','), status, '').ok);
  assert.equal(message(`${'1'.repeat(1025)}`), 'at most 1024 characters');
});

test('drawWeighted – each entry owns its slice of [0, 1), the rest draws nothing', () => {
  const l = list('503:10,500:5', status);
  const at = (u: number) => drawWeighted(l, () => u);
  assert.equal(at(0), 503);
  assert.equal(at(0.099999), 503);
  assert.equal(at(0.1), 500);
  assert.equal(at(0.149999), 500);
  assert.equal(at(0.15), undefined);
  assert.equal(at(0.999999), undefined);
  const source = scripted(0.5);
  drawWeighted(l, source);
  assert.equal(source.drawn, 1, 'a list draws once');
  const bare = scripted();
  assert.equal(drawWeighted(list('503', status), bare), 503);
  assert.equal(bare.drawn, 0, 'a bare value draws nothing: as before');
  // A full list of two still draws.
  assert.equal(
    drawWeighted(list('503:50,500:50', status), () => 0.999999),
    500,
  );
});

test('delay forms – durations, ranges, weighted lists and lognormal, with their bounds', () => {
  assert.deepEqual(parseDelaySpec('500ms'), { minMs: 500, maxMs: 500 });
  assert.deepEqual(parseDelaySpec('100-500ms'), { minMs: 100, maxMs: 500 });
  const weighted = parseDelaySpec('100ms:90, 1-2s:10');
  assert.equal(weighted?.minMs, 100);
  assert.equal(weighted?.maxMs, 2000, 'the worst case is the longest entry');
  assert.equal(parseDelaySpec('2s:10')?.minMs, 0, 'the rest is no delay');
  assert.deepEqual(parseDelaySpec('lognormal:200ms,0.5'), {
    minMs: 0,
    maxMs: 200,
    lognormal: { medianMs: 200, sigma: 0.5 },
  });
  // A reversed range inside a list comes back as written, for the validator's message.
  assert.deepEqual(parseDelayBounds('100ms:50,500-100ms:10'), { minMs: 500, maxMs: 100 });
  assert.equal(parseDelaySpec('100ms:50,500-100ms:10'), undefined);
  for (const bad of [
    '100ms:60,2s:50',
    'lognormal:200ms,0',
    'lognormal:200ms,5.5',
    'lognormal:200ms',
    'lognormal:abc,1',
    '100ms:90,2s',
    '100ms,2s',
    'normal:1,2',
  ]) {
    assert.equal(parseDelaySpec(bad), undefined, bad);
  }
  const sum = readDelaySpec('100ms:60,2s:50');
  assert.equal(sum.ok ? '' : sum.message, 'the weights sum to 110, above 100');
  const sigma = readDelaySpec('lognormal:1s,9');
  assert.equal(sigma.ok ? '' : sigma.message, 'lognormal sigma must be above 0 and at most 5');
});

test('DELAY_SPEC_PATTERN – takes the new forms as the parser does (what RE2 cannot sum is left to it)', () => {
  const pattern = new RegExp(DELAY_SPEC_PATTERN);
  for (const text of [
    '100ms:90,2s:10',
    '100ms:90, 2s:10',
    '1-2s:50',
    '2s:10',
    'lognormal:200ms,0.5',
    'lognormal:1s, 2',
  ]) {
    assert.equal(pattern.test(text), true, text);
    assert.notEqual(parseDelaySpec(text), undefined, text);
  }
  for (const text of [
    '100ms:90,2s',
    '100ms,2s:10',
    'lognormal:200ms',
    'lognormal:,1',
    '2s:',
    ':10',
    '2s:10,',
  ]) {
    assert.equal(pattern.test(text), false, text);
    assert.equal(parseDelaySpec(text), undefined, text);
  }
  // The sum is the parser's: the pattern cannot add.
  assert.equal(pattern.test('1s:60,2s:60'), true);
  assert.equal(parseDelaySpec('1s:60,2s:60'), undefined);
});

test('drawDelayMs – a list picks an entry then draws its range; lognormal is Box–Muller, capped', () => {
  const weighted = parseDelaySpec('100ms:50,200-300ms:30')!;
  assert.equal(drawDelayMs(weighted, scripted(0.2)), 100);
  assert.equal(drawDelayMs(weighted, scripted(0.6, 0.5)), 250, 'entry, then within its range');
  assert.equal(drawDelayMs(weighted, scripted(0.9)), 0, 'the rest: no delay');
  const lognormal = parseDelaySpec('lognormal:200ms,1')!;
  // u2 = 0.25: cos(π/2) = 0, so Z = 0 and the draw is the median.
  assert.equal(drawDelayMs(lognormal, scripted(0.3, 0.25)), 200);
  // u1 = 0.5, u2 = 0: Z = sqrt(2 ln 2) ≈ 1.1774, e^Z ≈ 3.2459.
  assert.equal(drawDelayMs(lognormal, scripted(0.5, 0)), Math.round(200 * Math.exp(Math.sqrt(2 * Math.LN2))));
  assert.equal(drawDelayMs(lognormal, scripted(0.999999, 0), 5000), 5000, 'capped');
  assert.equal(drawDelayMs(parseDelaySpec('10s')!, scripted(), 1000), 1000);
});

test('drawDelayMs – lognormal over 10,000 seeded draws: half below the median, log-spread sigma', () => {
  const spec = parseDelaySpec('lognormal:100ms,0.8')!;
  const random = seededRandom(12);
  const n = 10_000;
  let below = 0;
  let sumSq = 0;
  for (let i = 0; i < n; i++) {
    const ms = drawDelayMs(spec, random);
    if (ms < 100) below++;
    const z = Math.log(Math.max(ms, 0.5) / 100);
    sumSq += z * z;
  }
  assert.deepEqual(binomialViolations({ below }, n, { below: 0.5 }), []);
  // The spread of ln(draw / median) is sigma; with n = 10,000 its estimate is within a few percent.
  const sd = Math.sqrt(sumSq / n);
  assert.ok(Math.abs(sd - 0.8) < 0.05, `log sd ${sd}`);
});

test('binomialViolations – accepts a right distribution and rejects a wrong one', () => {
  const l = list('503:10,500:5', status);
  const count = (draw: (r: RandomSource) => number | undefined) => {
    const random = seededRandom(99);
    const counts = { 503: 0, 500: 0, rest: 0 };
    for (let i = 0; i < 10_000; i++) {
      const v = draw(random);
      if (v === 503) counts[503]++;
      else if (v === 500) counts[500]++;
      else counts.rest++;
    }
    return counts;
  };
  const expected = { 503: 0.1, 500: 0.05, rest: 0.85 };
  const right = count((r) => drawWeighted(l, r));
  assert.deepEqual(binomialViolations(right, 10_000, expected), []);
  // Weights taken relative to their sum instead of as percent (no rest): rejected.
  const relative = count((r) => {
    const u = r() * 15;
    return u < 10 ? 503 : 500;
  });
  assert.notDeepEqual(binomialViolations(relative, 10_000, expected), []);
  // A 503 share of 12% instead of 10%: rejected.
  assert.notDeepEqual(
    binomialViolations(
      count((r) => drawWeighted(list('503:12,500:5', status), r)),
      10_000,
      expected,
    ),
    [],
  );
  // Weights in the wrong order: rejected too.
  assert.notDeepEqual(binomialViolations(right, 10_000, { 503: 0.05, 500: 0.1, rest: 0.85 }), []);
});

test('parseControls – every list is drawn once, in a fixed order whatever the order of the headers', () => {
  const limits = { maxDelayMs: 60_000, maxResponseBytes: 1 << 20 };
  const headers = {
    'x-echo-latency': '10ms:50,20ms:50',
    'x-echo-status': '503:50,500:50',
    'x-echo-error': '502:50,random:50',
    'x-echo-response-size': '10:50,20:50',
  };
  const reversed = Object.fromEntries(Object.entries(headers).reverse());
  for (let seed = 0; seed < 50; seed++) {
    const a = parseControls(headers, limits, seededRandom(seed));
    const b = parseControls(reversed, limits, seededRandom(seed));
    assert.deepEqual(a.problems, []);
    assert.deepEqual(a.controls, b.controls, `seed ${seed}`);
  }
  // Delay, status, error (entry, then random's status), size: five draws in that order.
  const source = scripted(0.7, 0.2, 0.9, 0, 0.6);
  const { controls } = parseControls(headers, limits, source);
  assert.equal(source.drawn, 5);
  assert.equal(controls.delayMs, 20);
  assert.equal(controls.status, 503);
  assert.deepEqual(controls.error, { kind: 'status', name: 'random', status: 500 });
  assert.equal(controls.responseSize, 20);
  // In the rest, nothing is set.
  const rest = parseControls(
    { 'x-echo-status': '503:10', 'x-echo-response-size': '5:10' },
    limits,
    () => 0.5,
  );
  assert.deepEqual(rest.controls, {});
});

test('parseControls – a lognormal latency is capped at ECHO_MAX_DELAY; a median above it is a 400', () => {
  const limits = { maxDelayMs: 1000, maxResponseBytes: 1 << 20 };
  const capped = parseControls({ 'x-echo-latency': 'lognormal:900ms,5' }, limits, scripted(0.999, 0));
  assert.equal(capped.controls.delayMs, 1000);
  const over = parseControls({ 'x-echo-latency': 'lognormal:2s,1' }, limits, Math.random);
  assert.match(over.problems[0]?.message ?? '', /above ECHO_MAX_DELAY/);
  const listOver = parseControls({ 'x-echo-delay': '10ms:90,2s:10' }, limits, Math.random);
  assert.match(listOver.problems[0]?.message ?? '', /delay of 2000 ms is above ECHO_MAX_DELAY/);
});

test('seededBytes – a function of the seed alone, however the stream is cut', () => {
  const whole = seededBytes(42)(Buffer.alloc(1001));
  const cut = seededBytes(42);
  const parts = [3, 1, 7, 4, 0, 986].map((n) => cut(Buffer.alloc(n)));
  assert.deepEqual(Buffer.concat(parts), whole);
  assert.notDeepEqual(seededBytes(43)(Buffer.alloc(1001)), whole);
  // Not stuck: all 256 byte values turn up in a kilobyte or so.
  assert.ok(new Set(whole).size > 200);
});
