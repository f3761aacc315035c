/**
 * An in-process Kubernetes API server double for tests: node:http on 127.0.0.1 and a free port,
 * speaking the real REST and watch protocol, so the real `@kubernetes/client-node` talks to it as it
 * would to a cluster. It keeps pods, services, events (core v1), endpointslices (discovery.k8s.io/v1), leases
 * (coordination.k8s.io/v1) and echoscenarios (echo-chaos.dev/v1alpha1, with a status subresource),
 * and the cluster-scoped namespaces and nodes (nodes with a status subresource; deleting a namespace
 * deletes only the Namespace object).
 *
 * What it implements of the real thing:
 * - one resourceVersion counter for everything; lists carry `metadata.resourceVersion`;
 * - watch (`?watch=true&resourceVersion=N&allowWatchBookmarks=true`): newline-delimited JSON events
 *   ADDED/MODIFIED/DELETED after N (all current objects as ADDED when N is empty or `0`), BOOKMARK
 *   events when asked for, and, when N is older than the kept history, an ERROR event carrying a
 *   410 `Status` (Expired) on a 200 response, as the real server does;
 * - create (409 AlreadyExists), get, update (409 Conflict on a stale resourceVersion), merge-patch
 *   (`application/merge-patch+json`; other patch types are a 415), delete; `metadata.generation`
 *   bumps when `spec` changes; `/status` changes status only, without a generation bump, and the
 *   main resource ignores status for kinds with the subresource;
 * - a merge patch carrying `metadata.resourceVersion` is guarded by it (409 when stale), as a
 *   precondition, like the real server;
 * - finalizers: updates and patches keep `metadata.finalizers` (clients cannot set
 *   `deletionTimestamp`); DELETE of an object with finalizers only marks it (`deletionTimestamp`,
 *   `deletionGracePeriodSeconds: 0`, generation bumped, a MODIFIED event, 200 with the object), no new
 *   finalizer may be added to it then (422), and the update or patch that empties its finalizers
 *   removes it (DELETED). `api.delete()` follows the same rule unless given `{ force: true }`;
 * - an EndpointSlice controller, like kube-controller-manager's (option `endpointSliceController`,
 *   on by default): every pod or service change recomputes, for each Service with a non-empty
 *   `spec.selector`, the EndpointSlice `<service>-auto` (labels `kubernetes.io/service-name` and
 *   `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`, addressType IPv4):
 *   one endpoint per selected pod with a `status.podIP` (`ready` from its Ready condition, false once
 *   terminating, `serving`, `terminating` when it has a deletionTimestamp, `targetRef` to the Pod),
 *   and each Service port as `{name, port: the targetPort, a named one resolved on the pods,
 *   protocol}`. Pods whose named target ports differ go to further slices `<service>-auto-<n>`, as the
 *   real controller groups endpoints by port mapping. A slice is written only when its content
 *   changes and is deleted with its Service (or selector); Services without a selector are left to
 *   hand-made slices;
 * - `labelSelector` of the `a=b,c=d` form on list and watch;
 * - EchoScenario admission against the generated CRD's `openAPIV3Schema` (`scripts/gen-crd.ts`, built
 *   from the scenario schema): first structural pruning (fields the schema does not name are dropped,
 *   `x-kubernetes-preserve-unknown-fields` honored, each one named in a `Warning` header as the
 *   server's default `fieldValidation=Warn` does; on `/status`, within status), then OpenAPI value
 *   validation (ajv) and the `x-kubernetes-validations` CEL rules (crd-structural.ts), rejected with a
 *   422 `Status` (Invalid) listing the causes.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Ajv } from 'ajv';
import { echoScenarioSchema } from '../../scripts/gen-crd.ts';
import { celViolations, pruneUnknownFields, type StructuralSchema } from './crd-structural.ts';

export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    [key: string]: unknown;
  };
  spec?: unknown;
  status?: unknown;
  [key: string]: unknown;
};

interface ResourceType {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly statusSubresource: boolean;
  /** Namespaces and nodes: no namespace in their paths, none on the object. */
  readonly clusterScoped?: boolean;
  readonly validate?: (obj: KubeObject) => Array<{ field: string; message: string }>;
  /**
   * Structural pruning of a whole object (`part` undefined) or of its status (`part: 'status'`):
   * the value without the fields its schema does not name, and their paths.
   */
  readonly prune?: (value: unknown, part?: 'status') => { value: unknown; pruned: string[] };
}

