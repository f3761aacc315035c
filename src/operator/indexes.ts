/**
 * What relates to what in the informer caches, kept as client-go keeps it: indexes fed by the
 * informers' events (indexer.ts), per namespace.
 *
 * - EchoScenarios by target: each one's target id (scenario-spec.ts `targetIdOf`), so the
 *   EchoScenarios on a Service or a pod are found without a walk of them all;
 * - pods by label (`label=value`): a selector's pods are those of its rarest label;
 * - EndpointSlices by Service (`kubernetes.io/service-name`), with the pods each names;
 * - each target's ready endpoints and the pods they were worked out from, kept until an event
 *   touches that target: a pod whose labels (before or after) its selector takes or whose name its
 *   slices name, a slice of its Service, its Service. A pod event that changes nothing endpoints read
 *   (see `podFingerprint`) touches nothing.
 *
 * client-node's informer cache has no index (it lists a namespace or gets a name), and a pod event
 * must be able to name the targets of the labels that pod had before it, which the cache no longer holds.
 */
import type { V1EndpointSlice, V1Pod } from '@kubernetes/client-node';
import type { EchoScenarioTarget } from './echo-scenario.ts';
import {
  type Endpoint,
  isPodReady,
  SERVICE_NAME_LABEL,
  selectorEndpoints,
  selects,
  sliceEndpoints,
} from './endpoints.ts';
import { Indexer } from './indexer.ts';

/** What the indexes keep of an EchoScenario. */
export interface IndexedScenario {
  /** What planning reads of it (planner.ts): a change plans its component again. */
  readonly fingerprint: string;
  /** Its target id, `''` when its spec is invalid. */
  readonly target: string;
  /** Whether it holds the operator's finalizer. */
  readonly guarded: boolean;
}

/** Read access to the informer caches the endpoints are worked out from. */
export interface IndexCaches {
  pod(name: string, namespace: string): V1Pod | undefined;
  slice(name: string, namespace: string): V1EndpointSlice | undefined;
}

/** What a change of the indexes means for the plans kept on them (plan-cache.ts). */
export interface IndexListener {
  /** A target came or went. */
  targetsChanged(namespace: string): void;
  /** A target's endpoints must be worked out again; `targeted` when an EchoScenario is on it. */
  endpointsChanged(namespace: string, target: string, targeted: boolean): void;
}

interface Target {
  readonly target: EchoScenarioTarget;
  /** Its ready endpoints; `undefined` until asked for again after a change. */
  endpoints: readonly Endpoint[] | undefined;
  /** Pod names its endpoints were worked out from (a Service's: every pod its slices name). */
  readonly pods: Set<string>;
}

interface NamespaceIndexes {
  readonly name: string;
  /** EchoScenario name → what is kept of it; indexed by target id. */
  readonly scenarios: Indexer<IndexedScenario>;
  /** Target id → its endpoints, while an EchoScenario is on it. */
  readonly targets: Map<string, Target>;
  /** Pod name → its labels and what endpoints read of it; indexed by `label=value`. */
  readonly pods: Indexer<{ labels: Record<string, string>; fingerprint: string }>;
  /** Slice name → its Service and the pods it names; indexed by Service. */
  readonly slices: Indexer<{ service: string; pods: readonly string[] }>;
}

export class Indexes {
  readonly #caches: IndexCaches;
  readonly #listener: IndexListener;
  readonly #namespaces = new Map<string, NamespaceIndexes>();

  constructor(caches: IndexCaches, listener: IndexListener) {
    this.#caches = caches;
    this.#listener = listener;
  }

