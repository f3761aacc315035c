/**
 * The pod reconciler: for the pod key `namespace/name`, push each echo endpoint of that pod the
 * whole array the plan says it should hold (POST /scenario replaces all of it, read back to prove
 * it), clear the endpoints that should hold nothing any more, and enqueue the EchoScenarios whose
 * status may have changed with it. Level-based: everything comes from the caches and the plan.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { scenarioSetHash } from '../scenario/index.ts';
import { type EchoScenario, FINALIZER } from './echo-scenario.ts';
import { isPodReady } from './endpoints.ts';
import { OperatorError } from './errors.ts';
import type { OperatorLogger } from './logger.ts';
import type { Planner } from './planner.ts';
import { bodyOf, type PushLedger } from './push-ledger.ts';
import type { Rechecks } from './resync.ts';
import { heldHashOf, type ReadBack, type VerifiedPush } from './verify.ts';
import { podKey, scenarioKey, type WorkKey } from './work-key.ts';
import type { WorkQueue } from './work-queue.ts';

/**
 * Pod key id → when a plan last changed its array, and since when its push has been put off: a burst
 * of changes arrives in several chunks of watch events, and a pod pushed between two of them is
 * pushed again (issue #16). A push waits until its array has not changed for `quietMs`, at most
 * `maxQuietMs` (20 times that, at least 1 s) in all.
 */
export class PushSettling {
  readonly #queue: WorkQueue<WorkKey>;
  readonly #monotonicMs: () => number;
  readonly #pending = new Map<string, { changedAt: number; since: number | undefined }>();

  /** @param monotonicMs the clock of the quiet period (`performance.now()` by default). */
  constructor(queue: WorkQueue<WorkKey>, monotonicMs: () => number = () => performance.now()) {
    this.#queue = queue;
    this.#monotonicMs = monotonicMs;
  }

  /** A new plan changed what the pod should hold: its push waits for the changes to settle. */
  changed(namespace: string, name: string): void {
    const key = podKey(namespace, name);
    this.#pending.set(key.id, { changedAt: this.#monotonicMs(), since: this.#pending.get(key.id)?.since });
    this.#queue.add(key);
  }

  /** The pod is gone. */
  forget(namespace: string, name: string): void {
    this.#pending.delete(podKey(namespace, name).id);
  }

  get(key: WorkKey): { changedAt: number; since: number | undefined } | undefined {
    return this.#pending.get(key.id);
  }

  /** Done with the change seen at `changedAt`; a later one stays pending. */
  settled(key: WorkKey, changedAt: number): void {
    if (this.#pending.get(key.id)?.changedAt === changedAt) this.#pending.delete(key.id);
  }

  now(): number {
    return this.#monotonicMs();
  }
}

/** What the pod reconciler reads and writes; the operator wires it. */
export interface PodReconcilerDeps {
  readonly planner: Planner;
  readonly pod: (name: string, namespace: string) => V1Pod | undefined;
  readonly scenario: (name: string, namespace: string) => EchoScenario | undefined;
  readonly ledger: PushLedger;
  readonly verifiedPush: VerifiedPush;
  readonly queue: WorkQueue<WorkKey>;
  readonly logger: OperatorLogger;
  readonly now: () => Date;
  readonly settling: PushSettling;
  /** How long a pod's array must have stayed the same before it is pushed, in ms. */
  readonly quietMs: number;
  /** Reads back what an endpoint holds: a re-check (resync, restart) of an endpoint the ledger says is synced. */
  readonly readBack: ReadBack;
  /** Pods due a re-check at their next reconcile (resync.ts). */
  readonly rechecks: Rechecks;
}

export class PodReconciler {
  readonly #deps: PodReconcilerDeps;
  readonly #maxQuietMs: number;

  constructor(deps: PodReconcilerDeps) {
    this.#deps = deps;
    this.#maxQuietMs = Math.max(1000, 20 * deps.quietMs);
  }

