/**
 * Connections to the API server, reused. client-node 2 builds a new undici `Agent` for every API
 * request that has TLS settings (every real cluster: its CA; the tests' double: skip-verify), so each
 * status write or finalizer patch opened its own connection, with its own TLS handshake, and left it
 * open until the server's idle timeout: at 1,000 EchoScenarios, a thousand sockets and 20 MB of
 * undici pools (issue #16). Here the dispatcher is built once per distinct set of settings (the
 * cluster, its proxy and the TLS material: a credential plugin that rotates client certificates gets
 * a new one, and the old one is closed once its requests are done).
 */
import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';

/** client-node's own (declared private): what `applySecurityAuthentication` calls per request. */
type CreateDispatcher = (cluster: unknown, agentOptions: object) => { close(): Promise<void> } | undefined;

const patched = new WeakSet<KubeConfig>();

/** Makes `kc` hand out one dispatcher per distinct connection settings; idempotent. */
export function reuseApiConnections(kc: KubeConfig): void {
  // Private, so typed `any` in client-node's declarations; `[]` reaches it.
  const original = kc['createDispatcher'] as CreateDispatcher | undefined;
  if (patched.has(kc) || typeof original !== 'function') return;
  let cached: { key: string; dispatcher: ReturnType<CreateDispatcher> } | undefined;
  kc['createDispatcher'] = ((cluster, agentOptions) => {
    const key = settingsKey(kc.createDispatcherOptions(cluster as never, agentOptions));
    if (cached?.key === key) return cached.dispatcher;
    const previous = cached?.dispatcher;
    cached = { key, dispatcher: original.call(kc, cluster, agentOptions) };
    // Graceful: requests under way (a watch included) finish on it; nothing new is sent there.
    if (previous !== undefined) void previous.close().catch(() => undefined);
    return cached.dispatcher;
  }) satisfies CreateDispatcher;
  patched.add(kc);
}

/** A digest of the dispatcher settings (Buffers included: a CA, a client certificate and key). */
function settingsKey(options: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(options, (_k, v: unknown) => (typeof v === 'function' ? String(v) : v)))
    .digest('base64');
}
