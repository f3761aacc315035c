/**
 * Blast radius: which of a target's ready pods an EchoScenario is pushed to (`spec.target.mode` and
 * `value`). The choice ranks pods by a hash of their uid and the EchoScenario's uid (rendezvous
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

/** `spec.target`'s blast-radius fields, as given (unvalidated). */
export interface BlastRadius {
  mode?: unknown;
  value?: unknown;
}

/** The problems of `mode` and `value`, each naming its field; empty when they are valid. */
export function blastRadiusProblems(target: BlastRadius): string[] {
  const { mode, value } = target;
  if (mode !== undefined && !(TARGET_MODES as readonly unknown[]).includes(mode)) {
    return [`spec.target.mode: must be one of ${TARGET_MODES.join(', ')}, got ${JSON.stringify(mode)}`];
  }
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

/**
 * How many of `available` pods a valid mode and value choose: all, one, `value` (at most all), or
 * `value` percent rounded up (so any percentage of a non-empty target chooses at least one pod).
 */
export function chosenCount(target: BlastRadius, available: number): number {
  const value = typeof target.value === 'number' ? target.value : 0;
  switch (target.mode) {
    case 'one':
      return Math.min(1, available);
    case 'fixed':
      return Math.min(value, available);
    case 'fixed-percent':
      return Math.min(available, Math.ceil((available * value) / 100));
    default:
      return available;
  }
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
  if (target.mode === undefined || target.mode === 'all') return endpoints;
  const pods = [...new Set(endpoints.map((e) => e.podUid))];
  const count = chosenCount(target, pods.length);
  if (count >= pods.length) return endpoints;
  const ranked = pods
    .map((uid) => ({ uid, rank: podRank(uid, resourceUid) }))
    .sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : a.uid < b.uid ? -1 : 1));
  const chosen = new Set(ranked.slice(0, count).map((p) => p.uid));
  return endpoints.filter((e) => chosen.has(e.podUid));
}
