/**
 * Proof of a push: after `POST /scenario`, the operator reads the pod's `GET /scenario` back with
 * `If-None-Match` naming the content hash of the array it pushed. A 304 (or a 200 whose `ETag`, or
 * whose array's own hash, is that hash) proves the pod holds it; anything else is a failure of the
 * push, retried with backoff, so a pod that answers 200 and keeps its old scenarios is never counted
 * as synced.
 */
import { type Dispatcher, fetch } from 'undici';
import { scenarioSetHash } from '../scenario/index.ts';
import type { Endpoint } from './endpoints.ts';
import { isOperatorError, OperatorError } from './errors.ts';
import type { OperatorMetrics } from './metrics.ts';
import type { Push } from './push-client.ts';

/** Reads back what `endpoint` holds: the content hash of its scenario set. */
export type ReadBack = (endpoint: Endpoint, expectedHash: string) => Promise<string>;

/** Pushes `scenarios` (`body` is their JSON) and proves it: resolves with the hash read back. */
export type VerifiedPush = (
  endpoint: Endpoint,
  scenarios: readonly unknown[],
  body: string,
) => Promise<string>;

export interface ReadBackClientOptions {
  /** Timeout of one read-back, in ms. */
  readonly timeoutMs: number;
  readonly adminToken?: string | undefined;
  /** The connections to pods, shared with the pushes (push-client.ts `createPodDispatcher`). */
  readonly dispatcher?: Dispatcher | undefined;
}

/** Most bytes of a `GET /scenario` body read when it has no usable `ETag` (an echo without one). */
export const MAX_READ_BACK_BYTES = 8 * 1024 * 1024;

const HASH_ETAG = /^"(sha256-[0-9a-f]{64})"$/;

/** `OPERATOR_ERR_READ_BACK` for `url`: why the read-back failed. */
function readBackFailed(url: string, detail: string, cause?: unknown): OperatorError {
  return new OperatorError(
    'OPERATOR_ERR_READ_BACK',
    [url, detail],
    cause === undefined ? undefined : { cause },
  );
}

export function createReadBackClient(options: ReadBackClientOptions): ReadBack {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.adminToken !== undefined) headers['authorization'] = `Bearer ${options.adminToken}`;
  return async function readBack(endpoint, expectedHash) {
    const url = `http://${endpoint.ip}:${endpoint.port}/scenario`;
    try {
      const res = await fetch(url, {
        headers: { ...headers, 'if-none-match': `"${expectedHash}"` },
        signal: AbortSignal.timeout(options.timeoutMs),
        ...(options.dispatcher === undefined ? {} : { dispatcher: options.dispatcher }),
      });
      if (res.status === 304) {
        await res.body?.cancel();
        return expectedHash;
      }
      if (res.status !== 200) {
        const text = await res.text();
        throw readBackFailed(url, `HTTP ${res.status}: ${text.slice(0, 200)}`);
      }
      const tagged = HASH_ETAG.exec(res.headers.get('etag') ?? '')?.[1];
      if (tagged !== undefined) {
        await res.body?.cancel();
        return tagged;
      }
      const length = Number(res.headers.get('content-length') ?? 0);
      if (length > MAX_READ_BACK_BYTES)
        throw readBackFailed(url, `a body of ${length} bytes, above ${MAX_READ_BACK_BYTES}`);
      const text = await res.text();
      if (text.length > MAX_READ_BACK_BYTES)
        throw readBackFailed(url, `a body above ${MAX_READ_BACK_BYTES} bytes`);
      const list = JSON.parse(text) as unknown;
      if (!Array.isArray(list)) throw readBackFailed(url, 'a body that is not a JSON array');
      return scenarioSetHash(list);
    } catch (error) {
      if (isOperatorError(error)) throw error;
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      throw readBackFailed(url, cause ?? (error as Error).message, error);
    }
  };
}

/** The hash a pod answered when a read-back found it holding something else. */
export interface NotApplied extends OperatorError {
  readonly heldHash: string;
}

/** The hash `error` says the pod holds, when it is a read-back that differed. */
export function heldHashOf(error: unknown): string | undefined {
  return (error as Partial<NotApplied> | null)?.heldHash;
}

/**
 * Push, then read back: rejects with `OPERATOR_ERR_PUSH`, `OPERATOR_ERR_READ_BACK` or
 * `OPERATOR_ERR_NOT_APPLIED`. `metrics.pushes` counts a push by what the read-back showed: `success`
 * or `unchanged` (412) only when the pod proved it holds the array, `not_applied` when it answered
 * the push and holds something else (dropped silently), `failure` when the read-back failed (the
 * push client counts its own failures).
 */
export function createVerifiedPush(
  push: Push,
  readBack: ReadBack,
  metrics?: Pick<OperatorMetrics, 'pushes'>,
): VerifiedPush {
  // A plan gives every pod with the same EchoScenarios one array (planner.ts): hashed once, not per pod.
  const hashes = new WeakMap<object, string>();
  return async function verifiedPush(endpoint, scenarios, body) {
    let expected = hashes.get(scenarios);
    if (expected === undefined) {
      expected = scenarioSetHash(scenarios);
      hashes.set(scenarios, expected);
    }
    const outcome = await push(endpoint, body, expected);
    let held: string;
    try {
      held = await readBack(endpoint, expected);
    } catch (error) {
      metrics?.pushes.inc({ result: 'failure' });
      throw error;
    }
    if (held !== expected) {
      metrics?.pushes.inc({ result: 'not_applied' });
      const url = `http://${endpoint.ip}:${endpoint.port}/scenario`;
      const error = new OperatorError('OPERATOR_ERR_NOT_APPLIED', [url, held, expected]);
      throw Object.assign(error, { heldHash: held });
    }
    metrics?.pushes.inc({ result: outcome === 'unchanged' ? 'unchanged' : 'success' });
    return held;
  };
}
