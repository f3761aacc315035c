/**
 * The operator's settings, a pure function of the environment it is given. Every problem is
 * listed at once.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { HTTP_URL, loadSettings, parseDurationMs, setting } from '@echo-chaos/obs/internal';
import { Type } from '@sinclair/typebox';
import { OperatorConfigError } from './errors.ts';

export interface OperatorConfig {
  /** `WATCH_NAMESPACE`: the one namespace to watch; empty (default) watches all. */
  readonly namespace: string | undefined;
  /** `POD_NAME` (set from the downward API), else host name and pid: this replica's lease identity. */
  readonly identity: string;
  /** `LEASE_NAMESPACE`, else `POD_NAMESPACE`, else `default`. */
  readonly leaseNamespace: string;
  /** `LEASE_NAME`, default `echo-chaos-operator`. */
  readonly leaseName: string;
  /** `LEASE_DURATION_SECONDS`, default 15. */
  readonly leaseDurationSeconds: number;
  /** `LEASE_RETRY_INTERVAL_MS`, default 2000 (must be well under the lease duration). */
  readonly leaseRetryIntervalMs: number;
  /** `PORT`, default 8081: `/metrics`, `/healthz`, `/readyz`. */
  readonly port: number;
  /** `HOST`, default `0.0.0.0`. */
  readonly host: string;
  /** `PUSH_TIMEOUT_MS`, default 5000. */
  readonly pushTimeoutMs: number;
  /**
   * `WORKERS`, default 4, 1 to 64: keys reconciled at once, so pushes (and their read-backs) under
   * way at once; a pod's push runs in its own reconcile, so a slow pod holds one worker, never the rest.
   */
  readonly workers: number;
  /** `DRAIN_TIMEOUT_MS`, default 10000: longest wait for in-flight pushes on SIGTERM. */
  readonly drainTimeoutMs: number;
  /** `LOG_LEVEL`, default `info`. */
  readonly logLevel: (typeof LOG_LEVELS)[number];
  /** `ECHO_ADMIN_TOKEN`: the echo pods' admin token, sent with every push; unset sends none. */
  readonly adminToken: string | undefined;
  /** `ECHO_ADMIN_TOKEN_FILE`: the same, read from this file by {@link readAdminToken} (a Secret). */
  readonly adminTokenFile: string | undefined;
  /** `PROMETHEUS_URL`: the Prometheus that `spec.abortWhen` queries (http or https); unset, none. */
  readonly prometheusUrl: string | undefined;
  /** `ABORT_POLL_INTERVAL_MS`, default 10000, at least 1000: how often `abortWhen` queries run. */
  readonly abortPollIntervalMs: number;
  /** `ABORT_QUERY_TIMEOUT_MS`, default 5000, at least 100 and below the poll interval. */
  readonly abortQueryTimeoutMs: number;
  /**
   * `OPERATOR_RESYNC_PERIOD`, default `5m`, at least 1 s: how often every pushed pod's scenario hash
   * is read back (and re-pushed where it differs), jittered by up to 10% (resync.ts), in ms.
   */
  readonly resyncPeriodMs: number;
}

/** The shortest `OPERATOR_RESYNC_PERIOD`, in ms: a read-back of every pod more often is a load, not a check. */
const MIN_RESYNC_PERIOD_MS = 1000;

/** What a pino level can be (`LOG_LEVEL`). */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The ceiling of `WORKERS`. */
const MAX_WORKERS = 64;

/** What `Authorization: Bearer` can carry (the echo service accepts the same). */
const ADMIN_TOKEN = /^[\x21-\x7e]+$/;

const optionalText = Type.Optional(Type.String({ minLength: 1 }));

/**
 * Every setting the operator reads from its environment, one schema each (the one settings
 * mechanism, docs/adr/0045-one-settings-mechanism.md); the table in src/operator/README.md is made
 * from it (`npm run gen:readme`).
 */
