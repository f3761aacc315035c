/**
 * The operator's settings, a pure function of the environment it is given. Every problem is
 * listed at once.
 */
import { hostname } from 'node:os';
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
  /** `DRAIN_TIMEOUT_MS`, default 10000: longest wait for in-flight pushes on SIGTERM. */
  readonly drainTimeoutMs: number;
  /** `LOG_LEVEL`, default `info`. */
  readonly logLevel: string;
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
    drainTimeoutMs: int('DRAIN_TIMEOUT_MS', 10_000, 0),
    logLevel: env['LOG_LEVEL'] || 'info',
  };
  if (config.port > 65535) problems.push(`PORT must be at most 65535, got ${config.port}`);
  if (config.leaseRetryIntervalMs >= config.leaseDurationSeconds * 1000) {
    problems.push('LEASE_RETRY_INTERVAL_MS must be shorter than LEASE_DURATION_SECONDS');
  }
  if (problems.length > 0) throw new OperatorConfigError(problems);
  return config;
}
