/**
 * Blast radius: which of a target's ready pods an EchoScenario is pushed to (`spec.target.mode` and
 * `value`, bounded by `minPods` and `maxPods`). The choice ranks pods by a hash of their uid and the EchoScenario's uid (rendezvous
 * hashing) and takes the first N, so it needs no memory: every reconcile and every operator,
 * restarted or newly elected, chooses the same pods, and a pod that comes or goes moves at most one
 * pod in or out of the choice.
 */
import { createHash } from 'node:crypto';

/** What `spec.target.mode` may be; `all` when it is not given. */
export const TARGET_MODES = ['all', 'one', 'fixed', 'fixed-percent'] as const;
export type TargetMode = (typeof TARGET_MODES)[number];
/** Largest `value` of mode `fixed` (pods). */
export const MAX_FIXED_PODS = 10_000;

/** The modes whose count depends on how many pods are ready, which `minPods` and `maxPods` bound. */
export const BOUNDED_MODES = ['all', 'fixed-percent'] as const;

/** `spec.target`'s blast-radius fields, as given (unvalidated). */
export interface BlastRadius {
  mode?: unknown;
  value?: unknown;
  /** With `fixed-percent`: at least this many pods (as many as are ready, if fewer). */
  minPods?: unknown;
  /** With `all` or `fixed-percent`: never more than this many pods ("never more than one": 1). */
  maxPods?: unknown;
}

/** The problems of `mode`, `value`, `minPods` and `maxPods`, each naming its field; empty when valid. */
export function blastRadiusProblems(target: BlastRadius): string[] {
  const { mode, value } = target;
  if (mode !== undefined && !(TARGET_MODES as readonly unknown[]).includes(mode)) {
    return [`spec.target.mode: must be one of ${TARGET_MODES.join(', ')}, got ${JSON.stringify(mode)}`];
  }
  return [...valueProblems(mode, value), ...boundProblems(target)];
}

function valueProblems(mode: unknown, value: unknown): string[] {
  const needsValue = mode === 'fixed' || mode === 'fixed-percent';
  if (!needsValue) {
    return value === undefined ? [] : [`spec.target.value: only with mode fixed or fixed-percent`];
  }
  const max = mode === 'fixed' ? MAX_FIXED_PODS : 100;
  if (value === undefined) return [`spec.target.value: required with mode ${mode}`];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    const what = mode === 'fixed' ? 'a pod count' : 'a percentage';
    return [`spec.target.value: ${what}, an integer from 1 to ${max}, got ${JSON.stringify(value)}`];
  }
  return [];
}

function boundProblems(target: BlastRadius): string[] {
  const mode = target.mode ?? 'all';
  const problems: string[] = [];
  const bound = (field: 'minPods' | 'maxPods', modes: readonly string[]) => {
    const n = target[field];
    if (n === undefined) return;
    if (!modes.includes(mode as string)) {
      problems.push(`spec.target.${field}: only with mode ${modes.join(' or ')}, not ${String(mode)}`);
    } else if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_FIXED_PODS) {
      problems.push(
        `spec.target.${field}: a pod count, an integer from 1 to ${MAX_FIXED_PODS}, got ${JSON.stringify(n)}`,
      );
    }
  };
  // minPods with all would change nothing (all is every pod), with one or fixed it would contradict value.
  bound('minPods', ['fixed-percent']);
  bound('maxPods', BOUNDED_MODES);
  const { minPods, maxPods } = target;
  if (
    problems.length === 0 &&
    typeof minPods === 'number' &&
    typeof maxPods === 'number' &&
    minPods > maxPods
  )
    problems.push(
      `spec.target.minPods: must not be above maxPods, got minPods ${minPods} and maxPods ${maxPods}`,
    );
  return problems;
}

