import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clusterSource, loadOperatorConfig } from '../../src/operator/config.ts';
import { isOperatorError } from '../../src/operator/errors.ts';

test('operator config – defaults', () => {
  const config = loadOperatorConfig({ POD_NAME: 'op-0', POD_NAMESPACE: 'chaos' });
  assert.equal(config.identity, 'op-0');
  assert.equal(config.leaseNamespace, 'chaos');
  assert.equal(config.leaseName, 'echo-chaos-operator');
  assert.equal(config.namespace, undefined);
  assert.equal(config.leaseDurationSeconds, 15);
  assert.equal(config.port, 8081);
  assert.equal(config.workers, 4);
});

test('operator config – WORKERS is a whole number from 1 to 64', () => {
  assert.equal(loadOperatorConfig({ WORKERS: '16' }).workers, 16);
  for (const bad of ['0', '65', 'x', '2.5']) {
    assert.throws(
      () => loadOperatorConfig({ WORKERS: bad }),
      /WORKERS=.* is invalid: expected integer 1-64/,
      bad,
    );
  }
});

test('operator config – every problem is listed at once, with a stable code', () => {
  assert.throws(
    () => loadOperatorConfig({ PORT: 'x', LEASE_DURATION_SECONDS: '0', PUSH_TIMEOUT_MS: '-1' }),
    (err: unknown) => {
      assert.ok(isOperatorError(err) && err.code === 'OPERATOR_ERR_CONFIG', String(err));
      assert.equal(err.statusCode, 500);
      const { problems } = err as typeof err & { problems: readonly string[] };
      assert.equal(problems.length, 3);
      assert.equal(err.message, `invalid operator configuration: ${problems.join('; ')}`);
      assert.match(err.message, /PORT/);
      assert.match(err.message, /LEASE_DURATION_SECONDS/);
      assert.match(err.message, /PUSH_TIMEOUT_MS/);
      return true;
    },
  );
  assert.throws(
    () => loadOperatorConfig({ LEASE_DURATION_SECONDS: '1', LEASE_RETRY_INTERVAL_MS: '1000' }),
    /LEASE_RETRY_INTERVAL_MS must be shorter/,
  );
});

test('operator config – the echo admin token comes from ECHO_ADMIN_TOKEN or is read once from ECHO_ADMIN_TOKEN_FILE', async () => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { readAdminToken } = await import('../../src/operator/config.ts');
  assert.equal(readAdminToken(loadOperatorConfig({})), undefined);
  assert.equal(readAdminToken(loadOperatorConfig({ ECHO_ADMIN_TOKEN: 'abc' })), 'abc');
  const dir = mkdtempSync(join(tmpdir(), 'operator-token-'));
  const file = join(dir, 'token');
  writeFileSync(file, 'from-the-secret\n');
  assert.equal(readAdminToken(loadOperatorConfig({ ECHO_ADMIN_TOKEN_FILE: file })), 'from-the-secret');
  writeFileSync(file, '\n');
  assert.throws(() => readAdminToken(loadOperatorConfig({ ECHO_ADMIN_TOKEN_FILE: file })), /is empty/);
  assert.throws(() => readAdminToken(loadOperatorConfig({ ECHO_ADMIN_TOKEN_FILE: join(dir, 'missing') })), {
    code: 'OPERATOR_ERR_CONFIG',
    message: /cannot be read \(ENOENT\)/,
  });
  assert.throws(() => loadOperatorConfig({ ECHO_ADMIN_TOKEN: 'a', ECHO_ADMIN_TOKEN_FILE: file }), /both set/);
  assert.throws(
    () => loadOperatorConfig({ ECHO_ADMIN_TOKEN: 'has space-secret' }),
    (err: unknown) => !String((err as Error).message).includes('space-secret'),
  );
});

