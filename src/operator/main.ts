#!/usr/bin/env node

/**
 * `echo-chaos-operator`: reads its settings from the environment, its cluster from `KUBECONFIG`
 * (or the default kubeconfig) or, inside a pod, from the service account, and runs until SIGTERM
 * or SIGINT, then drains: releases the lease, finishes in-flight pushes, closes its server.
 */

import { existsSync } from 'node:fs';
import {
  createErrorUpgradeSpanProcessor,
  createObs,
  createObsSampler,
  guardRegistry,
  isObsError,
  loadObsConfig,
  OBS_METRICS,
  type ObsConfigError,
  obsLoggerOptions,
  type ResolvedObsConfig,
} from '@echo-chaos/obs';
import pino from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import pkg from '../../package.json' with { type: 'json' };
import { nodeSupportWarning } from '../telemetry/node-support.ts';
import { watchNpmParent } from '../telemetry/npm-parent.ts';
import { loadTelemetry, TelemetryUnavailableError } from '../telemetry/optional-packages.ts';
import type { Telemetry } from '../telemetry/otel.ts';
import { type OtelSettings, otelSettings, otelWanted } from '../telemetry/otel-config.ts';
import { helpText, parseCommandLine } from './cli.ts';
import {
  type ClusterSource,
  clusterProblem,
  clusterSource,
  loadOperatorConfig,
  type OperatorConfig,
  readAdminToken,
} from './config.ts';
import { isOperatorError, type OperatorConfigError } from './errors.ts';

const command = parseCommandLine(process.argv.slice(2));
if (command.kind === 'help' || command.kind === 'version') {
  process.stdout.write(command.kind === 'help' ? helpText(pkg.version) : `${pkg.version}\n`);
  process.exit(0);
}
if (command.kind === 'usage-error') {
  process.stderr.write(`echo-chaos-operator: ${command.message}\n`);
  process.exit(2);
}
const unsupported = nodeSupportWarning('echo-chaos-operator', process.versions.node);
if (unsupported !== undefined) process.stderr.write(`${unsupported}\n`);

// A bad setting stops startup with one line per problem, naming the setting.
let config: OperatorConfig;
let obs: ResolvedObsConfig;
let adminToken: string | undefined;
let cluster: ClusterSource;
let otel: OtelSettings;
{
  // Every bad setting at once, the operator's, obs's and OpenTelemetry's: one line each, as the
  // service writes them.
  const problems: string[] = [];
  const read = <T>(load: () => T): T | undefined => {
    try {
      return load();
    } catch (error) {
      if (isObsError(error) && error.code === 'OBS_ERR_CONFIG')
        problems.push(...(error as ObsConfigError).problems.map((problem) => problem.message));
      else if (isOperatorError(error) && error.code === 'OPERATOR_ERR_CONFIG')
        problems.push(...(error as OperatorConfigError).problems);
      else problems.push(error instanceof Error ? error.message : String(error));
      return undefined;
    }
  };
  const loaded = read(() => loadOperatorConfig(process.env));
  const token = loaded === undefined ? undefined : read(() => ({ value: readAdminToken(loaded) }));
  const obsRead = read(() => loadObsConfig({ env: process.env }));
  const clusterRead = read(() => clusterSource(process.env, process.env['HOME'], existsSync));
  const otelRead = otelSettings(process.env);
  if (!otelRead.ok) problems.push(...otelRead.problems);
  if (
    problems.length > 0 ||
    loaded === undefined ||
    token === undefined ||
    obsRead === undefined ||
    clusterRead === undefined ||
    !otelRead.ok
  ) {
    for (const line of problems) process.stderr.write(`echo-chaos-operator: ${line}\n`);
    process.exit(1);
  }
  config = loaded;
  adminToken = token.value;
  obs = obsRead;
  cluster = clusterRead;
  otel = otelRead.settings;
}
// The OpenTelemetry SDK, when the OTEL_* variables ask for traces, before the Kubernetes client
// and node:http are imported, so that the http and undici instrumentations see them. The
// operator's /metrics is its prom-client registry alone: OpenTelemetry meters are not served.
let telemetry: Telemetry | undefined;
const otelAsked = { ...otel, metrics: false };
if (otelWanted(otelAsked)) {
  const { startTelemetry } = await loadTelemetry(() => import('../telemetry/otel.ts')).catch(
    (err: unknown) => {
      if (!(err instanceof TelemetryUnavailableError)) throw err;
      process.stderr.write(`echo-chaos-operator: ${err.message}\n`);
      process.exit(1);
    },
  );
  telemetry = startTelemetry(otelAsked, {
    serviceName: 'echo-chaos-operator',
    version: pkg.version,
    sampler: createObsSampler(obs.config),
    wrapProcessor: (processor) => createErrorUpgradeSpanProcessor(processor),
    ignorePaths: ['/metrics', '/healthz', '/readyz'],
  });
}
const { KubeConfig } = await import('@kubernetes/client-node');
const { createOperator } = await import('./operator.ts');
const { createOperatorServer } = await import('./server.ts');
const logger = pino(
  obsLoggerOptions({
    config: obs.config,
    // ISO times, as the echo service writes them (one format across the bundle's logs).
    base: { level: config.logLevel, name: 'echo-chaos-operator', timestamp: pino.stdTimeFunctions.isoTime },
  }),
);

