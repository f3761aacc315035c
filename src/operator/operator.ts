/**
 * The EchoScenario operator: informers on EchoScenarios, pods, services and EndpointSlices feed a
 * work queue with typed keys only (work-key.ts); workers reconcile one key at a time, level-based,
 * from the caches. A pod key (`pod:<ns>/<name>`) pushes each echo endpoint of that pod the whole array it should hold (POST
 * /scenario replaces all of it); an EchoScenario key (`es:<ns>/<name>`) keeps that EchoScenario's finalizer (added while it
 * lives, removed once a deleted one is off every endpoint) and writes its status. Only the Lease
 * holder runs workers.
 */

import { setImmediate } from 'node:timers/promises';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  type KubeConfig,
  type V1EndpointSlice,
  type V1Pod,
  type V1Service,
} from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { AbortWatcher } from './abort.ts';
import { reuseApiConnections } from './api-connections.ts';
import { createEchoScenarioApi } from './echo-scenario-api.ts';
import { EventRecorder } from './events.ts';
import { ResilientInformer } from './informer.ts';
import { LeaderElector } from './leader.ts';
import { lifecycleOf } from './lifecycle.ts';
import type { OperatorLogger } from './logger.ts';
import { createOperatorMetrics } from './metrics.ts';
import { type EchoScenario, GROUP, isDeleting, PLURAL, specProblems, VERSION } from './plan.ts';
import { Planner } from './planner.ts';
import { createPodDispatcher, createPushClient } from './push-client.ts';
import { PushLedger } from './push-ledger.ts';
import { PodReconciler } from './reconcile-pod.ts';
import { ScenarioReconciler } from './reconcile-scenario.ts';
import { stripEchoScenario, stripPod, stripService, stripSlice } from './strip.ts';
import { createReadBackClient, createVerifiedPush } from './verify.ts';
import { idOfKey, podKey, scenarioKey, type WorkKey } from './work-key.ts';
import { WorkQueue } from './work-queue.ts';

/** How long a pod's array must stay the same before it is pushed, by default (`pushQuietMs`). */
const QUIET_MS = 50;

export type { OperatorLogger } from './logger.ts';

export interface OperatorOptions {
  readonly kc: KubeConfig;
  readonly logger: OperatorLogger;
  /** Namespace to watch; `undefined` watches all. */
  readonly namespace?: string;
  /** Identity in the Lease; unique per replica. */
  readonly identity: string;
  readonly leaseNamespace: string;
  /** Default `echo-chaos-operator`. */
  readonly leaseName?: string;
  /** Default 15. */
  readonly leaseDurationSeconds?: number;
  /** Default 2000. */
  readonly leaseRetryIntervalMs?: number;
  /** First retry delay of a failing key, in ms. Default 200. */
  readonly retryBaseDelayMs?: number;
  /** Longest retry delay, in ms. Default 30000. */
  readonly retryMaxDelayMs?: number;
  /** Timeout of one push, and of its read-back, in ms. Default 5000. */
  readonly pushTimeoutMs?: number;
  /** The echo pods' `ECHO_ADMIN_TOKEN`, sent with every push as `Authorization: Bearer`. */
  readonly adminToken?: string | undefined;
  /** Default 4. */
  readonly workers?: number;
  /**
   * How long a pod's array must have stayed the same before it is pushed (a burst of changes, seen in
   * several chunks, is pushed once), in ms; a push waits at most 20 times this, and at least 1 s. Default 50.
   */
  readonly pushQuietMs?: number;
  /** Each operator its own registry by default. */
  readonly registry?: Registry;
  readonly now?: () => Date;
  /** `PROMETHEUS_URL`: where `spec.abortWhen` queries go; unset, such EchoScenarios get an event. */
  readonly prometheusUrl?: string | undefined;
  /** `ABORT_POLL_INTERVAL_MS`: how often `abortWhen` queries run. Default 10000. */
  readonly abortPollIntervalMs?: number;
  /** `ABORT_QUERY_TIMEOUT_MS`: timeout of one query. Default 5000. */
  readonly abortQueryTimeoutMs?: number;
}