  #ns(namespace: string): NamespaceIndexes {
    let found = this.#namespaces.get(namespace);
    if (found === undefined) {
      found = {
        name: namespace,
        scenarios: new Indexer((s) => (s.target === '' ? [] : [s.target])),
        targets: new Map(),
        pods: new Indexer((p) => Object.entries(p.labels).map(([label, value]) => `${label}=${value}`)),
        slices: new Indexer((s) => [s.service]),
      };
      this.#namespaces.set(namespace, found);
    }
    return found;
  }

  scenario(namespace: string, name: string): IndexedScenario | undefined {
    return this.#ns(namespace).scenarios.get(name);
  }

  /**
   * Files EchoScenario `name` under its target (`spec` is that target, when `entry.target` names
   * one); a target no other EchoScenario is on any more goes.
   */
  putScenario(namespace: string, name: string, entry: IndexedScenario, spec?: EchoScenarioTarget): void {
    const ns = this.#ns(namespace);
    const before = ns.scenarios.get(name);
    ns.scenarios.set(name, entry);
    if (before !== undefined && before.target !== entry.target) this.#leave(ns, before.target);
    if (entry.target !== '' && spec !== undefined && !ns.targets.has(entry.target)) {
      ns.targets.set(entry.target, { target: spec, endpoints: undefined, pods: new Set() });
      this.#listener.endpointsChanged(namespace, entry.target, false);
    }
  }

  deleteScenario(namespace: string, name: string): IndexedScenario | undefined {
    const ns = this.#ns(namespace);
    const before = ns.scenarios.delete(name);
    if (before !== undefined) this.#leave(ns, before.target);
    return before;
  }

  /** A pod event: the targets it may belong to (by its labels before and after, or their slices) are touched. */
  podChanged(type: 'add' | 'update' | 'delete', pod: V1Pod): void {
    const ns = this.#ns(pod.metadata?.namespace ?? '');
    const name = pod.metadata?.name ?? '';
    const before = ns.pods.get(name);
    const labels = pod.metadata?.labels ?? {};
    const fingerprint = type === 'delete' ? '' : podFingerprint(pod);
    if (before?.fingerprint === fingerprint) return;
    if (type === 'delete') ns.pods.delete(name);
    else ns.pods.set(name, { labels, fingerprint });
    for (const [id, entry] of ns.targets) {
      const selector = entry.target.selector?.matchLabels;
      const touched =
        selector === undefined
          ? entry.pods.has(name)
          : selects(selector, pod) ||
            (before !== undefined && selects(selector, { metadata: { labels: before.labels } }));
      if (touched) this.#touch(ns, id, entry);
    }
  }

  /** A slice event: its Service's targets are touched. Returns the pods it names (before and after). */
  sliceChanged(type: 'add' | 'update' | 'delete', slice: V1EndpointSlice): string[] {
    const ns = this.#ns(slice.metadata?.namespace ?? '');
    const name = slice.metadata?.name ?? '';
    const before = ns.slices.get(name);
    const service = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
    const pods = (slice.endpoints ?? []).flatMap((e) =>
      e.targetRef?.kind === 'Pod' && e.targetRef.name !== undefined ? [e.targetRef.name] : [],
    );
    if (type === 'delete' || service === undefined) ns.slices.delete(name);
    else ns.slices.set(name, { service, pods });
    for (const s of new Set([before?.service, service])) if (s !== undefined) this.#touchService(ns, s);
    return [...new Set([...(before?.pods ?? []), ...pods])];
  }

  /** A Service event: its targets are touched. Returns the EchoScenarios on it. */
  serviceChanged(namespace: string, service: string): string[] {
    const ns = this.#ns(namespace);
    this.#touchService(ns, service);
    const members: string[] = [];
    for (const [id, entry] of ns.targets)
      if (entry.target.service === service) members.push(...ns.scenarios.byIndex(id));
    return members;
  }

  /** The target ids of `namespace` that an EchoScenario is on. */
  targets(namespace: string): string[] {
    return [...this.#ns(namespace).targets.keys()];
  }

  /** A target's ready endpoints (`[]` when no EchoScenario is on it), worked out again after it was touched. */
  endpoints(namespace: string, id: string): readonly Endpoint[] {
    const ns = this.#ns(namespace);
    const entry = ns.targets.get(id);
    return entry === undefined ? [] : this.#endpoints(ns, entry);
  }

  /** The pods a target's endpoints are on. */
  podsOfTarget(namespace: string, id: string): string[] {
    return [...new Set(this.endpoints(namespace, id).map((e) => e.podName))];
  }

  /** The EchoScenarios whose target holds an endpoint of pod `name`. */
  scenariosOfPod(namespace: string, name: string): string[] {
    const ns = this.#ns(namespace);
    const found: string[] = [];
    for (const [id, entry] of ns.targets) {
      if (this.#endpoints(ns, entry).some((e) => e.podName === name)) found.push(...ns.scenarios.byIndex(id));
    }
    return found;
  }

  #leave(ns: NamespaceIndexes, target: string): void {
    if (!ns.targets.has(target) || ns.scenarios.byIndex(target).size > 0) return;
    ns.targets.delete(target);
    this.#listener.targetsChanged(ns.name);
  }

  #touch(ns: NamespaceIndexes, id: string, entry: Target): void {
    entry.endpoints = undefined;
    this.#listener.endpointsChanged(ns.name, id, ns.scenarios.byIndex(id).size > 0);
  }

  #touchService(ns: NamespaceIndexes, service: string): void {
    for (const [id, entry] of ns.targets) if (entry.target.service === service) this.#touch(ns, id, entry);
  }

  #endpoints(ns: NamespaceIndexes, entry: Target): readonly Endpoint[] {
    if (entry.endpoints !== undefined) return entry.endpoints;
    const { target } = entry;
    const caches = this.#caches;
    const namespace = ns.name;
    entry.pods.clear();
    if (target.service !== undefined) {
      const slices: V1EndpointSlice[] = [];
      for (const name of ns.slices.byIndex(target.service)) {
        const slice = caches.slice(name, namespace);
        if (slice === undefined) continue;
        slices.push(slice);
        for (const pod of ns.slices.get(name)?.pods ?? []) entry.pods.add(pod);
      }
      entry.endpoints = sliceEndpoints(slices, target.port!, (name) => caches.pod(name, namespace));
    } else {
      const selector = target.selector!.matchLabels!;
      // The pods with the rarest of its labels, then the whole selector.
      let fewest: ReadonlySet<string> | undefined;
      for (const [label, value] of Object.entries(selector)) {
        const names = ns.pods.byIndex(`${label}=${value}`);
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

/** What the endpoints read of a pod. */
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
