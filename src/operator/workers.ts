/**
 * The operator's workers: each takes a key from the work queue, hands it to the reconciler of its
 * kind, and on failure queues it again after its backoff. They run only while this replica leads
 * (a {@link LeaderGate}); a key taken by a replica that lost the lease goes back to the queue.
 */
import { setImmediate } from 'node:timers/promises';
import type { OperatorLogger } from './logger.ts';
import type { OperatorMetrics } from './metrics.ts';
import type { WorkKey } from './work-key.ts';
import type { WorkQueue } from './work-queue.ts';

/** Open while this replica leads: workers wait at a closed gate. */
export class LeaderGate {
  #open = false;
  #opened: Promise<void>;
  #wake: () => void = () => {};

  constructor() {
    this.#opened = new Promise<void>((resolve) => {
      this.#wake = resolve;
    });
  }

  /** Resolves once the gate is open (at once when it is). */
  passed(): Promise<void> {
    return this.#opened;
  }

  open(): void {
    this.#open = true;
    this.#wake();
  }

  close(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#opened = new Promise<void>((resolve) => {
      this.#wake = resolve;
    });
  }

  /** Lets every waiting worker through for good (on stop: they see the queue shut down and end). */
  release(): void {
    this.#wake();
  }
}

export interface WorkersOptions {
  readonly queue: WorkQueue<WorkKey>;
  readonly gate: LeaderGate;
  readonly isLeader: () => boolean;
  readonly reconcile: (key: WorkKey) => Promise<void>;
  readonly metrics: Pick<OperatorMetrics, 'reconcileSeconds' | 'reconciles'>;
  readonly logger: OperatorLogger;
}

export class Workers {
  readonly #o: WorkersOptions;
  readonly #loops: Array<Promise<void>> = [];
  readonly #inFlight = new Set<Promise<void>>();
  #stopping = false;

  constructor(options: WorkersOptions) {
    this.#o = options;
  }

  start(count: number): void {
    for (let i = 0; i < count; i++) this.#loops.push(this.#loop());
  }

  /** No key is taken any more; resolves once the reconciles under way have ended. */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#o.queue.shutDown();
    this.#o.gate.release();
    await Promise.allSettled([...this.#inFlight]);
  }

  /** Resolves once every worker has ended (after {@link stop}). */
  async done(): Promise<void> {
    await Promise.allSettled(this.#loops);
  }

  async #loop(): Promise<void> {
    const { queue, gate, metrics, logger } = this.#o;
    while (!this.#stopping) {
      await gate.passed();
      if (this.#stopping) return;
      const key = await queue.get();
      if (key === undefined) return;
      if (!this.#o.isLeader()) {
        queue.done(key);
        queue.add(key);
        continue;
      }
      const { kind } = key;
      const timed = metrics.reconcileSeconds.startTimer({ kind });
      const run = this.#o
        .reconcile(key)
        .finally(() => timed())
        .then(
          () => {
            queue.forget(key);
            metrics.reconciles.inc({ kind, result: 'success' });
          },
          (error: unknown) => {
            const delayMs = queue.addRateLimited(key);
            metrics.reconciles.inc({ kind, result: 'error' });
            // A 409 is a write from a stale cache (e.g. a finalizer patch): routine, retried.
            const level = (error as { code?: number }).code === 409 ? 'debug' : 'warn';
            logger[level](
              { key: key.id, delayMs, err: (error as Error).message },
              'reconcile failed; retrying',
            );
          },
        );
      this.#inFlight.add(run);
      await run;
      this.#inFlight.delete(run);
      queue.done(key);
      // A reconcile that writes nothing makes no I/O and a waiting key comes on a resolved promise:
      // without this turn a backlog is drained in one microtask chain, starving watches, the lease,
      // push answers (their timeout fires first) and probes (issue #16).
      await setImmediate();
    }
  }
}
