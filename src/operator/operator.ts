/**
 * The EchoScenario operator: informers on EchoScenarios, pods, services and EndpointSlices feed a
 * work queue with typed keys only (work-key.ts); workers reconcile one key at a time, level-based,
 * from the caches. A pod key (`pod:<ns>/<name>`) pushes each echo endpoint of that pod the whole array it should hold (POST
 * /scenario replaces all of it); an EchoScenario key (`es:<ns>/<name>`) keeps that EchoScenario's finalizer (added while it
 * lives, removed once a deleted one is off every endpoint) and writes its status. Only the Lease
 * holder runs workers.
 */

import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  type KubeConfig,
} from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { AbortChecks, AbortedRuns, AbortWatcher } from './abort.ts';
import { reuseApiConnections } from './api-connections.ts';
import { type EchoScenario, isDeleting, PLURAL } from './echo-scenario.ts';
import { createEchoScenarioApi } from './echo-scenario-api.ts';
import { EventRecorder } from './events.ts';
import { createInformers } from './informers.ts';
import { LeaderElector } from './leader.ts';
import { abortCheckOf, lifecycleOf } from './lifecycle.ts';
import type { OperatorLogger } from './logger.ts';
import { createOperatorMetrics } from './metrics.ts';
import { Planner } from './planner.ts';
import { createPodDispatcher, createPushClient } from './push-client.ts';
import { PushLedger } from './push-ledger.ts';
import { PodReconciler, PushSettling } from './reconcile-pod.ts';
import { ScenarioReconciler } from './reconcile-scenario.ts';
import { Rechecks, RestartCounts, ResyncTimer, type SetTimer } from './resync.ts';
import { specProblems } from './scenario-spec.ts';
import { createReadBackClient, createVerifiedPush } from './verify.ts';
import { idOfKey, podKey, scenarioKey, type WorkKey } from './work-key.ts';
import { WorkQueue } from './work-queue.ts';
import { LeaderGate, Workers } from './workers.ts';

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
  /**
   * `OPERATOR_RESYNC_PERIOD`: how often every pod pushed to is re-checked (read back, re-pushed where
   * it differs), plus up to 10% jitter, in ms. Default 300000 (5 minutes).
   */
  readonly resyncPeriodMs?: number;
  /** The jitter's randomness, [0, 1). Default `Math.random`. */
  readonly random?: () => number;
  /** The resync's timer. Default `setTimeout`. */
  readonly setTimer?: SetTimer;
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
  const core = kc.makeApiClient(CoreV1Api);
  const api = createEchoScenarioApi(custom);
  // The caches first, without handlers: everything below reads them; handlers are wired last.
  const informers = createInformers(
    kc,
    { custom, core, discovery: kc.makeApiClient(DiscoveryV1Api) },
    options.namespace,
  );
  const { scenarios, pods } = informers;
  const queue = new WorkQueue<WorkKey>({
    idOf: idOfKey,
    baseDelayMs: options.retryBaseDelayMs ?? 200,
    maxDelayMs: options.retryMaxDelayMs,
  });
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
  const readBack = createReadBackClient({
    timeoutMs: options.pushTimeoutMs ?? 5000,
    adminToken: options.adminToken,
    dispatcher: podDispatcher,
  });
  // Counted a success only once read back (a push a pod drops silently is `not_applied`).
  const verifiedPush = createVerifiedPush(push, readBack, metrics);
  const rechecks = new Rechecks();
  const restarts = new RestartCounts();
  const ledger = new PushLedger();
  const events = new EventRecorder({ core, logger, instance: options.identity, now });
  const aborts = new AbortedRuns();
  const abortChecks = new AbortChecks();
  const lifecycle = (es: EchoScenario) => lifecycleOf(es, now(), aborts.of(es), abortChecks.of(es));

  // Plans kept between reconciles, made again only after a change they read (issue #16). What a new
  // plan changed is enqueued; a pod's push waits for its changes to settle (PodReconciler).
  const settling = new PushSettling(queue);
  const planner = new Planner({
    caches: {
      scenarios: (namespace) => scenarios.list(namespace),
      pod: (name, namespace) => pods.get(name, namespace),
      service: (name, namespace) => informers.services.get(name, namespace),
      slice: (name, namespace) => informers.endpointSlices.get(name, namespace),
    },
    stopped: (es) => {
      const { stopped, message } = lifecycle(es);
      return stopped === undefined ? undefined : { reason: stopped, message };
    },
    onChange: (namespace, changedScenarios, changedPods) => {
      for (const name of changedScenarios) queue.add(scenarioKey(namespace, name));
      for (const name of changedPods) settling.changed(namespace, name);
    },
  });
  const pod = new PodReconciler({
    planner,
    pod: (name, namespace) => pods.get(name, namespace),
    scenario: (name, namespace) => scenarios.get(name, namespace),
    ledger,
    verifiedPush,
    queue,
    logger,
    now,
    settling,
    quietMs: options.pushQuietMs ?? QUIET_MS,
    readBack,
    rechecks,
  });
  const scenario = new ScenarioReconciler({
    planner,
    scenario: (name, namespace) => scenarios.get(name, namespace),
    api,
    ledger,
    queue,
    lifecycle,
    abortCheck: (es) => abortCheckOf(es, abortChecks.of(es)),
    events,
    logger,
    now,
  });

  // The event handlers: each keeps the planner's view up to date and enqueues what the event touched.
  const restarted = (resource: string) => (error: unknown, delayMs: number) => {
    metrics.watchRestarts.inc({ resource });
    logger.warn({ resource, delayMs, err: String(error) }, 'watch stopped; restarting');
  };
  scenarios.handle({
    onEvent: (type, obj) => {
      const namespace = obj.metadata.namespace ?? '';
      const key = scenarioKey(namespace, obj.metadata.name ?? '');
      if (type === 'delete') {
        queue.cancelAfter(key);
        aborts.forget(obj);
        abortChecks.forget(obj);
        events.forget(obj.metadata.uid ?? '');
      }
      // Itself; what its change does to other EchoScenarios and to pods, the next plan reports.
      queue.add(key);
      for (const name of planner.scenarioChanged(type, obj)) queue.add(podKey(namespace, name));
    },
    onRestart: restarted(PLURAL),
  });
  pods.handle({
    onEvent: (type, obj) => {
      const namespace = obj.metadata?.namespace ?? '';
      const name = obj.metadata?.name ?? '';
      if (type === 'delete') {
        ledger.forgetPod(obj.metadata?.uid ?? '');
        settling.forget(namespace, name);
        restarts.forget(obj.metadata?.uid ?? '');
      } else if (restarts.changed(obj) && type === 'update') {
        // A container restarted in the same pod (same uid and IP) starts with no scenarios.
        logger.info({ namespace, pod: name }, 'container restarted; re-checking its scenarios');
        rechecks.add(podKey(namespace, name).id);
      }
      // Itself; the EchoScenarios whose endpoints it changed, the next plan reports.
      planner.podChanged(type, obj);
      queue.add(podKey(namespace, name));
    },
    onRestart: restarted('pods'),
  });
  informers.services.handle({
    onEvent: (_type, svc) => {
      const namespace = svc.metadata?.namespace ?? '';
      for (const es of planner.serviceChanged(svc)) queue.add(scenarioKey(namespace, es));
    },
    onRestart: restarted('services'),
  });
  informers.endpointSlices.handle({
    onEvent: (type, slice) => {
      const namespace = slice.metadata?.namespace ?? '';
      for (const name of planner.sliceChanged(type, slice)) queue.add(podKey(namespace, name));
    },
    onRestart: restarted('endpointslices'),
  });

  /** Every key of what the caches hold and of what this leader pushed: a new leader starts from all. */
  function enqueueAll(): void {
    const namespaces = new Set<string>();
    for (const informer of informers.all)
      for (const obj of informer.list()) namespaces.add(obj.metadata?.namespace ?? '');
    for (const namespace of namespaces) {
      for (const p of pods.list(namespace)) queue.add(podKey(namespace, p.metadata?.name ?? ''));
      // Endpoints pushed to pods no longer in the cache still need clearing or forgetting.
      for (const [, p] of ledger.inNamespace(namespace)) queue.add(podKey(namespace, p.endpoint.podName));
      for (const es of scenarios.list(namespace)) queue.add(scenarioKey(namespace, es.metadata.name ?? ''));
    }
  }

  // Re-checks what no event reports (a container restarted without a restart count seen, a pod
  // that lost its scenarios otherwise): every pod pushed to is read back, re-pushed where it differs.
  const resync = new ResyncTimer({
    periodMs: options.resyncPeriodMs ?? 300_000,
    ...(options.random === undefined ? {} : { random: options.random }),
    ...(options.setTimer === undefined ? {} : { setTimer: options.setTimer }),
    onResync: () => {
      for (const [namespace, name] of ledger.pods()) {
        const key = podKey(namespace, name);
        rechecks.add(key.id);
        queue.add(key);
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
      scenarios.list().filter(
        (es) =>
          es.spec?.abortWhen !== undefined &&
          !isDeleting(es) &&
          specProblems(es) === undefined &&
          // A check that failed closed keeps being made: its first success puts the experiment back.
          [undefined, 'AbortCheckFailed'].includes(lifecycle(es).stopped),
      ),
    onAbort: (es, message) => {
      aborts.set(es, message);
      logger.warn({ echoScenario: es.metadata.name, namespace: es.metadata.namespace, message }, 'aborted');
      queue.add(scenarioKey(es.metadata.namespace ?? '', es.metadata.name ?? ''));
    },
    onError: (es, message) => {
      void events.record(es, 'Warning', 'AbortCheckFailed', message);
    },
    onCheck: (es, check) => {
      abortChecks.set(es, check);
      logger[check.healthy ? 'info' : 'warn'](
        { echoScenario: es.metadata.name, namespace: es.metadata.namespace, message: check.message },
        check.healthy ? 'abortWhen check healthy' : 'abortWhen check unhealthy',
      );
      // Its status says so, and a check that failed closed (or recovered) changes its plan.
      queue.add(scenarioKey(es.metadata.namespace ?? '', es.metadata.name ?? ''));
    },
    checks: metrics.abortChecks,
  });

  // Workers run only while leading: the gate opens when this replica (re)gains the lease.
  const gate = new LeaderGate();
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
        gate.open();
        abortWatcher.start();
        resync.start();
      } else {
        resync.stop();
        void abortWatcher.stop();
        gate.close();
      }
    },
  });
  const workers = new Workers({
    queue,
    gate,
    isLeader: () => elector.isLeader,
    reconcile: (key) =>
      key.kind === 'pod'
        ? pod.reconcile(key.namespace, key.name)
        : scenario.reconcile(key.namespace, key.name),
    metrics,
    logger,
  });

  return {
    registry,
    get isLeader() {
      return elector.isLeader;
    },
    get ready() {
      return informers.all.every((i) => i.synced);
    },
    async start() {
      await Promise.all(informers.all.map((i) => i.start()));
      workers.start(options.workers ?? 4);
      elector.start();
    },
    async stop(stopOptions = {}) {
      resync.stop();
      await abortWatcher.stop();
      await workers.stop();
      await elector.stop(!stopOptions.crash);
      await Promise.all(informers.all.map((i) => i.stop()));
      await workers.done();
      // Idle pod connections closed (a push still under way was awaited above).
      await podDispatcher.close().catch(() => undefined);
    },
  };
}
