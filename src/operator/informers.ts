/**
 * The operator's four caches (EchoScenarios, Pods, Services, EndpointSlices), each a
 * {@link ResilientInformer} over one namespace or all, trimmed to what is read of them (strip.ts).
 * Made without handlers: the operator wires those once everything they enqueue into exists.
 */
import type {
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  KubeConfig,
  V1EndpointSlice,
  V1Pod,
  V1Service,
} from '@kubernetes/client-node';
import { type EchoScenario, GROUP, PLURAL, VERSION } from './echo-scenario.ts';
import { ResilientInformer } from './informer.ts';
import { stripEchoScenario, stripPod, stripService, stripSlice } from './strip.ts';

export interface Informers {
  readonly scenarios: ResilientInformer<EchoScenario>;
  readonly pods: ResilientInformer<V1Pod>;
  readonly services: ResilientInformer<V1Service>;
  readonly endpointSlices: ResilientInformer<V1EndpointSlice>;
  /** All four, to start, stop and list together. */
  readonly all: readonly ResilientInformer<EchoScenario | V1Pod | V1Service | V1EndpointSlice>[];
}

export interface InformerApis {
  readonly custom: CustomObjectsApi;
  readonly core: CoreV1Api;
  readonly discovery: DiscoveryV1Api;
}

/** The caches of `namespace` (all namespaces when undefined). */
export function createInformers(
  kc: KubeConfig,
  apis: InformerApis,
  namespace: string | undefined,
): Informers {
  const { custom, core, discovery } = apis;
  const ns = namespace;
  const nsPath = ns === undefined ? '' : `/namespaces/${ns}`;
  const scenarios = new ResilientInformer<EchoScenario>({
    kc,
    path: `/apis/${GROUP}/${VERSION}${nsPath}/${PLURAL}`,
    list: () =>
      ns === undefined
        ? custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL })
        : custom.listNamespacedCustomObject({
            group: GROUP,
            version: VERSION,
            namespace: ns,
            plural: PLURAL,
          }),
    strip: stripEchoScenario,
  });
  const pods = new ResilientInformer<V1Pod>({
    kc,
    path: `/api/v1${nsPath}/pods`,
    list: () =>
      ns === undefined ? core.listPodForAllNamespaces() : core.listNamespacedPod({ namespace: ns }),
    strip: stripPod,
  });
  const services = new ResilientInformer<V1Service>({
    kc,
    path: `/api/v1${nsPath}/services`,
    list: () =>
      ns === undefined ? core.listServiceForAllNamespaces() : core.listNamespacedService({ namespace: ns }),
    strip: stripService,
  });
  const endpointSlices = new ResilientInformer<V1EndpointSlice>({
    kc,
    path: `/apis/discovery.k8s.io/v1${nsPath}/endpointslices`,
    list: () =>
      ns === undefined
        ? discovery.listEndpointSliceForAllNamespaces()
        : discovery.listNamespacedEndpointSlice({ namespace: ns }),
    strip: stripSlice,
  });
  const all = [scenarios, pods, services, endpointSlices] as Informers['all'];
  return { scenarios, pods, services, endpointSlices, all };
}
