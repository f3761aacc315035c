/**
 * `planScenarios` (src/operator/plan.ts) over plain lists, the whole namespace at once: the pure core
 * as the tests check it, and a plan from scratch to compare the planner's kept plans with. The
 * operator asks its indexes instead (src/operator/indexes.ts); this asks the lists, with the same
 * endpoint functions.
 */
import type { V1EndpointSlice, V1Pod, V1Service } from '@kubernetes/client-node';
import type { EchoScenario } from '../../src/operator/echo-scenario.ts';
import {
  type Endpoint,
  SERVICE_NAME_LABEL,
  selectorEndpoints,
  sliceEndpoints,
} from '../../src/operator/endpoints.ts';
import type { StopReason } from '../../src/operator/lifecycle.ts';
import { type NamespacePlan, planScenarios } from '../../src/operator/plan.ts';
import { deriveSpec, targetIdOf } from '../../src/operator/scenario-spec.ts';

/** Plans one namespace from its lists. */
export function planNamespace(
  scenarios: readonly EchoScenario[],
  pods: readonly V1Pod[],
  services: readonly V1Service[],
  endpointSlices: readonly V1EndpointSlice[],
  /** Why a valid EchoScenario is off its pods (lifecycle.ts), or `undefined` when it runs. */
  stopped: (es: EchoScenario) => { reason: StopReason; message: string } | undefined = () => undefined,
): NamespacePlan {
  const serviceNames = new Set(services.map((s) => s.metadata?.name));
  const podsByName = new Map(pods.map((p) => [p.metadata?.name ?? '', p]));
  // One endpoint list per target, shared by its EchoScenarios, as the operator's indexes keep it.
  const targets = new Map<string, readonly Endpoint[]>();
  return planScenarios(scenarios, {
    serviceExists: (name) => serviceNames.has(name),
    endpointsOf: (target) => {
      const id = targetIdOf(target);
      let found = targets.get(id);
      if (found === undefined) {
        found =
          target.service !== undefined
            ? sliceEndpoints(
                endpointSlices.filter((s) => s.metadata?.labels?.[SERVICE_NAME_LABEL] === target.service),
                target.port!,
                (name) => podsByName.get(name),
              )
            : selectorEndpoints(target.selector!.matchLabels!, target.port!, pods);
        targets.set(id, found);
      }
      return found;
    },
    specOf: deriveSpec,
    stopped,
  });
}