test('operator config – the cluster: KUBECONFIG, else the pod (KUBERNETES_SERVICE_HOST), else ~/.kube/config, else a stop', () => {
  const none = () => false;
  const homeConfig = (path: string) => path === '/home/op/.kube/config';
  assert.equal(clusterSource({ KUBECONFIG: '/k' }, '/home/op', none), 'kubeconfig');
  assert.equal(
    clusterSource({ KUBECONFIG: '/k', KUBERNETES_SERVICE_HOST: '10.0.0.1' }, undefined, none),
    'kubeconfig',
  );
  assert.equal(clusterSource({ KUBERNETES_SERVICE_HOST: '10.0.0.1' }, '/home/op', homeConfig), 'in-cluster');
  assert.equal(clusterSource({ KUBECONFIG: '' }, '/home/op', homeConfig), 'kubeconfig');
  const stop = (home: string | undefined) => {
    try {
      clusterSource({ KUBECONFIG: '' }, home, none);
    } catch (error) {
      assert.ok(isOperatorError(error) && error.code === 'OPERATOR_ERR_CONFIG');
      return error.message;
    }
    assert.fail('no stop');
  };
  assert.match(
    stop('/home/op'),
    /no kubeconfig or in-cluster config was found: .*"\/home\/op\/.kube\/config" does not exist/,
  );
  assert.match(stop(undefined), /~\/.kube\/config \(HOME is unset\) does not exist/);
});

test('operator config – PROMETHEUS_URL and the abortWhen poll: defaults, and one line per bad value', () => {
  const config = loadOperatorConfig({});
  assert.equal(config.prometheusUrl, undefined);
  assert.equal(config.abortPollIntervalMs, 10_000);
  assert.equal(config.abortQueryTimeoutMs, 5000);
  assert.equal(
    loadOperatorConfig({ PROMETHEUS_URL: 'http://prometheus.monitoring:9090' }).prometheusUrl,
    'http://prometheus.monitoring:9090',
  );
  assert.throws(
    () => loadOperatorConfig({ PROMETHEUS_URL: 'prometheus:9090' }),
    /PROMETHEUS_URL="prometheus:9090" is invalid: expected an http or https URL such as http:\/\/prometheus:9090/,
  );
  assert.throws(
    () => loadOperatorConfig({ ABORT_POLL_INTERVAL_MS: '10' }),
    /ABORT_POLL_INTERVAL_MS="10" is invalid: expected integer >= 1000/,
  );
  assert.throws(
    () => loadOperatorConfig({ ABORT_POLL_INTERVAL_MS: '2000', ABORT_QUERY_TIMEOUT_MS: '2000' }),
    /ABORT_QUERY_TIMEOUT_MS must be shorter than ABORT_POLL_INTERVAL_MS/,
  );
});

test('operator config – OPERATOR_RESYNC_PERIOD: 5m by default, any duration of at least 1s, one line per bad value', () => {
  assert.equal(loadOperatorConfig({}).resyncPeriodMs, 300_000);
  assert.equal(loadOperatorConfig({ OPERATOR_RESYNC_PERIOD: '30s' }).resyncPeriodMs, 30_000);
  assert.equal(loadOperatorConfig({ OPERATOR_RESYNC_PERIOD: ' 1h30m ' }).resyncPeriodMs, 5_400_000);
  assert.equal(loadOperatorConfig({ OPERATOR_RESYNC_PERIOD: '1000' }).resyncPeriodMs, 1000);
  for (const bad of ['0', '500ms', 'soon', '-5m', '5 minutes']) {
    assert.throws(
      () => loadOperatorConfig({ OPERATOR_RESYNC_PERIOD: bad }),
      (error: unknown) => {
        assert.ok(isOperatorError(error) && error.code === 'OPERATOR_ERR_CONFIG', String(error));
        assert.equal(
          error.message,
          `invalid operator configuration: OPERATOR_RESYNC_PERIOD=${JSON.stringify(bad)} is invalid: expected a duration of at least 1s such as 30s, 5m or 1h30m (a bare number is milliseconds)`,
        );
        return true;
      },
      bad,
    );
  }
});
