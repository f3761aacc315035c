/**
 * A cluster for operator tests, in one of two modes:
 *
 * - **double** (no `KUBECONFIG`, what CI runs): the in-process API double of `test/helpers/kube-api.ts`,
 *   namespace {@link NS}, waits bounded at 2 s;
 * - **cluster** (`KUBECONFIG` set): that cluster, a fresh namespace `echo-chaos-test-<random>` deleted
 *   afterwards, waits bounded at `ECHO_CHAOS_TEST_TIMEOUT_MS` (30 s).
 *
 * Everything a test does to the cluster goes through client-node (`f.kc`), so it is the same code in
 * both modes. The operator runs in the test process, and pods are KWOK-style fake pods: Pod objects bound
 * to a fake Node (kept Ready by a heartbeat, as a kubelet would) whose status this fixture writes through
 * the `status` subresource (Running, `podIP` {@link POD_IP}, Ready), and whose `http` container port is a
 * real echo server of this process listening on that IP. Only tests that need control over the API server
 * itself (dropping watches, forcing 410s, counting requests) use `f.api`, the double; they are skipped in
 * cluster mode, with a reason starting with {@link NEEDS_API_CONTROL}.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { networkInterfaces } from 'node:os';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  V1MicroTime,
  type V1Pod,
} from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION } from '../../src/operator/echo-scenario.ts';
import { createOperator, type Operator, type OperatorOptions } from '../../src/operator/operator.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { type KubeApi, type KubeObject, startKubeApi } from '../helpers/kube-api.ts';
import { until as waitUntil } from '../helpers/runtime.ts';

/** Cluster mode: `KUBECONFIG` is set and not empty. */
export const CLUSTER = (process.env['KUBECONFIG'] ?? '') !== '';

/** The namespace of double mode (cluster mode uses a fresh one: `f.namespace`). */
export const NS = 'default';

/** The start of the skip reason of every test that needs the double (`f.api`). */
export const NEEDS_API_CONTROL = 'needs control over the API server';

/** How long one wait may take: a real cluster reconciles at its own pace, the double is held to 2 s. */
export const TIMEOUT_MS = CLUSTER ? positiveInteger('ECHO_CHAOS_TEST_TIMEOUT_MS', 30_000) : 2000;

/**
 * The address of every pod, on which its echo server listens. A real cluster's EndpointSlice validation
 * rejects loopback addresses, so cluster mode takes this host's first non-internal IPv4.
 */
export const POD_IP = process.env['ECHO_CHAOS_TEST_POD_IP'] || (CLUSTER ? hostAddress() : '127.0.0.1');

/** A wait polls the API: gently against a real cluster, whose API priority and fairness may throttle. */
const POLL_MS = CLUSTER ? 200 : 20;
const HEARTBEAT_MS = 10_000;
const NODE_LEASE_NAMESPACE = 'kube-node-lease';
const FAKE_TAINT = { key: 'kwok.x-k8s.io/node', value: 'fake', effect: 'NoSchedule' };
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const silent = { debug() {}, info() {}, warn() {}, error() {} };

function positiveInteger(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value <= 0)
    throw new Error(`${name} must be a positive integer, got ${text}`);
  return value;
}

