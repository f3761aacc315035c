/**
 * Re-checking what watches miss (controller-runtime's `SyncPeriod`): a container restarted inside
 * the same pod (an OOM kill, a failed liveness probe) comes back with no scenarios, with the same uid,
 * IP and port, and no watch event says it lost them. Every resync period each pod pushed to is
 * re-checked (its scenario hash read back, re-pushed where it differs, reconcile-pod.ts); a pod
 * update whose containers' restart count changed is re-checked at once.
 */
import type { V1Pod } from '@kubernetes/client-node';

/** Each resync waits the period plus up to this share of it, so replicas and restarts drift apart. */
export const RESYNC_JITTER = 0.1;

/** The wait before the next resync: `periodMs` plus up to 10% of it, drawn from `random` ([0, 1)). */
export function resyncDelayMs(periodMs: number, random: () => number): number {
  return Math.round(periodMs * (1 + RESYNC_JITTER * random()));
}

/** Runs `fn` after `ms`; returns what cancels it. */
export type SetTimer = (fn: () => void, ms: number) => () => void;

const realTimer: SetTimer = (fn, ms) => {
  const timer = setTimeout(fn, ms);
  timer.unref();
  return () => clearTimeout(timer);
};

export interface ResyncTimerOptions {
  readonly periodMs: number;
  /** Called at each resync. */
  readonly onResync: () => void;
  /** Default `Math.random`. */
  readonly random?: () => number;
  /** Default `setTimeout` (unref'd). */
  readonly setTimer?: SetTimer;
}

/** Calls `onResync` every jittered period while started; each wait is drawn anew. */
export class ResyncTimer {
  readonly #options: ResyncTimerOptions;
  #cancel: (() => void) | undefined;

  constructor(options: ResyncTimerOptions) {
    this.#options = options;
  }

  get running(): boolean {
    return this.#cancel !== undefined;
  }

  start(): void {
    if (this.#cancel === undefined) this.#schedule();
  }

  stop(): void {
    this.#cancel?.();
    this.#cancel = undefined;
  }

  #schedule(): void {
    const { periodMs, random = Math.random, setTimer = realTimer } = this.#options;
    this.#cancel = setTimer(
      () => {
        this.#schedule();
        this.#options.onResync();
      },
      resyncDelayMs(periodMs, random),
    );
  }
}

/** The sum of the restart counts of a pod's containers (init containers left out: they ran to completion). */
export function restartCountOf(pod: V1Pod): number {
  let sum = 0;
  for (const status of pod.status?.containerStatuses ?? []) sum += status.restartCount ?? 0;
  return sum;
}

/**
 * Pod uid → the restart count last seen, to tell an update that restarted a container (its scenarios
 * lost) from any other.
 */
export class RestartCounts {
  readonly #seen = new Map<string, number>();

  /** Records `pod`'s count; true when an earlier count of the same pod differs. */
  changed(pod: V1Pod): boolean {
    const uid = pod.metadata?.uid;
    if (uid === undefined) return false;
    const count = restartCountOf(pod);
    const before = this.#seen.get(uid);
    this.#seen.set(uid, count);
    return before !== undefined && before !== count;
  }

  forget(uid: string): void {
    this.#seen.delete(uid);
  }
}

/** Pod key ids whose endpoints are to be read back at their next reconcile, even where the ledger says they hold their array. */
export class Rechecks {
  readonly #ids = new Set<string>();

  add(id: string): void {
    this.#ids.add(id);
  }

  /** Whether `id` was due a re-check; it is not any more. */
  take(id: string): boolean {
    return this.#ids.delete(id);
  }

  clear(): void {
    this.#ids.clear();
  }
}
