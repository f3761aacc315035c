/**
 * The operator's plans, kept between reconciles (issue #16). `planScenarios` (plan.ts) stays the one
 * level-based core; this keeps what it reads indexed and what it made cached:
 *
 * - each EchoScenario's spec worked out once per spec (validation, its scenario, its match key);
 * - each target's ready endpoints (a Service's from its own slices, a selector's from the pods with
 *   its labels), worked out again only after an event that touches that target: a pod whose labels
 *   (before or after) it selects or whose name its slices name, a slice of its Service, its Service;
 * - a plan per component, a set of targets that share pods (conflicts and arrays never cross such
 *   sets), made again only after such a change to one of its targets or a change of one of its
 *   EchoScenarios' spec, deletion or age (status writes and finalizers do not touch it), on the next
 *   reconcile that asks; the namespace's plan is their merge.
 *
 * Each new plan is compared with the last: the EchoScenarios whose state changed and the pods whose
 * arrays changed (or that lost an endpoint) are reported, so the operator enqueues only those.
 * Equal arrays are one array (one JSON text per array, not per pod).
 */
import type { V1EndpointSlice, V1Pod, V1Service } from '@kubernetes/client-node';
import type { Scenario } from '../scenario/index.ts';
import type { StopReason } from './lifecycle.ts';
import {
  type DerivedSpec,
  type DesiredEndpoint,
  deriveSpec,
  type EchoScenario,
  type EchoScenarioTarget,
  type Endpoint,
  FINALIZER,
  isDeleting,
  isPodReady,
  type NamespacePlan,
  planScenarios,
  type ScenarioState,
  SERVICE_NAME_LABEL,
  selectorEndpoints,
  selects,
  sliceEndpoints,
  targetIdOf,
} from './plan.ts';

/** Read access to the informer caches. */
export interface PlannerCaches {
  scenarios(namespace: string): readonly EchoScenario[];
  pod(name: string, namespace: string): V1Pod | undefined;
  service(name: string, namespace: string): V1Service | undefined;
  slice(name: string, namespace: string): V1EndpointSlice | undefined;
}

export interface PlannerOptions {
  readonly caches: PlannerCaches;
  /** Why a valid EchoScenario is off its pods now (lifecycle.ts), or `undefined` when it runs. */
  readonly stopped: (es: EchoScenario) => { reason: StopReason; message: string } | undefined;
  /** A new plan changed these: EchoScenarios (their states) and pods (their arrays, or lost endpoints). */
  readonly onChange: (namespace: string, scenarios: Iterable<string>, pods: Iterable<string>) => void;
}

/** A namespace's plan, with the indexes reconciles read. */
export interface Plan extends NamespacePlan {
  /** Pod name → its endpoints' desired entries. */
  readonly byPod: Map<string, readonly DesiredEndpoint[]>;
  /** EchoScenario name → the stop (`reason: message`) this plan took for it, `''` when it runs. */
  readonly stops: Map<string, string>;
}

interface Target {
  readonly target: EchoScenarioTarget;
  /** EchoScenario names with this target. */
  readonly members: Set<string>;
  /** Its ready endpoints; `undefined` until asked for again after a change. */
  endpoints: readonly Endpoint[] | undefined;
  /** Pod names its endpoints were worked out from (a Service's: every pod its slices name). */
  readonly pods: Set<string>;
}

interface Namespace {
  readonly name: string;
  plan: Plan | undefined;
  dirty: boolean;
  readonly targets: Map<string, Target>;
  /** EchoScenario name → what planning reads of it (see `fingerprint`), its target id (`''`: none). */
  readonly scenarios: Map<string, { fingerprint: string; target: string; guarded: boolean }>;
  /** Pod name → its labels and what planning reads of it. */
  readonly pods: Map<string, { labels: Record<string, string>; fingerprint: string }>;
  /** `label=value` → pod names. */
  readonly podsByLabel: Map<string, Set<string>>;
  /** Service name → its slices' names. */
  readonly slicesByService: Map<string, Set<string>>;
  /** Slice name → its Service and the pods it names. */
  readonly slices: Map<string, { service: string; pods: readonly string[] }>;
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

export class Planner {
  readonly #options: PlannerOptions;
  readonly #namespaces = new Map<string, Namespace>();
  /** EchoScenario uid → its spec's fingerprint and what planning derived from it. */
  readonly #specs = new Map<string, { fingerprint: string; derived: DerivedSpec }>();
  /** Plans made (of one component each), for tests: how often planning ran. */
  builds = 0;
  /** EchoScenarios planned, summed over those plans. */
  planned = 0;

