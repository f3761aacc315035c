/**
 * The level-based core: from the EchoScenarios, pods, services and EndpointSlices of one namespace,
 * as the caches hold them, which scenario array each ready echo endpoint (pod and port) should hold,
 * and where each EchoScenario stands. A pure function, so the same cluster state always gives the
 * same plan.
 */
import assert from 'node:assert/strict';
import type { V1EndpointSlice, V1ObjectMeta, V1Pod, V1Service } from '@kubernetes/client-node';
import { type Scenario, validateScenarios } from '../scenario/index.ts';
import { blastRadiusProblems, chooseTargets, type TargetMode } from './blast-radius.ts';
import { type AbortWhen, lifecycleProblems, type StopReason } from './lifecycle.ts';

export const GROUP = 'echo-chaos.dev';
export const VERSION = 'v1alpha1';
export const PLURAL = 'echoscenarios';
export const KIND = 'EchoScenario';
/** Kept on every valid EchoScenario until the pods that held it no longer do. */
export const FINALIZER = 'echo-chaos.dev/cleanup';
/** The label that ties an EndpointSlice to its Service. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** `spec.target`, as the CRD defines it: a Service name or a pod label selector, and the echo port. */
export interface EchoScenarioTarget {
  service?: string;
  selector?: { matchLabels?: Record<string, string> };
  port?: string | number;
  /** Blast radius (`all` when not given): see blast-radius.ts. */
  mode?: TargetMode;
  /** With mode `fixed`, a pod count; with `fixed-percent`, a percentage. */
  value?: number;
}

export interface EchoScenarioCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

/** One entry of `status.endpoints`: a targeted pod and the proof of its last push (endpoint-status.ts). */
export interface EndpointStatus {
  pod: string;
  ip: string;
  /** True only when a read-back after the last push answered the hash of the array the pod should hold. */
  synced: boolean;
  /** The content hash the pod answered on its last read-back; `''` when none was read back. */
  hash: string;
  /** When a read-back last proved the pod holds its array; left out before the first. */
  lastSyncTime?: string;
  /** The last push's or read-back's failure; `''` when there is none. */
  lastError: string;
}

export interface EchoScenarioStatus {
  observedGeneration?: number;
  conditions?: EchoScenarioCondition[];
  syncedEndpoints?: number;
  totalEndpoints?: number;
  lastSyncTime?: string;
  /** The targeted pods and the proof of each one's last push (endpoint-status.ts). */
  endpoints?: EndpointStatus[];
  /** When this generation first ran (lifecycle.ts). */
  startTime?: string;
  /** `startTime + spec.duration`. */
  expiresAt?: string;
}

export interface EchoScenario {
  apiVersion?: string;
  kind?: string;
  /** As client-node types it; a custom object's `creationTimestamp` really arrives as a string. */
  metadata: V1ObjectMeta;
  /** The target, and every field of a scenario but `name` (the operator names it after the EchoScenario). */
  spec?: {
    target?: EchoScenarioTarget;
    path?: unknown;
    pathPattern?: unknown;
    method?: unknown;
    headers?: unknown;
    query?: unknown;
    body?: unknown;
    cycle?: unknown;
    upstream?: unknown;
    order?: unknown;
    activeFor?: unknown;
    times?: unknown;
    responses?: unknown;
    /** Lifecycle (lifecycle.ts): how long it runs, whether it is suspended, when it aborts. */
    duration?: unknown;
    suspend?: unknown;
    abortWhen?: AbortWhen;
  };
  status?: EchoScenarioStatus;
}

/** One echo container of one ready pod. */
export interface Endpoint {
  /** `<pod uid>:<port>`: a restarted pod has a new uid, so it is a new endpoint. */
  readonly key: string;
  readonly podName: string;
  readonly podUid: string;
  readonly ip: string;
  readonly port: number;
}

export type ScenarioState =
  | { readonly kind: 'Invalid'; readonly message: string }
  | { readonly kind: 'TargetNotFound'; readonly message: string }
  | { readonly kind: 'Conflict'; readonly message: string; readonly endpoints: readonly Endpoint[] }
  | { readonly kind: 'Active'; readonly endpoints: readonly Endpoint[] }
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

