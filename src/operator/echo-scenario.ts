/**
 * The EchoScenario resource as the operator reads and writes it: its API group, version and names,
 * the finalizer it keeps, and the types of its spec and status.
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import type { TargetMode } from './blast-radius.ts';
import type { AbortWhen } from './lifecycle.ts';

export const GROUP = 'echo-chaos.dev';
export const VERSION = 'v1alpha1';
export const PLURAL = 'echoscenarios';
export const KIND = 'EchoScenario';
/** Kept on every valid EchoScenario until the pods that held it no longer do. */
export const FINALIZER = 'echo-chaos.dev/cleanup';

/** `spec.target`, as the CRD defines it: a Service name or a pod label selector, and the echo port. */
export interface EchoScenarioTarget {
  service?: string;
  selector?: { matchLabels?: Record<string, string> };
  port?: string | number;
  /** Blast radius (`all` when not given): see blast-radius.ts. */
  mode?: TargetMode;
  /** With mode `fixed`, a pod count; with `fixed-percent`, a percentage. */
  value?: number;
  /** With mode `fixed-percent`: at least this many pods. */
  minPods?: number;
  /** With mode `all` or `fixed-percent`: at most this many pods. */
  maxPods?: number;
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
  /** How many ready pods the blast radius chose and why (blast-radius.ts); absent when it takes all. */
  blastRadius?: { readyPods: number; chosenPods: number; reason: string };
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

/** Whether an EchoScenario is being deleted (its finalizers hold it). */
export function isDeleting(es: EchoScenario): boolean {
  return es.metadata.deletionTimestamp !== undefined && es.metadata.deletionTimestamp !== null;
}
