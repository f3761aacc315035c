/**
 * Statistical bounds for tests of random draws. Each bucket's count over `n` independent draws is
 * binomial: within `sigmas` standard deviations of `n * share` (plus one count for discreteness).
 * At 5 sigmas a right distribution fails one bucket in about 1.7 million, so a test never flakes,
 * while at n = 10,000 a 10% bucket that is really 12% (200 counts off, the bound is 163) is caught.
 */

/**
 * The buckets whose observed count is out of bounds, as readable lines (empty: all within).
 * A bucket missing from `counts` counts 0; a counted bucket missing from `shares` expects 0.
 */
export function binomialViolations(
  counts: Readonly<Record<string, number>>,
  n: number,
  shares: Readonly<Record<string, number>>,
  sigmas = 5,
): string[] {
  const out: string[] = [];
  for (const bucket of new Set([...Object.keys(shares), ...Object.keys(counts)])) {
    const p = shares[bucket] ?? 0;
    const observed = counts[bucket] ?? 0;
    const expected = n * p;
    const bound = sigmas * Math.sqrt(n * p * (1 - p)) + 1;
    if (Math.abs(observed - expected) > bound) {
      out.push(`${bucket}: ${observed} of ${n}, expected ${expected.toFixed(1)} ± ${bound.toFixed(1)}`);
    }
  }
  return out;
}
