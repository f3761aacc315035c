/**
 * What the operator's work queue holds: which object to reconcile, typed (controller-runtime's
 * `reconcile.Request`, with the kind beside it, since one queue serves both reconcilers). Event
 * handlers only enqueue these; the reconciler of the key's kind reads everything else from caches.
 */

/** The reconciler a key goes to. */
export type WorkKind = 'pod' | 'echoscenario';

export interface WorkKey {
  readonly kind: WorkKind;
  readonly namespace: string;
  readonly name: string;
  /** `pod:<ns>/<name>` or `es:<ns>/<name>`: what makes two keys the same, and what logs show. */
  readonly id: string;
}

/** The key of the pod `namespace/name`: push each of its echo endpoints what it should hold. */
export function podKey(namespace: string, name: string): WorkKey {
  return { kind: 'pod', namespace, name, id: `pod:${namespace}/${name}` };
}

/** The key of the EchoScenario `namespace/name`: its finalizer, status and timed lifecycle. */
export function scenarioKey(namespace: string, name: string): WorkKey {
  return { kind: 'echoscenario', namespace, name, id: `es:${namespace}/${name}` };
}

/** The queue's identity of a key. */
export const idOfKey = (key: WorkKey): string => key.id;
