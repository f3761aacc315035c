/**
 * The EchoScenario reconciler: for the key `namespace/name`, keep the EchoScenario's finalizer
 * (added while it lives, removed once a deleted one is off every endpoint), arm its expiry, and
 * write its status (with an Event on each `Ready` transition). Level-based: everything comes from
 * the caches, the plan and what this leader pushed.
 */

import { type EchoScenario, FINALIZER } from './echo-scenario.ts';
import type { EchoScenarioApi } from './echo-scenario-api.ts';
import type { Endpoint } from './endpoints.ts';
import { type EventRecorder, transitionOf } from './events.ts';
import { type AbortCheck, clearingRunTimes, type Lifecycle, MAX_TIMER_MS } from './lifecycle.ts';
import type { OperatorLogger } from './logger.ts';
import type { NamespacePlan } from './plan.ts';
import type { Planner } from './planner.ts';
import type { PushLedger } from './push-ledger.ts';
import { buildStatus, sameStatus } from './status.ts';
import { podKey, scenarioKey, type WorkKey } from './work-key.ts';
import type { WorkQueue } from './work-queue.ts';

/** What the EchoScenario reconciler reads and writes; the operator wires it. */
export interface ScenarioReconcilerDeps {
  readonly planner: Planner;
  readonly scenario: (name: string, namespace: string) => EchoScenario | undefined;
  readonly api: EchoScenarioApi;
  readonly ledger: PushLedger;
  readonly queue: WorkQueue<WorkKey>;
  /** Its experiment lifecycle now (duration, suspend, an abort this leader decided). */
  readonly lifecycle: (es: EchoScenario) => Lifecycle;
  /** What the checks of its `spec.abortWhen` say (lifecycle.ts `abortCheckOf`). */
  readonly abortCheck?: (es: EchoScenario) => AbortCheck | undefined;
  readonly events: EventRecorder;
  readonly logger: OperatorLogger;
  readonly now: () => Date;
}

export class ScenarioReconciler {
  readonly #deps: ScenarioReconcilerDeps;

  constructor(deps: ScenarioReconcilerDeps) {
    this.#deps = deps;
  }

  async reconcile(namespace: string, name: string): Promise<void> {
    const { planner, api, queue, lifecycle, events, logger, ledger, now } = this.#deps;
    const key = scenarioKey(namespace, name);
    // Planned first, also for one that is gone: a new plan reports what its change changed.
    let current = planner.plan(namespace);
    const es = this.#deps.scenario(name, namespace);
    if (es === undefined) return queue.cancelAfter(key);
    // Its run may have stopped (expired, aborted) or started since the plan: then plan again.
    const stop = current.stops.get(name);
    if (stop !== undefined) {
      const { stopped, message } = lifecycle(es);
      if (stop !== (stopped === undefined ? '' : `${stopped}: ${message}`)) {
        planner.invalidate(namespace, name);
        current = planner.plan(namespace);
      }
    }
    const { scenarios: states, desired } = current;
    const state = states.get(name);
    if (state === undefined) return;
    // No status writes to a deleting object: only its finalizer is left to settle.
    if (state.kind === 'Deleting') return this.#finishDeletion(namespace, es, state.endpoints, desired);
    const finalizers = es.metadata.finalizers ?? [];
    if (state.kind !== 'Invalid' && !finalizers.includes(FINALIZER)) {
      if (!(await api.setFinalizers(namespace, es, [...finalizers, FINALIZER]))) return;
      logger.debug({ namespace, echoScenario: name }, 'finalizer added');
    }
    const run = lifecycle(es);
    // Expiry: look again when the duration runs out (re-armed at most every MAX_TIMER_MS).
    if (run.expiresInMs !== undefined) queue.addAfter(key, Math.min(run.expiresInMs + 50, MAX_TIMER_MS));
    else queue.cancelAfter(key);
    const next = buildStatus({
      echoScenario: es,
      state,
      desired,
      pushes: ledger,
      now: now(),
      lifecycle: run,
      abortCheck: this.#deps.abortCheck?.(es),
    });
    // Undefined: pushes still under way; each one re-enqueues this key when it ends.
    if (next === undefined || sameStatus(es.status, next)) return;
    if (!(await api.writeStatus(namespace, name, clearingRunTimes(es.status, next)))) return;
    // Stopped just now (expired, aborted): its pods get their arrays without it.
    if (state.kind === 'Stopped')
      for (const endpoint of state.endpoints) queue.add(podKey(namespace, endpoint.podName));
    const transition = transitionOf(es.status, next);
    if (transition !== undefined) await events.recordTransition(es, next.observedGeneration ?? 0, transition);
    logger.info(
      {
        namespace,
        echoScenario: name,
        reason: next.conditions?.[0]?.reason,
        synced: next.syncedEndpoints,
        total: next.totalEndpoints,
      },
      'status updated',
    );
  }

  /**
   * A deleting EchoScenario loses its finalizer once every ready endpoint of its target holds its
   * array without it (pushed, not failed) and no endpoint this leader pushed it to still holds it.
   * Until then each pod reconcile re-enqueues this key; failed pushes keep it (retried with backoff).
   */
  async #finishDeletion(
    namespace: string,
    es: EchoScenario,
    endpoints: readonly Endpoint[],
    desired: NamespacePlan['desired'],
  ): Promise<void> {
    const { ledger, api, logger } = this.#deps;
    const name = es.metadata.name ?? '';
    const finalizers = es.metadata.finalizers ?? [];
    if (!finalizers.includes(FINALIZER)) return;
    for (const endpoint of endpoints) {
      const want = desired.get(endpoint.key);
      if (want === undefined || ledger.failure(endpoint.key) !== undefined || !ledger.holds(want)) return;
    }
    if (ledger.mayHold(namespace, name)) return;
    if (
      await api.setFinalizers(
        namespace,
        es,
        finalizers.filter((f) => f !== FINALIZER),
      )
    ) {
      logger.info(
        { namespace, echoScenario: name, endpoints: endpoints.length },
        'cleared; finalizer removed',
      );
    }
  }
}
