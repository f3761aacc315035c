/**
 * The operator's writes to EchoScenarios: merge patches of the finalizer list and of the status
 * subresource (the content type set explicitly: client-node would otherwise send a JSON patch).
 */
import { type CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { type EchoScenario, type EchoScenarioStatus, GROUP, PLURAL, VERSION } from './echo-scenario.ts';

export interface EchoScenarioApi {
  /**
   * Sets an EchoScenario's whole finalizer list (a merge patch replaces lists), guarded by its
   * resourceVersion: a stale cache gets a 409, which throws, so the key is retried.
   * @returns false when the EchoScenario is gone already.
   */
  setFinalizers(namespace: string, es: EchoScenario, finalizers: string[]): Promise<boolean>;
  /** @returns false when the EchoScenario is gone already. */
  writeStatus(namespace: string, name: string, status: EchoScenarioStatus): Promise<boolean>;
}

export function createEchoScenarioApi(custom: CustomObjectsApi): EchoScenarioApi {
  const mergePatch = () => setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  return {
    setFinalizers: (namespace, es, finalizers) =>
      unlessGone(
        custom.patchNamespacedCustomObject(
          {
            group: GROUP,
            version: VERSION,
            namespace,
            plural: PLURAL,
            name: es.metadata.name ?? '',
            body: { metadata: { finalizers, resourceVersion: es.metadata.resourceVersion } },
          },
          mergePatch(),
        ),
      ),
    writeStatus: (namespace, name, status) =>
      unlessGone(
        custom.patchNamespacedCustomObjectStatus(
          { group: GROUP, version: VERSION, namespace, plural: PLURAL, name, body: { status } },
          mergePatch(),
        ),
      ),
  };
}

/** True once `request` succeeds, false on a 404; any other error is thrown. */
async function unlessGone(request: Promise<unknown>): Promise<boolean> {
  try {
    await request;
    return true;
  } catch (error) {
    if ((error as { code?: number }).code === 404) return false;
    throw error;
  }
}
