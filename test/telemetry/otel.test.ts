import assert from 'node:assert/strict';
import { test } from 'node:test';
import { metrics } from '@opentelemetry/api';
import { createObsSampler, loadObsConfig } from '../../src/obs/index.ts';
import { startTelemetry } from '../../src/telemetry/otel.ts';
import { otelSettings, otelWanted } from '../../src/telemetry/otel-config.ts';

/** The settings for an environment, failing the test on problems. */
function settingsOf(env: Record<string, string>) {
  const result = otelSettings(env);
  assert.ok(result.ok, JSON.stringify(result));
  return result.settings;
}

test('otel settings – which variables ask for traces and for metrics', () => {
  const asks = (env: Record<string, string>) => {
    const s = settingsOf(env);
    return { traces: s.traces, metrics: s.metrics, wanted: otelWanted(s) };
  };
  const none = { traces: false, metrics: false, wanted: false };
  const both = { traces: true, metrics: true, wanted: true };
  assert.deepEqual(asks({}), none);
  assert.deepEqual(asks({ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }), none);
  assert.deepEqual(asks({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }), both);
  assert.deepEqual(asks({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://c:4318/v1/traces' }), both);
  assert.deepEqual(asks({ OTEL_TRACES_EXPORTER: 'otlp' }), both);
  assert.deepEqual(asks({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_TRACES_EXPORTER: 'none' }), none);
  assert.deepEqual(asks({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_SDK_DISABLED: 'true' }), none);
  assert.deepEqual(asks({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_METRICS_EXPORTER: 'none' }), {
    traces: true,
    metrics: false,
    wanted: true,
  });
  assert.deepEqual(asks({ OTEL_METRICS_EXPORTER: 'prometheus' }), {
    traces: false,
    metrics: true,
    wanted: true,
  });
  assert.deepEqual(asks({ OTEL_METRICS_EXPORTER: 'prometheus', OTEL_SDK_DISABLED: 'TRUE' }), none);
});

test('otel settings – protocol (traces-specific wins), batch settings, service name', () => {
  assert.equal(settingsOf({}).protocol, 'http/protobuf');
  assert.equal(settingsOf({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).protocol, 'http/json');
  assert.equal(
    settingsOf({
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
    }).protocol,
    'http/protobuf',
  );
  const s = settingsOf({
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_BSP_MAX_QUEUE_SIZE: '10',
    OTEL_SERVICE_NAME: ' svc ',
  });
  assert.equal(s.batch.scheduledDelayMillis, 100);
  assert.equal(s.batch.maxQueueSize, 10);
  assert.equal(s.batch.maxExportBatchSize, 10, 'a batch never exceeds the queue');
  assert.equal(s.serviceName, 'svc');
});

test('otel settings – every bad value is one line naming the variable, the value and the accepted form', () => {
  const result = otelSettings({
    OTEL_SDK_DISABLED: 'yes',
    OTEL_EXPORTER_OTLP_ENDPOINT: 'localhost:4318',
    OTEL_TRACES_EXPORTER: 'zipkin',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    OTEL_BSP_SCHEDULE_DELAY: '0',
  });
  assert.equal(result.ok, false);
  assert.deepEqual(!result.ok && result.problems, [
    'OTEL_SDK_DISABLED="yes" is invalid: expected true or false',
    'OTEL_EXPORTER_OTLP_ENDPOINT="localhost:4318" is invalid: expected an http:// or https:// URL',
    'OTEL_TRACES_EXPORTER="zipkin" is invalid: expected otlp or none',
    'OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is invalid: expected http/protobuf or http/json (grpc is not supported)',
    'OTEL_BSP_SCHEDULE_DELAY="0" is invalid: expected integer milliseconds 1-3600000',
  ]);
});

test('otel metrics – a counter recorded through the OpenTelemetry metrics API shows in echo /metrics, behind the cardinality firewall', async (t) => {
  const { buildApp } = await import('../../src/echo/app.ts');
  const { loadConfig } = await import('../../src/echo/config.ts');
  const obs = loadObsConfig({
    env: { OBS_ENFORCEMENT_MODE: 'ENFORCING', OBS_CARDINALITY_MAX_TAG_VALUES_PER_METER: '2' },
  });
  const telemetry = startTelemetry(settingsOf({ OTEL_METRICS_EXPORTER: 'prometheus' }), {
    serviceName: 'echo-chaos',
    version: 'test',
    sampler: createObsSampler(obs.config),
  });
  const app = await buildApp(loadConfig({ LOG_LEVEL: 'silent' }), {
    obs,
    metricsText: () => telemetry.metricsText(),
  });
  t.after(async () => {
    metrics.disable();
    await telemetry.shutdown();
    await app.close();
  });
  telemetry.registerMeterProvider((provider) => app.obs.guardMeterProvider(provider));

  const counter = metrics.getMeter('x').createCounter('otel_test_orders', { description: 'orders seen' });
  for (const customer of ['a', 'b', 'c', 'd']) counter.add(1, { customer });

  const scrape = await app.inject({ method: 'GET', url: '/metrics' });
  assert.equal(scrape.statusCode, 200);
  const body = scrape.body;
  assert.match(body, /^echo_requests_total|^# HELP echo_/m, 'the service’s own series are still there');
  const series = body.split('\n').filter((line) => line.startsWith('otel_test_orders_total{'));
  const customers = series.map((line) => /customer="([^"]*)"/.exec(line)?.[1]).sort();
  assert.deepEqual(customers, ['OVERFLOW', 'a', 'b'], body);
  assert.match(body, /^# TYPE otel_test_orders_total counter$/m);
});
