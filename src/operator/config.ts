/**
 * The operator's settings, a pure function of the environment it is given. Every problem is
 * listed at once.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
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
  readonly logLevel: string;
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
}

/**
 * The operator's settings from `env`.
 * @throws {OperatorConfigError} `OPERATOR_ERR_CONFIG` listing every invalid setting.
 */
export function loadOperatorConfig(env: Record<string, string | undefined>): OperatorConfig {
  const problems: string[] = [];
  const int = (name: string, fallback: number, min: number): number => {
    const text = env[name];
    if (text === undefined || text === '') return fallback;
    const value = Number(text);
    if (!Number.isInteger(value) || value < min) {
      problems.push(`${name} must be an integer >= ${min}, got ${JSON.stringify(text)}`);
      return fallback;
    }
    return value;
  };
  const config: OperatorConfig = {
    namespace: env['WATCH_NAMESPACE'] || undefined,
    identity: env['POD_NAME'] || `${hostname()}-${process.pid}`,
    leaseNamespace: env['LEASE_NAMESPACE'] || env['POD_NAMESPACE'] || 'default',
    leaseName: env['LEASE_NAME'] || 'echo-chaos-operator',
    leaseDurationSeconds: int('LEASE_DURATION_SECONDS', 15, 1),
    leaseRetryIntervalMs: int('LEASE_RETRY_INTERVAL_MS', 2000, 10),
    port: int('PORT', 8081, 0),
    host: env['HOST'] || '0.0.0.0',
    pushTimeoutMs: int('PUSH_TIMEOUT_MS', 5000, 1),
    workers: int('WORKERS', 4, 1),
    drainTimeoutMs: int('DRAIN_TIMEOUT_MS', 10_000, 0),
    logLevel: env['LOG_LEVEL'] || 'info',
    adminToken: env['ECHO_ADMIN_TOKEN']?.trim() || undefined,
    adminTokenFile: env['ECHO_ADMIN_TOKEN_FILE']?.trim() || undefined,
    prometheusUrl: env['PROMETHEUS_URL']?.trim() || undefined,
    abortPollIntervalMs: int('ABORT_POLL_INTERVAL_MS', 10_000, 1000),
    abortQueryTimeoutMs: int('ABORT_QUERY_TIMEOUT_MS', 5000, 100),
  };
  if (config.prometheusUrl !== undefined && !httpUrl(config.prometheusUrl))
    problems.push(
      `PROMETHEUS_URL must be an http or https URL such as http://prometheus:9090, got ${JSON.stringify(config.prometheusUrl)}`,
    );
  if (config.abortQueryTimeoutMs >= config.abortPollIntervalMs)
    problems.push('ABORT_QUERY_TIMEOUT_MS must be shorter than ABORT_POLL_INTERVAL_MS');
  // The value is a credential: never quoted.
  if (config.adminToken !== undefined && !ADMIN_TOKEN.test(config.adminToken))
    problems.push('ECHO_ADMIN_TOKEN must be visible ASCII characters without spaces');
  if (config.adminToken !== undefined && config.adminTokenFile !== undefined)
    problems.push('ECHO_ADMIN_TOKEN and ECHO_ADMIN_TOKEN_FILE are both set: expected one of them');
  if (config.port > 65535) problems.push(`PORT must be at most 65535, got ${config.port}`);
  if (config.workers > MAX_WORKERS)
    problems.push(`WORKERS must be at most ${MAX_WORKERS}, got ${config.workers}`);
  if (config.leaseRetryIntervalMs >= config.leaseDurationSeconds * 1000) {
    problems.push('LEASE_RETRY_INTERVAL_MS must be shorter than LEASE_DURATION_SECONDS');
  }
  if (problems.length > 0) throw new OperatorConfigError(problems);
  return config;
}

function httpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** The ceiling of `WORKERS`. */
const MAX_WORKERS = 64;

/** What `Authorization: Bearer` can carry (the echo service accepts the same). */
const ADMIN_TOKEN = /^[\x21-\x7e]+$/;

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
