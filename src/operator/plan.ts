/**
 * The level-based core: from a set of EchoScenarios and what the cluster says of their targets
 * (PlanContext), which scenario array each ready echo endpoint (pod and port) should hold, and where
 * each EchoScenario stands. A pure function, so the same cluster state always gives the same plan.
 */
import type { Scenario } from '../scenario/index.ts';
import { type BlastRadiusChoice, blastRadiusOf, chooseTargets, isSelective } from './blast-radius.ts';
import { type EchoScenario, type EchoScenarioTarget, isDeleting } from './echo-scenario.ts';
import type { Endpoint } from './endpoints.ts';
import type { StopReason } from './lifecycle.ts';
import { type DerivedSpec, describeMatch } from './scenario-spec.ts';

export type ScenarioState =
  | { readonly kind: 'Invalid'; readonly message: string }
  | { readonly kind: 'TargetNotFound'; readonly message: string }
  | { readonly kind: 'Conflict'; readonly message: string; readonly endpoints: readonly Endpoint[] }
  | {
      readonly kind: 'Active';
      readonly endpoints: readonly Endpoint[];
      /** How many of the target's ready pods its blast radius chose and why; absent when it takes them all. */
      readonly blastRadius?: BlastRadiusChoice;
    }
  /**
   * Valid but off its pods (expired, suspended or aborted: lifecycle.ts): left out of every array like a
   * deleting one; `endpoints` are pushed their arrays without it.
   */
  | {
      readonly kind: 'Stopped';
      readonly reason: StopReason;
      readonly message: string;
      readonly endpoints: readonly Endpoint[];
    }
  /**
   * `metadata.deletionTimestamp` is set: left out of every array, as if gone. `endpoints` are its
   * target's ready endpoints now, which must hold their arrays without it before its finalizer goes.
   */
  | { readonly kind: 'Deleting'; readonly endpoints: readonly Endpoint[] };

export interface DesiredEndpoint {
  readonly endpoint: Endpoint;
  /** The whole array, oldest EchoScenario first; `[]` for an endpoint that only a deleting one targets. */
  readonly scenarios: Scenario[];
  /** The names of the EchoScenarios in `scenarios`, in the same order. */
  readonly owners: string[];
}

export interface NamespacePlan {
  /** By EchoScenario name. */
  readonly scenarios: Map<string, ScenarioState>;
  /** Endpoint key → the endpoint and the whole array it should hold. */
  readonly desired: Map<string, DesiredEndpoint>;
}

/** A namespace's plan, with the lookups reconciles read. */
export interface Plan extends NamespacePlan {
  /** Pod name → its endpoints' desired entries. */
  readonly byPod: Map<string, readonly DesiredEndpoint[]>;
  /** EchoScenario name → the stop (`reason: message`) this plan took for it, `''` when it runs. */
  readonly stops: Map<string, string>;
}

function created(es: EchoScenario): number {
  const at = es.metadata.creationTimestamp;
  return at === undefined ? 0 : new Date(at).getTime();
}

/** What {@link planScenarios} asks of the cluster; planner.ts answers from its indexes. */
export interface PlanContext {
  serviceExists(name: string): boolean;
  /** The ready endpoints of a valid target. */
  endpointsOf(target: EchoScenarioTarget): readonly Endpoint[];
  specOf(es: EchoScenario): DerivedSpec;
  /** Why a valid EchoScenario is off its pods (lifecycle.ts), or `undefined` when it runs. */
  stopped(es: EchoScenario): { reason: StopReason; message: string } | undefined;
}

/**
 * Plans a set of EchoScenarios: every one of a namespace, or (plan-cache.ts) every one whose targets
 * share pods. Conflicts are only possible within such a set.
 */
