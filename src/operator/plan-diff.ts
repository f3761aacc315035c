/**
 * What a new plan changed against the last: the EchoScenarios whose state or stop changed, and the
 * pods whose arrays changed or that lost an endpoint. The operator enqueues only those (ADR 0022:
 * enqueue from the diff, not from the event). Arrays compare by identity: the plan cache keeps an
 * unchanged array the same object across plans.
 */
import type { Endpoint } from './endpoints.ts';
import type { Plan, ScenarioState } from './plan.ts';

export interface PlanChanges {
  readonly scenarios: string[];
  readonly pods: Set<string>;
}

/** The changes from `previous` (everything, when there is none) to `plan`. */
export function planChanges(previous: Plan | undefined, plan: Plan): PlanChanges {
  const scenarios: string[] = [];
  for (const [name, state] of plan.scenarios) {
    const before = previous?.scenarios.get(name);
    if (
      before === undefined ||
      !sameState(before, state) ||
      previous?.stops.get(name) !== plan.stops.get(name)
    )
      scenarios.push(name);
  }
  const pods = new Set<string>();
  for (const [key, want] of plan.desired) {
    const before = previous?.desired.get(key);
    if (
      before === undefined ||
      before.scenarios !== want.scenarios ||
      !sameEndpoint(before.endpoint, want.endpoint)
    )
      pods.add(want.endpoint.podName);
  }
  if (previous !== undefined)
    for (const [key, before] of previous.desired)
      if (!plan.desired.has(key)) pods.add(before.endpoint.podName);
  return { scenarios, pods };
}

function sameEndpoint(a: Endpoint, b: Endpoint): boolean {
  return a.key === b.key && a.ip === b.ip && a.podName === b.podName;
}

function sameState(a: ScenarioState, b: ScenarioState): boolean {
  if (a.kind !== b.kind) return false;
  if ('message' in a && 'message' in b && a.message !== b.message) return false;
  // The same pods chosen out of another number of ready pods: its status says why, so it changed.
  if ('blastRadius' in a || 'blastRadius' in b) {
    const ba = 'blastRadius' in a ? a.blastRadius : undefined;
    const bb = 'blastRadius' in b ? b.blastRadius : undefined;
    if (ba?.readyPods !== bb?.readyPods || ba?.chosenPods !== bb?.chosenPods || ba?.reason !== bb?.reason)
      return false;
  }
  const ea = 'endpoints' in a ? a.endpoints : [];
  const eb = 'endpoints' in b ? b.endpoints : [];
  if (ea === eb) return true;
  if (ea.length !== eb.length) return false;
  for (let i = 0; i < ea.length; i++) if (!sameEndpoint(ea[i]!, eb[i]!)) return false;
  return true;
}
