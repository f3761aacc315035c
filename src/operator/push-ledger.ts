/**
 * What this leader has pushed: per endpoint, the array it last sent (its JSON text), the
 * EchoScenarios in it, and the last failure. Only a leader's own memory: a new leader starts from
 * nothing and pushes everything once.
 */

import type { Endpoint } from './endpoints.ts';
import type { DesiredEndpoint } from './plan.ts';

/** One endpoint this leader pushed to. */
export interface Pushed {
  /** The JSON array it holds; `''` when a push failed and what it holds is unknown. */
  readonly body: string;
  readonly endpoint: Endpoint;
  readonly namespace: string;
  /** The EchoScenarios in `body` (or that may be, after a failure), by name. */
  readonly owners: readonly string[];
}

/** What the last read-backs of an endpoint's `GET /scenario` showed (see verify.ts). */
export interface EndpointProof {
  /** The content hash the endpoint answered on its last read-back. */
  readonly hash?: string;
  /** When a read-back last proved it holds the array pushed. */
  readonly syncedAt?: Date;
}

/** What the status of an EchoScenario needs from the ledger. */
export interface PushRecord {
  /** Whether the endpoint holds the array it should, pushed, read back and not failed since. */
  holds(want: DesiredEndpoint): boolean;
  /** The endpoint's last push failure, if its last push failed. */
  failure(key: string): string | undefined;
  /** What its read-backs showed; `undefined` before the first. */
  proof(key: string): EndpointProof | undefined;
}

export class PushLedger implements PushRecord {
  /** By endpoint key. */
  readonly #pushed = new Map<string, Pushed>();
  /** Endpoint key → the message of its last failed push. */
  readonly #failed = new Map<string, string>();
  /** Endpoint key → what its read-backs showed. */
  readonly #proofs = new Map<string, EndpointProof>();
  /**
   * `<ns>/<owner>` → how many endpoints' `owners` name it (`mayHold` without a scan). A count, not
   * the set of keys: 1,000 EchoScenarios on 500 pods made 20 MB of sets for one boolean each.
   */
  readonly #byOwner = new Map<string, number>();
  /** `<ns>/<pod name>` → the keys of its endpoints pushed to. */
  readonly #byPod = new Map<string, Set<string>>();

  #set(key: string, pushed: Pushed): void {
    this.#unset(key);
    this.#pushed.set(key, pushed);
    for (const owner of pushed.owners) count(this.#byOwner, `${pushed.namespace}/${owner}`, 1);
    addTo(this.#byPod, `${pushed.namespace}/${pushed.endpoint.podName}`, key);
  }

  #unset(key: string): void {
    const before = this.#pushed.get(key);
    if (before === undefined) return;
    this.#pushed.delete(key);
    for (const owner of before.owners) count(this.#byOwner, `${before.namespace}/${owner}`, -1);
    deleteFrom(this.#byPod, `${before.namespace}/${before.endpoint.podName}`, key);
  }

  holds(want: DesiredEndpoint): boolean {
    const pushed = this.#pushed.get(want.endpoint.key);
    return pushed !== undefined && pushed.body === bodyOf(want.scenarios);
  }

  /** The JSON array the endpoint holds, as far as this leader knows. */
  body(key: string): string | undefined {
    return this.#pushed.get(key)?.body;
  }

  failure(key: string): string | undefined {
    return this.#failed.get(key);
  }

  proof(key: string): EndpointProof | undefined {
    return this.#proofs.get(key);
  }

  /** `endpoint` now holds `body`: a read-back at `at` answered its content hash `hash`. */
  succeeded(
    endpoint: Endpoint,
    namespace: string,
    body: string,
    owners: readonly string[],
    proof?: { hash: string; at: Date },
  ): void {
    this.#set(endpoint.key, { body, endpoint, namespace, owners });
    this.#failed.delete(endpoint.key);
    if (proof !== undefined) this.#proofs.set(endpoint.key, { hash: proof.hash, syncedAt: proof.at });
  }

  /** A read-back answered `hash`, which is not what was pushed. */
  readBackDiffers(key: string, hash: string): void {
    this.#proofs.set(key, { ...this.#proofs.get(key), hash });
  }

  /**
   * A push of `owners`' array to `endpoint` failed. What it holds now is unknown: it stays unsynced
   * (an empty body never matches), owned by what it held before and what it was to get, so it is
   * cleared if need be.
   */
  pushFailed(endpoint: Endpoint, namespace: string, owners: readonly string[], message: string): void {
    const before = this.#pushed.get(endpoint.key)?.owners ?? [];
    this.#set(endpoint.key, {
      body: '',
      endpoint,
      namespace,
      owners: [...new Set([...before, ...owners])],
    });
    this.#failed.set(endpoint.key, message);
  }

