/**
 * The plans kept between reconciles (issue #16): a plan per component, a set of targets that share
 * pods (conflicts and arrays never cross such sets), made again by `planScenarios` (plan.ts) only after
 * a change it reads, on the next reconcile that asks; the namespace's plan is their merge. What marks a
 * component stale comes from outside: planner.ts on an EchoScenario's change of spec, deletion or age
 * (status writes and finalizers are not one), indexes.ts when a target's endpoints change.
 *
 * Each new plan is compared with the last (plan-diff.ts) and what changed is reported, so the operator
 * enqueues only that. Equal arrays are one array (one JSON text per array, not per pod), the same one
 * across plans while its content stays the same.
 */
import type { Scenario } from '../scenario/index.ts';
import type { EchoScenario } from './echo-scenario.ts';
import type { Endpoint } from './endpoints.ts';
import {
  type DesiredEndpoint,
  type Plan,
  type PlanContext,
  planScenarios,
  type ScenarioState,
} from './plan.ts';
import { planChanges } from './plan-diff.ts';

/** What planning reads, from the informer caches and their indexes (indexes.ts). */
export interface PlanInputs {
  /** The namespace's EchoScenarios, as the cache holds them. */
  scenarios(namespace: string): readonly EchoScenario[];
  /** The target id an EchoScenario is indexed under, `''` for none. */
  targetOf(namespace: string, name: string): string;
  /** The namespace's target ids. */
  targets(namespace: string): readonly string[];
  /** A target's ready endpoints. */
  endpoints(namespace: string, target: string): readonly Endpoint[];
  /** What `planScenarios` asks of the namespace. */
  context(namespace: string): PlanContext;
}

export interface PlanCacheOptions {
  readonly inputs: PlanInputs;
  /** A new plan changed these: EchoScenarios (their states) and pods (their arrays, or lost endpoints). */
  readonly onChange: (namespace: string, scenarios: Iterable<string>, pods: Iterable<string>) => void;
}

interface Namespace {
  readonly name: string;
  plan: Plan | undefined;
  dirty: boolean;
  /** Plans per set of targets that share pods: conflicts and arrays never cross such sets. */
  components: Map<string, Component>;
  /** Target id → the key of its component (`LOOSE` for EchoScenarios without a valid target). */
  componentOf: Map<string, string>;
  /** A target came or went, or its endpoints changed: the sets are worked out again. */
  partitionDirty: boolean;
  /** Targets whose endpoints changed since the sets were last worked out. */
  readonly changed: Set<string>;
}

/** The component of the EchoScenarios without a valid target. */
const LOOSE = '\0loose';

/** A set of targets that share pods, and its own plan. */
interface Component {
  dirty: boolean;
  planned:
    | {
        readonly scenarios: Map<string, ScenarioState>;
        readonly desired: Map<string, DesiredEndpoint>;
        readonly stops: Map<string, string>;
        /** Owner list (joined) → its array, so an unchanged array stays one object across plans. */
        readonly arrays: Map<string, Scenario[]>;
        /** Endpoint key → how many deleting or stopped EchoScenarios of the plan target it. */
        readonly clearing: Map<string, number>;
      }
    | undefined;
}

export class PlanCache {
  readonly #options: PlanCacheOptions;
  readonly #namespaces = new Map<string, Namespace>();
  /** Plans made (of one component each), for tests: how often planning ran. */
  builds = 0;
  /** EchoScenarios planned, summed over those plans. */
  planned = 0;

  constructor(options: PlanCacheOptions) {
    this.#options = options;
  }