export interface Operator {
  readonly registry: Registry;
  readonly isLeader: boolean;
  /** All informers have listed once. */
  readonly ready: boolean;
  start(): Promise<void>;
  /** Drains: stops campaigning (releasing the lease unless `crash`), finishes in-flight work, stops watching. */
  stop(options?: { crash?: boolean }): Promise<void>;
}

export function createOperator(options: OperatorOptions): Operator {
  const { kc, logger } = options;
  reuseApiConnections(kc);
  const now = options.now ?? (() => new Date());
  const registry = options.registry ?? new Registry();
  const custom = kc.makeApiClient(CustomObjectsApi);
  const api = createEchoScenarioApi(custom);
  const core = kc.makeApiClient(CoreV1Api);
  const discovery = kc.makeApiClient(DiscoveryV1Api);
  const queue = new WorkQueue<WorkKey>({
    idOf: idOfKey,
    baseDelayMs: options.retryBaseDelayMs ?? 200,
    maxDelayMs: options.retryMaxDelayMs,
  });
  // `scenarios` is read only at scrape time, after the informer below exists.
  const metrics = createOperatorMetrics(
    registry,
    () => queue.length,
    () => scenarios.list().map((es) => es.status?.conditions),
  );
  const podDispatcher = createPodDispatcher();
  const push = createPushClient({
    timeoutMs: options.pushTimeoutMs ?? 5000,
    metrics,
    adminToken: options.adminToken,
    dispatcher: podDispatcher,
  });
  // Every push is read back (GET /scenario, its ETag): a 2xx alone proves nothing.
  const verifiedPush = createVerifiedPush(
    push,
    createReadBackClient({
      timeoutMs: options.pushTimeoutMs ?? 5000,
      adminToken: options.adminToken,
      dispatcher: podDispatcher,
    }),
  );
  const ledger = new PushLedger();
  const events = new EventRecorder({ core, logger, instance: options.identity, now });
  /** `<ns>/<name>` → an abort this leader decided, for that generation, until its status says so. */
  const aborted = new Map<string, { generation: number; message: string }>();
  const abortedOf = (es: EchoScenario) => {
    const key = `${es.metadata.namespace}/${es.metadata.name}`;
    const entry = aborted.get(key);
    if (entry !== undefined && entry.generation !== (es.metadata.generation ?? 0)) aborted.delete(key);
    return entry?.generation === (es.metadata.generation ?? 0) ? entry : undefined;
  };
  const lifecycle = (es: EchoScenario) => lifecycleOf(es, now(), abortedOf(es));
  const ns = options.namespace;
  const nsPath = ns === undefined ? '' : `/namespaces/${ns}`;

  const restarted = (resource: string) => (error: unknown, delayMs: number) => {
    metrics.watchRestarts.inc({ resource });
    logger.warn({ resource, delayMs, err: String(error) }, 'watch stopped; restarting');
  };

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
    onEvent: (type, obj) => {
      if (type === 'delete') {
        queue.cancelAfter(scenarioKey(obj.metadata.namespace ?? '', obj.metadata.name ?? ''));
        aborted.delete(`${obj.metadata.namespace}/${obj.metadata.name}`);
        events.forget(obj.metadata.uid ?? '');
      }
      // Itself; what its change does to other EchoScenarios and to pods, the next plan reports.
      const namespace = obj.metadata.namespace ?? '';
      queue.add(scenarioKey(namespace, obj.metadata.name ?? ''));
      for (const pod of planner.scenarioChanged(type, obj)) queue.add(podKey(namespace, pod));
    },
    onRestart: restarted(PLURAL),
    strip: stripEchoScenario,
  });
  const pods = new ResilientInformer<V1Pod>({
    kc,
    path: `/api/v1${nsPath}/pods`,
    list: () =>
      ns === undefined ? core.listPodForAllNamespaces() : core.listNamespacedPod({ namespace: ns }),
    onEvent: (type, pod) => {
      const namespace = pod.metadata?.namespace ?? '';
      if (type === 'delete') {
        ledger.forgetPod(pod.metadata?.uid ?? '');
        podReconciler.forget(namespace, pod.metadata?.name ?? '');
      }
      // Itself; the EchoScenarios whose endpoints it changed, the next plan reports.
      planner.podChanged(type, pod);
      queue.add(podKey(namespace, pod.metadata?.name ?? ''));
    },
    onRestart: restarted('pods'),
    strip: stripPod,
  });
  const services = new ResilientInformer<V1Service>({
    kc,
    path: `/api/v1${nsPath}/services`,
    list: () =>
      ns === undefined ? core.listServiceForAllNamespaces() : core.listNamespacedService({ namespace: ns }),
    onEvent: (_type, svc) => {
      const namespace = svc.metadata?.namespace ?? '';
      for (const es of planner.serviceChanged(svc)) queue.add(scenarioKey(namespace, es));
    },
    onRestart: restarted('services'),
    strip: stripService,
  });
  const endpointSlices = new ResilientInformer<V1EndpointSlice>({
    kc,
    path: `/apis/discovery.k8s.io/v1${nsPath}/endpointslices`,
    list: () =>
      ns === undefined
        ? discovery.listEndpointSliceForAllNamespaces()
        : discovery.listNamespacedEndpointSlice({ namespace: ns }),
    onEvent: (type, slice) => {
      const namespace = slice.metadata?.namespace ?? '';
      for (const pod of planner.sliceChanged(type, slice)) queue.add(podKey(namespace, pod));
    },
    onRestart: restarted('endpointslices'),
    strip: stripSlice,
  });
  const informers = [scenarios, pods, services, endpointSlices];
  // Plans kept between reconciles, made again only after a change they read (issue #16).
  const planner = new Planner({
    caches: {
      scenarios: (namespace) => scenarios.list(namespace),
      pod: (name, namespace) => pods.get(name, namespace),
      service: (name, namespace) => services.get(name, namespace),
      slice: (name, namespace) => endpointSlices.get(name, namespace),
    },
    stopped: (es) => {
      const { stopped, message } = lifecycle(es);
      return stopped === undefined ? undefined : { reason: stopped, message };
    },
    onChange: (namespace, changedScenarios, changedPods) => {
      for (const name of changedScenarios) queue.add(scenarioKey(namespace, name));
      for (const name of changedPods) podReconciler.arrayChanged(namespace, name);
    },
  });
  const podReconciler = new PodReconciler({
    planner,
    pod: (name, namespace) => pods.get(name, namespace),
    scenario: (name, namespace) => scenarios.get(name, namespace),
    ledger,
    verifiedPush,
    queue,
    logger,
    now,
    quietMs: options.pushQuietMs ?? QUIET_MS,
  });
  const scenarioReconciler = new ScenarioReconciler({
    planner,
    scenario: (name, namespace) => scenarios.get(name, namespace),
    api,
    ledger,
    queue,
    lifecycle,
    events,
    logger,
    now,
  });

  function enqueueNamespace(namespace: string): void {
    for (const pod of pods.list(namespace)) queue.add(podKey(namespace, pod.metadata?.name ?? ''));
    // Endpoints pushed to pods no longer in the cache still need clearing or forgetting.
    for (const [, p] of ledger.inNamespace(namespace)) queue.add(podKey(namespace, p.endpoint.podName));
    for (const es of scenarios.list(namespace)) queue.add(scenarioKey(namespace, es.metadata.name ?? ''));
  }

  function enqueueAll(): void {
    const namespaces = new Set<string>();
    for (const informer of informers)
      for (const obj of informer.list()) namespaces.add(obj.metadata?.namespace ?? '');
    for (const namespace of namespaces) enqueueNamespace(namespace);
  }

  /** The reconciler of the key's kind. */
  function reconcile(key: WorkKey): Promise<void> {
    return key.kind === 'pod'
      ? podReconciler.reconcile(key.namespace, key.name)
      : scenarioReconciler.reconcile(key.namespace, key.name);
  }

  // Workers run only while leading; `leading` resolves when this replica (re)gains the lease.
  let wake: () => void = () => {};
  let leading = new Promise<void>((resolve) => {
    wake = resolve;
  });
  let stopping = false;
  const inFlight = new Set<Promise<void>>();

  async function worker(): Promise<void> {
    while (!stopping) {
      await leading;
      if (stopping) return;
      const key = await queue.get();
      if (key === undefined) return;
      if (!elector.isLeader) {
        queue.done(key);
        queue.add(key);
        continue;
      }
      const { kind } = key;
      const timed = metrics.reconcileSeconds.startTimer({ kind });
      const run = reconcile(key)
        .finally(() => timed())
        .then(
          () => {
            queue.forget(key);
            metrics.reconciles.inc({ kind, result: 'success' });
          },
          (error: unknown) => {
            const delayMs = queue.addRateLimited(key);
            metrics.reconciles.inc({ kind, result: 'error' });
            // A 409 is a write from a stale cache (e.g. a finalizer patch): routine, retried.
            const level = (error as { code?: number }).code === 409 ? 'debug' : 'warn';
            logger[level](
              { key: key.id, delayMs, err: (error as Error).message },
              'reconcile failed; retrying',
            );
          },
        );
      inFlight.add(run);
      await run;
      inFlight.delete(run);
      queue.done(key);
      // A reconcile that writes nothing makes no I/O and a waiting key comes on a resolved promise:
      // without this turn a backlog is drained in one microtask chain, starving watches, the lease,
      // push answers (their timeout fires first) and probes (issue #16).
      await setImmediate();
    }
  }

  const elector = new LeaderElector({
    api: kc.makeApiClient(CoordinationV1Api),
    namespace: options.leaseNamespace,
    name: options.leaseName ?? 'echo-chaos-operator',
    identity: options.identity,
    leaseDurationSeconds: options.leaseDurationSeconds ?? 15,
    retryIntervalMs: options.leaseRetryIntervalMs ?? 2000,
    now,
    onError: (error) => logger.warn({ err: String(error) }, 'lease request failed'),
    onChange: (isLeader) => {
      metrics.leader.set(isLeader ? 1 : 0);
      logger.info(
        { identity: options.identity, leader: isLeader },
        isLeader ? 'became leader' : 'stopped leading',
      );
      if (isLeader) {
        // Another leader may have pushed since: start from nothing known and push everything.
        ledger.clear();
        planner.reset();
        enqueueAll();
        wake();
        abortWatcher.start();
      } else {
        void abortWatcher.stop();
        leading = new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
    },
  });

  const abortWatcher = new AbortWatcher({
    prometheusUrl: options.prometheusUrl,
    intervalMs: options.abortPollIntervalMs ?? 10_000,
    queryTimeoutMs: options.abortQueryTimeoutMs ?? 5000,
    logger,
    now,
    candidates: () =>
      scenarios
        .list()
        .filter(
          (es) =>
            es.spec?.abortWhen !== undefined &&
            !isDeleting(es) &&
            specProblems(es) === undefined &&
            lifecycle(es).stopped === undefined,
        ),
    onAbort: (es, message) => {
      const key = `${es.metadata.namespace}/${es.metadata.name}`;
      aborted.set(key, { generation: es.metadata.generation ?? 0, message });
      logger.warn({ echoScenario: es.metadata.name, namespace: es.metadata.namespace, message }, 'aborted');
      queue.add(scenarioKey(es.metadata.namespace ?? '', es.metadata.name ?? ''));
    },
    onError: (es, message) => {
      void events.record(es, 'Warning', 'AbortCheckFailed', message);
    },
  });

  const workers: Array<Promise<void>> = [];
  return {
    registry,
    get isLeader() {
      return elector.isLeader;
    },
    get ready() {
      return informers.every((i) => i.synced);
    },
    async start() {
      await Promise.all(informers.map((i) => i.start()));
      for (let i = 0; i < (options.workers ?? 4); i++) workers.push(worker());
      elector.start();
    },
    async stop(stopOptions = {}) {
      stopping = true;
      await abortWatcher.stop();
      queue.shutDown();
      wake();
      await Promise.allSettled([...inFlight]);
      await elector.stop(!stopOptions.crash);
      await Promise.all(informers.map((i) => i.stop()));
      await Promise.allSettled(workers);
      // Idle pod connections closed (a push still under way was awaited above).
      await podDispatcher.close().catch(() => undefined);
    },
  };
}
