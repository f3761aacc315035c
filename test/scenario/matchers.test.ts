/**
 * Checking a set's `re:` patterns ahead, a slice at a time (issue #30): the event loop turns between
 * slices, the verdicts are the ones validation would reach, and validation and the store read them
 * instead of checking again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  checkPatternsAhead,
  compileTextMatcher,
  MAX_SET_PATTERNS,
  ScenarioStore,
  validateScenarios,
  withPatternVerdicts,
} from '../../src/scenario/index.ts';

test('checkPatternsAhead – lets the event loop turn between slices', async () => {
  // Counts turns of the event loop, not milliseconds: an immediate that sets the next one runs once
  // a turn, however fast or slow the machine (a 1 ms interval ticked 9 times on a fast run).
  let turns = 0;
  let ticking = true;
  const tick = () => {
    turns++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  try {
    // A slice of 0 ms: a turn after every pattern checked.
    const texts = Array.from({ length: 50 }, (_, i) => `re:/ahead-${i}/(a|b)+[0-9]{2}`);
    const ahead = await checkPatternsAhead(texts, 0);
    assert.equal(ahead.size, 50);
    assert.ok(turns >= 40, `the loop turned ${turns} times while 50 patterns were checked`);
  } finally {
    ticking = false;
  }
});

test('checkPatternsAhead – checks only re: texts, each once, and stops past what a set may hold', async () => {
  const ahead = await checkPatternsAhead([
    're:/a',
    'plain',
    '/glob/*',
    're:/a',
    're:/b',
    `re:${'x'.repeat(600)}`,
  ]);
  // The over-long one is refused by its length, without a check.
  assert.equal(ahead.size, 2);
  const many = Array.from({ length: MAX_SET_PATTERNS + 50 }, (_, i) => `re:/many-${i}`);
  assert.equal((await checkPatternsAhead(many)).size, MAX_SET_PATTERNS + 1);
});

test('withPatternVerdicts – validation and the store read the verdicts checked ahead, refusals included', async () => {
  const set = [
    { pathPattern: 're:/ok/[0-9]+', headers: { 'x-a': 're:(a|aa)+' }, responses: [{ status: 201 }] },
    { path: '/bad', headers: { 'x-b': 're:(a)\\1' }, responses: [{ status: 200 }] },
  ];
  const texts = ['re:/ok/[0-9]+', 're:(a|aa)+', 're:(a)\\1'];
  const ahead = await checkPatternsAhead(texts);
  const outside = validateScenarios(set);
  const inside = withPatternVerdicts(ahead, () => validateScenarios(set));
  assert.deepEqual(inside, outside);
  assert.equal(inside.ok, false);
  if (!inside.ok) assert.match(inside.problems[0]!.message, /backreference/);

  const store = new ScenarioStore();
  const good = validateScenarios([set[0]]);
  assert.ok(good.ok);
  withPatternVerdicts(ahead, () => store.replace(good.scenarios));
  const request = (path: string, a: string) => ({
    method: 'GET',
    path,
    query: '',
    headers: { 'x-a': a },
    body: undefined,
  });
  assert.equal(store.match(request('/ok/12', 'aaa'))?.label, 're:/ok/[0-9]+');
  assert.equal(store.match(request('/ok/12', 'aab')), undefined);
  // Outside, compiling works as before, and a foreign value is refused.
  assert.equal(compileTextMatcher('re:(a)\\1').ok, false);
  assert.throws(() => withPatternVerdicts({ size: 0 }, () => 1), /checkPatternsAhead/);
});