  async reconcile(namespace: string, name: string): Promise<void> {
    const { planner, ledger, verifiedPush, queue, logger, now, settling } = this.#deps;
    const { desired, byPod } = planner.plan(namespace);
    const key = podKey(namespace, name);
    const pending = settling.get(key);
    if (pending !== undefined) {
      const at = settling.now();
      const quietFor = at - pending.changedAt;
      pending.since ??= at;
      if (quietFor < this.#deps.quietMs && at - pending.since < this.#maxQuietMs) {
        queue.addAfter(key, this.#deps.quietMs - quietFor);
        return;
      }
    }
    const pod = this.#deps.pod(name, namespace);
    const uid = pod?.metadata?.uid;
    const recheck = this.#deps.rechecks.take(key.id);
    const errors: string[] = [];
    // The EchoScenarios whose status or finalizer may depend on what this pod holds: those whose
    // target holds it, and those that its endpoints held before (enqueued if something changed).
    const before = ledger.ofPod(namespace, name);
    const affected = new Set(before.flatMap(([, p]) => p.owners));
    let changed = false;
    // Endpoints of this pod name that should hold something.
    const wanted = (byPod.get(name) ?? []).filter((d) => d.endpoint.podUid === uid);
    for (const { endpoint, scenarios: array, owners } of wanted) {
      // One text per array: the ledger keeps this very string, so `holds` compares it by reference.
      const body = bodyOf(array);
      if (ledger.body(endpoint.key) === body) {
        if (!recheck) continue;
        // A re-check: the ledger says it holds the array; its read-back says whether it still does
        // (a container restarted in the same pod starts empty). Only where it differs is it pushed.
        const expected = scenarioSetHash(array);
        try {
          const held = await this.#deps.readBack(endpoint, expected);
          if (held === expected) continue;
          ledger.readBackDiffers(endpoint.key, held);
          logger.warn(
            { namespace, pod: name, port: endpoint.port, held, expected },
            'scenarios lost; pushing again',
          );
        } catch (error) {
          ledger.pushFailed(endpoint, namespace, owners, (error as Error).message);
          errors.push((error as Error).message);
          changed = true;
          continue;
        }
      }
      // Only what carries the finalizer is pushed, so no deletion can skip the clean-up: an
      // EchoScenario waits for its own reconcile to add it (that change enqueues this pod again).
      const unguarded = owners.filter(
        (owner) => !(this.#deps.scenario(owner, namespace)?.metadata.finalizers ?? []).includes(FINALIZER),
      );
      if (unguarded.length > 0) {
        logger.debug({ namespace, pod: name, waitingFor: unguarded }, 'push waits for finalizers');
        continue;
      }
      changed = true;
      try {
        const hash = await verifiedPush(endpoint, array, body);
        ledger.succeeded(endpoint, namespace, body, owners, { hash, at: now() });
        logger.info(
          { namespace, pod: name, port: endpoint.port, scenarios: array.length },
          'scenarios pushed',
        );
      } catch (error) {
        ledger.pushFailed(endpoint, namespace, owners, (error as Error).message);
        const held = heldHashOf(error);
        if (held !== undefined) ledger.readBackDiffers(endpoint.key, held);
        errors.push((error as Error).message);
      }
    }
    // Endpoints of this pod that held something and should no longer: clear them if the pod is still
    // the same and ready; forget them if it is gone or restarted (a new container starts empty), or
    // if they already got `[]` (from the plan, while a deleting EchoScenario still targeted them).
    for (const [endpointKey, p] of before) {
      if (desired.has(endpointKey)) continue;
      changed = true;
      if (p.body !== '[]' && p.endpoint.podUid === uid && pod !== undefined && isPodReady(pod)) {
        try {
          await verifiedPush(p.endpoint, [], '[]');
          logger.info({ namespace, pod: name, port: p.endpoint.port }, 'scenarios cleared');
        } catch (error) {
          ledger.clearFailed(endpointKey, (error as Error).message);
          errors.push((error as Error).message);
          continue;
        }
      }
      ledger.forget(endpointKey);
    }
    ledger.forgetStaleFailures(uid, desired);
    if (changed) {
      for (const es of planner.scenariosOfPod(namespace, name)) affected.add(es);
      for (const es of affected) queue.add(scenarioKey(namespace, es));
    }
    // Done with what the plan said; a change since (during the pushes) stays pending.
    if (pending !== undefined) settling.settled(key, pending.changedAt);
    if (errors.length > 0)
      throw new OperatorError('OPERATOR_ERR_POD_SYNC', [namespace, name, errors.join('; ')]);
  }
}
