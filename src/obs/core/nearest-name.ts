/**
 * "Did you mean ...?": the known name nearest to a mistyped one, for error messages that name the
 * setting, variable or key a person probably meant.
 */

/** Levenshtein distance with adjacent transpositions (optimal string alignment). */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const row = d[i]!;
      let best = Math.min(d[i - 1]![j]! + 1, row[j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      }
      row[j] = best;
    }
  }
  return d[rows - 1]![cols - 1]!;
}

/**
 * The candidate nearest to `input` (case ignored), when it is near enough to be a plausible typo:
 * at most 2 edits, or a third of the input's length for longer names (a swap of two neighbouring
 * letters is one edit). The first of equally near candidates wins; `undefined` when none is near.
 */
export function nearestName(input: string, candidates: readonly string[]): string | undefined {
  const wanted = input.toLowerCase();
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const distance = editDistance(wanted, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const limit = Math.max(2, Math.floor(wanted.length / 3));
  return best !== undefined && bestDistance <= limit ? best : undefined;
}