export const OPERATOR_SETTINGS = {
  namespace: setting('WATCH_NAMESPACE', optionalText, 'The one namespace to watch.', {
    unset: 'all namespaces',
  }),
  podName: setting('POD_NAME', optionalText, 'Identity in the Lease (set it from the downward API).', {
    unset: '`<hostname>-<pid>`',
  }),
  podNamespace: setting(
    'POD_NAMESPACE',
    optionalText,
    'Namespace of the Lease when `LEASE_NAMESPACE` is unset.',
    { unset: '`default`' },
  ),
  leaseNamespace: setting('LEASE_NAMESPACE', optionalText, 'Namespace of the Lease.', {
    unset: '`POD_NAMESPACE`, else `default`',
  }),
  leaseName: setting(
    'LEASE_NAME',
    Type.String({ minLength: 1, default: 'echo-chaos-operator' }),
    'Name of the Lease.',
  ),
  leaseDurationSeconds: setting(
    'LEASE_DURATION_SECONDS',
    Type.Integer({ minimum: 1, default: 15 }),
    'How long a lease holds without renewal, in seconds.',
  ),
  leaseRetryIntervalMs: setting(
    'LEASE_RETRY_INTERVAL_MS',
    Type.Integer({ minimum: 10, default: 2000 }),
    'Renew / retry period in ms (must be shorter than the lease).',
  ),
  port: setting(
    'PORT',
    Type.Integer({ minimum: 0, maximum: 65535, default: 8081 }),
    'Port of `/metrics`, `/healthz`, `/readyz`.',
  ),
  host: setting('HOST', Type.String({ minLength: 1, default: '0.0.0.0' }), 'Address of that port.'),
  pushTimeoutMs: setting(
    'PUSH_TIMEOUT_MS',
    Type.Integer({ minimum: 1, default: 5000 }),
    'Timeout of one push, and of the read-back that follows it, in ms.',
  ),
  workers: setting(
    'WORKERS',
    Type.Integer({ minimum: 1, maximum: MAX_WORKERS, default: 4 }),
    "Keys reconciled at once, so pushes under way at once: a pod's push runs in its own reconcile, so a pod that does not answer holds one worker until `PUSH_TIMEOUT_MS`, never the others.",
  ),
  drainTimeoutMs: setting(
    'DRAIN_TIMEOUT_MS',
    Type.Integer({ minimum: 0, default: 10_000 }),
    'Longest drain on SIGTERM before exiting 1, in ms.',
  ),
  logLevel: setting(
    'LOG_LEVEL',
    Type.Union(
      LOG_LEVELS.map((level) => Type.Literal(level)),
      { default: 'info' },
    ),
    "pino level; logs are JSON with obs's masking (`obsLoggerOptions`).",
  ),
  adminToken: setting(
    'ECHO_ADMIN_TOKEN',
    Type.Optional(Type.String({ pattern: ADMIN_TOKEN.source })),
    "The echo pods' admin token (their `ECHO_ADMIN_TOKEN`), sent with every push as `Authorization: Bearer`; never logged.",
    { secret: true, trim: true, form: 'visible ASCII characters without spaces' },
  ),
  adminTokenFile: setting(
    'ECHO_ADMIN_TOKEN_FILE',
    optionalText,
    'The same, read once at startup from this file (the chart mounts the Secret of `adminToken.existingSecret` here); a missing or empty file stops startup; not both.',
    { trim: true },
  ),
  prometheusUrl: setting(
    'PROMETHEUS_URL',
    Type.Optional(HTTP_URL),
    'The Prometheus that `spec.abortWhen` queries (chart: `operator.prometheusUrl`); unset or unreachable, every check of an EchoScenario with `abortWhen` fails, and after `abortWhen.failureThreshold` (3) in a row it is taken off its pods (`onError: Suspend`, the default) or runs unguarded (`Continue`), `AbortCheckHealthy` False saying why.',
    { trim: true, form: 'an http or https URL such as http://prometheus:9090' },
  ),
  abortPollIntervalMs: setting(
    'ABORT_POLL_INTERVAL_MS',
    Type.Integer({ minimum: 1000, default: 10_000 }),
    "How often every running EchoScenario's `abortWhen` query runs, in ms.",
  ),
  abortQueryTimeoutMs: setting(
    'ABORT_QUERY_TIMEOUT_MS',
    Type.Integer({ minimum: 100, default: 5000 }),
    'Timeout of one such query, in ms (below the poll interval).',
  ),
  resyncPeriodMs: setting(
    'OPERATOR_RESYNC_PERIOD',
    Type.Integer({ minimum: MIN_RESYNC_PERIOD_MS }),
    "How often every pod pushed to is re-checked (its scenario hash read back, re-pushed where it differs: a container restarted in the same pod starts empty), jittered by up to 10%; a container's restart count that changes re-checks its pod at once (chart: `operator.resyncPeriod`).",
    {
      defaultText: '5m',
      trim: true,
      decode: (text) => {
        const ms = parseDurationMs(text);
        return ms === undefined || ms < MIN_RESYNC_PERIOD_MS ? { ok: false } : { ok: true, value: ms };
      },
      form: 'a duration of at least 1s such as 30s, 5m or 1h30m (a bare number is milliseconds)',
    },
  ),
} as const;

/**
 * The operator's settings from `env`: each read through its schema, then the checks between them.
 * @throws {OperatorConfigError} `OPERATOR_ERR_CONFIG` listing every invalid setting, one line each.
 */
