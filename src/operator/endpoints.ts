/**
 * Where an EchoScenario's pods are reached: the ready echo endpoints (pod and port) of a pod selector,
 * from the pods, or of a Service, from its EndpointSlices. Pure functions of what the caches hold.
 */
import type { V1EndpointSlice, V1Pod } from '@kubernetes/client-node';

/** The label that ties an EndpointSlice to its Service. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** One echo container of one ready pod. */
export interface Endpoint {
  /** `<pod uid>:<port>`: a restarted pod has a new uid, so it is a new endpoint. */
  readonly key: string;
  readonly podName: string;
  readonly podUid: string;
  readonly ip: string;
  readonly port: number;
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

/** Whether a pod's labels match every term of a selector (an empty one selects nothing). */
export function selects(selector: Record<string, string>, pod: V1Pod): boolean {
  const labels = pod.metadata?.labels ?? {};
  const terms = Object.entries(selector);
  return terms.length > 0 && terms.every(([k, v]) => labels[k] === v);
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
 * The ready endpoints behind a Service, from its own EndpointSlices (indexes.ts keeps them by
 * Service) and a pod lookup by name: an endpoint counts when it is not marked not ready or
 * terminating, has an address and a Pod `targetRef` that the pod cache holds (by name, with the same
 * uid when the slice names one: a slice still naming a replaced pod is stale). The port is the pod's
 * container port of that name, else the slice's port of that name.
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
