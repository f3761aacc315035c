import assert from 'node:assert/strict';
import { test } from 'node:test';
import { editDistance, nearestName } from '../../../src/obs/core/nearest-name.ts';

test('nearest-name – the edit distance counts a swap of neighbouring letters as one edit', () => {
  assert.equal(editDistance('budget', 'budget'), 0);
  assert.equal(editDistance('budget', 'bugdet'), 1, 'a transposition');
  assert.equal(editDistance('budget', 'budgets'), 1, 'an insertion');
  assert.equal(editDistance('budget', 'bdget'), 1, 'a deletion');
  assert.equal(editDistance('budget', 'budgex'), 1, 'a substitution');
  assert.equal(editDistance('', 'abc'), 3);
});

test('nearest-name – the nearest candidate, case ignored, as the candidate spells it', () => {
  const names = ['OBS_CARDINALITY_ENABLED', 'OBS_LOGGING_ENABLED', 'OBS_SAMPLING_PROBABILITY'];
  assert.equal(nearestName('OBS_CARDINALTY_ENABLED', names), 'OBS_CARDINALITY_ENABLED');
  assert.equal(nearestName('obs_logging_enabeld', names), 'OBS_LOGGING_ENABLED');
});

test('nearest-name – nothing when no candidate is near enough to be a typo', () => {
  assert.equal(nearestName('enabled', ['probability', 'overflow-value']), undefined);
  assert.equal(nearestName('anything', []), undefined);
  // Short names allow 2 edits, longer ones a third of their length.
  assert.equal(nearestName('abc', ['xyz']), undefined);
  assert.equal(nearestName('abc', ['xbz']), 'xbz');
  assert.equal(nearestName('mode', ['node', 'made']), 'node', 'the first of equally near candidates');
});