function hostAddress(): string {
  for (const addresses of Object.values(networkInterfaces())) {
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  throw new Error('no non-internal IPv4 address for the test pods: set ECHO_CHAOS_TEST_POD_IP');
}

function codeOf(error: unknown): number | undefined {
  return (error as { code?: number } | null)?.code;
}

export interface Fixture {
  /** The in-process API double; throws in cluster mode (skip such tests with {@link NEEDS_API_CONTROL}). */
  readonly api: KubeApi;
  readonly kc: KubeConfig;
  readonly core: CoreV1Api;
  readonly custom: CustomObjectsApi;
  /** Where everything of this fixture lives: {@link NS} in double mode, a fresh one in cluster mode. */
  readonly namespace: string;
  readonly echoes: Map<string, RunningEcho>;
  readonly operators: Operator[];
  /** A Running, Ready pod at {@link POD_IP} whose container port `http` is `port`. */
  addPod(name: string, port: number, labels?: Record<string, string>): Promise<KubeObject>;
  /**
   * A pod backed by a new echo server (a restarted pod has a new uid and starts empty), started
   * with `env` (e.g. `ECHO_ADMIN_TOKEN`).
   */
  addEchoPod(
    name: string,
    labels?: Record<string, string>,
    env?: Record<string, string>,
  ): Promise<RunningEcho>;
  /** Deletes a pod at once (no kubelet confirms a graceful deletion of a fake pod). */
  deletePod(name: string): Promise<void>;
  startOperator(overrides?: Partial<OperatorOptions>): Promise<Operator>;
  createScenario(name: string, spec: object): Promise<KubeObject>;
  /** A merge patch of an EchoScenario (`{ spec: ... }`). */
  patchScenario(name: string, patch: object): Promise<KubeObject>;
  deleteScenario(name: string): Promise<void>;
  /** The `Ready` condition and endpoint counts of an EchoScenario, as the API holds them. */
  readiness(name: string): Promise<Readiness>;
  scenariosOf(pod: string): Promise<unknown>;
  close(): Promise<void>;
}

export interface Readiness {
  readonly generation: number | undefined;
  readonly observedGeneration?: number;
  readonly syncedEndpoints?: number;
  readonly totalEndpoints?: number;
  readonly lastSyncTime?: string;
  readonly conditions?: Condition[];
  readonly ready: Condition | undefined;
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

export function spec(path: string, status = 503, target: object = { service: 'echo', port: 'http' }): object {
  return { target, path, responses: [{ status, body: `${path} ${status}` }] };
}

/** A port nobody listens on, at `host`. */
export async function deadPort(host = POD_IP): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = TIMEOUT_MS,
): Promise<void> {
  return waitUntil(what, check, timeoutMs, POLL_MS);
}

export async function startFixture(pods = 5): Promise<Fixture> {
  const run = randomBytes(4).toString('hex');
  const api = CLUSTER ? undefined : await startKubeApi({ bookmarkIntervalMs: 200 });
  const kc = new KubeConfig();
  if (api === undefined) kc.loadFromDefault();
  else kc.loadFromOptions(api.kubeConfigOptions());
  const core = kc.makeApiClient(CoreV1Api);
  const coordination = kc.makeApiClient(CoordinationV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const namespace = CLUSTER ? `echo-chaos-test-${run}` : NS;
  const node = `echo-chaos-test-${run}`;
  const echoes = new Map<string, RunningEcho>();
  const operators: Operator[] = [];
  const scenarios = { group: GROUP, version: VERSION, namespace, plural: PLURAL };
  const readySince = new Date().toISOString().replace(/\.\d+Z$/, 'Z');

  /** What a kubelet reports: Ready, with a fresh heartbeat, and a renewed node Lease. */
  async function heartbeat(): Promise<void> {
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    await core.patchNodeStatus(
      {
        name: node,
        body: {
          status: {
            conditions: [
              {
                type: 'Ready',
                status: 'True',
                reason: 'KubeletReady',
                message: 'fake node of the echo-chaos operator tests',
                lastHeartbeatTime: now,
                lastTransitionTime: readySince,
              },
            ],
            addresses: [{ type: 'InternalIP', address: POD_IP }],
            capacity: { cpu: '32', memory: '256Gi', pods: '110' },
            allocatable: { cpu: '32', memory: '256Gi', pods: '110' },
          },
        },
      },
      merge,
    );
    const spec = { holderIdentity: node, leaseDurationSeconds: 40, renewTime: new V1MicroTime() };
    try {
      await coordination.patchNamespacedLease(
        { name: node, namespace: NODE_LEASE_NAMESPACE, body: { spec } },
        merge,
      );
    } catch (error) {
      if (codeOf(error) !== 404) throw error;
      await coordination.createNamespacedLease({
        namespace: NODE_LEASE_NAMESPACE,
        body: { metadata: { name: node }, spec },
      });
    }
  }

  /** Creates a pod; right after its namespace is created, a cluster may lack its service account. */
  async function createPod(body: V1Pod): Promise<void> {
    await until(`pod ${body.metadata?.name} created (its namespace's service account exists)`, async () => {
      try {
        await core.createNamespacedPod({ namespace, body });
        return true;
      } catch (error) {
        if (codeOf(error) !== 403 || !/service ?account/i.test(String(error))) throw error;
        return false;
      }
    });
  }

  /** Leaves nothing behind in a cluster; an EchoScenario's finalizer needs an operator, so it goes first. */
  async function cleanUp(): Promise<void> {
    const problems: unknown[] = [];
    const note = (error: unknown) => {
      if (codeOf(error) !== 404) problems.push(error);
    };
    const gone = (what: Promise<unknown>) => what.then(() => {}, note);
    const list = (await custom.listNamespacedCustomObject(scenarios).catch((error: unknown) => {
      note(error);
      return { items: [] };
    })) as { items: KubeObject[] };
    for (const es of list.items) {
      await gone(
        custom.patchNamespacedCustomObject(
          { ...scenarios, name: es.metadata.name, body: { metadata: { finalizers: null } } },
          merge,
        ),
      );
      await gone(custom.deleteNamespacedCustomObject({ ...scenarios, name: es.metadata.name }));
    }
    const pods = await core.listNamespacedPod({ namespace }).catch((error: unknown) => {
      note(error);
      return { items: [] };
    });
    for (const pod of pods.items) await gone(fixture.deletePod(pod.metadata!.name!));
    await gone(core.deleteNamespace({ name: namespace }));
    await gone(core.deleteNode({ name: node }));
    await gone(coordination.deleteNamespacedLease({ name: node, namespace: NODE_LEASE_NAMESPACE }));
    if (problems.length > 0) throw new AggregateError(problems, `cleaning up ${namespace} and node ${node}`);
  }

  let beat: NodeJS.Timeout | undefined;
  const fixture: Fixture = {
    get api(): KubeApi {
      if (api === undefined) throw new Error(`${NEEDS_API_CONTROL}: f.api is the in-process double`);
      return api;
    },
    kc,
    core,
    custom,
    namespace,
    echoes,
    operators,
    async addPod(name, port, labels = { app: 'echo' }) {
      await createPod({
        metadata: { name, labels },
        spec: {
          nodeName: node,
          containers: [
            { name: 'echo', image: 'echo-chaos:fake', ports: [{ name: 'http', containerPort: port }] },
          ],
          tolerations: [
            { ...FAKE_TAINT, operator: 'Equal' },
            { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
            { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
          ],
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 0,
        },
      });
      const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      const condition = (type: string) => ({ type, status: 'True', lastTransitionTime: now });
      return (await core.patchNamespacedPodStatus(
        {
          name,
          namespace,
          body: {
            status: {
              phase: 'Running',
              hostIP: POD_IP,
              hostIPs: [{ ip: POD_IP }],
              podIP: POD_IP,
              podIPs: [{ ip: POD_IP }],
              startTime: now,
              conditions: ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map(condition),
              containerStatuses: [
                {
                  name: 'echo',
                  image: 'echo-chaos:fake',
                  imageID: '',
                  ready: true,
                  started: true,
                  restartCount: 0,
                  state: { running: { startedAt: now } },
                },
              ],
            },
          },
        },
        merge,
      )) as KubeObject;
    },
    async addEchoPod(name, labels, env = {}) {
      const echo = await startEcho({ ...env, HOST: POD_IP });
      echoes.set(name, echo);
      await fixture.addPod(name, echo.port, labels);
      return echo;
    },
    async deletePod(name) {
      await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
    },
    async startOperator(overrides = {}) {
      const operator = createOperator({
        kc,
        logger: silent,
        namespace,
        identity: `operator-${operators.length}`,
        leaseNamespace: namespace,
        leaseDurationSeconds: 1,
        leaseRetryIntervalMs: 100,
        retryBaseDelayMs: 50,
        retryMaxDelayMs: 1000,
        pushTimeoutMs: 1000,
        ...overrides,
      });
      operators.push(operator);
      await operator.start();
      return operator;
    },
    async createScenario(name, body) {
      return (await custom.createNamespacedCustomObject({
        ...scenarios,
        body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'EchoScenario', metadata: { name }, spec: body },
      })) as KubeObject;
    },
    async patchScenario(name, patch) {
      return (await custom.patchNamespacedCustomObject(
        { ...scenarios, name, body: patch },
        merge,
      )) as KubeObject;
    },
    async deleteScenario(name) {
      await custom.deleteNamespacedCustomObject({ ...scenarios, name });
    },
    async readiness(name) {
      const obj = (await custom.getNamespacedCustomObject({ ...scenarios, name })) as KubeObject;
      const status = (obj.status ?? {}) as Omit<Readiness, 'generation' | 'ready'>;
      const ready = status.conditions?.find((c) => c.type === 'Ready');
      return { generation: obj.metadata.generation, ...status, ready };
    },
    async scenariosOf(pod) {
      const res = await fetch(`${echoes.get(pod)!.url}/scenario`);
      return res.json();
    },
    async close() {
      clearInterval(beat);
      const stopped = await Promise.allSettled(operators.map((o) => o.stop()));
      try {
        if (CLUSTER) await cleanUp();
      } finally {
        await Promise.all([...echoes.values()].map((e) => e.close()));
        await api?.close();
      }
      for (const s of stopped) if (s.status === 'rejected') throw s.reason;
    },
  };
  try {
    if (CLUSTER) await core.createNamespace({ body: { metadata: { name: namespace } } });
    await core.createNode({
      body: {
        metadata: {
          name: node,
          labels: { type: 'kwok', 'kubernetes.io/hostname': node, 'kubernetes.io/os': 'linux' },
        },
        spec: { taints: [FAKE_TAINT] },
      },
    });
    await heartbeat();
    // A missed beat is made up by the next one, well within the node monitor's grace period (40 s).
    beat = setInterval(() => heartbeat().catch(() => {}), HEARTBEAT_MS);
    beat.unref();
    await core.createNamespacedService({
      namespace,
      body: {
        metadata: { name: 'echo' },
        spec: { selector: { app: 'echo' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
      },
    });
    for (let i = 0; i < pods; i++) await fixture.addEchoPod(`echo-${i}`);
  } catch (error) {
    await fixture.close().catch(() => {});
    throw error;
  }
  return fixture;
}
