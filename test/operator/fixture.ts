/**
 * A cluster for operator tests: the in-process API double, a Service `echo`, and pods that are real
 * echo servers on loopback ports (`status.podIP` 127.0.0.1, container port `http` = the server's port).
 */
import { createServer } from 'node:net';
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { createOperator, type Operator, type OperatorOptions } from '../../src/operator/operator.ts';
import { GROUP, PLURAL, VERSION } from '../../src/operator/plan.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { type KubeApi, type KubeObject, startKubeApi } from '../helpers/kube-api.ts';

export const NS = 'default';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

export interface Fixture {
  readonly api: KubeApi;
  readonly kc: KubeConfig;
  readonly custom: CustomObjectsApi;
  readonly echoes: Map<string, RunningEcho>;
  readonly operators: Operator[];
  addPod(name: string, port: number, labels?: Record<string, string>): KubeObject;
  /** A pod backed by a new echo server (a restarted pod has a new uid and starts empty). */
  addEchoPod(name: string, labels?: Record<string, string>): Promise<RunningEcho>;
  startOperator(overrides?: Partial<OperatorOptions>): Promise<Operator>;
  createScenario(name: string, spec: object): Promise<KubeObject>;
  scenariosOf(pod: string): Promise<unknown>;
  close(): Promise<void>;
}

export function spec(path: string, status = 503, target: object = { service: 'echo', port: 'http' }): object {
  return { target, path, responses: [{ status, body: `${path} ${status}` }] };
}

/** A loopback port nobody listens on. */
export async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 2000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs}ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function startFixture(pods = 5): Promise<Fixture> {
  const api = await startKubeApi({ bookmarkIntervalMs: 200 });
  const kc = new KubeConfig();
  kc.loadFromOptions(api.kubeConfigOptions());
  const custom = kc.makeApiClient(CustomObjectsApi);
  const echoes = new Map<string, RunningEcho>();
  const operators: Operator[] = [];
  api.create('services', {
    metadata: { name: 'echo', namespace: NS },
    spec: { selector: { app: 'echo' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
  });
  const fixture: Fixture = {
    api,
    kc,
    custom,
    echoes,
    operators,
    addPod(name, port, labels = { app: 'echo' }) {
      return api.create('pods', {
        metadata: { name, namespace: NS, labels },
        spec: { containers: [{ name: 'echo', ports: [{ name: 'http', containerPort: port }] }] },
        status: {
          phase: 'Running',
          podIP: '127.0.0.1',
          conditions: [{ type: 'Ready', status: 'True' }],
        },
      });
    },
    async addEchoPod(name, labels) {
      const echo = await startEcho();
      echoes.set(name, echo);
      fixture.addPod(name, echo.port, labels);
      return echo;
    },
    async startOperator(overrides = {}) {
      const operator = createOperator({
        kc,
        logger: silent,
        namespace: NS,
        identity: `operator-${operators.length}`,
        leaseNamespace: NS,
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
        group: GROUP,
        version: VERSION,
        namespace: NS,
        plural: PLURAL,
        body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'EchoScenario', metadata: { name }, spec: body },
      })) as KubeObject;
    },
    async scenariosOf(pod) {
      const res = await fetch(`${echoes.get(pod)!.url}/scenario`);
      return res.json();
    },
    async close() {
      await Promise.all(operators.map((o) => o.stop()));
      await Promise.all([...echoes.values()].map((e) => e.close()));
      await api.close();
    },
  };
  for (let i = 0; i < pods; i++) await fixture.addEchoPod(`echo-${i}`);
  return fixture;
}

/** The `Ready` condition and endpoint counts of an EchoScenario, as the API holds them. */
export function readiness(api: KubeApi, name: string) {
  const obj = api.get(PLURAL, NS, name);
  const status = (obj?.status ?? {}) as {
    observedGeneration?: number;
    syncedEndpoints?: number;
    totalEndpoints?: number;
    lastSyncTime?: string;
    conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
  };
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  return { generation: obj?.metadata.generation, ...status, ready };
}