// obs for the metrics too: one registry holds the operator's and obs's series (config hash,
// enforcement mode, cardinality overflow, container memory), every label passes its firewall.
const registry = new Registry();
const obsCore = createObs({
  resolved: obs,
  registry,
  logger,
  version: pkg.version,
  serviceName: 'echo-chaos-operator',
});
if (obsCore.config.cardinality.enabled) {
  guardRegistry(registry, obsCore.firewall, {
    exempt: [OBS_METRICS.enforcementMode, OBS_METRICS.configInfo],
  });
}
collectDefaultMetrics({ register: registry });
if (telemetry !== undefined) {
  const started = telemetry;
  obsCore.addFlushHook('opentelemetry', () => started.flush());
}
logger.info(
  { otel: { traces: telemetry?.traces ?? false } },
  telemetry === undefined
    ? 'OpenTelemetry SDK off (no OTEL_* variable asks for it)'
    : 'OpenTelemetry SDK started',
);

const kc = new KubeConfig();
let kubeconfigProblem: string | undefined;
try {
  if (cluster === 'in-cluster') kc.loadFromCluster();
  else kc.loadFromDefault();
  kubeconfigProblem = clusterProblem(kc.getCurrentCluster());
} catch (error) {
  kubeconfigProblem = error instanceof Error ? error.message : String(error);
}
if (kubeconfigProblem !== undefined) {
  const where =
    cluster === 'in-cluster'
      ? "the pod's service account"
      : `KUBECONFIG=${JSON.stringify(process.env['KUBECONFIG'] ?? '~/.kube/config')}`;
  process.stderr.write(`echo-chaos-operator: cannot use the cluster from ${where}: ${kubeconfigProblem}\n`);
  process.exit(1);
}

const operator = createOperator({
  kc,
  logger,
  namespace: config.namespace,
  identity: config.identity,
  leaseNamespace: config.leaseNamespace,
  leaseName: config.leaseName,
  leaseDurationSeconds: config.leaseDurationSeconds,
  leaseRetryIntervalMs: config.leaseRetryIntervalMs,
  pushTimeoutMs: config.pushTimeoutMs,
  workers: config.workers,
  adminToken,
  registry,
  prometheusUrl: config.prometheusUrl,
  abortPollIntervalMs: config.abortPollIntervalMs,
  abortQueryTimeoutMs: config.abortQueryTimeoutMs,
  resyncPeriodMs: config.resyncPeriodMs,
});
let draining = false;
const server = createOperatorServer({
  registry: operator.registry,
  ready: async () => !draining && operator.ready && (await obsCore.readiness()).ready,
});
server.listen(config.port, config.host, () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  logger.info({ port, identity: config.identity, namespace: config.namespace ?? '*' }, 'operator listening');
});
await operator.start();

async function drain(signal: string): Promise<void> {
  if (draining) return;
  draining = true;
  logger.info({ signal }, 'draining');
  const timer = setTimeout(() => {
    logger.warn({ drainTimeoutMs: config.drainTimeoutMs }, 'drain timed out');
    process.exit(1);
  }, config.drainTimeoutMs);
  timer.unref();
  await operator.stop();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  // The telemetry flush can be most of a drain (an OTLP endpoint that does not answer is retried
  // until the exporter gives up): the drained line says how long each part took.
  const flush = await obsCore.flush();
  if (!flush.ok) logger.warn({ obs: 'flush', ...flush }, 'obs telemetry flush incomplete');
  logger.info({ flush }, 'drained');
  process.exit(0);
}
process.on('SIGTERM', () => void drain('SIGTERM'));
process.on('SIGINT', () => void drain('SIGINT'));
// Started by npm (`npx echo-chaos-operator`, `npm run operator`): drain as on SIGTERM once npm has
// gone, rather than holding the lease with no one to stop it (npm-parent.ts).
watchNpmParent(process.env, (parent) => {
  if (draining) return;
  logger.warn({ parent }, 'the npm process that started this one has gone: draining as on SIGTERM');
  void drain('SIGTERM');
});
