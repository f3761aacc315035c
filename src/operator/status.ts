/**
 * An EchoScenario's status, from its place in the plan and what the pushes did: a pure function
 * of its inputs (the time included), so the same cluster state and pushes always give the same
 * status, and the operator writes it only when it says something new.
 */

import type { EchoScenario, EchoScenarioCondition, EchoScenarioStatus } from './echo-scenario.ts';
import { endpointStatuses, sameEndpoints } from './endpoint-status.ts';
import { ABORT_CHECK_HEALTHY, type AbortCheck } from './lifecycle.ts';
import type { NamespacePlan, ScenarioState } from './plan.ts';
import type { PushRecord } from './push-ledger.ts';

/** The condition type the operator sets. */
export const READY = 'Ready';

export interface StatusInput {
  /** As the cache holds it: its generation, and the status it has now. */
  readonly echoScenario: EchoScenario;
  /** Its state in the plan; a deleting EchoScenario gets no status (only its finalizer is left to settle). */
  readonly state: Exclude<ScenarioState, { kind: 'Deleting' }>;
  /** The namespace's plan: the array each endpoint should hold. */
  readonly desired: NamespacePlan['desired'];
  /** What the pushes did. */
  readonly pushes: PushRecord;
  readonly now: Date;
  /** Its run (lifecycle.ts): `startTime` and `expiresAt`, written while it runs or once it stopped. */
  readonly lifecycle?: { readonly startTime?: string | undefined; readonly expiresAt?: string | undefined };
  /**
   * Whether `spec.abortWhen` can be evaluated (lifecycle.ts `abortCheckOf`): the `AbortCheckHealthy`
   * condition, written while the spec has an `abortWhen` and a check said something.
   */
  readonly abortCheck?: AbortCheck | undefined;
}

/**
 * The status the EchoScenario should have: `observedGeneration`, one `Ready` condition (its reason
 * `Synced`, `Invalid`, `TargetNotFound`, `Conflict`, `PushFailed`, or the lifecycle's `Expired`,
 * `Suspended` or `Aborted`), `syncedEndpoints`, `totalEndpoints`, `endpoints` (each targeted pod and
 * its proof, endpoint-status.ts), and `lastSyncTime` (now when Synced, else the one it had). The condition's
 * `lastTransitionTime` is now when its `status` changes, else the one it had.
 * @returns `undefined` while pushes are still under way and none has failed: nothing to say yet.
 */
export function buildStatus(input: StatusInput): EchoScenarioStatus | undefined {
  const status = readyStatus(input);
  const { echoScenario: es, abortCheck, now } = input;
  if (status === undefined || es.spec?.abortWhen === undefined || abortCheck === undefined) return status;
  const previous = es.status?.conditions?.find((c) => c.type === ABORT_CHECK_HEALTHY);
  const value = abortCheck.healthy ? 'True' : 'False';
  const condition: EchoScenarioCondition = {
    type: ABORT_CHECK_HEALTHY,
    status: value,
    reason: abortCheck.reason,
    message: abortCheck.message,
    observedGeneration: es.metadata.generation ?? 0,
    lastTransitionTime:
      previous !== undefined && previous.status === value && previous.lastTransitionTime !== undefined
        ? previous.lastTransitionTime
        : timestamp(now),
  };
  return { ...status, conditions: [...(status.conditions ?? []), condition] };
}