  /** Clearing the endpoint failed: it still holds what it held. */
  clearFailed(key: string, message: string): void {
    this.#failed.set(key, message);
  }

  /** The endpoint holds nothing of ours, or is gone: nothing to remember. */
  forget(key: string): void {
    this.#unset(key);
    this.#failed.delete(key);
    this.#proofs.delete(key);
  }

  /** Every endpoint of a pod, by its uid (the pod is gone). */
  forgetPod(uid: string): void {
    for (const key of [...this.#pushed.keys(), ...this.#failed.keys(), ...this.#proofs.keys()]) {
      if (key.startsWith(`${uid}:`)) this.forget(key);
    }
  }

  /** A failure of an endpoint of pod `uid` that should hold nothing and holds nothing is no news. */
  forgetStaleFailures(uid: string | undefined, desired: ReadonlyMap<string, DesiredEndpoint>): void {
    for (const key of this.#failed.keys()) {
      if (key.startsWith(`${uid}:`) && !desired.has(key) && !this.#pushed.has(key)) this.#failed.delete(key);
    }
  }

  /** The endpoints pushed to in `namespace`, by key; live, like a Map's own iteration. */
  *inNamespace(namespace: string): IterableIterator<[string, Pushed]> {
    for (const entry of this.#pushed) if (entry[1].namespace === namespace) yield entry;
  }

  /** Every pod with an endpoint pushed to, as `[namespace, pod name]` (what a resync re-checks). */
  *pods(): IterableIterator<[string, string]> {
    for (const id of this.#byPod.keys()) {
      const slash = id.indexOf('/');
      yield [id.slice(0, slash), id.slice(slash + 1)];
    }
  }

  /** The endpoints of pod `podName` in `namespace` pushed to, by key. */
  ofPod(namespace: string, podName: string): Array<[string, Pushed]> {
    const keys = this.#byPod.get(`${namespace}/${podName}`);
    return keys === undefined ? [] : [...keys].map((key) => [key, this.#pushed.get(key)!]);
  }

  /** Whether an endpoint in `namespace` may still hold EchoScenario `name`'s scenario. */
  mayHold(namespace: string, name: string): boolean {
    return (this.#byOwner.get(`${namespace}/${name}`) ?? 0) > 0;
  }

  /** Forgets everything (another leader may have pushed since). */
  clear(): void {
    this.#pushed.clear();
    this.#failed.clear();
    this.#proofs.clear();
    this.#byOwner.clear();
    this.#byPod.clear();
  }
}

function count(index: Map<string, number>, at: string, by: 1 | -1): void {
  const n = (index.get(at) ?? 0) + by;
  if (n > 0) index.set(at, n);
  else index.delete(at);
}

function addTo(index: Map<string, Set<string>>, at: string, key: string): void {
  const keys = index.get(at);
  if (keys === undefined) index.set(at, new Set([key]));
  else keys.add(key);
}

function deleteFrom(index: Map<string, Set<string>>, at: string, key: string): void {
  const keys = index.get(at);
  if (keys === undefined) return;
  keys.delete(key);
  if (keys.size === 0) index.delete(at);
}

/**
 * The JSON body of a desired array, made once per array: a plan's array is asked about by the status
 * of every EchoScenario it holds (300 scenarios on 200 pods were 60,000 stringifications a plan).
 */
const bodies = new WeakMap<object, string>();
export function bodyOf(scenarios: readonly unknown[]): string {
  let body = bodies.get(scenarios);
  if (body === undefined) {
    body = JSON.stringify(scenarios);
    bodies.set(scenarios, body);
  }
  return body;
}