  constructor(options: PlannerOptions) {
    this.#options = options;
  }

  #ns(namespace: string): Namespace {
    let found = this.#namespaces.get(namespace);
    if (found === undefined) {
      found = {
        name: namespace,
        plan: undefined,
        dirty: true,
        targets: new Map(),
        scenarios: new Map(),
        pods: new Map(),
        podsByLabel: new Map(),
        slicesByService: new Map(),
        slices: new Map(),
        components: new Map(),
        componentOf: new Map(),
        partitionDirty: true,
        changed: new Set(),
      };
      this.#namespaces.set(namespace, found);
    }
    return found;
  }

  /**
   * An EchoScenario event. Returns the pods to enqueue beyond what the next plan reports: those of its
   * target when its finalizer came or went (a push waits for it; plans do not look at finalizers).
   */
  scenarioChanged(type: 'add' | 'update' | 'delete', es: EchoScenario): string[] {
    const ns = this.#ns(es.metadata.namespace ?? '');
    const name = es.metadata.name ?? '';
    const before = ns.scenarios.get(name);
    if (type === 'delete') {
      this.#specs.delete(es.metadata.uid ?? '');
      ns.scenarios.delete(name);
      if (!this.#dropDeleted(ns, name, before?.target ?? '')) this.#markDirty(ns, before?.target ?? '');
      if (before !== undefined) this.#leave(ns, name, before.target);
      return [];
    }
    const fingerprint = scenarioFingerprint(es);
    const guarded = (es.metadata.finalizers ?? []).includes(FINALIZER);
    const target = this.#targetOf(es);
    if (before?.fingerprint !== fingerprint) {
      if (before !== undefined) this.#markDirty(ns, before.target);
      if (before !== undefined && before.target !== target) this.#leave(ns, name, before.target);
      if (target !== '') {
        let entry = ns.targets.get(target);
        if (entry === undefined) {
          entry = { target: es.spec!.target!, members: new Set(), endpoints: undefined, pods: new Set() };
          ns.targets.set(target, entry);
          ns.changed.add(target);
          ns.partitionDirty = true;
        }
        entry.members.add(name);
      }
      this.#markDirty(ns, target);
    }
    ns.scenarios.set(name, { fingerprint, target, guarded });
    if (before === undefined || before.guarded === guarded) return [];
    return this.#podsOfTarget(ns, target);
  }

  /** A pod event: the targets it may belong to (by its labels before and after, or their slices) change. */
  podChanged(type: 'add' | 'update' | 'delete', pod: V1Pod): void {
    const ns = this.#ns(pod.metadata?.namespace ?? '');
    const name = pod.metadata?.name ?? '';
    const before = ns.pods.get(name);
    const labels = pod.metadata?.labels ?? {};
    const fingerprint = type === 'delete' ? '' : podFingerprint(pod);
    if (before?.fingerprint === fingerprint) return;
    for (const [label, value] of Object.entries(before?.labels ?? {}))
      ns.podsByLabel.get(`${label}=${value}`)?.delete(name);
    if (type === 'delete') ns.pods.delete(name);
    else {
      ns.pods.set(name, { labels, fingerprint });
      for (const [label, value] of Object.entries(labels)) {
        const key = `${label}=${value}`;
        const names = ns.podsByLabel.get(key) ?? new Set<string>();
        ns.podsByLabel.set(key, names.add(name));
      }
    }
    for (const entry of ns.targets.values()) {
      const selector = entry.target.selector?.matchLabels;
      const touched =
        selector === undefined
          ? entry.pods.has(name)
          : selects(selector, pod) ||
            (before !== undefined && selects(selector, { metadata: { labels: before.labels } }));
      if (touched) this.#invalidate(ns, entry);
    }
  }

  /** A slice event: its Service's targets change. Returns the pods it names (before and after). */
  sliceChanged(type: 'add' | 'update' | 'delete', slice: V1EndpointSlice): string[] {
    const ns = this.#ns(slice.metadata?.namespace ?? '');
    const name = slice.metadata?.name ?? '';
    const before = ns.slices.get(name);
    if (before !== undefined) ns.slicesByService.get(before.service)?.delete(name);
    const service = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
    const pods = (slice.endpoints ?? []).flatMap((e) =>
      e.targetRef?.kind === 'Pod' && e.targetRef.name !== undefined ? [e.targetRef.name] : [],
    );
    if (type === 'delete' || service === undefined) ns.slices.delete(name);
    else {
      ns.slices.set(name, { service, pods });
      const names = ns.slicesByService.get(service) ?? new Set<string>();
      ns.slicesByService.set(service, names.add(name));
    }
    for (const s of new Set([before?.service, service])) if (s !== undefined) this.#invalidateService(ns, s);
    return [...new Set([...(before?.pods ?? []), ...pods])];
  }

  /** A Service event: its targets change. Returns the EchoScenarios that target it. */
  serviceChanged(service: V1Service): string[] {
    const ns = this.#ns(service.metadata?.namespace ?? '');
    const name = service.metadata?.name ?? '';
    this.#invalidateService(ns, name);
    const members: string[] = [];
    for (const entry of ns.targets.values())
      if (entry.target.service === name) members.push(...entry.members);
    return members;
  }

  /** Plan EchoScenario `name`'s component again on the next ask (its stop differs from the plan's). */
  invalidate(namespace: string, name: string): void {
    const ns = this.#ns(namespace);
    this.#markDirty(ns, ns.scenarios.get(name)?.target ?? '');
  }

  /** Forgets the last plans: the next reports everything in it (a new leader starts from nothing). */
  reset(): void {
    for (const ns of this.#namespaces.values()) {
      ns.plan = undefined;
      ns.dirty = true;
      for (const component of ns.components.values()) component.dirty = true;
    }
  }

  /** The EchoScenarios whose target holds an endpoint of pod `name`. */
  scenariosOfPod(namespace: string, name: string): string[] {
    const ns = this.#ns(namespace);
    const found: string[] = [];
    for (const entry of ns.targets.values()) {
      if (this.#endpoints(ns, entry).some((e) => e.podName === name)) found.push(...entry.members);
    }
    return found;
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
    const caches = this.#options.caches;
    const members = new Map<string, EchoScenario[]>();
    for (const es of caches.scenarios(namespace)) {
      const target = ns.scenarios.get(es.metadata.name ?? '')?.target ?? '';
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
    const previous = ns.plan;
    ns.plan = plan;
    this.#report(namespace, previous, plan);
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
    const caches = this.#options.caches;
    const stops = new Map<string, string>();
    const planned = planScenarios(scenarios, {
      serviceExists: (name) => caches.service(name, ns.name) !== undefined,
      endpointsOf: (target) => {
        const entry = ns.targets.get(targetIdOf(target));
        // Every valid EchoScenario's target is indexed on its event; this is only a fallback.
        return entry === undefined ? [] : this.#endpoints(ns, entry);
      },
      specOf: (es) => this.#derived(es),
      stopped: (es) => {
        const stop = this.#options.stopped(es);
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
    const parent = new Map<string, string>();
    const find = (id: string): string => {
      let root = id;
      while (parent.get(root) !== root) root = parent.get(root)!;
      parent.set(id, root);
      return root;
    };
    const owner = new Map<string, string>();
    for (const [id, entry] of ns.targets) {
      parent.set(id, id);
      for (const endpoint of this.#endpoints(ns, entry)) {
        const first = owner.get(endpoint.key);
        if (first === undefined) owner.set(endpoint.key, id);
        else {
          const [a, b] = [find(first), find(id)];
          if (a !== b) parent.set(b, a);
        }
      }
    }
    const groups = new Map<string, string[]>();
    for (const id of ns.targets.keys()) {
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

  #markDirty(ns: Namespace, target: string): void {
    ns.dirty = true;
    const key = ns.componentOf.get(target);
    const component = key === undefined ? undefined : ns.components.get(key);
    if (component === undefined) ns.partitionDirty = true;
    else component.dirty = true;
  }

  /**
   * A deleting EchoScenario is gone (its finalizer released): taken out of the current plan without
   * planning again. A deleting one claims nothing and is in no array, so the plan without it differs
   * only in its state and in the `[]` entries of endpoints nothing else targets (those pods are
   * reported: their ledger entries are forgotten). Returns false when the plan must be made again.
   */
  #dropDeleted(ns: Namespace, name: string, target: string): boolean {
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

  #report(namespace: string, previous: Plan | undefined, plan: Plan): void {
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
    if (scenarios.length > 0 || pods.size > 0) this.#options.onChange(namespace, scenarios, pods);
  }

  #podsOfTarget(ns: Namespace, target: string): string[] {
    const entry = ns.targets.get(target);
    return entry === undefined ? [] : [...new Set(this.#endpoints(ns, entry).map((e) => e.podName))];
  }

  #targetOf(es: EchoScenario): string {
    if (this.#derived(es).problems !== undefined) return '';
    return targetIdOf(es.spec!.target!);
  }

  #derived(es: EchoScenario): DerivedSpec {
    const uid = es.metadata.uid ?? es.metadata.name ?? '';
    const fingerprint = specFingerprint(es);
    const found = this.#specs.get(uid);
    if (found?.fingerprint === fingerprint) return found.derived;
    const derived = deriveSpec(es);
    this.#specs.set(uid, { fingerprint, derived });
    return derived;
  }

  #leave(ns: Namespace, name: string, target: string): void {
    const entry = ns.targets.get(target);
    if (entry === undefined) return;
    entry.members.delete(name);
    if (entry.members.size > 0) return;
    ns.targets.delete(target);
    ns.partitionDirty = true;
  }

  #invalidate(ns: Namespace, entry: Target): void {
    entry.endpoints = undefined;
    const id = targetIdOf(entry.target);
    ns.changed.add(id);
    ns.partitionDirty = true;
    if (entry.members.size > 0) ns.dirty = true;
  }

  #invalidateService(ns: Namespace, service: string): void {
    for (const entry of ns.targets.values())
      if (entry.target.service === service) this.#invalidate(ns, entry);
  }

  /** A target's ready endpoints, worked out again after a change that touched it. */
  #endpoints(ns: Namespace, entry: Target): readonly Endpoint[] {
    if (entry.endpoints !== undefined) return entry.endpoints;
    const { target } = entry;
    const caches = this.#options.caches;
    const namespace = ns.name;
    entry.pods.clear();
    if (target.service !== undefined) {
      const slices: V1EndpointSlice[] = [];
      for (const name of ns.slicesByService.get(target.service) ?? []) {
        const slice = caches.slice(name, namespace);
        if (slice === undefined) continue;
        slices.push(slice);
        for (const pod of ns.slices.get(name)?.pods ?? []) entry.pods.add(pod);
      }
      entry.endpoints = sliceEndpoints(slices, target.port!, (name) => caches.pod(name, namespace));
    } else {
      const selector = target.selector!.matchLabels!;
      // The pods with the rarest of its labels, then the whole selector.
      let fewest: Set<string> | undefined;
      for (const [label, value] of Object.entries(selector)) {
        const names = ns.podsByLabel.get(`${label}=${value}`) ?? new Set<string>();
        if (fewest === undefined || names.size < fewest.size) fewest = names;
      }
      const pods: V1Pod[] = [];
      for (const name of fewest ?? []) {
        const pod = caches.pod(name, namespace);
        if (pod !== undefined) pods.push(pod);
      }
      pods.sort((a, b) => ((a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1));
      entry.endpoints = selectorEndpoints(selector, target.port!, pods);
      for (const e of entry.endpoints) entry.pods.add(e.podName);
    }
    return entry.endpoints;
  }
}

/** What planning reads of an EchoScenario but its status: a status write or finalizer changes nothing. */
function scenarioFingerprint(es: EchoScenario): string {
  return `${specFingerprint(es)}\0${es.metadata.creationTimestamp}\0${isDeleting(es)}`;
}

function specFingerprint(es: EchoScenario): string {
  return `${es.metadata.uid}\0${es.metadata.name}\0${JSON.stringify(es.spec ?? null)}`;
}

/** What planning reads of a pod. */
function podFingerprint(pod: V1Pod): string {
  return JSON.stringify([
    pod.metadata?.uid,
    isPodReady(pod),
    pod.status?.podIP,
    pod.metadata?.deletionTimestamp !== undefined,
    pod.metadata?.labels ?? {},
    (pod.spec?.containers ?? []).map((c) => c.ports ?? []),
  ]);
}

function sameItems<T>(a: readonly T[], b: readonly T[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameEndpoint(a: Endpoint, b: Endpoint): boolean {
  return a.key === b.key && a.ip === b.ip && a.podName === b.podName;
}

function sameState(a: ScenarioState, b: ScenarioState): boolean {
  if (a.kind !== b.kind) return false;
  if ('message' in a && 'message' in b && a.message !== b.message) return false;
  const ea = 'endpoints' in a ? a.endpoints : [];
  const eb = 'endpoints' in b ? b.endpoints : [];
  if (ea === eb) return true;
  if (ea.length !== eb.length) return false;
  for (let i = 0; i < ea.length; i++) if (!sameEndpoint(ea[i]!, eb[i]!)) return false;
  return true;
}