/** A pod can take a push: running, with an IP, Ready, not terminating. */
export function isPodReady(pod: V1Pod): boolean {
  if (pod.metadata?.deletionTimestamp !== undefined) return false;
  if (pod.status?.phase !== 'Running' || !pod.status.podIP) return false;
  return (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** The container port `port` names on `pod` (a number is taken as is). */
export function resolvePort(pod: V1Pod, port: string | number): number | undefined {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  for (const container of pod.spec?.containers ?? []) {
    for (const p of container.ports ?? []) if (p.name === port) return p.containerPort;
  }
  return undefined;
}

/** Whether an EchoScenario is being deleted (its finalizers hold it). */
export function isDeleting(es: EchoScenario): boolean {
  return es.metadata.deletionTimestamp !== undefined && es.metadata.deletionTimestamp !== null;
}

/** Whether a pod's labels match every term of a selector (an empty one selects nothing). */
export function selects(selector: Record<string, string>, pod: V1Pod): boolean {
  const labels = pod.metadata?.labels ?? {};
  const terms = Object.entries(selector);
  return terms.length > 0 && terms.every(([k, v]) => labels[k] === v);
}

function created(es: EchoScenario): number {
  const at = es.metadata.creationTimestamp;
  return at === undefined ? 0 : new Date(at).getTime();
}

/** Problems of an EchoScenario's spec that make it unusable, or `undefined` when it is valid. */
export function specProblems(es: EchoScenario): string | undefined {
  const spec = es.spec;
  const problems: string[] = [];
  const target = spec?.target;
  if (target === undefined) problems.push('spec.target: required');
  else {
    if ((target.service === undefined) === (target.selector === undefined)) {
      problems.push('spec.target: exactly one of service or selector');
    }
    if (target.selector !== undefined && Object.keys(target.selector.matchLabels ?? {}).length === 0) {
      problems.push('spec.target.selector.matchLabels: must name at least one label');
    }
    if (target.port === undefined || target.port === '') problems.push('spec.target.port: required');
    problems.push(...blastRadiusProblems(target));
  }
  problems.push(...lifecycleProblems(spec as Record<string, unknown> | undefined));
  const result = validateScenarios([scenarioFields(spec)]);
  if (!result.ok) {
    for (const p of result.problems)
      problems.push(`spec${p.path.replace(/^\/0/, '').replaceAll('/', '.')}: ${p.message}`);
  }
  return problems.length === 0 ? undefined : problems.join('; ');
}

/** The scenario fields of a spec that are given, as they are (unvalidated). */
function scenarioFields(spec: EchoScenario['spec']): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const key of SCENARIO_SPEC_FIELDS) {
    if (spec?.[key] !== undefined) fields[key] = spec[key];
  }
  return fields;
}

const SCENARIO_SPEC_FIELDS = [
  'path',
  'pathPattern',
  'method',
  'headers',
  'query',
  'body',
  'cycle',
  'upstream',
  'order',
  'activeFor',
  'times',
  'responses',
] as const;

/**
 * The scenario a valid EchoScenario pushes: its spec's fields, named after the EchoScenario (unique
 * in the namespace, so the echo's state routes can address it by `name`).
 */
export function scenarioOf(es: EchoScenario): Scenario {
  const result = validateScenarios([{ name: es.metadata.name, ...scenarioFields(es.spec) }]);
  // Only EchoScenarios that validated reach here: anything else is a bug.
  assert.ok(result.ok, `scenarioOf: invalid EchoScenario ${es.metadata.name}`);
  return result.scenarios[0]!;
}

/**
 * What a scenario matches, as one text: two EchoScenarios of one target with the same key would
 * serve the same requests, so only the older is pushed (a newer one with other conditions on the
 * same path is fine: the echo tries them oldest first). Method and header names are case-insensitive.
 */
export function matchKey(scenario: Scenario): string {
  const sorted = (map: Record<string, string> | undefined, lower: boolean) =>
    map === undefined
      ? undefined
      : Object.entries(map)
          .map(([k, v]) => [lower ? k.toLowerCase() : k, v])
          .sort(([a], [b]) => (a! < b! ? -1 : a! > b! ? 1 : 0));
  return JSON.stringify([
    scenario.path ?? null,
    scenario.pathPattern ?? null,
    scenario.method === undefined ? null : [...new Set(scenario.method.map((m) => m.toUpperCase()))].sort(),
    sorted(scenario.headers, true) ?? null,
    sorted(scenario.query, false) ?? null,
    scenario.body ?? null,
  ]);
}

/** How a conflict names what is taken: the path or pattern, and "with conditions" when it has them. */
function describeMatch(scenario: Scenario): string {
  const where = scenario.path !== undefined ? `path ${scenario.path}` : `pathPattern ${scenario.pathPattern}`;
  const conditions =
    scenario.method !== undefined ||
    scenario.headers !== undefined ||
    scenario.query !== undefined ||
    scenario.body !== undefined;
  return conditions ? `${where} with the same conditions` : where;
}

/** The ready endpoints of a pod selector: pods from the cache, their container port. */
export function selectorEndpoints(
  selector: Record<string, string>,
  port: string | number,
  pods: readonly V1Pod[],
): Endpoint[] {
  const endpoints: Endpoint[] = [];
  for (const pod of pods) {
    if (!isPodReady(pod) || !selects(selector, pod)) continue;
    const number = resolvePort(pod, port);
    if (number === undefined) continue;
    const uid = pod.metadata?.uid ?? '';
    endpoints.push({
      key: `${uid}:${number}`,
      podName: pod.metadata?.name ?? '',
      podUid: uid,
      ip: pod.status!.podIP!,
      port: number,
    });
  }
  return endpoints;
}

/**
 * The ready endpoints behind a Service, from its EndpointSlices: an endpoint counts when it is not
 * marked not ready or terminating, has an address and a Pod `targetRef` that the pod cache holds (by
 * name, with the same uid when the slice names one: a slice still naming a replaced pod is stale).
 * The port is the pod's container port of that name, else the slice's port of that name.
 */
