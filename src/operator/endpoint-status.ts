/**
 * `status.endpoints`: each pod an EchoScenario targets (its blast radius chose), with the proof of
 * its last push: whether a read-back showed it holding the array it should, the hash it answered,
 * when, and the last error.
 */
import { createHash } from 'node:crypto';
import type { EchoScenarioStatus, EndpointStatus } from './echo-scenario.ts';
import type { Endpoint } from './endpoints.ts';
import type { NamespacePlan } from './plan.ts';
import type { PushRecord } from './push-ledger.ts';

/** Most pods listed in `status.endpoints` (the counts cover all): a status stays small. */
export const MAX_STATUS_ENDPOINTS = 100;
/** Longest `lastError` kept. */
export const MAX_ENDPOINT_ERROR_LENGTH = 1024;

/**
 * The entries of `endpoints`: unsynced ones first, then by pod name, at most
 * {@link MAX_STATUS_ENDPOINTS}.
 */
export function endpointStatuses(
  endpoints: readonly Endpoint[],
  desired: NamespacePlan['desired'],
  pushes: PushRecord,
): EndpointStatus[] {
  const entries = endpoints.map((endpoint): EndpointStatus => {
    const want = desired.get(endpoint.key);
    const proof = pushes.proof(endpoint.key);
    const entry: EndpointStatus = {
      pod: endpoint.podName,
      ip: endpoint.ip,
      synced: want !== undefined && pushes.holds(want),
      hash: proof?.hash ?? '',
      lastError: (pushes.failure(endpoint.key) ?? '').slice(0, MAX_ENDPOINT_ERROR_LENGTH),
    };
    if (proof?.syncedAt !== undefined) entry.lastSyncTime = timestamp(proof.syncedAt);
    return entry;
  });
  return entries
    .sort((a, b) => Number(a.synced) - Number(b.synced) || (a.pod < b.pod ? -1 : a.pod > b.pod ? 1 : 0))
    .slice(0, MAX_STATUS_ENDPOINTS);
}

/** Where a cached status keeps the digest of the `endpoints` it had (see {@link compactEndpoints}). */
const DIGEST = Symbol('echo-chaos.endpointsDigest');
type Compacted = EchoScenarioStatus & { [DIGEST]?: string };

/** A digest of what a list says, read-back times aside (a re-push of the same array is no news). */
export function endpointsDigest(list: readonly EndpointStatus[] | undefined): string {
  if (list === undefined) return '';
  const untimed = JSON.stringify(list.map(({ lastSyncTime: _t, ...rest }) => rest));
  return createHash('sha1').update(untimed).digest('base64');
}

/**
 * A status as the informer cache keeps it: its `endpoints` (up to {@link MAX_STATUS_ENDPOINTS} pods
 * each: 15 MB for 1,000 EchoScenarios over 500 pods, most of what the cache held of them) replaced by
 * their digest, the one thing the operator reads of them ({@link sameEndpoints}). In place.
 */
export function compactEndpoints(status: EchoScenarioStatus): void {
  if (status.endpoints === undefined) return;
  (status as Compacted)[DIGEST] = endpointsDigest(status.endpoints);
  delete status.endpoints;
}

/** Whether `next` says what `current`'s endpoints said (compacted or not), read-back times aside. */
export function sameEndpoints(
  current: EchoScenarioStatus | undefined,
  next: readonly EndpointStatus[] | undefined,
): boolean {
  const had = (current as Compacted | undefined)?.[DIGEST] ?? endpointsDigest(current?.endpoints);
  return had === endpointsDigest(next);
}

/** A Kubernetes `Time`: RFC 3339 in UTC, whole seconds. */
function timestamp(at: Date): string {
  return at.toISOString().replace(/\.\d+Z$/, 'Z');
}
