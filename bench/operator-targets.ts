/**
 * The targets of issue #16, judged from the phases `bench/operator.ts` measured: a pure function, so
 * its verdicts are tested (test/bench/operator-targets.test.ts). A target whose size was not run is
 * "not measured".
 */

export interface MeasuredPhase {
  readonly pods: number;
  readonly scenarios: number;
  readonly phase: string;
  /** Seconds until every pod held the desired set; undefined: not within the bound. */
  readonly convergedS: number | undefined;
  readonly pushes: number;
  readonly statusWrites: number;
  readonly peakRssMb: number;
}

export interface OperatorTarget {
  readonly target: string;
  readonly measured: string;
  /** `met`, `not met: …` or `not measured`. */
  readonly verdict: string;
}

const sizeOf = (p: MeasuredPhase) => `${p.pods} x ${p.scenarios.toLocaleString('en')}`;

function convergence(phases: readonly MeasuredPhase[], pods: number, scenarios: number, limitS: number) {
  const target = `${pods} x ${scenarios.toLocaleString('en')}: create, update and delete each converge within ${limitS} s`;
  const of = phases.filter((p) => p.pods === pods && p.scenarios === scenarios);
  if (of.length === 0) return { target, measured: 'n/a', verdict: 'not measured' };
  const missed = of.filter((p) => p.convergedS === undefined);
  const slowest = Math.max(...of.map((p) => p.convergedS ?? Number.POSITIVE_INFINITY));
  const measured = of
    .map((p) => (p.convergedS === undefined ? 'not converged' : `${p.convergedS.toFixed(2)} s`))
    .join(' / ');
  if (missed.length > 0)
    return {
      target,
      measured,
      verdict: `not met: ${missed.map((p) => p.phase).join(', ')} did not converge`,
    };
  return {
    target,
    measured,
    verdict: slowest <= limitS ? 'met' : `not met: ${(slowest - limitS).toFixed(2)} s over`,
  };
}

/** The two largest sizes measured, per phase: time ratio against the ratio of pods x EchoScenarios. */
function growth(phases: readonly MeasuredPhase[]): OperatorTarget {
  const target = 'time grows no faster than linearly in pods x EchoScenarios';
  const sizes = [...new Map(phases.map((p) => [p.pods * p.scenarios, p])).values()].sort(
    (a, b) => a.pods * a.scenarios - b.pods * b.scenarios,
  );
  if (sizes.length < 2) return { target, measured: 'n/a', verdict: 'not measured (one size)' };
  const small = sizes[sizes.length - 2]!;
  const large = sizes[sizes.length - 1]!;
  const work = (large.pods * large.scenarios) / (small.pods * small.scenarios);
  const ratios: string[] = [];
  let worst = 0;
  for (const l of phases.filter((p) => p.pods === large.pods && p.scenarios === large.scenarios)) {
    const s = phases.find(
      (p) => p.pods === small.pods && p.scenarios === small.scenarios && p.phase === l.phase,
    );
    if (s?.convergedS === undefined || l.convergedS === undefined || s.convergedS <= 0) continue;
    const ratio = l.convergedS / s.convergedS;
    worst = Math.max(worst, ratio);
    ratios.push(`${l.phase} ${ratio.toFixed(1)}×`);
  }
  if (ratios.length === 0)
    return { target, measured: 'n/a', verdict: 'not measured (a phase did not converge)' };
  const measured = `${sizeOf(small)} → ${sizeOf(large)}: ${work.toFixed(1)}× the work, ${ratios.join(', ')} the time`;
  return { target, measured, verdict: worst <= work ? 'met' : `not met: ${worst.toFixed(1)}× the time` };
}

function rss(phases: readonly MeasuredPhase[], limitMb: number): OperatorTarget {
  const target = `operator RSS under ${limitMb} MB at 500 x 1,000`;
  const of = phases.filter((p) => p.pods === 500 && p.scenarios === 1000);
  if (of.length === 0) return { target, measured: 'n/a', verdict: 'not measured' };
  const peak = Math.max(...of.map((p) => p.peakRssMb));
  const smallest = [...phases].sort((a, b) => a.pods * a.scenarios - b.pods * b.scenarios)[0]!;
  const floor = Math.max(
    ...phases
      .filter((p) => p.pods === smallest.pods && p.scenarios === smallest.scenarios)
      .map((p) => p.peakRssMb),
  );
  const measured = `${peak.toFixed(0)} MB peak (${sizeOf(smallest)}: ${floor.toFixed(0)} MB)`;
  if (peak < limitMb) return { target, measured, verdict: 'met' };
  return {
    target,
    measured,
    verdict: `not met: ${(peak - limitMb).toFixed(0)} MB over; the smallest size already peaks at ${floor.toFixed(0)} MB (see below)`,
  };
}

function perPhase(
  phases: readonly MeasuredPhase[],
  target: string,
  count: (p: MeasuredPhase) => number,
  bound: (p: MeasuredPhase) => number,
): OperatorTarget {
  if (phases.length === 0) return { target, measured: 'n/a', verdict: 'not measured' };
  const over = phases.filter((p) => count(p) > bound(p));
  const measured = `${phases.length - over.length} of ${phases.length} phases within`;
  return {
    target,
    measured,
    verdict:
      over.length === 0
        ? 'met'
        : `not met: ${over.map((p) => `${sizeOf(p)} ${p.phase} ${count(p)} for ${bound(p)}`).join(', ')}`,
  };
}

export function operatorTargets(phases: readonly MeasuredPhase[]): OperatorTarget[] {
  return [
    convergence(phases, 200, 300, 5),
    convergence(phases, 500, 1000, 15),
    growth(phases),
    rss(phases, 150),
    perPhase(
      phases,
      'at most one push per pod per phase',
      (p) => p.pushes,
      (p) => p.pods,
    ),
    perPhase(
      phases,
      'at most one status write per EchoScenario per phase',
      (p) => p.statusWrites,
      (p) => p.scenarios,
    ),
  ];
}