export function loadOperatorConfig(env: Record<string, string | undefined>): OperatorConfig {
  const loaded = loadSettings(OPERATOR_SETTINGS, env);
  if (!loaded.ok) throw new OperatorConfigError(loaded.problems);
  const { podName, podNamespace, ...settings } = loaded.value;
  const config: OperatorConfig = {
    ...settings,
    identity: podName ?? `${hostname()}-${process.pid}`,
    leaseNamespace: settings.leaseNamespace ?? podNamespace ?? 'default',
  };
  const problems: string[] = [];
  if (config.abortQueryTimeoutMs >= config.abortPollIntervalMs)
    problems.push('ABORT_QUERY_TIMEOUT_MS must be shorter than ABORT_POLL_INTERVAL_MS');
  if (config.adminToken !== undefined && config.adminTokenFile !== undefined)
    problems.push('ECHO_ADMIN_TOKEN and ECHO_ADMIN_TOKEN_FILE are both set: expected one of them');
  if (config.leaseRetryIntervalMs >= config.leaseDurationSeconds * 1000)
    problems.push('LEASE_RETRY_INTERVAL_MS must be shorter than LEASE_DURATION_SECONDS');
  if (problems.length > 0) throw new OperatorConfigError(problems);
  return config;
}

/**
 * The admin token pushes carry: `ECHO_ADMIN_TOKEN`, or the content of `ECHO_ADMIN_TOKEN_FILE`
 * (read once, at startup; surrounding whitespace removed), or undefined.
 * @throws {OperatorConfigError} `OPERATOR_ERR_CONFIG` when the file cannot be read, is empty or
 * holds what a header cannot carry (its content never quoted).
 */
export function readAdminToken(config: OperatorConfig): string | undefined {
  const file = config.adminTokenFile;
  if (file === undefined) return config.adminToken;
  let token: string;
  try {
    token = readFileSync(file, 'utf8').trim();
  } catch (error) {
    const code = (error as { code?: string }).code ?? (error as Error).message;
    throw new OperatorConfigError([`ECHO_ADMIN_TOKEN_FILE=${JSON.stringify(file)} cannot be read (${code})`]);
  }
  if (token === '') throw new OperatorConfigError([`ECHO_ADMIN_TOKEN_FILE=${JSON.stringify(file)} is empty`]);
  if (!ADMIN_TOKEN.test(token)) {
    throw new OperatorConfigError([
      `ECHO_ADMIN_TOKEN_FILE=${JSON.stringify(file)} must hold visible ASCII characters without spaces`,
    ]);
  }
  return token;
}

/** Where the operator reads its cluster from: a kubeconfig file, or the pod's service account. */
export type ClusterSource = 'kubeconfig' | 'in-cluster';

/**
 * Where the cluster comes from: `KUBECONFIG` when set, else the pod's service account when
 * `KUBERNETES_SERVICE_HOST` is set (inside a pod), else `~/.kube/config` when it exists.
 * Without any of them @kubernetes/client-node would fall back to `http://localhost:8080` and every
 * request fail (`HTTP protocol is not allowed when skipTLSVerify is not set`), forever: startup
 * stops instead.
 * @param home the home directory (`HOME`, where client-node looks for `.kube/config`).
 * @param exists whether a file exists (`fs.existsSync`; injected for tests).
 * @throws {OperatorConfigError} `OPERATOR_ERR_CONFIG` when none is found.
 */
export function clusterSource(
  env: Record<string, string | undefined>,
  home: string | undefined,
  exists: (path: string) => boolean,
): ClusterSource {
  if (env['KUBECONFIG']) return 'kubeconfig';
  if (env['KUBERNETES_SERVICE_HOST']) return 'in-cluster';
  if (home && exists(join(home, '.kube', 'config'))) return 'kubeconfig';
  throw new OperatorConfigError([
    'no kubeconfig or in-cluster config was found: KUBECONFIG is unset, ' +
      `${home ? JSON.stringify(join(home, '.kube', 'config')) : '~/.kube/config (HOME is unset)'} does not exist ` +
      'and KUBERNETES_SERVICE_HOST is unset (expected a kubeconfig, or a pod with a service account)',
  ]);
}

/**
 * What makes a kubeconfig's current cluster unusable, or undefined: none at all, or a plain
 * `http://` server without `insecure-skip-tls-verify` (client-node refuses every request to it,
 * `HTTP protocol is not allowed when skipTLSVerify is not set`, and the operator would retry forever).
 */
export function clusterProblem(
  cluster: { readonly server?: string; readonly skipTLSVerify?: boolean } | null | undefined,
): string | undefined {
  if (cluster === null || cluster === undefined || !cluster.server)
    return 'the kubeconfig names no current cluster (current-context, or a cluster with a server)';
  if (cluster.server.startsWith('http://') && cluster.skipTLSVerify !== true)
    return `the server ${cluster.server} is plain HTTP: client-node talks to it only with insecure-skip-tls-verify: true on the cluster (expected an https:// server)`;
  return undefined;
}
