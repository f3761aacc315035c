import assert from 'node:assert/strict';
import { test } from 'node:test';
import { context, trace } from '@opentelemetry/api';
import { Registry } from 'prom-client';
import { createObs, ObsError } from '../../../src/obs/index.ts';
import { installOtelSdk } from '../../helpers/otel-sdk.ts';
import { capturingLogger } from '../helpers.ts';

/** A core on its own, on a fresh registry, closed when the test ends. */
function core(t: { after(fn: () => void): void }, options: Parameters<typeof createObs>[0] = {}) {
  const obs = createObs({ env: {}, registry: new Registry(), logger: capturingLogger(), ...options });
  t.after(() => obs.close());
  return obs;
}

test('obs – the core works without fastify: config, lever, firewall and snapshot', (t) => {
  const obs = core(t, {
    env: { OBS_ENFORCEMENT_MODE: 'DRY_RUN', OBS_CARDINALITY_MAX_TAG_VALUES_PER_METER: '1' },
  });
  assert.equal(obs.mode.get(), 'DRY_RUN');
  obs.firewall.admit('m', 't', 'a');
  assert.equal(obs.firewall.admit('m', 't', 'b'), 'b', 'DRY_RUN lets it through');
  obs.mode.set('ENFORCING');
  assert.equal(obs.firewall.admit('m', 't', 'c'), 'OVERFLOW', 'the firewall reads the lever');
  assert.equal(obs.snapshot().mode, 'ENFORCING');
  assert.equal(obs.serviceName, 'unknown_service:node');
  assert.equal(core(t, { env: { OTEL_SERVICE_NAME: 'svc' } }).serviceName, 'svc');
});

test('obs – snapshot sections are computed on each read; a throwing one shows its error', (t) => {
  const obs = core(t);
  let reads = 0;
  obs.addSnapshotSection('example', () => ({ reads: ++reads }));
  obs.addSnapshotSection('broken', () => {
    throw new Error('no data');
  });
  const { example, broken } = obs.snapshot().sections;
  assert.deepEqual({ example, broken }, { example: { reads: 1 }, broken: { error: 'no data' } });
  assert.deepEqual(obs.snapshot().sections.example, { reads: 2 });
  assert.throws(
    () => obs.addSnapshotSection('example', () => null),
    (e: unknown) => e instanceof ObsError && e.code === 'OBS_ERR_DUPLICATE_NAME',
  );
});

test('obs – readiness runs every check; false, throwing and too-slow checks fail it', async (t) => {
  const obs = core(t, { readinessTimeoutMs: 50 });
  assert.deepEqual(await obs.readiness(), {
    ready: true,
    checks: { drain: { ok: true, detail: 'idle' } },
  });
  obs.addReadinessCheck('sync', () => true);
  obs.addReadinessCheck('async', async () => ({ ok: true, detail: { lag: 1 } }));
  assert.equal((await obs.readiness()).ready, true);
  let fail: 'no' | 'false' | 'throw' | 'hang' = 'no';
  obs.addReadinessCheck('flaky', () => {
    if (fail === 'false') return false;
    if (fail === 'throw') throw new Error('down');
    if (fail === 'hang') return new Promise<boolean>(() => {});
    return true;
  });
  for (const mode of ['false', 'throw', 'hang'] as const) {
    fail = mode;
    const report = await obs.readiness();
    assert.equal(report.ready, false, mode);
    assert.equal(report.checks.flaky?.ok, false, mode);
    assert.equal(report.checks.sync?.ok, true);
  }
  assert.deepEqual((await obs.readiness()).checks.flaky, {
    ok: false,
    detail: { error: 'no answer within 50ms' },
  });
  assert.throws(
    () => obs.addReadinessCheck('drain', () => true),
    /readiness check "drain" is already registered/,
  );
});

test('obs – draining fails readiness and shows in the runtime', async (t) => {
  const obs = core(t);
  const phases: string[] = [];
  obs.drainState.onChange((phase) => phases.push(phase));
  obs.drainState.requestStarted();
  obs.drainState.begin();
  obs.drainState.begin();
  const report = await obs.readiness();
  assert.equal(report.ready, false);
  assert.deepEqual(report.checks.drain, { ok: false, detail: 'draining' });
  assert.equal(obs.runtime().drain.state, 'draining');
  obs.drainState.finish();
  assert.deepEqual(phases, ['draining', 'drained']);
  assert.deepEqual((await obs.readiness()).checks.drain, { ok: false, detail: 'drained' });
});

test('obs – isEnabledFor: the feature switch, its enabled-when block, conditional-features, planned features', (t) => {
  const block = { 'header-not-equals': { 'x-synthetic': 'true' }, 'path-excludes': ['/internal'] };
  const obs = core(t, {
    config: { 'trace-guard': { 'enabled-when': block }, 'exception-handler': { enabled: false } },
  });
  const real = { url: '/orders', headers: {} };
  assert.equal(obs.isEnabledFor('trace-guard', real), true);
  assert.equal(
    obs.isEnabledFor('trace-guard', { url: '/orders', headers: { 'x-synthetic': 'true' } }),
    false,
  );
  assert.equal(obs.isEnabledFor('trace-guard', { url: '/internal/x', headers: {} }), false);
  assert.equal(obs.isEnabledFor('exception-handler', real), false, 'a disabled feature never runs');
  const other = core(t, { config: { 'trace-guard': { 'enabled-when': block } } });
  assert.equal(
    other.isEnabledFor('exception-handler', { url: '/internal/x', headers: {} }),
    true,
    'blocks are per feature',
  );
  const unconditional = core(t, {
    config: { 'trace-guard': { 'enabled-when': block }, 'conditional-features': { enabled: false } },
  });
  assert.equal(unconditional.isEnabledFor('trace-guard', { url: '/internal/x', headers: {} }), true);
});

test('obs – event writes a span event, counts obs_events_total{event} and logs one line', async (t) => {
  const logger = capturingLogger();
  const registry = new Registry();
  const sdk = installOtelSdk(t);
  const obs = core(t, { logger, registry });
  const span = sdk.tracer.startSpan('request');
  context.with(trace.setSpan(context.active(), span), () =>
    obs.event('order.placed', { items: 3, vip: true }),
  );
  obs.event('order.placed');
  span.end();
  const spans = await sdk.finishedSpans();
  assert.equal(spans.length, 1);
  assert.deepEqual(
    spans[0]?.events.map((e) => [e.name, e.attributes]),
    [['order.placed', { items: 3, vip: true }]],
    'a span event on the active span only',
  );
  assert.match(await registry.metrics(), /obs_events_total\{event="order\.placed"\} 2/);
  const lines = logger.lines.filter((l) => l.message === 'event order.placed');
  assert.equal(lines.length, 2);
  assert.deepEqual(lines[0]?.object, { event: 'order.placed', attributes: { items: 3, vip: true } });
});

test('obs – event obeys obs.wide-events and never throws', async (t) => {
  const quiet = capturingLogger();
  const registry = new Registry();
  const obs = core(t, {
    logger: quiet,
    registry,
    config: { 'wide-events': { 'counter-enabled': false, 'log-enabled': false } },
  });
  obs.event('x');
  assert.doesNotMatch(await registry.metrics(), /obs_events_total\{/);
  assert.equal(quiet.lines.length, 0);
  const off = core(t, { logger: quiet, config: { 'wide-events': { enabled: false } } });
  off.event('x');
  assert.equal(quiet.lines.length, 0);
  const throwing = core(t, {
    logger: {
      info() {
        throw new Error('logger down');
      },
      warn() {},
    },
  });
  assert.doesNotThrow(() => throwing.event('y'));
});
