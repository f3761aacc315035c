/**
 * What the informer caches keep (issue #16): only what planning reads. Applied to each object as it
 * arrives, in place (client-node's cache holds the very object it hands to the callbacks). A real
 * pod's spec and status (volumes, env, probes, container statuses) and every object's managed fields
 * are most of its size, and the operator reads none of it.
 */
import type {
  KubernetesObject,
  V1ContainerStatus,
  V1EndpointSlice,
  V1Pod,
  V1Service,
} from '@kubernetes/client-node';
import type { EchoScenario } from './echo-scenario.ts';
import { compactEndpoints } from './endpoint-status.ts';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** Drops `managedFields` and kubectl's last-applied copy of the object. */
export function stripMetadata(obj: KubernetesObject): void {
  const metadata = obj.metadata;
  if (metadata === undefined) return;
  delete metadata.managedFields;
  if (metadata.annotations?.[LAST_APPLIED] !== undefined) {
    const { [LAST_APPLIED]: _, ...rest } = metadata.annotations;
    metadata.annotations = rest;
  }
}

/** An EchoScenario: metadata slimmed, `status.endpoints` kept as a digest (endpoint-status.ts). */
export function stripEchoScenario(es: EchoScenario): void {
  stripMetadata(es);
  if (es.status !== undefined) compactEndpoints(es.status);
}

/**
 * A pod as planning reads it (plan.ts: `isPodReady`, `resolvePort`, labels, uid, deletion): its
 * containers' names and ports, its phase, IP and Ready condition, and its containers' restart counts.
 */
export function stripPod(pod: V1Pod): void {
  stripMetadata(pod);
  if (pod.spec !== undefined)
    pod.spec = {
      containers: (pod.spec.containers ?? []).map((c) => ({
        name: c.name,
        ...(c.ports === undefined ? {} : { ports: c.ports.map((p) => ({ ...p })) }),
      })),
    };
  if (pod.status !== undefined) {
    const { phase, podIP, conditions, containerStatuses } = pod.status;
    pod.status = {
      ...(phase === undefined ? {} : { phase }),
      ...(podIP === undefined ? {} : { podIP }),
      ...(conditions === undefined ? {} : { conditions: conditions.filter((c) => c.type === 'Ready') }),
      // Restart counts: a container restarted in the same pod lost its scenarios (resync.ts).
      ...(containerStatuses === undefined
        ? {}
        : {
            containerStatuses: containerStatuses.map(
              (c) => ({ name: c.name, restartCount: c.restartCount }) as V1ContainerStatus,
            ),
          }),
    };
  }
}

/** A Service: only that it exists (plan.ts reads its name). */
export function stripService(service: V1Service): void {
  stripMetadata(service);
  delete service.spec;
  delete service.status;
}

/** A slice: metadata slimmed; its endpoints and ports are what planning reads. */
export function stripSlice(slice: V1EndpointSlice): void {
  stripMetadata(slice);
}