export function planScenarios(scenarios: readonly EchoScenario[], context: PlanContext): NamespacePlan {
  const { serviceExists, endpointsOf, specOf, stopped } = context;
  const states = new Map<string, ScenarioState>();
  /** endpoint key → match key (see `matchKey`) → owning EchoScenario name. */
  const claims = new Map<string, Map<string, string>>();
  /** Target identity and match key → owner, for conflicts while no pod is up. */
  const targetClaims = new Map<string, string>();
  // Who gets what is kept per endpoint list, not per endpoint (issue #16: 1,000 EchoScenarios on the
  // 500 pods of one Service were half a million pushes and 150 ms a plan). An endpoint list is a
  // target's ready endpoints (one array per target, shared by its EchoScenarios) or a blast radius's
  // choice of them; each list collects the Active EchoScenarios on it (their places in age order), and
  // a Deleting or Stopped one's list is only noted, so that its endpoints get an entry.
  const lists = new Map<readonly Endpoint[], number[]>();
  const listOf = (endpoints: readonly Endpoint[]) => {
    let found = lists.get(endpoints);
    if (found === undefined) {
      found = [];
      lists.set(endpoints, found);
    }
    return found;
  };
  const activeScenarios: Scenario[] = [];
  const activeOwners: string[] = [];

  // A match key no other EchoScenario has cannot conflict: it needs no claims (issue #16: at 1,000
  // EchoScenarios on 500 pods, half a million map entries a plan).
  const keyCounts = new Map<string, number>();
  for (const es of scenarios) {
    const key = specOf(es).matchKey;
    if (key !== undefined) keyCounts.set(key, (keyCounts.get(key) ?? 0) + 1);
  }
  for (const es of oldestFirst(scenarios)) {
    const name = es.metadata.name ?? '';
    const deleting = isDeleting(es);
    const spec = specOf(es);
    const problems = spec.problems;
    if (problems !== undefined) {
      states.set(
        name,
        deleting ? { kind: 'Deleting', endpoints: [] } : { kind: 'Invalid', message: problems },
      );
      continue;
    }
    const target = es.spec!.target!;
    const stop = deleting ? undefined : stopped(es);
    let endpoints: readonly Endpoint[];
    if (target.service !== undefined) {
      if (!serviceExists(target.service)) {
        states.set(
          name,
          deleting
            ? { kind: 'Deleting', endpoints: [] }
            : stop !== undefined
              ? { kind: 'Stopped', ...stop, endpoints: [] }
              : { kind: 'TargetNotFound', message: `Service ${target.service} not found` },
        );
        continue;
      }
    }
    endpoints = endpointsOf(target);
    if (deleting) {
      // Its endpoints must be pushed their arrays without it, `[]` when nothing else is left.
      listOf(endpoints);
      states.set(name, { kind: 'Deleting', endpoints });
      continue;
    }
    // A stopped experiment is cleared from every pod of its target, as a deleting one above.
    if (stop !== undefined) {
      listOf(endpoints);
      states.set(name, { kind: 'Stopped', ...stop, endpoints });
      continue;
    }
    // Blast radius: only the chosen pods get it.
    const blastRadius = isSelective(target)
      ? blastRadiusOf(target, new Set(endpoints.map((e) => e.podUid)).size)
      : undefined;
    endpoints = chooseTargets(endpoints, es.metadata.uid ?? name, target);
    const scenario = spec.scenario!;
    const key = spec.matchKey!;
    const shared = (keyCounts.get(key) ?? 0) > 1;
    const identity = shared
      ? `${target.service ?? JSON.stringify(Object.entries(target.selector!.matchLabels!).sort())}|${target.port}|${key}`
      : '';
    let owner = shared ? targetClaims.get(identity) : undefined;
    for (const endpoint of endpoints) {
      if (owner !== undefined || !shared) break;
      owner = claims.get(endpoint.key)?.get(key);
    }
    if (owner !== undefined) {
      states.set(name, {
        kind: 'Conflict',
        message: `${describeMatch(scenario)} is already served by older EchoScenario ${owner}`,
        endpoints,
      });
      continue;
    }
    if (shared) targetClaims.set(identity, name);
    if (endpoints.length === 0) {
      const what = target.service === undefined ? 'the selector' : `Service ${target.service}`;
      states.set(name, {
        kind: 'TargetNotFound',
        message: `no ready pod behind ${what} has port ${target.port}`,
      });
      continue;
    }
    if (shared) {
      for (const endpoint of endpoints) {
        const keys = claims.get(endpoint.key);
        if (keys === undefined) claims.set(endpoint.key, new Map([[key, name]]));
        else keys.set(key, name);
      }
    }
    listOf(endpoints).push(activeScenarios.length);
    activeScenarios.push(scenario);
    activeOwners.push(name);
    states.set(name, { kind: 'Active', endpoints, ...(blastRadius === undefined ? {} : { blastRadius }) });
  }
  return { scenarios: states, desired: desiredOf(lists, activeScenarios, activeOwners) };
}

/** A set of endpoint lists that some endpoints all lie on: its merged array is made once. */
interface ListSet {
  readonly lists: readonly number[][];
  /** The set with one more list, by that list's place in the walk. */
  readonly next: Map<number, ListSet>;
  desired?: { scenarios: Scenario[]; owners: string[] };
}

/**
 * Each endpoint's entry: the Active EchoScenarios of every list it lies on, oldest first. Endpoints
 * on the same lists share one array (in the common case, every pod of a target: one array in all).
 * Entries keep the order, and the endpoint object, that a walk of the EchoScenarios by age meets first.
 */
function desiredOf(
  lists: Map<readonly Endpoint[], number[]>,
  activeScenarios: readonly Scenario[],
  activeOwners: readonly string[],
): Map<string, DesiredEndpoint> {
  const root: ListSet = { lists: [], next: new Map() };
  const at = new Map<string, { endpoint: Endpoint; set: ListSet }>();
  let place = 0;
  for (const [endpoints, list] of lists) {
    const index = place++;
    for (const endpoint of endpoints) {
      const found = at.get(endpoint.key);
      const from = found?.set ?? root;
      let set = from.next.get(index);
      if (set === undefined) {
        set = { lists: [...from.lists, list], next: new Map() };
        from.next.set(index, set);
      }
      if (found === undefined) at.set(endpoint.key, { endpoint, set });
      else found.set = set;
    }
  }
  const desired = new Map<string, DesiredEndpoint>();
  for (const [key, { endpoint, set }] of at) {
    if (set.desired === undefined) {
      const order = set.lists.length === 1 ? set.lists[0]! : set.lists.flat().sort((a, b) => a - b);
      set.desired = {
        scenarios: order.map((i) => activeScenarios[i]!),
        owners: order.map((i) => activeOwners[i]!),
      };
    }
    desired.set(key, { endpoint, ...set.desired });
  }
  return desired;
}

/**
 * The EchoScenarios oldest first, the name breaking ties (timestamps have second precision); each
 * creation time parsed once.
 */
function oldestFirst(scenarios: readonly EchoScenario[]): EchoScenario[] {
  return scenarios
    .map((es) => ({ es, at: created(es), name: es.metadata.name ?? '' }))
    .sort((a, b) => a.at - b.at || a.name.localeCompare(b.name))
    .map(({ es }) => es);
}