  #ns(namespace: string): Namespace {
    let found = this.#namespaces.get(namespace);
    if (found === undefined) {
      found = {
        name: namespace,
        plan: undefined,
        dirty: true,
        components: new Map(),
        componentOf: new Map(),
        partitionDirty: true,
        changed: new Set(),
      };
      this.#namespaces.set(namespace, found);
    }
    return found;
  }

  /** The component of `target` (`''`: the EchoScenarios without one) is planned again on the next ask. */
  markDirty(namespace: string, target: string): void {
    const ns = this.#ns(namespace);
    ns.dirty = true;
    const key = ns.componentOf.get(target);
    const component = key === undefined ? undefined : ns.components.get(key);
    if (component === undefined) ns.partitionDirty = true;
    else component.dirty = true;
  }

  /** A target came or went: the sets of targets that share pods are worked out again. */
  targetsChanged(namespace: string): void {
    this.#ns(namespace).partitionDirty = true;
  }

  /** A target's endpoints changed: so may the sets, and its own set's plan when it is `targeted`. */
  endpointsChanged(namespace: string, target: string, targeted: boolean): void {
    const ns = this.#ns(namespace);
    ns.changed.add(target);
    ns.partitionDirty = true;
    if (targeted) ns.dirty = true;
  }

  /** Forgets the last plans: the next reports everything in it (a new leader starts from nothing). */
  reset(): void {
    for (const ns of this.#namespaces.values()) {
      ns.plan = undefined;
      ns.dirty = true;
      for (const component of ns.components.values()) component.dirty = true;
    }
  }

  /**
   * The namespace's plan: each component's own, made again if something it reads changed since the
   * last, merged (components share no endpoint, so their entries never collide).
   */
  plan(namespace: string): Plan {
    const ns = this.#ns(namespace);
    if (!ns.dirty && ns.plan !== undefined) return ns.plan;
    ns.dirty = false;
    if (ns.partitionDirty) this.#partition(ns);
    const inputs = this.#options.inputs;
    const members = new Map<string, EchoScenario[]>();
    for (const es of inputs.scenarios(namespace)) {
      const target = inputs.targetOf(namespace, es.metadata.name ?? '');
      const key = ns.componentOf.get(target) ?? LOOSE;
      const list = members.get(key);
      if (list === undefined) members.set(key, [es]);
      else list.push(es);
    }
    const scenarios = new Map<string, ScenarioState>();
    const desired = new Map<string, DesiredEndpoint>();
    const byPod = new Map<string, DesiredEndpoint[]>();
    const stops = new Map<string, string>();
    for (const [key, component] of ns.components) {
      if (component.dirty || component.planned === undefined)
        this.#planComponent(ns, component, members.get(key) ?? []);
      component.dirty = false;
      const planned = component.planned!;
      for (const [name, state] of planned.scenarios) scenarios.set(name, state);
      for (const [name, stop] of planned.stops) stops.set(name, stop);
      for (const [k, entry] of planned.desired) {
        desired.set(k, entry);
        const list = byPod.get(entry.endpoint.podName);
        if (list === undefined) byPod.set(entry.endpoint.podName, [entry]);
        else list.push(entry);
      }
    }
    const plan: Plan = { scenarios, desired, byPod, stops };
    const changes = planChanges(ns.plan, plan);
    ns.plan = plan;
    if (changes.scenarios.length > 0 || changes.pods.size > 0)
      this.#options.onChange(namespace, changes.scenarios, changes.pods);
    return plan;
  }

  #planComponent(ns: Namespace, component: Component, scenarios: readonly EchoScenario[]): void {
    if (scenarios.length === 0) {
      const empty = { scenarios: new Map(), desired: new Map(), stops: new Map() };
      component.planned = { ...empty, arrays: new Map(), clearing: new Map() };
      return;
    }
    this.builds++;
    this.planned += scenarios.length;
    const context = this.#options.inputs.context(ns.name);
    const stops = new Map<string, string>();
    const planned = planScenarios(scenarios, {
      ...context,
      stopped: (es) => {
        const stop = context.stopped(es);
        stops.set(es.metadata.name ?? '', stop === undefined ? '' : `${stop.reason}: ${stop.message}`);
        return stop;
      },
    });
    // Equal arrays become one array, the same one as last plan's when nothing in it changed.
    // Their owner lists too: the push ledger keeps one per pod (1,000 names on 500 pods: 5 MB).
    // planScenarios gives endpoints on the same lists one array already: each is looked at once.
    const arrays = new Map<string, Scenario[]>();
    const ownerLists = new Map<string, string[]>();
    const seen = new Map<readonly string[], { scenarios: Scenario[]; owners: string[] }>();
    const desired = new Map<string, DesiredEndpoint>();
    for (const [key, want] of planned.desired) {
      let found = seen.get(want.owners);
      if (found === undefined) {
        const id = want.owners.join('\n');
        let array = arrays.get(id);
        let owners = ownerLists.get(id);
        if (array === undefined || owners === undefined) {
          const last = component.planned?.arrays.get(id);
          array = last !== undefined && sameItems(last, want.scenarios) ? last : want.scenarios;
          owners = want.owners;
          arrays.set(id, array);
          ownerLists.set(id, owners);
        }
        found = { scenarios: array, owners };
        seen.set(want.owners, found);
      }
      desired.set(key, { endpoint: want.endpoint, ...found });
    }
    const clearing = new Map<string, number>();
    for (const state of planned.scenarios.values()) {
      if (state.kind !== 'Deleting' && state.kind !== 'Stopped') continue;
      for (const e of state.endpoints) clearing.set(e.key, (clearing.get(e.key) ?? 0) + 1);
    }
    component.planned = { scenarios: planned.scenarios, desired, stops, arrays, clearing };
  }

  /** Which targets share pods: each such set is a component (union-find over endpoint keys). */
  #partition(ns: Namespace): void {
    const inputs = this.#options.inputs;
    const targets = inputs.targets(ns.name);
    const parent = new Map<string, string>();
    const find = (id: string): string => {
      let root = id;
      while (parent.get(root) !== root) root = parent.get(root)!;
      parent.set(id, root);
      return root;
    };
    const owner = new Map<string, string>();
    for (const id of targets) {
      parent.set(id, id);
      for (const endpoint of inputs.endpoints(ns.name, id)) {
        const first = owner.get(endpoint.key);
        if (first === undefined) owner.set(endpoint.key, id);
        else {
          const [a, b] = [find(first), find(id)];
          if (a !== b) parent.set(b, a);
        }
      }
    }
    const groups = new Map<string, string[]>();
    for (const id of targets) {
      const root = find(id);
      const group = groups.get(root);
      if (group === undefined) groups.set(root, [id]);
      else group.push(id);
    }
    const components = new Map<string, Component>();
    const componentOf = new Map<string, string>([['', LOOSE]]);
    components.set(LOOSE, ns.components.get(LOOSE) ?? { dirty: true, planned: undefined });
    for (const ids of groups.values()) {
      const key = ids.sort().join('\n');
      const old = ns.components.get(key);
      const component = old ?? { dirty: true, planned: undefined };
      if (ids.some((id) => ns.changed.has(id))) component.dirty = true;
      components.set(key, component);
      for (const id of ids) componentOf.set(id, key);
    }
    ns.components = components;
    ns.componentOf = componentOf;
    ns.changed.clear();
    ns.partitionDirty = false;
  }

  /**
   * A deleting EchoScenario is gone (its finalizer released): taken out of the current plan without
   * planning again. A deleting one claims nothing and is in no array, so the plan without it differs
   * only in its state and in the `[]` entries of endpoints nothing else targets (those pods are
   * reported: their ledger entries are forgotten). Returns false when the plan must be made again.
   */
  dropDeleted(namespace: string, name: string, target: string): boolean {
    const ns = this.#ns(namespace);
    const plan = ns.plan;
    const key = ns.componentOf.get(target);
    const planned = key === undefined ? undefined : ns.components.get(key)?.planned;
    const state = plan?.scenarios.get(name);
    if (plan === undefined || planned === undefined || ns.dirty || state?.kind !== 'Deleting') return false;
    if (planned.scenarios.get(name) !== state) return false;
    const pods = new Set<string>();
    for (const endpoint of state.endpoints) {
      const left = (planned.clearing.get(endpoint.key) ?? 1) - 1;
      if (left > 0) {
        planned.clearing.set(endpoint.key, left);
        continue;
      }
      planned.clearing.delete(endpoint.key);
      const want = plan.desired.get(endpoint.key);
      if (want === undefined || want.owners.length > 0) continue;
      plan.desired.delete(endpoint.key);
      planned.desired.delete(endpoint.key);
      const list = plan.byPod.get(endpoint.podName)?.filter((d) => d.endpoint.key !== endpoint.key) ?? [];
      if (list.length === 0) plan.byPod.delete(endpoint.podName);
      else plan.byPod.set(endpoint.podName, list);
      pods.add(endpoint.podName);
    }
    for (const map of [plan.scenarios, planned.scenarios, plan.stops, planned.stops]) map.delete(name);
    if (pods.size > 0) this.#options.onChange(ns.name, [], pods);
    return true;
  }
}

function sameItems<T>(a: readonly T[], b: readonly T[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