// The generated CRD's openAPIV3Schema (from the one scenario schema), as the API server would apply it:
// ajv for its value validation (ajv ignores the x-kubernetes-* keywords), crd-structural.ts for its
// pruning and its CEL rules.
const crdSchema = echoScenarioSchema() as StructuralSchema;
const crdCheck = new Ajv({ strict: false, validateFormats: false, allErrors: true }).compile(crdSchema);

/** The checks the generated CRD's schema makes on an EchoScenario: OpenAPI, then CEL. */
function validateEchoScenario(obj: KubeObject): Array<{ field: string; message: string }> {
  const causes = crdCheck(obj)
    ? []
    : (crdCheck.errors ?? []).map((e) => ({
        field: e.instancePath.slice(1).replaceAll('/', '.') || '<root>',
        message: e.message ?? 'invalid',
      }));
  for (const v of celViolations(obj, crdSchema)) causes.push({ field: v.field, message: v.message });
  return causes;
}

function pruneEchoScenario(value: unknown, part?: 'status'): { value: unknown; pruned: string[] } {
  return part === 'status'
    ? pruneUnknownFields(value, crdSchema.properties?.['status'] ?? {}, { path: 'status' })
    : pruneUnknownFields(value, crdSchema, { root: true });
}

/**
 * A Lease's `acquireTime` and `renewTime` are MicroTime: the real server cannot parse anything but
 * RFC 3339 with exactly six fractional digits (a plain JavaScript Date has three).
 */
function validateLease(obj: KubeObject): Array<{ field: string; message: string }> {
  const spec = (obj.spec ?? {}) as Record<string, unknown>;
  return ['acquireTime', 'renewTime']
    .filter(
      (key) => spec[key] !== undefined && !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/.test(String(spec[key])),
    )
    .map((key) => ({
      field: `spec.${key}`,
      message: `cannot parse ${JSON.stringify(spec[key])} as MicroTime (RFC 3339 with 6 fractional digits)`,
    }));
}

const RESOURCES: Record<string, ResourceType> = {
  pods: { group: '', version: 'v1', kind: 'Pod', statusSubresource: true },
  services: { group: '', version: 'v1', kind: 'Service', statusSubresource: true },
  endpointslices: {
    group: 'discovery.k8s.io',
    version: 'v1',
    kind: 'EndpointSlice',
    statusSubresource: false,
  },
  leases: {
    group: 'coordination.k8s.io',
    version: 'v1',
    kind: 'Lease',
    statusSubresource: false,
    validate: validateLease,
  },
  namespaces: { group: '', version: 'v1', kind: 'Namespace', statusSubresource: false, clusterScoped: true },
  nodes: { group: '', version: 'v1', kind: 'Node', statusSubresource: true, clusterScoped: true },
  events: { group: '', version: 'v1', kind: 'Event', statusSubresource: false },
  echoscenarios: {
    group: 'echo-chaos.dev',
    version: 'v1alpha1',
    kind: 'EchoScenario',
    statusSubresource: true,
    validate: validateEchoScenario,
    prune: pruneEchoScenario,
  },
};

interface WatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: KubeObject;
  readonly rv: number;
}

interface OpenWatch {
  readonly plural: string;
  readonly namespace: string | undefined;
  readonly selector: Record<string, string>;
  readonly res: ServerResponse;
  readonly timer: NodeJS.Timeout | undefined;
}

/** Counts of requests by `VERB plural[/sub]`, e.g. `PATCH echoscenarios/status`, `WATCH pods`. */
export type RequestCounts = Map<string, number>;

export interface KubeApiOptions {
  /** How often an open watch that asked for bookmarks gets one, in milliseconds. Default 500. */
  readonly bookmarkIntervalMs?: number;
  /** Maintain EndpointSlices of Services with a selector, as the cluster's controller does. Default true. */
  readonly endpointSliceController?: boolean;
}

