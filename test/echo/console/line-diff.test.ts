/** The replay's side-by-side diff (issue #37): which lines of two answers differ. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lineDiff, MAX_DIFF_LINES } from '../../../src/echo/console/page/line-diff.ts';

test('line diff – equal texts have no changed line', () => {
  assert.deepEqual(lineDiff('a\nb', 'a\nb'), { left: [false, false], right: [false, false] });
});

test('line diff – an inserted line is the only one marked, the lines after it still match', () => {
  assert.deepEqual(lineDiff('a\nb\nc', 'a\nx\nb\nc'), {
    left: [false, false, false],
    right: [false, true, false, false],
  });
});

test('line diff – a changed line is marked on both sides', () => {
  assert.deepEqual(lineDiff('{\n "status": 200\n}', '{\n "status": 503\n}'), {
    left: [false, true, false],
    right: [false, true, false],
  });
});

test('line diff – past its bound, lines are compared in place', () => {
  const many = Array.from({ length: MAX_DIFF_LINES + 1 }, (_, i) => String(i)).join('\n');
  const diff = lineDiff(many, `x\n${many}`);
  assert.equal(diff.right[0], true);
  assert.equal(diff.right[1], true, 'compared in place, so every line moved is changed');
});
