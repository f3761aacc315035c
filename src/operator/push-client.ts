/**
 * The one call the operator makes to an echo pod: `POST /scenario` with the whole array the
 * endpoint should hold (a POST replaces all of a pod's scenarios), timed and counted. It is
 * conditional: `If-None-Match` names the array's content hash, so a pod that already holds it
 * answers 412 and is not restarted (its sequences go on), and replicas sharing a store (Redis,
 * `ECHO_STATE_URL`) write the set to it once, whichever pod the first push reaches.
 */
import { Agent, type Dispatcher, fetch } from 'undici';
import type { Endpoint } from './endpoints.ts';
import { isOperatorError, OperatorError } from './errors.ts';
import type { OperatorMetrics } from './metrics.ts';

/**
 * What a pod answered a push: `pushed` (2xx) or `unchanged` (412: it held the array already). Neither
 * is counted as a success in `echo_operator_pushes_total` here: only the read-back that follows
 * proves it (verify.ts), so a push a pod dropped silently is never one.
 */
export type PushOutcome = 'pushed' | 'unchanged';

/**
 * Sends `body` (a JSON scenario array whose content hash is `hash`) to `endpoint` unless it holds
 * it already; rejects with `OPERATOR_ERR_PUSH` naming the endpoint (counted as a `failure`).
 */
export type Push = (endpoint: Endpoint, body: string, hash?: string) => Promise<PushOutcome>;

export interface PushClientOptions {
  /** Timeout of one push, in ms. */
  readonly timeoutMs: number;
  readonly metrics: Pick<OperatorMetrics, 'pushes' | 'pushSeconds'>;
  /** Sent as `Authorization: Bearer <adminToken>`: what echo pods with `ECHO_ADMIN_TOKEN` need. */
  readonly adminToken?: string | undefined;
  /** The connections to pods (see {@link createPodDispatcher}); undici's global one when left out. */
  readonly dispatcher?: Dispatcher | undefined;
}

/**
 * The operator's connections to echo pods, shared by pushes and read-backs: one connection per pod
 * (undici's `Client`, not a `Pool`, whose queue alone is 16 KiB: with hundreds of pods, megabytes),
 * kept alive between a push and its read-back and closed after 10 s idle, so a fleet's sockets do not
 * outlive its changes.
 */
export function createPodDispatcher(): Agent {
  return new Agent({ connections: 1, keepAliveTimeout: 4_000, keepAliveMaxTimeout: 10_000 });
}

export function createPushClient(options: PushClientOptions): Push {
  const { metrics } = options;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.adminToken !== undefined) headers['authorization'] = `Bearer ${options.adminToken}`;
  return async function push(endpoint, body, hash) {
    const url = `http://${endpoint.ip}:${endpoint.port}/scenario`;
    const stopTimer = metrics.pushSeconds.startTimer();
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: hash === undefined ? headers : { ...headers, 'if-none-match': `"${hash}"` },
        body,
        signal: AbortSignal.timeout(options.timeoutMs),
        ...(options.dispatcher === undefined ? {} : { dispatcher: options.dispatcher }),
      });
      const text = await res.text();
      // 412: the pod holds this array already (what the read-back that follows proves).
      if (res.status === 412 && hash !== undefined) return 'unchanged';
      if (!res.ok)
        throw new OperatorError('OPERATOR_ERR_PUSH', [url, `HTTP ${res.status}: ${text.slice(0, 500)}`]);
      return 'pushed';
    } catch (error) {
      metrics.pushes.inc({ result: 'failure' });
      if (isOperatorError(error)) throw error;
      // fetch's own message is a bare "fetch failed": the cause's code (ECONNREFUSED...) says more.
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      throw new OperatorError('OPERATOR_ERR_PUSH', [url, cause ?? (error as Error).message], {
        cause: error,
      });
    } finally {
      stopTimer();
    }
  };
}