export interface KubeApi {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  readonly requests: RequestCounts;
  /** A kubeconfig file's text pointing at the double (JSON, which is YAML), for `KUBECONFIG`. */
  kubeconfigFile(): string;
  /** A kubeconfig (YAML-free object form for `KubeConfig.loadFromOptions`) pointing at the double. */
  kubeConfigOptions(): object;
  /** Puts an object in place directly (no admission), as a controller of the cluster would. */
  create(plural: string, obj: KubeObject): KubeObject;
  get(plural: string, namespace: string, name: string): KubeObject | undefined;
  list(plural: string, namespace?: string): KubeObject[];
  /** Replaces an object directly (status included), bumping resourceVersion. */
  update(plural: string, obj: KubeObject): KubeObject;
  /**
   * Deletes as the API does: an object with finalizers is only marked (`deletionTimestamp`) until they
   * are removed; `force` removes it at once regardless.
   */
  delete(plural: string, namespace: string, name: string, options?: { force?: boolean }): void;
  /** Destroys every open watch connection abruptly (a dropped connection, not a clean end). */
  dropWatches(): number;
  /**
   * Forgets all history so far: every watch resuming from an older resourceVersion gets 410 Gone;
   * open watches get the ERROR 410 event and are closed, as after an etcd compaction.
   */
  expireHistory(): number;
  /**
   * Refuses requests as a misconfigured RBAC would: `refuse` gets each request as counted in
   * `requests` (e.g. `PATCH echoscenarios`) and returns a status code to answer with, or
   * `undefined` to serve it. `undefined` removes it.
   */
  refuse(refuse: ((request: string) => number | undefined) | undefined): void;
  /** The current resourceVersion (of the last change). */
  readonly resourceVersion: string;
  /**
   * Compacts history up to `resourceVersion` (an etcd compaction): a watch resuming from an older
   * version gets 410 Gone; open watches go on.
   */
  compactHistory(resourceVersion: string): void;
  /** Open watch connections, by plural. */
  openWatches(plural?: string): number;
  /**
   * Bookmarks written so far to watches of `plural` that carry `resourceVersion` or a newer one: what
   * a test waits on before compacting, so that a watch can only have moved past by bookmarks.
   */
  bookmarksSince(plural: string, resourceVersion: string): number;
  close(): Promise<void>;
}

const SERVICE_NAME = 'kubernetes.io/service-name';
const MANAGED_BY = 'endpointslice.kubernetes.io/managed-by';
const SLICE_CONTROLLER = 'endpointslice-controller.k8s.io';

