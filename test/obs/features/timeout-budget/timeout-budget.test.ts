import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  establishBudget,
  isExhausted,
  parseMillisHeader,
  remainingMs,
  type TimeoutBudgetConfig,
} from '../../../../src/obs/features/timeout-budget/timeout-budget.ts';
import { loadObsConfig } from '../../../../src/obs/index.ts';

const NOW = 1_700_000_000_000;
/** The shipped defaults: default 2s, maximum 30s, minimum 100ms, margin 50ms. */
const DEFAULTS: TimeoutBudgetConfig = {
  ...loadObsConfig({ env: {} }).config['timeout-budget'],
  enabled: true,
};
const config = (over: Partial<TimeoutBudgetConfig> = {}): TimeoutBudgetConfig => ({ ...DEFAULTS, ...over });
const left = (headers: Record<string, string | string[]>, c = config()) => {
  const { budget } = establishBudget(headers, c, NOW);
  return budget === undefined ? null : { remaining: budget.deadlineEpochMs - NOW, source: budget.source };
};

test('timeout budget – the shipped defaults are the seed’s: 2s default, 30s maximum, 100ms minimum, 50ms margin', () => {
  assert.equal(DEFAULTS['default-budget'], 2000);
  assert.equal(DEFAULTS['maximum-budget'], 30_000);
  assert.equal(DEFAULTS['minimum-budget'], 100);
  assert.equal(DEFAULTS['safety-margin'], 50);
  assert.equal(DEFAULTS['inbound-header'], 'Obs-Timeout-Ms');
});

test('timeout budget – the absolute deadline beats the remaining-ms header and takes no safety margin', () => {
  const both = establishBudget(
    { 'obs-timeout-deadline-ms': String(NOW + 700), 'obs-timeout-ms': '5000' },
    config(),
    NOW,
  );
  assert.deepEqual(both, {
    budget: { deadlineEpochMs: NOW + 700, source: 'deadline-header' },
    invalidHeaders: [],
  });
});

test('timeout budget – a remaining-ms header sets the deadline less the safety margin', () => {
  assert.deepEqual(left({ 'obs-timeout-ms': '1000' }), { remaining: 950, source: 'remaining-header' });
  assert.deepEqual(left({ 'obs-timeout-ms': '1000' }, config({ 'safety-margin': 0 })), {
    remaining: 1000,
    source: 'remaining-header',
  });
  assert.deepEqual(left({ 'obs-timeout-ms': ' 80 ' }), { remaining: 30, source: 'remaining-header' });
  assert.deepEqual(left({ 'obs-timeout-ms': '30' }), { remaining: 0, source: 'remaining-header' });
});

test('timeout budget – the inbound header name is configurable, and only that name is read', () => {
  const c = config({ 'inbound-header': 'X-Budget-Ms' });
  assert.deepEqual(left({ 'x-budget-ms': '400' }, c), { remaining: 350, source: 'remaining-header' });
  assert.deepEqual(left({ 'obs-timeout-ms': '400' }, c), { remaining: 1950, source: 'default' });
});

test('timeout budget – no header: the default less the margin, floored at minimum-budget (the default only)', () => {
  assert.deepEqual(left({}), { remaining: 1950, source: 'default' });
  assert.deepEqual(left({}, config({ 'default-budget': 120 })), { remaining: 100, source: 'default' });
  assert.deepEqual(left({}, config({ 'default-budget': 151 })), { remaining: 101, source: 'default' });
  assert.deepEqual(left({}, config({ 'default-budget': 1, 'safety-margin': 0 })), {
    remaining: 100,
    source: 'default',
  });
  // A header below the minimum is kept as it is: the floor is for the implicit default only.
  assert.deepEqual(left({ 'obs-timeout-ms': '90' }), { remaining: 40, source: 'remaining-header' });
  assert.deepEqual(left({ 'obs-timeout-deadline-ms': String(NOW + 10) }), {
    remaining: 10,
    source: 'deadline-header',
  });
});