/** How many pods a blast radius chose, out of how many ready ones, and why that many. */
export interface BlastRadiusChoice {
  readonly readyPods: number;
  readonly chosenPods: number;
  /**
   * The arithmetic, for the status and the Event: e.g. `fixed-percent 10% of 3 ready pods is 0.3,
   * rounded up to 1`.
   */
  readonly reason: string;
}

const pods = (n: number) => `${n} ready pod${n === 1 ? '' : 's'}`;

/**
 * How many of `available` ready pods a valid blast radius chooses, and why: all, one, `value` (at
 * most all), or `value` percent rounded up (docs/adr/0017: any percentage of a non-empty target is at
 * least one pod; 10% of 3 pods is 1 pod); then raised to `minPods` and capped at `maxPods`, never
 * above what is ready.
 */
export function blastRadiusOf(target: BlastRadius, available: number): BlastRadiusChoice {
  const value = typeof target.value === 'number' ? target.value : 0;
  let count: number;
  let reason: string;
  switch (target.mode) {
    case 'one':
      count = Math.min(1, available);
      reason = `one of ${pods(available)}`;
      break;
    case 'fixed':
      count = Math.min(value, available);
      reason =
        value > available
          ? `fixed ${value} pods, more than the ${pods(available)}: all ${available}`
          : `fixed ${value} of ${pods(available)}`;
      break;
    case 'fixed-percent': {
      // Whole numbers: pods x percent is exact, and so is its ceiling division by 100.
      const hundredths = available * value;
      count = Math.ceil(hundredths / 100);
      const exact = hundredths % 100 === 0;
      reason = `fixed-percent ${value}% of ${pods(available)} is ${exact ? count : hundredths / 100}${exact ? '' : `, rounded up to ${count}`}`;
      break;
    }
    default:
      count = available;
      reason = `all ${pods(available)}`;
  }
  const { minPods, maxPods } = target;
  if (typeof minPods === 'number' && count < minPods) {
    const raised = Math.min(minPods, available);
    reason +=
      raised < minPods
        ? `, raised to minPods ${minPods}: only ${available} ready`
        : `, raised to minPods ${minPods}`;
    count = raised;
  }
  if (typeof maxPods === 'number' && count > maxPods) {
    count = maxPods;
    reason += `, capped at maxPods ${maxPods}`;
  }
  return { readyPods: available, chosenPods: count, reason };
}

/** How many of `available` pods a valid blast radius chooses ({@link blastRadiusOf}). */
export function chosenCount(target: BlastRadius, available: number): number {
  return blastRadiusOf(target, available).chosenPods;
}

/** Whether a blast radius may leave pods out: a mode other than `all`, or a `maxPods`. */
export function isSelective(target: BlastRadius): boolean {
  return (target.mode !== undefined && target.mode !== 'all') || target.maxPods !== undefined;
}

/** A pod's rank for one EchoScenario: lower is chosen first. */
export function podRank(podUid: string, resourceUid: string): string {
  return createHash('sha256').update(`${podUid}\n${resourceUid}`).digest('hex');
}

/**
 * The endpoints of the pods a valid `target` chooses among `endpoints` (all of a pod's endpoints
 * go together), in their given order.
 * @param resourceUid the EchoScenario's `metadata.uid`.
 */
export function chooseTargets<T extends { readonly podUid: string }>(
  endpoints: readonly T[],
  resourceUid: string,
  target: BlastRadius,
): readonly T[] {
  // Every pod: the same array, which plans share between the EchoScenarios of a target (issue #16).
  if (!isSelective(target)) return endpoints;
  const uids = [...new Set(endpoints.map((e) => e.podUid))];
  const count = chosenCount(target, uids.length);
  if (count >= uids.length) return endpoints;
  const ranked = uids
    .map((uid) => ({ uid, rank: podRank(uid, resourceUid) }))
    .sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : a.uid < b.uid ? -1 : 1));
  const chosen = new Set(ranked.slice(0, count).map((p) => p.uid));
  return endpoints.filter((e) => chosen.has(e.podUid));
}
