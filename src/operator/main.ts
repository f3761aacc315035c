/**
 * `echo-chaos-operator`: reads its settings from the environment, its cluster from `KUBECONFIG`
 * (or the default kubeconfig) or, inside a pod, from the service account, and runs until SIGTERM
 * or SIGINT, then drains: releases the lease, finishes in-flight pushes, closes its server.
 */
import { KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import { loadObsConfig, obsLoggerOptions } from '../obs/index.ts';
import { loadOperatorConfig } from './config.ts';
import { createOperator } from './operator.ts';
import { createOperatorServer } from './server.ts';

const config = loadOperatorConfig(process.env);
const obs = loadObsConfig({ env: process.env as Record<string, string> });
const logger = pino(
  obsLoggerOptions({ config: obs.config, base: { level: config.logLevel, name: 'echo-chaos-operator' } }),
);

const kc = new KubeConfig();
if (process.env['KUBERNETES_SERVICE_HOST'] !== undefined && process.env['KUBECONFIG'] === undefined) {
  kc.loadFromCluster();
} else {
  kc.loadFromDefault();
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
});
let draining = false;
const server = createOperatorServer({
  registry: operator.registry,
  ready: () => !draining && operator.ready,
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
  logger.info({}, 'drained');
  process.exit(0);
}
process.on('SIGTERM', () => void drain('SIGTERM'));
process.on('SIGINT', () => void drain('SIGINT'));