test('timeout budget – default-budget 0 establishes no budget, and a header still does (#40)', () => {
  const none = config({ 'default-budget': 0 });
  assert.deepEqual(establishBudget({}, none, NOW), { budget: undefined, invalidHeaders: [] });
  // Not the minimum-budget floor, whatever the margin.
  assert.equal(left({}, config({ 'default-budget': 0, 'safety-margin': 0 })), null);
  assert.deepEqual(establishBudget({ 'obs-timeout-ms': 'soon' }, none, NOW), {
    budget: undefined,
    invalidHeaders: ['Obs-Timeout-Ms'],
  });
  // An explicit inbound 0 is still an expired budget.
  assert.deepEqual(left({ 'obs-timeout-ms': '0' }, none), { remaining: 0, source: 'remaining-header' });
  assert.deepEqual(left({ 'obs-timeout-ms': '500' }, none), { remaining: 450, source: 'remaining-header' });
  assert.deepEqual(left({ 'obs-timeout-deadline-ms': String(NOW + 70) }, none), {
    remaining: 70,
    source: 'deadline-header',
  });
});

test('timeout budget – an explicit 0 or a past deadline is expired and never falls back to the default', () => {
  assert.deepEqual(left({ 'obs-timeout-ms': '0' }), { remaining: 0, source: 'remaining-header' });
  assert.deepEqual(left({ 'obs-timeout-deadline-ms': String(NOW - 1) }), {
    remaining: 0,
    source: 'deadline-header',
  });
  assert.deepEqual(left({ 'obs-timeout-deadline-ms': String(NOW) }), {
    remaining: 0,
    source: 'deadline-header',
  });
  assert.deepEqual(left({ 'obs-timeout-deadline-ms': '0', 'obs-timeout-ms': '5000' }), {
    remaining: 0,
    source: 'deadline-header',
  });
});

test('timeout budget – maximum-budget clamps every source; 10^20 ms is clamped, never overflows', () => {
  const huge = '100000000000000000000';
  assert.deepEqual(left({ 'obs-timeout-ms': huge }), { remaining: 30_000, source: 'remaining-header' });
  assert.deepEqual(left({ 'obs-timeout-deadline-ms': huge }), {
    remaining: 30_000,
    source: 'deadline-header',
  });
  assert.deepEqual(left({ 'obs-timeout-ms': '30050' }), { remaining: 30_000, source: 'remaining-header' });
  assert.deepEqual(left({ 'obs-timeout-ms': '30049' }), { remaining: 29_999, source: 'remaining-header' });
  assert.deepEqual(left({}, config({ 'default-budget': 60_000 })), { remaining: 30_000, source: 'default' });
  const { budget } = establishBudget({ 'obs-timeout-ms': '9'.repeat(64) }, config(), NOW);
  assert.ok(Number.isSafeInteger(budget?.deadlineEpochMs));
});

test('timeout budget – a malformed header is treated as absent and reported', () => {
  for (const bad of ['', 'abc', '-5', '1.5', '1e3', '0x10', '10ms', '1'.repeat(65)]) {
    const result = establishBudget({ 'obs-timeout-ms': bad }, config(), NOW);
    assert.deepEqual(
      result,
      { budget: { deadlineEpochMs: NOW + 1950, source: 'default' }, invalidHeaders: ['Obs-Timeout-Ms'] },
      JSON.stringify(bad),
    );
  }
  const repeated = establishBudget({ 'obs-timeout-ms': ['100', '200'] }, config(), NOW);
  assert.deepEqual(repeated.invalidHeaders, ['Obs-Timeout-Ms']);
  // A malformed absolute deadline falls through to the remaining-ms header.
  const fallThrough = establishBudget(
    { 'obs-timeout-deadline-ms': 'soon', 'obs-timeout-ms': '500' },
    config(),
    NOW,
  );
  assert.deepEqual(fallThrough, {
    budget: { deadlineEpochMs: NOW + 450, source: 'remaining-header' },
    invalidHeaders: ['Obs-Timeout-Deadline-Ms'],
  });
});

test('timeout budget – parseMillisHeader: absent, malformed and valid values', () => {
  assert.equal(parseMillisHeader(undefined), undefined);
  assert.equal(parseMillisHeader('0'), 0);
  assert.equal(parseMillisHeader('007'), 7);
  assert.equal(parseMillisHeader('-0'), null);
  assert.equal(parseMillisHeader(['1']), null);
});

test('timeout budget – exhausted at or below minimum-budget, not above; remaining is never negative', () => {
  assert.equal(isExhausted(100, 100), true);
  assert.equal(isExhausted(101, 100), false);
  assert.equal(isExhausted(99, 100), true);
  assert.equal(isExhausted(0, 0), true);
  assert.equal(isExhausted(1, 0), false);
  assert.equal(remainingMs(NOW + 5, NOW), 5);
  assert.equal(remainingMs(NOW - 5, NOW), 0);
});