/** The status without the `AbortCheckHealthy` condition. */
function readyStatus(input: StatusInput): EchoScenarioStatus | undefined {
  const { echoScenario: es, state, desired, pushes, now } = input;
  const ready = (status: EchoScenarioCondition['status'], reason: string, message: string) =>
    readyCondition(es, status, reason, message, now);
  const generation = es.metadata.generation ?? 0;
  const lastSyncTime = es.status?.lastSyncTime;
  const since = {
    ...(lastSyncTime === undefined ? {} : { lastSyncTime }),
    ...runTimes(input),
  };
  switch (state.kind) {
    case 'Stopped':
      return {
        observedGeneration: generation,
        conditions: [ready('False', state.reason, state.message)],
        syncedEndpoints: 0,
        totalEndpoints: state.endpoints.length,
        // Taken off every pod: none holds it. An empty list replaces the last run's (a merge patch
        // keeps a field it does not name, and a kept list never compared equal: a write loop).
        endpoints: [],
        ...since,
      };
    case 'Invalid':
    case 'TargetNotFound':
      return {
        observedGeneration: generation,
        conditions: [ready('False', state.kind, state.message)],
        syncedEndpoints: 0,
        totalEndpoints: 0,
        endpoints: [],
        ...since,
      };
    case 'Conflict':
      return {
        observedGeneration: generation,
        conditions: [ready('False', 'Conflict', state.message)],
        syncedEndpoints: 0,
        totalEndpoints: state.endpoints.length,
        endpoints: [],
        ...since,
      };
    case 'Active': {
      const total = state.endpoints.length;
      let synced = 0;
      const failures: string[] = [];
      for (const endpoint of state.endpoints) {
        const want = desired.get(endpoint.key);
        if (want !== undefined && pushes.holds(want)) synced++;
        const failure = pushes.failure(endpoint.key);
        if (failure !== undefined) failures.push(`${endpoint.podName}: ${failure}`);
      }
      // Pushes under way: nothing to say, and no per-pod list to build (issue #16: asked after each push).
      if (failures.length === 0 && synced < total) return undefined;
      const endpoints = endpointStatuses(state.endpoints, desired, pushes);
      const blast = state.blastRadius;
      const blastRadius = blast === undefined ? {} : { blastRadius: { ...blast } };
      if (failures.length > 0) {
        const message = `${failures.length} of ${total} endpoints failed: ${failures.join('; ')}`;
        return {
          observedGeneration: generation,
          conditions: [ready('False', 'PushFailed', message)],
          syncedEndpoints: synced,
          totalEndpoints: total,
          endpoints,
          ...since,
          ...blastRadius,
        };
      }
      // The Event of this transition carries the message: `kubectl describe` shows why so many pods.
      const chose = blast === undefined ? '' : `; blast radius: ${blast.reason}`;
      return {
        observedGeneration: generation,
        conditions: [ready('True', 'Synced', `scenario pushed to ${total} of ${total} endpoints${chose}`)],
        syncedEndpoints: synced,
        totalEndpoints: total,
        endpoints,
        lastSyncTime: timestamp(now),
        ...runTimes(input),
        ...blastRadius,
      };
    }
  }
}

/**
 * Whether `next` says what `current` says, times aside (`lastSyncTime`, `lastTransitionTime`):
 * then it is not written, so the operator's own writes do not loop.
 */
export function sameStatus(current: EchoScenarioStatus | undefined, next: EchoScenarioStatus): boolean {
  const untimed = (s: EchoScenarioStatus | undefined) =>
    JSON.stringify(s?.conditions?.map(({ lastTransitionTime: _t, ...c }) => c));
  return (
    current?.observedGeneration === next.observedGeneration &&
    current?.syncedEndpoints === next.syncedEndpoints &&
    current?.totalEndpoints === next.totalEndpoints &&
    sameEndpoints(current, next.endpoints) &&
    current?.startTime === next.startTime &&
    current?.expiresAt === next.expiresAt &&
    current?.blastRadius?.readyPods === next.blastRadius?.readyPods &&
    current?.blastRadius?.chosenPods === next.blastRadius?.chosenPods &&
    current?.blastRadius?.reason === next.blastRadius?.reason &&
    untimed(current) === untimed(next)
  );
}

/**
 * `startTime` and `expiresAt`: the run's own while it runs (Active) or once it stopped; in any other
 * state (no pod to run on yet) only what the status of this generation already says.
 */
function runTimes(input: StatusInput): { startTime?: string; expiresAt?: string } {
  const { echoScenario: es, state, lifecycle } = input;
  const times =
    state.kind === 'Active' || state.kind === 'Stopped'
      ? lifecycle
      : es.status?.observedGeneration === (es.metadata.generation ?? 0)
        ? es.status
        : undefined;
  return {
    ...(times?.startTime === undefined ? {} : { startTime: times.startTime }),
    ...(times?.expiresAt === undefined ? {} : { expiresAt: times.expiresAt }),
  };
}

function readyCondition(
  es: EchoScenario,
  status: EchoScenarioCondition['status'],
  reason: string,
  message: string,
  now: Date,
): EchoScenarioCondition {
  const previous = es.status?.conditions?.find((c) => c.type === READY);
  const changed = previous === undefined || previous.status !== status;
  return {
    type: READY,
    status,
    reason,
    message,
    observedGeneration: es.metadata.generation ?? 0,
    lastTransitionTime: changed ? timestamp(now) : previous.lastTransitionTime!,
  };
}

/** A Kubernetes `Time`: RFC 3339 in UTC, whole seconds. */
function timestamp(now: Date): string {
  return now.toISOString().replace(/\.\d+Z$/, 'Z');
}
