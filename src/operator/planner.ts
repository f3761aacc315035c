/**
 * The operator's view of its cluster for planning, kept current by the informers' events: each event
 * files its object in the indexes (indexes.ts) and marks stale the plans it touched (plan-cache.ts);
 * a reconcile asks for the namespace's plan, made again only where something it reads changed (issue
 * #16). Each EchoScenario's spec is worked out once per spec (validation, its scenario, its match key).
 */
import type { V1EndpointSlice, V1Pod, V1Service } from '@kubernetes/client-node';
import { type EchoScenario, FINALIZER, isDeleting } from './echo-scenario.ts';
import { Indexes } from './indexes.ts';
import type { StopReason } from './lifecycle.ts';
import type { Plan } from './plan.ts';
import { PlanCache } from './plan-cache.ts';
import { type DerivedSpec, deriveSpec, targetIdOf } from './scenario-spec.ts';

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

export class Planner {
  readonly #indexes: Indexes;
  readonly #plans: PlanCache;
  /** EchoScenario uid → its spec's fingerprint and what planning derived from it. */
  readonly #specs = new Map<string, { fingerprint: string; derived: DerivedSpec }>();

  constructor(options: PlannerOptions) {
    const { caches, stopped, onChange } = options;
    const indexes = new Indexes(caches, {
      targetsChanged: (namespace) => this.#plans.targetsChanged(namespace),
      endpointsChanged: (namespace, target, targeted) =>
        this.#plans.endpointsChanged(namespace, target, targeted),
    });
    this.#indexes = indexes;
    this.#plans = new PlanCache({
      inputs: {
        scenarios: (namespace) => caches.scenarios(namespace),
        targetOf: (namespace, name) => indexes.scenario(namespace, name)?.target ?? '',
        targets: (namespace) => indexes.targets(namespace),
        endpoints: (namespace, target) => indexes.endpoints(namespace, target),
        context: (namespace) => ({
          serviceExists: (name) => caches.service(name, namespace) !== undefined,
          // Every valid EchoScenario's target is indexed on its event; `[]` is only a fallback.
          endpointsOf: (target) => indexes.endpoints(namespace, targetIdOf(target)),
          specOf: (es) => this.#derived(es),
          stopped,
        }),
      },
      onChange,
    });
  }

  /** Plans made (of one component each), for tests: how often planning ran. */
  get builds(): number {
    return this.#plans.builds;
  }

  /** EchoScenarios planned, summed over those plans. */
  get planned(): number {
    return this.#plans.planned;
  }

  /**
   * An EchoScenario event. Returns the pods to enqueue beyond what the next plan reports: those of its
   * target when its finalizer came or went (a push waits for it; plans do not look at finalizers).
   */
  scenarioChanged(type: 'add' | 'update' | 'delete', es: EchoScenario): string[] {
    const namespace = es.metadata.namespace ?? '';
    const name = es.metadata.name ?? '';
    if (type === 'delete') {
      this.#specs.delete(es.metadata.uid ?? '');
      const before = this.#indexes.deleteScenario(namespace, name);
      const target = before?.target ?? '';
      if (!this.#plans.dropDeleted(namespace, name, target)) this.#plans.markDirty(namespace, target);
      return [];
    }
    const before = this.#indexes.scenario(namespace, name);
    const fingerprint = scenarioFingerprint(es);
    const guarded = (es.metadata.finalizers ?? []).includes(FINALIZER);
    const target = this.#derived(es).problems === undefined ? targetIdOf(es.spec!.target!) : '';
    const changed = before?.fingerprint !== fingerprint;
    if (changed && before !== undefined) this.#plans.markDirty(namespace, before.target);
    this.#indexes.putScenario(namespace, name, { fingerprint, target, guarded }, es.spec?.target);
    if (changed) this.#plans.markDirty(namespace, target);
    if (before === undefined || before.guarded === guarded) return [];
    return this.#indexes.podsOfTarget(namespace, target);
  }

  /** A pod event: the targets it may belong to (by its labels before and after, or their slices) change. */
  podChanged(type: 'add' | 'update' | 'delete', pod: V1Pod): void {
    this.#indexes.podChanged(type, pod);
  }

  /** A slice event: its Service's targets change. Returns the pods it names (before and after). */
  sliceChanged(type: 'add' | 'update' | 'delete', slice: V1EndpointSlice): string[] {
    return this.#indexes.sliceChanged(type, slice);
  }

  /** A Service event: its targets change. Returns the EchoScenarios that target it. */
  serviceChanged(service: V1Service): string[] {
    return this.#indexes.serviceChanged(service.metadata?.namespace ?? '', service.metadata?.name ?? '');
  }

  /** Plan EchoScenario `name`'s component again on the next ask (its stop differs from the plan's). */
  invalidate(namespace: string, name: string): void {
    this.#plans.markDirty(namespace, this.#indexes.scenario(namespace, name)?.target ?? '');
  }

  /** Forgets the last plans: the next reports everything in it (a new leader starts from nothing). */
  reset(): void {
    this.#plans.reset();
  }

  /** The EchoScenarios whose target holds an endpoint of pod `name`. */
  scenariosOfPod(namespace: string, name: string): string[] {
    return this.#indexes.scenariosOfPod(namespace, name);
  }

  /** The namespace's plan, made again where something it reads changed since the last. */
  plan(namespace: string): Plan {
    return this.#plans.plan(namespace);
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
}

/** What planning reads of an EchoScenario but its status: a status write or finalizer changes nothing. */
function scenarioFingerprint(es: EchoScenario): string {
  return `${specFingerprint(es)}\0${es.metadata.creationTimestamp}\0${isDeleting(es)}`;
}

function specFingerprint(es: EchoScenario): string {
  return `${es.metadata.uid}\0${es.metadata.name}\0${JSON.stringify(es.spec ?? null)}`;
}
