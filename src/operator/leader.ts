/**
 * Lease-based leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection:
 * the holder renews `renewTime`; another candidate takes the lease over once `renewTime` plus
 * `leaseDurationSeconds` has passed, or at once when the holder released it on a clean stop.
 * Every write carries the resourceVersion read, so two candidates never both win.
 */
import { type CoordinationV1Api, type V1Lease, type V1LeaseSpec, V1MicroTime } from '@kubernetes/client-node';

export interface LeaderElectorOptions {
  readonly api: CoordinationV1Api;
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  /** How long a lease holds without renewal, in seconds (the Lease's own unit). */
  readonly leaseDurationSeconds: number;
  /** How often the holder renews and a candidate retries, in milliseconds. */
  readonly retryIntervalMs: number;
  readonly onChange: (leading: boolean) => void;
  readonly onError?: (error: unknown) => void;
  readonly now?: () => Date;
}

function statusCode(error: unknown): number | undefined {
  return (error as { code?: number } | null)?.code;
}

export class LeaderElector {
  readonly #options: LeaderElectorOptions;
  #leading = false;
  #lastRenewMs = 0;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> = Promise.resolve();
  #stopped = true;

  constructor(options: LeaderElectorOptions) {
    this.#options = options;
  }

  get isLeader(): boolean {
    return this.#leading;
  }

  start(): void {
    this.#stopped = false;
    this.#schedule(0);
  }

  /** Stops campaigning; a leader releases the lease (unless `release` is false, as in a crash). */
  async stop(release = true): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
    if (this.#leading && release) {
      try {
        const { api, namespace, name } = this.#options;
        const lease = await api.readNamespacedLease({ namespace, name });
        if (lease.spec?.holderIdentity === this.#options.identity) {
          lease.spec = microTimes({ ...lease.spec, holderIdentity: '' });
          await api.replaceNamespacedLease({ namespace, name, body: lease });
        }
      } catch (error) {
        this.#options.onError?.(error);
      }
    }
    this.#set(false);
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.#tryAcquireOrRenew().finally(() => this.#schedule(this.#options.retryIntervalMs));
    }, delayMs);
  }

  #set(leading: boolean): void {
    if (leading === this.#leading) return;
    this.#leading = leading;
    this.#options.onChange(leading);
  }

  async #tryAcquireOrRenew(): Promise<void> {
    const { api, namespace, name, identity, leaseDurationSeconds } = this.#options;
    const now = this.#options.now?.() ?? new Date();
    try {
      let lease: V1Lease;
      try {
        lease = await api.readNamespacedLease({ namespace, name });
      } catch (error) {
        if (statusCode(error) !== 404) throw error;
        await api.createNamespacedLease({
          namespace,
          body: {
            metadata: { name, namespace },
            spec: microTimes({
              holderIdentity: identity,
              leaseDurationSeconds,
              acquireTime: now,
              renewTime: now,
              leaseTransitions: 0,
            }),
          },
        });
        this.#renewed(now);
        return;
      }
      const spec = lease.spec ?? {};
      const holder = spec.holderIdentity ?? '';
      const renewedAt = spec.renewTime === undefined ? 0 : new Date(spec.renewTime).getTime();
      const expired =
        holder === '' ||
        renewedAt + (spec.leaseDurationSeconds ?? leaseDurationSeconds) * 1000 < now.getTime();
      if (holder !== identity && !expired) {
        this.#set(false);
        return;
      }
      lease.spec = microTimes({
        ...spec,
        holderIdentity: identity,
        leaseDurationSeconds,
        renewTime: now,
        acquireTime: holder === identity ? (spec.acquireTime ?? now) : now,
        leaseTransitions: (spec.leaseTransitions ?? 0) + (holder === identity ? 0 : 1),
      });
      await api.replaceNamespacedLease({ namespace, name, body: lease });
      this.#renewed(now);
    } catch (error) {
      if (statusCode(error) !== 409) this.#options.onError?.(error);
      // A leader that cannot renew steps down before its lease can expire elsewhere.
      if (this.#leading && now.getTime() - this.#lastRenewMs > (leaseDurationSeconds * 1000) / 2)
        this.#set(false);
    }
  }

  #renewed(now: Date): void {
    this.#lastRenewMs = now.getTime();
    this.#set(true);
  }
}

/**
 * A Lease's times are `MicroTime`: the API server takes exactly six fractional digits and answers
 * 400 to the three a plain `Date` serializes to (kubernetes-client/javascript#828). Times read back
 * from the API are plain `Date`s again, so every write goes through here.
 */
function microTimes(spec: V1LeaseSpec): V1LeaseSpec {
  const micro = (time: Date | undefined) =>
    time === undefined ? undefined : new V1MicroTime(new Date(time).getTime());
  return { ...spec, acquireTime: micro(spec.acquireTime), renewTime: micro(spec.renewTime) };
}
