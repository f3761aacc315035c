/**
 * Which lines of two texts differ, for the replay's side-by-side answers: a longest common
 * subsequence of lines, bounded so that a large answer costs bounded time (past
 * {@link MAX_DIFF_LINES} lines on either side, or {@link MAX_DIFF_CELLS} cells of the table, the
 * lines are compared one by one in place). Imports nothing: unit-tested under node.
 */

export const MAX_DIFF_LINES = 2000;
export const MAX_DIFF_CELLS = 1_000_000;

/** For each line of each side, whether it is not in the other (added, removed or changed). */
export interface LineDiff {
  readonly left: readonly boolean[];
  readonly right: readonly boolean[];
}

export function lineDiff(leftText: string, rightText: string): LineDiff {
  const a = leftText.split('\n');
  const b = rightText.split('\n');
  if (a.length > MAX_DIFF_LINES || b.length > MAX_DIFF_LINES || a.length * b.length > MAX_DIFF_CELLS) {
    return { left: a.map((line, i) => line !== b[i]), right: b.map((line, i) => line !== a[i]) };
  }
  // lengths[i][j]: the longest common subsequence of a[i..] and b[j..].
  const width = b.length + 1;
  const lengths = new Uint16Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lengths[i * width + j] =
        a[i] === b[j]
          ? lengths[(i + 1) * width + j + 1]! + 1
          : Math.max(lengths[(i + 1) * width + j]!, lengths[i * width + j + 1]!);
    }
  }
  const left = a.map(() => true);
  const right = b.map(() => true);
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      left[i++] = false;
      right[j++] = false;
    } else if (lengths[(i + 1) * width + j]! >= lengths[i * width + j + 1]!) i++;
    else j++;
  }
  return { left, right };
}
