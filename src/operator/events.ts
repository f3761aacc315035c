/**
 * Kubernetes Events on EchoScenarios, through the core v1 Events API (what `kubectl describe`
 * lists; docs/adr/0018-experiment-lifecycle.md says why not events.k8s.io/v1). The operator records
 * one only on a transition of the `Ready` condition (a status it wrote that says something new), so
 * the status is the de-duplication; on top of that each object gets at most
 * {@link MAX_EVENTS_PER_MINUTE} a minute, so a flapping target cannot flood the API.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import type { EchoScenario, EchoScenarioStatus } from './echo-scenario.ts';
import type { OperatorLogger } from './logger.ts';

/** Most Events one EchoScenario gets per minute; more are dropped (and logged at debug). */
export const MAX_EVENTS_PER_MINUTE = 10;
/** Longest Event message, in characters (events.k8s.io's `note` limit is 1 kB). */
export const MAX_MESSAGE_LENGTH = 1024;
/** Most objects the rate limit tracks at once; the oldest windows go first. */
const MAX_TRACKED = 10_000;
const WINDOW_MS = 60_000;

/** The Event reason of each `Ready` condition reason, and its type. */
export const EVENT_OF_REASON: Readonly<Record<string, { reason: string; type: 'Normal' | 'Warning' }>> = {
  Synced: { reason: 'Pushed', type: 'Normal' },
  PushFailed: { reason: 'PushFailed', type: 'Warning' },
  Conflict: { reason: 'Conflict', type: 'Warning' },
  TargetNotFound: { reason: 'TargetNotFound', type: 'Warning' },
  Invalid: { reason: 'Invalid', type: 'Warning' },
  Expired: { reason: 'Expired', type: 'Normal' },
  Suspended: { reason: 'Suspended', type: 'Normal' },
  Aborted: { reason: 'Aborted', type: 'Warning' },
  AbortCheckFailed: { reason: 'AbortCheckFailed', type: 'Warning' },
};

/**
 * The Event a status write tells, or `undefined` when it is no transition: the `Ready` reason
 * changed, or the same reason now describes a new generation (a new spec pushed).
 */
export function transitionOf(
  before: EchoScenarioStatus | undefined,
  after: EchoScenarioStatus,
): { reason: string; type: 'Normal' | 'Warning'; message: string } | undefined {
  const was = before?.conditions?.find((c) => c.type === 'Ready');
  const now = after.conditions?.find((c) => c.type === 'Ready');
  if (now === undefined) return undefined;
  if (was?.reason === now.reason && before?.observedGeneration === after.observedGeneration) return undefined;
  const event = EVENT_OF_REASON[now.reason];
  return event === undefined ? undefined : { ...event, message: now.message };
}

export interface EventRecorderOptions {
  readonly core: CoreV1Api;
  readonly logger: Pick<OperatorLogger, 'debug' | 'warn'>;
  /** `reportingInstance`: this replica's identity. */
  readonly instance: string;
  readonly now: () => Date;
}

export class EventRecorder {
  readonly #options: EventRecorderOptions;
  /** Object uid → start of its window and Events in it. */
  readonly #windows = new Map<string, { start: number; count: number }>();
  /** Object uid → the last transition recorded (reason and generation). */
  readonly #last = new Map<string, string>();
  #sequence = 0;

  constructor(options: EventRecorderOptions) {
    this.#options = options;
  }

  /** Records an Event on `es`; never throws (a failure is logged). */
  async record(es: EchoScenario, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const { core, logger, instance } = this.#options;
    const now = this.#options.now();
    const uid = es.metadata.uid ?? `${es.metadata.namespace}/${es.metadata.name}`;
    if (!this.#admit(uid, now.getTime())) {
      logger.debug({ echoScenario: es.metadata.name, reason }, 'event dropped: rate limit');
      return;
    }
    const namespace = es.metadata.namespace ?? 'default';
    const name = es.metadata.name ?? '';
    // client-node types a Time as a Date but sends a string as it is: whole seconds, as client-go's.
    const at = now.toISOString().replace(/\.\d+Z$/, 'Z') as unknown as Date;
    // client-go's naming: the object's name and a unique hexadecimal suffix.
    const suffix = (BigInt(now.getTime()) * 1_000_000n + BigInt(this.#sequence++ % 1_000_000)).toString(16);
    try {
      await core.createNamespacedEvent({
        namespace,
        body: {
          metadata: { name: `${name}.${suffix}`, namespace },
          involvedObject: {
            apiVersion: es.apiVersion ?? 'echo-chaos.dev/v1alpha1',
            kind: es.kind ?? 'EchoScenario',
            name,
            namespace,
            uid: es.metadata.uid,
            resourceVersion: es.metadata.resourceVersion,
          },
          type,
          reason,
          message:
            message.length > MAX_MESSAGE_LENGTH ? `${message.slice(0, MAX_MESSAGE_LENGTH - 1)}…` : message,
          source: { component: 'echo-chaos-operator' },
          reportingComponent: 'echo-chaos.dev/operator',
          reportingInstance: instance.slice(0, 128),
          action: reason,
          // The classic form (no eventTime), as client-go's core v1 recorder writes it.
          firstTimestamp: at,
          lastTimestamp: at,
          count: 1,
        },
      });
    } catch (error) {
      logger.warn({ echoScenario: name, reason, err: String(error) }, 'event not recorded');
    }
  }

  /**
   * Records the Event of a transition once: a status written twice from a cache that had not seen
   * the first write yet (the same reason for the same generation) tells it only the first time.
   */
  async recordTransition(
    es: EchoScenario,
    generation: number,
    event: { type: 'Normal' | 'Warning'; reason: string; message: string },
  ): Promise<void> {
    const uid = es.metadata.uid ?? `${es.metadata.namespace}/${es.metadata.name}`;
    const key = `${event.reason}@${generation}`;
    if (this.#last.get(uid) === key) return;
    this.#last.delete(uid);
    if (this.#last.size >= MAX_TRACKED) {
      const oldest = this.#last.keys().next().value;
      if (oldest !== undefined) this.#last.delete(oldest);
    }
    this.#last.set(uid, key);
    await this.record(es, event.type, event.reason, event.message);
  }

  /** Forgets an object (it is gone). */
  forget(uid: string): void {
    this.#windows.delete(uid);
    this.#last.delete(uid);
  }

  #admit(uid: string, nowMs: number): boolean {
    const window = this.#windows.get(uid);
    if (window === undefined || nowMs - window.start >= WINDOW_MS) {
      this.#windows.delete(uid);
      if (this.#windows.size >= MAX_TRACKED) {
        const oldest = this.#windows.keys().next().value;
        if (oldest !== undefined) this.#windows.delete(oldest);
      }
      this.#windows.set(uid, { start: nowMs, count: 1 });
      return true;
    }
    if (window.count >= MAX_EVENTS_PER_MINUTE) return false;
    window.count++;
    return true;
  }
}