export async function startKubeApi(options: KubeApiOptions = {}): Promise<KubeApi> {
  const bookmarkIntervalMs = options.bookmarkIntervalMs ?? 500;
  const endpointSliceController = options.endpointSliceController ?? true;
  const store = new Map<string, Map<string, KubeObject>>();
  for (const plural of Object.keys(RESOURCES)) store.set(plural, new Map());
  const history: WatchEvent[] = [];
  let rv = 1;
  let oldestRv = 0; // a watch from below this is 410 Gone
  const watches = new Set<OpenWatch>();
  /** The resourceVersion of every bookmark written, by plural, oldest first. */
  const bookmarked = new Map<string, number[]>();
  const sockets = new Set<Socket>();
  const requests: RequestCounts = new Map();
  let refusal: ((request: string) => number | undefined) | undefined;

  const keyOf = (obj: KubeObject) => `${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
  const clone = <T>(value: T): T => structuredClone(value);

  function matches(obj: KubeObject, selector: Record<string, string>): boolean {
    const labels = obj.metadata.labels ?? {};
    return Object.entries(selector).every(([k, v]) => labels[k] === v);
  }

  function emit(plural: string, type: WatchEvent['type'], obj: KubeObject): void {
    const event: WatchEvent = { type, object: clone(obj), rv: Number(obj.metadata.resourceVersion) };
    history.push(event);
    for (const w of watches) {
      if (w.plural !== plural) continue;
      if (w.namespace !== undefined && w.namespace !== obj.metadata.namespace) continue;
      if (!matches(obj, w.selector) || w.res.writableEnded) continue;
      w.res.write(`${JSON.stringify({ type, object: event.object })}\n`);
    }
  }

  function typed(plural: string, obj: KubeObject): KubeObject {
    const type = RESOURCES[plural]!;
    return {
      ...obj,
      apiVersion: type.group === '' ? type.version : `${type.group}/${type.version}`,
      kind: type.kind,
    };
  }

  function put(plural: string, obj: KubeObject, type: WatchEvent['type']): KubeObject {
    rv++;
    const stored = clone(obj);
    stored.metadata.resourceVersion = String(rv);
    store.get(plural)!.set(keyOf(stored), stored);
    emit(plural, type, stored);
    controllers(plural, stored.metadata.namespace);
    return clone(stored);
  }

  function createDirect(plural: string, input: KubeObject): KubeObject {
    const obj = typed(plural, clone(input));
    obj.metadata = {
      ...obj.metadata,
      uid: randomUUID(),
      generation: 1,
      creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    return put(plural, obj, 'ADDED');
  }

  /** An object with finalizers is only marked for deletion (unless `force`); without, it goes. */
  function deleteDirect(
    plural: string,
    namespace: string,
    name: string,
    force = false,
  ): KubeObject | undefined {
    const items = store.get(plural)!;
    const obj = items.get(`${namespace}/${name}`);
    if (obj === undefined) return undefined;
    if (!force && finalizersOf(obj).length > 0) {
      if (obj.metadata['deletionTimestamp'] !== undefined) return clone(obj);
      const marked = clone(obj);
      marked.metadata['deletionTimestamp'] = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      marked.metadata['deletionGracePeriodSeconds'] = 0;
      if (marked.metadata.generation !== undefined) marked.metadata.generation++;
      return put(plural, marked, 'MODIFIED');
    }
    items.delete(`${namespace}/${name}`);
    rv++;
    obj.metadata.resourceVersion = String(rv);
    emit(plural, 'DELETED', obj);
    controllers(plural, obj.metadata.namespace);
    return clone(obj);
  }

  function finalizersOf(obj: KubeObject): string[] {
    return (obj.metadata['finalizers'] as string[] | null | undefined) ?? [];
  }

  /** Stores an update; one that leaves a deleting object without finalizers removes it instead. */
  function putOrRemove(plural: string, obj: KubeObject): KubeObject {
    if (obj.metadata['deletionTimestamp'] === undefined || finalizersOf(obj).length > 0) {
      return put(plural, obj, 'MODIFIED');
    }
    delete obj.metadata['finalizers'];
    store.get(plural)!.set(keyOf(obj), clone(obj));
    return deleteDirect(plural, obj.metadata.namespace ?? '', obj.metadata.name, true)!;
  }

  /** The cluster's controllers that react to a change of `plural` in `namespace`. */
  function controllers(plural: string, namespace: string | undefined): void {
    if (endpointSliceController && namespace !== undefined && (plural === 'pods' || plural === 'services')) {
      syncEndpointSlices(namespace);
    }
  }

  /**
   * The EndpointSlice controller: brings the managed slices of `namespace` in line with its Services
   * that have a selector and the pods they select. Endpoints are grouped by their port mapping (a
   * named targetPort may resolve differently per pod); a group keeps the slice that already has its
   * ports, else takes `<service>-auto`, else `<service>-auto-<n>`.
   */
  function syncEndpointSlices(namespace: string): void {
    type Port = { name?: string; port?: number; targetPort?: number | string; protocol?: string };
    type PodView = {
      spec?: {
        containers?: Array<{ ports?: Array<{ name?: string; containerPort: number }> }>;
        nodeName?: string;
      };
      status?: { phase?: string; podIP?: string; conditions?: Array<{ type: string; status: string }> };
    };
    const slices = store.get('endpointslices')!;
    const inNamespace = (o: KubeObject) => o.metadata.namespace === namespace;
    const pods = [...store.get('pods')!.values()]
      .filter(inNamespace)
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    const managed = [...slices.values()].filter(
      (s) => inNamespace(s) && s.metadata.labels?.[MANAGED_BY] === SLICE_CONTROLLER,
    );
    const wanted = new Map<string, KubeObject>();
    for (const svc of store.get('services')!.values()) {
      if (!inNamespace(svc)) continue;
      const spec = (svc.spec ?? {}) as { selector?: Record<string, string>; ports?: Port[] };
      const selector = spec.selector ?? {};
      if (Object.keys(selector).length === 0) continue;
      const resolve = (pod: PodView | undefined) =>
        (spec.ports ?? []).flatMap((p) => {
          const target = p.targetPort ?? p.port;
          const port =
            typeof target === 'number'
              ? target
              : /^\d+$/.test(target ?? '')
                ? Number(target)
                : (pod?.spec?.containers ?? []).flatMap((c) => c.ports ?? []).find((c) => c.name === target)
                    ?.containerPort;
          return port === undefined ? [] : [{ name: p.name ?? '', port, protocol: p.protocol ?? 'TCP' }];
        });
      const groups = new Map<string, { ports: object[]; endpoints: object[] }>();
      for (const pod of pods) {
        const view = pod as PodView;
        const ip = view.status?.podIP;
        const phase = view.status?.phase;
        if (!matches(pod, selector) || !ip || phase === 'Succeeded' || phase === 'Failed') continue;
        const ports = resolve(view);
        const group = groups.get(JSON.stringify(ports)) ?? { ports, endpoints: [] };
        groups.set(JSON.stringify(ports), group);
        const ready = (view.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
        const terminating = pod.metadata['deletionTimestamp'] !== undefined;
        group.endpoints.push({
          addresses: [ip],
          conditions: { ready: ready && !terminating, serving: ready, terminating },
          ...(view.spec?.nodeName === undefined ? {} : { nodeName: view.spec.nodeName }),
          targetRef: { kind: 'Pod', namespace, name: pod.metadata.name, uid: pod.metadata.uid },
        });
      }
      // No pod: one empty slice with the ports that resolve without one, as the real controller keeps.
      if (groups.size === 0) groups.set('', { ports: resolve(undefined), endpoints: [] });
      const service = svc.metadata.name;
      const own = managed.filter((s) => s.metadata.labels?.[SERVICE_NAME] === service);
      const taken = new Set<string>();
      const named: Array<[string, { ports: object[]; endpoints: object[] }]> = [];
      const unnamed: Array<{ ports: object[]; endpoints: object[] }> = [];
      for (const [key, group] of groups) {
        const reuse = own.find((s) => !taken.has(s.metadata.name) && JSON.stringify(s['ports']) === key);
        if (reuse === undefined) unnamed.push(group);
        else {
          taken.add(reuse.metadata.name);
          named.push([reuse.metadata.name, group]);
        }
      }
      for (const group of unnamed) {
        let name = `${service}-auto`;
        for (let n = 1; taken.has(name); n++) name = `${service}-auto-${n}`;
        taken.add(name);
        named.push([name, group]);
      }
      for (const [name, group] of named) {
        wanted.set(name, {
          metadata: {
            name,
            namespace,
            labels: { [SERVICE_NAME]: service, [MANAGED_BY]: SLICE_CONTROLLER },
            ownerReferences: [
              { apiVersion: 'v1', kind: 'Service', name: service, uid: svc.metadata.uid, controller: true },
            ],
          },
          addressType: 'IPv4',
          endpoints: group.endpoints,
          ports: group.ports,
        });
      }
    }
    const content = (o: KubeObject) =>
      JSON.stringify([o.metadata.labels, o['addressType'], o['endpoints'], o['ports']]);
    for (const [name, slice] of wanted) {
      const existing = slices.get(`${namespace}/${name}`);
      if (existing === undefined) createDirect('endpointslices', slice);
      else if (content(existing) !== content(slice)) {
        put(
          'endpointslices',
          { ...existing, ...slice, metadata: { ...existing.metadata, ...slice.metadata } },
          'MODIFIED',
        );
      }
    }
    for (const slice of managed) {
      if (!wanted.has(slice.metadata.name))
        deleteDirect('endpointslices', namespace, slice.metadata.name, true);
    }
  }

  function status(
    res: ServerResponse,
    code: number,
    reason: string,
    message: string,
    details?: object,
  ): void {
    send(res, code, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason,
      code,
      ...(details === undefined ? {} : { details }),
    });
  }

  function send(res: ServerResponse, code: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  function parseSelector(text: string | null): Record<string, string> {
    const selector: Record<string, string> = {};
    if (text === null || text === '') return selector;
    for (const term of text.split(',')) {
      const [k, v] = term.split('=');
      if (k !== undefined && v !== undefined) selector[k.trim()] = v.trim();
    }
    return selector;
  }

  function startWatch(
    req: IncomingMessage,
    res: ServerResponse,
    plural: string,
    namespace: string | undefined,
    url: URL,
  ): void {
    const selector = parseSelector(url.searchParams.get('labelSelector'));
    const fromText = url.searchParams.get('resourceVersion') ?? '';
    const bookmarks = url.searchParams.get('allowWatchBookmarks') === 'true';
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    const write = (type: string, object: unknown) => {
      if (!res.writableEnded) res.write(`${JSON.stringify({ type, object })}\n`);
    };
    const visible = (obj: KubeObject) =>
      (namespace === undefined || obj.metadata.namespace === namespace) && matches(obj, selector);
    if (fromText === '' || fromText === '0') {
      for (const obj of store.get(plural)!.values()) if (visible(obj)) write('ADDED', obj);
    } else {
      const from = Number(fromText);
      if (!Number.isFinite(from) || from < oldestRv) {
        write('ERROR', {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: `too old resource version: ${fromText} (${oldestRv})`,
          reason: 'Expired',
          code: 410,
        });
        res.end();
        return;
      }
      for (const event of history) {
        if (
          event.rv > from &&
          RESOURCES[plural] === RESOURCES[pluralOf(event.object)] &&
          visible(event.object)
        ) {
          write(event.type, event.object);
        }
      }
    }
    const timer = bookmarks
      ? setInterval(() => {
          if (res.writableEnded) return;
          write('BOOKMARK', {
            kind: RESOURCES[plural]!.kind,
            apiVersion: typed(plural, { metadata: { name: '' } }).apiVersion,
            metadata: { resourceVersion: String(rv) },
          });
          const sent = bookmarked.get(plural) ?? [];
          sent.push(rv);
          bookmarked.set(plural, sent);
        }, bookmarkIntervalMs)
      : undefined;
    const watch: OpenWatch = { plural, namespace, selector, res, timer };
    watches.add(watch);
    const cleanup = () => {
      if (timer !== undefined) clearInterval(timer);
      watches.delete(watch);
    };
    req.on('close', cleanup);
    res.on('close', cleanup);
  }

  function pluralOf(obj: KubeObject): string {
    for (const [plural, type] of Object.entries(RESOURCES)) if (type.kind === obj.kind) return plural;
    return '';
  }

  function mergePatch(target: unknown, patch: unknown): unknown {
    if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return clone(patch);
    const out: Record<string, unknown> =
      typeof target === 'object' && target !== null && !Array.isArray(target)
        ? { ...(target as Record<string, unknown>) }
        : {};
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) delete out[k];
      else out[k] = mergePatch(out[k], v);
    }
    return out;
  }

  async function readBody(req: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }

  /**
   * Structural pruning of what a client sent (a whole object, or the status of a `/status` write), each
   * field dropped named in a `Warning` header, as the server's default `fieldValidation=Warn` does.
   */
  function pruned<T>(res: ServerResponse, plural: string, value: T, part?: 'status'): T {
    const prune = RESOURCES[plural]!.prune;
    if (prune === undefined || value === undefined) return value;
    const out = prune(value, part);
    if (out.pruned.length > 0)
      res.setHeader(
        'Warning',
        out.pruned.map((path) => `299 - ${JSON.stringify(`unknown field ${JSON.stringify(path)}`)}`),
      );
    return out.value as T;
  }

  /** Applies a create/update result to the store: status subresource rules, generation, validation. */
  function write(
    res: ServerResponse,
    plural: string,
    existing: KubeObject,
    sent: KubeObject,
    subresource: string | undefined,
  ): void {
    const type = RESOURCES[plural]!;
    const result = clone(existing);
    if (subresource === 'status') {
      result.status = pruned(res, plural, sent.status, 'status');
    } else {
      const next = pruned(res, plural, sent);
      const { status: _ignored, ...rest } = next;
      Object.assign(result, type.statusSubresource ? { ...rest, status: existing.status } : next);
      if (!type.statusSubresource && next.status === undefined) delete result.status;
      result.metadata = {
        ...existing.metadata,
        ...(next.metadata.labels === undefined ? {} : { labels: next.metadata.labels }),
        ...(next.metadata['annotations'] === undefined ? {} : { annotations: next.metadata['annotations'] }),
      };
      // Finalizers are the client's to set (a merge patch with `null` or `[]` clears them).
      const finalizers = finalizersOf(next);
      if (finalizers.length === 0) delete result.metadata['finalizers'];
      else result.metadata['finalizers'] = finalizers;
      if (JSON.stringify(existing.spec) !== JSON.stringify(result.spec)) {
        result.metadata.generation = (existing.metadata.generation ?? 1) + 1;
      }
      const causes = type.validate?.(result) ?? [];
      const added = finalizers.filter((f) => !finalizersOf(existing).includes(f));
      if (existing.metadata['deletionTimestamp'] !== undefined && added.length > 0) {
        causes.push({
          field: 'metadata.finalizers',
          message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}`,
        });
      }
      if (causes.length > 0) {
        invalid(res, plural, result, causes);
        return;
      }
    }
    if (JSON.stringify(result) === JSON.stringify(existing)) {
      send(res, 200, existing);
      return;
    }
    send(res, 200, putOrRemove(plural, result));
  }

  function invalid(
    res: ServerResponse,
    plural: string,
    obj: KubeObject,
    causes: Array<{ field: string; message: string }>,
  ): void {
    const type = RESOURCES[plural]!;
    status(
      res,
      422,
      'Invalid',
      `${type.kind}.${type.group} "${obj.metadata.name}" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(', ')}`,
      {
        name: obj.metadata.name,
        group: type.group,
        kind: type.kind,
        causes: causes.map((c) => ({ reason: 'FieldValueInvalid', message: c.message, field: c.field })),
      },
    );
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const parts = url.pathname.split('/').filter((p) => p !== '');
    let rest: string[];
    if (parts[0] === 'api') rest = parts.slice(2);
    else if (parts[0] === 'apis') rest = parts.slice(3);
    else return status(res, 404, 'NotFound', `the server could not find the requested resource`);
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const [plural, name, subresource] = rest;
    if (plural === undefined || RESOURCES[plural] === undefined) {
      return status(res, 404, 'NotFound', 'the server could not find the requested resource');
    }
    const type = RESOURCES[plural];
    if (type.clusterScoped === true && namespace !== undefined) {
      return status(res, 404, 'NotFound', `${plural} are not namespaced`);
    }
    const items = store.get(plural)!;
    const isWatch = url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';
    const verb = isWatch
      ? 'WATCH'
      : req.method === 'GET' && name === undefined
        ? 'LIST'
        : (req.method ?? 'GET');
    const counter = `${verb} ${plural}${subresource === undefined ? '' : `/${subresource}`}`;
    requests.set(counter, (requests.get(counter) ?? 0) + 1);
    const refused = refusal?.(counter);
    if (refused !== undefined) return status(res, refused, 'Forbidden', `refused by the test: ${counter}`);

    if (name === undefined) {
      if (req.method === 'GET' && isWatch) return startWatch(req, res, plural, namespace, url);
      if (req.method === 'GET') {
        const selector = parseSelector(url.searchParams.get('labelSelector'));
        const list = [...items.values()].filter(
          (o) => (namespace === undefined || o.metadata.namespace === namespace) && matches(o, selector),
        );
        return send(res, 200, {
          apiVersion: type.group === '' ? type.version : `${type.group}/${type.version}`,
          kind: `${type.kind}List`,
          metadata: { resourceVersion: String(rv) },
          items: list,
        });
      }
      if (req.method === 'POST' && (namespace !== undefined || type.clusterScoped === true)) {
        let obj = JSON.parse(await readBody(req)) as KubeObject;
        const { namespace: _ignored, ...metadata } = obj.metadata;
        obj.metadata = namespace === undefined ? metadata : { ...metadata, namespace };
        if (items.has(keyOf(obj))) {
          return status(
            res,
            409,
            'AlreadyExists',
            `${plural}.${type.group} "${obj.metadata.name}" already exists`,
          );
        }
        if (type.statusSubresource && plural === 'echoscenarios') delete obj.status;
        obj = pruned(res, plural, obj);
        const causes = type.validate?.(obj) ?? [];
        if (causes.length > 0) return invalid(res, plural, obj, causes);
        return send(res, 201, createDirect(plural, obj));
      }
      return status(res, 405, 'MethodNotAllowed', `method ${req.method} not allowed`);
    }
    if (namespace === undefined && type.clusterScoped !== true) {
      return status(res, 404, 'NotFound', 'namespaced resource');
    }
    const scope = namespace ?? '';
    if (subresource !== undefined && !(subresource === 'status' && type.statusSubresource)) {
      return status(res, 404, 'NotFound', `no subresource ${subresource}`);
    }
    const existing = items.get(`${scope}/${name}`);
    const notFound = () => status(res, 404, 'NotFound', `${plural}.${type.group} "${name}" not found`);
    switch (req.method) {
      case 'GET':
        return existing === undefined ? notFound() : send(res, 200, existing);
      case 'DELETE': {
        const deleted = deleteDirect(plural, scope, name);
        return deleted === undefined ? notFound() : send(res, 200, deleted);
      }
      case 'PUT': {
        if (existing === undefined) return notFound();
        const next = JSON.parse(await readBody(req)) as KubeObject;
        const wanted = next.metadata?.resourceVersion;
        if (wanted !== undefined && wanted !== '' && wanted !== existing.metadata.resourceVersion) {
          return status(
            res,
            409,
            'Conflict',
            `Operation cannot be fulfilled on ${plural}.${type.group} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
          );
        }
        return write(
          res,
          plural,
          existing,
          { ...next, metadata: next.metadata ?? existing.metadata },
          subresource,
        );
      }
      case 'PATCH': {
        if (existing === undefined) return notFound();
        const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
        if (contentType !== 'application/merge-patch+json') {
          return status(res, 415, 'UnsupportedMediaType', `the body of the request was in an unknown format`);
        }
        const patch = JSON.parse(await readBody(req));
        // A resourceVersion in the patch is a precondition, as on an update.
        const precondition = (patch as { metadata?: { resourceVersion?: unknown } } | null)?.metadata
          ?.resourceVersion;
        if (typeof precondition === 'string' && precondition !== existing.metadata.resourceVersion) {
          return status(
            res,
            409,
            'Conflict',
            `Operation cannot be fulfilled on ${plural}.${type.group} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
          );
        }
        const next = mergePatch(existing, patch) as KubeObject;
        return write(res, plural, existing, next, subresource);
      }
      default:
        return status(res, 405, 'MethodNotAllowed', `method ${req.method} not allowed`);
    }
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) status(res, 400, 'BadRequest', String(error));
      else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    requests,
    kubeconfigFile: () =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        // client-node refuses plain http unless TLS verification is off.
        clusters: [{ name: 'double', cluster: { server: url, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'double', user: { token: 'test' } }],
        contexts: [{ name: 'double', context: { cluster: 'double', user: 'double', namespace: 'default' } }],
        'current-context': 'double',
      }),
    kubeConfigOptions: () => ({
      clusters: [{ name: 'double', server: url, skipTLSVerify: true }],
      users: [{ name: 'double', token: 'test' }],
      contexts: [{ name: 'double', cluster: 'double', user: 'double', namespace: 'default' }],
      currentContext: 'double',
    }),
    create: (plural, obj) => createDirect(plural, obj),
    get: (plural, namespace, name) => {
      const obj = store.get(plural)!.get(`${namespace}/${name}`);
      return obj === undefined ? undefined : clone(obj);
    },
    list: (plural, namespace) =>
      [...store.get(plural)!.values()]
        .filter((o) => namespace === undefined || o.metadata.namespace === namespace)
        .map(clone),
    update: (plural, obj) => {
      const existing = store.get(plural)!.get(keyOf(obj));
      if (existing === undefined) throw new Error(`no ${plural} ${keyOf(obj)}`);
      const next = typed(plural, clone(obj));
      next.metadata = { ...existing.metadata, ...next.metadata, uid: existing.metadata.uid! };
      if (JSON.stringify(existing.spec) !== JSON.stringify(next.spec)) {
        next.metadata.generation = (existing.metadata.generation ?? 1) + 1;
      }
      return putOrRemove(plural, next);
    },
    delete: (plural, namespace, name, deleteOptions = {}) => {
      deleteDirect(plural, namespace, name, deleteOptions.force === true);
    },
    dropWatches: () => {
      const count = watches.size;
      for (const w of [...watches]) w.res.socket?.destroy();
      return count;
    },
    expireHistory: () => {
      // A compaction past every version handed out so far: resuming from any of them is 410 Gone,
      // while a fresh list (at the new version) can be watched from.
      rv++;
      oldestRv = rv;
      history.length = 0;
      const open = [...watches];
      watches.clear();
      for (const w of open) {
        if (w.timer !== undefined) clearInterval(w.timer);
        w.res.write(
          `${JSON.stringify({
            type: 'ERROR',
            object: {
              kind: 'Status',
              apiVersion: 'v1',
              metadata: {},
              status: 'Failure',
              message: 'too old resource version',
              reason: 'Expired',
              code: 410,
            },
          })}\n`,
        );
        w.res.end();
      }
      return open.length;
    },
    refuse: (refuse) => {
      refusal = refuse;
    },
    get resourceVersion() {
      return String(rv);
    },
    compactHistory: (at) => {
      oldestRv = Math.max(oldestRv, Number(at));
      const kept = history.filter((event) => event.rv > oldestRv);
      history.length = 0;
      history.push(...kept);
    },
    bookmarksSince: (plural, resourceVersion) =>
      (bookmarked.get(plural) ?? []).filter((at) => at >= Number(resourceVersion)).length,
    openWatches: (plural) => [...watches].filter((w) => plural === undefined || w.plural === plural).length,
    close: async () => {
      for (const w of watches) if (w.timer !== undefined) clearInterval(w.timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