function serviceEndpoints(
  service: string,
  port: string | number,
  slices: readonly V1EndpointSlice[],
  pods: readonly V1Pod[],
): Endpoint[] {
  const byName = new Map(pods.map((p) => [p.metadata?.name ?? '', p]));
  return sliceEndpoints(
    slices.filter((s) => s.metadata?.labels?.[SERVICE_NAME_LABEL] === service),
    port,
    (name) => byName.get(name),
  );
}

/**
 * {@link serviceEndpoints} from a Service's own slices and a pod lookup by name (planner.ts keeps
 * both indexed).
 */
export function sliceEndpoints(
  serviceSlices: readonly V1EndpointSlice[],
  port: string | number,
  podNamed: (name: string) => V1Pod | undefined,
): Endpoint[] {
  const endpoints = new Map<string, Endpoint>();
  const ours = serviceSlices
    .filter((s) => s.addressType !== 'FQDN')
    // IPv4 slices first, so a dual-stack pod is reached on its IPv4 address; then by name, stably.
    .sort(
      (a, b) =>
        Number(a.addressType !== 'IPv4') - Number(b.addressType !== 'IPv4') ||
        (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''),
    );
  for (const slice of ours) {
    for (const ep of slice.endpoints ?? []) {
      if (ep.conditions?.ready === false || ep.conditions?.terminating === true) continue;
      const ip = ep.addresses?.[0];
      const ref = ep.targetRef;
      if (ip === undefined || ref?.kind !== 'Pod' || ref.name === undefined) continue;
      const pod = podNamed(ref.name);
      if (pod === undefined || pod.metadata?.deletionTimestamp !== undefined) continue;
      if (ref.uid !== undefined && ref.uid !== pod.metadata?.uid) continue;
      const uid = pod.metadata?.uid ?? '';
      const number =
        resolvePort(pod, port) ?? slice.ports?.find((p) => p.name === port && p.port !== undefined)?.port;
      if (number === undefined) continue;
      const key = `${uid}:${number}`;
      if (!endpoints.has(key)) endpoints.set(key, { key, podName: ref.name, podUid: uid, ip, port: number });
    }
  }
  return [...endpoints.values()];
}

/** Plans one namespace. */
export function planNamespace(
  scenarios: readonly EchoScenario[],
  pods: readonly V1Pod[],
  services: readonly V1Service[],
  endpointSlices: readonly V1EndpointSlice[],
  /** Why a valid EchoScenario is off its pods (lifecycle.ts), or `undefined` when it runs. */
  stopped: (es: EchoScenario) => { reason: StopReason; message: string } | undefined = () => undefined,
): NamespacePlan {
  // Many EchoScenarios share a target: its endpoints are worked out once a plan (issue #16).
  const serviceNames = new Set(services.map((s) => s.metadata?.name));
  const targets = new Map<string, readonly Endpoint[]>();
  return planScenarios(scenarios, {
    serviceExists: (name) => serviceNames.has(name),
    endpointsOf: (target) => {
      const id = targetIdOf(target);
      let found = targets.get(id);
      if (found === undefined) {
        found =
          target.service !== undefined
            ? serviceEndpoints(target.service, target.port!, endpointSlices, pods)
            : selectorEndpoints(target.selector!.matchLabels!, target.port!, pods);
        targets.set(id, found);
      }
      return found;
    },
    specOf: deriveSpec,
    stopped,
  });
}

/** Where an EchoScenario's pods are: the Service or the selector, and the port (valid targets only). */
export function targetIdOf(target: EchoScenarioTarget): string {
  return target.service !== undefined
    ? `service\0${target.service}\0${target.port}`
    : `selector\0${JSON.stringify(Object.entries(target.selector!.matchLabels!).sort())}\0${target.port}`;
}

/** What planning needs of an EchoScenario's spec: its problems, else its scenario and match key. */
export interface DerivedSpec {
  readonly problems: string | undefined;
  readonly scenario?: Scenario;
  readonly matchKey?: string;
}

/** {@link DerivedSpec} of `es`, worked out now (planner.ts keeps them per spec). */
export function deriveSpec(es: EchoScenario): DerivedSpec {
  const problems = specProblems(es);
  if (problems !== undefined) return { problems };
  const scenario = scenarioOf(es);
  return { problems, scenario, matchKey: matchKey(scenario) };
}

/** What {@link planScenarios} asks of the cluster; planNamespace answers from lists, planner.ts from indexes. */
export interface PlanContext {
  serviceExists(name: string): boolean;
  /** The ready endpoints of a valid target. */
  endpointsOf(target: EchoScenarioTarget): readonly Endpoint[];
  specOf(es: EchoScenario): DerivedSpec;
  /** Why a valid EchoScenario is off its pods (lifecycle.ts), or `undefined` when it runs. */
  stopped(es: EchoScenario): { reason: StopReason; message: string } | undefined;
}

/**
 * Plans a set of EchoScenarios: every one of a namespace, or (planner.ts) every one whose targets
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
    states.set(name, { kind: 'Active', endpoints });
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
