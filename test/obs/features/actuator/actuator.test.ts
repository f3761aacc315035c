import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OBS_SCHEMA } from '../../../../src/obs/core/config/config-schema.ts';
import { MODE_CHANGE_NOTE } from '../../../../src/obs/features/actuator/actuator.ts';
import { until } from '../../../helpers/runtime.ts';
import { post, startObsApp } from '../../helpers.ts';

/** The seed's feature table (section 1.2), row by row: name, `obs.*` subtree, whether obs has its code. */
const SEED_FEATURES: ReadonlyArray<readonly [string, string, 'built' | 'planned']> = [
  ['Cardinality firewall', 'cardinality', 'built'],
  ['Timeout-budget propagation', 'timeout-budget', 'built'],
  ['Context propagation', 'context', 'built'],
  ['Trace-context guard', 'trace-guard', 'built'],
  ['Structured logs', 'logging', 'built'],
  ['Stable exception fingerprints', 'exception-handler', 'built'],
  ['Conditional features', 'conditional-features', 'built'],
  ['Dependency health map', 'dependencies', 'built'],
  ['Retry amplification', 'retry', 'built'],
  ['Multi-tenant context', 'tenant', 'built'],
  ['Request priority', 'priority', 'built'],
  ['Container-aware memory metrics', 'container-memory', 'built'],
  ['Kafka time-based lag', 'kafka', 'built'],
  ['Request fan-out', 'fan-out', 'built'],
  ['SLO-as-code', 'slo', 'built'],
  ['Resilience auto-instrumentation', 'resilience', 'built'],
  ['Background-job observability', 'jobs', 'built'],
  ['Database N+1 and slow-query detection', 'db', 'built'],
  ['Cache observability', 'cache', 'built'],
  ['Feature-flag evaluation correlation', 'feature-flags', 'built'],
  ['Continuous-profiling correlation', 'profiling', 'built'],
  ['Wide-event API', 'wide-events', 'built'],
  ['Graceful drain and telemetry flush', 'shutdown', 'built'],
  ['Fleet config-drift detection', 'config-drift', 'built'],
  ['Live diagnostic actuator', 'actuator', 'built'],
  ['Sampling', 'sampling', 'built'],
  ['Dry-run / enforcement mode', 'enforcement', 'built'],
  ['Profile presets', 'profile-presets', 'built'],
  ['Configuration validation', 'config-validation', 'built'],
];

type FeatureRow = {
  name: string;
  status: string;
  enabled?: unknown;
  default?: string;
  default_once_built?: string;
  config: unknown;
};

const json = async (response: Response) => {
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  return (await response.json()) as Record<string, unknown>;
};

test('actuator – GET /actuator/obs/enforcement answers the mode', async (t) => {
  const obs = await startObsApp({ config: { enforcement: { mode: 'DRY_RUN' } } });
  t.after(() => obs.close());
  const response = await fetch(`${obs.url}/actuator/obs/enforcement`);
  assert.equal(response.status, 200);
  assert.deepEqual(await json(response), { mode: 'DRY_RUN' });
});

test('actuator – the enforcement round trip: POST answers previous, current and note; GET agrees', async (t) => {
  const obs = await startObsApp();
  t.after(() => obs.close());
  const url = `${obs.url}/actuator/obs/enforcement`;
  const toDryRun = await post(url, '{"value":"DRY_RUN"}');
  assert.equal(toDryRun.status, 200);
  const body = await json(toDryRun);
  assert.deepEqual(body, { previous: 'ENFORCING', current: 'DRY_RUN', note: MODE_CHANGE_NOTE });
  assert.match(String(body.note), /in-memory and per-process/);
  assert.deepEqual(await json(await fetch(url)), { mode: 'DRY_RUN' });
  assert.equal(obs.app.obs.mode.get(), 'DRY_RUN');
  assert.deepEqual(await json(await post(url, '{"value":"DRY_RUN"}', 'application/json; charset=utf-8')), {
    previous: 'DRY_RUN',
    current: 'DRY_RUN',
    note: MODE_CHANGE_NOTE,
  });
  const back = await json(await post(url, '{"value":"ENFORCING"}'));
  assert.deepEqual([back.previous, back.current], ['DRY_RUN', 'ENFORCING']);
  assert.deepEqual(await json(await fetch(url)), { mode: 'ENFORCING' });
  const change = obs.logger.lines.filter((l) => /enforcement mode changed/.test(l.message ?? ''));
  assert.equal(change.length, 2, 'each change is logged once');
});

test('actuator – a mode change is visible on the very next request', async (t) => {
  const obs = await startObsApp({ config: { cardinality: { 'max-tag-values-per-meter': 1 } } }, (app) => {
    app.get<{ Params: { v: string } }>('/label/:v', async (request) => ({
      recorded: app.obs.firewall.admit('test_meter', 'v', request.params.v),
    }));
  });
  t.after(() => obs.close());
  const label = async (v: string) =>
    ((await (await fetch(`${obs.url}/label/${v}`)).json()) as { recorded: string }).recorded;
  assert.equal(await label('a'), 'a');
  assert.equal(await label('b'), 'OVERFLOW', 'ENFORCING rewrites past the cap');
  await post(`${obs.url}/actuator/obs/enforcement`, '{"value":"DRY_RUN"}');
  assert.equal(await label('c'), 'c', 'DRY_RUN from the next request on');
  await post(`${obs.url}/actuator/obs/enforcement`, '{"value":"ENFORCING"}');
  assert.equal(await label('d'), 'OVERFLOW');
  const metrics = await obs.registry.metrics();
  assert.match(metrics, /obs_cardinality_overflow_total\{meter="test_meter",tag_key="v"\} 3/);
  assert.match(metrics, /obs_enforcement_mode\{mode="ENFORCING"\} 1/);
  assert.match(metrics, /obs_enforcement_mode\{mode="DRY_RUN"\} 0/);
});

test('actuator – the value is read as OBS_ENFORCEMENT_MODE reads it (case, blanks, - and _ aside) and answered canonical (#40)', async (t) => {
  const obs = await startObsApp();
  t.after(() => obs.close());
  const url = `${obs.url}/actuator/obs/enforcement`;
  const steps: ReadonlyArray<readonly [string, string, string]> = [
    ['dry_run', 'ENFORCING', 'DRY_RUN'],
    ['Enforcing', 'DRY_RUN', 'ENFORCING'],
    [' dry-run ', 'ENFORCING', 'DRY_RUN'],
    ['DRY_RUN', 'DRY_RUN', 'DRY_RUN'],
  ];
  for (const [value, previous, current] of steps) {
    const response = await post(url, JSON.stringify({ value }));
    assert.equal(response.status, 200, value);
    assert.deepEqual(await json(response), { previous, current, note: MODE_CHANGE_NOTE }, value);
  }
  assert.deepEqual(await json(await fetch(url)), { mode: 'DRY_RUN' });
});

test('actuator – the deprecated /actuator/obs/mode alias behaves the same, with Deprecation and Link headers', async (t) => {
  const obs = await startObsApp();
  t.after(() => obs.close());
  const alias = `${obs.url}/actuator/obs/mode`;
  const headersOf = (r: Response) => [r.headers.get('deprecation'), r.headers.get('link')];
  const expected = ['true', '</actuator/obs/enforcement>; rel="successor-version"'];

  const read = await fetch(alias);
  assert.equal(read.status, 200);
  assert.deepEqual(headersOf(read), expected);
  assert.deepEqual(await json(read), { mode: 'ENFORCING' });

  const write = await post(alias, '{"value":"DRY_RUN"}');
  assert.equal(write.status, 200);
  assert.deepEqual(headersOf(write), expected);
  assert.deepEqual(await json(write), { previous: 'ENFORCING', current: 'DRY_RUN', note: MODE_CHANGE_NOTE });
  assert.deepEqual(await json(await fetch(`${obs.url}/actuator/obs/enforcement`)), { mode: 'DRY_RUN' });

  const refused = await post(alias, '{"value":"OFF"}');
  assert.equal(refused.status, 400);
  assert.deepEqual(headersOf(refused), expected, 'errors carry the headers too');

  const successor = await fetch(`${obs.url}/actuator/obs/enforcement`);
  assert.equal(successor.headers.get('deprecation'), null, 'the successor is not deprecated');
  const warnings = obs.logger.lines.filter((l) =>
    /\/actuator\/obs\/mode is deprecated/.test(l.message ?? ''),
  );
  assert.equal(warnings.length, 1, 'the alias is warned about once per process');
});

test('actuator – anything but the two values or bad JSON is a 400, a body that is not JSON a 415, each with a JSON error', async (t) => {
  const obs = await startObsApp();
  t.after(() => obs.close());
  const url = `${obs.url}/actuator/obs/enforcement`;
  const cases: ReadonlyArray<readonly [string, string | null, number, string]> = [
    ['{"value":"OFF"}', 'application/json', 400, 'OBS_ERR_INVALID_MODE'],
    ['{"value":"dry run"}', 'application/json', 400, 'OBS_ERR_INVALID_MODE'],
    ['{"value":"DRYRUN"}', 'application/json', 400, 'OBS_ERR_INVALID_MODE'],
    ['{"value":null}', 'application/json', 400, 'OBS_ERR_INVALID_MODE'],
    ['{"mode":"DRY_RUN"}', 'application/json', 400, 'OBS_ERR_INVALID_MODE'],
    ['{}', 'application/json', 400, 'OBS_ERR_INVALID_MODE'],
    ['["DRY_RUN"]', 'application/json', 400, 'OBS_ERR_INVALID_MODE'],
    ['"DRY_RUN"', 'application/json', 400, 'OBS_ERR_INVALID_MODE'],
    ['{value: DRY_RUN}', 'application/json', 400, 'OBS_ERR_INVALID_JSON'],
    ['', 'application/json', 400, 'OBS_ERR_INVALID_JSON'],
    ['{"value":"DRY_RUN"}', 'text/plain', 415, 'OBS_ERR_UNSUPPORTED_MEDIA_TYPE'],
    ['value=DRY_RUN', 'application/x-www-form-urlencoded', 415, 'OBS_ERR_UNSUPPORTED_MEDIA_TYPE'],
    ['{"value":"DRY_RUN"}', null, 415, 'OBS_ERR_UNSUPPORTED_MEDIA_TYPE'],
    // fastify refuses these itself (FST_ERR_CTP_INVALID_MEDIA_TYPE): answered in obs's words all the same.
    ['{"value":"DRY_RUN"}', '', 415, 'OBS_ERR_UNSUPPORTED_MEDIA_TYPE'],
    ['{"value":"DRY_RUN"}', '@@@', 415, 'OBS_ERR_UNSUPPORTED_MEDIA_TYPE'],
  ];
  for (const [body, type, status, code] of cases) {
    const response = await post(url, body, type);
    assert.equal(response.status, status, `${type} ${body}`);
    const answer = (await json(response)) as { error: { code: string; message: string; request_id: string } };
    assert.deepEqual(Object.keys(answer), ['error']);
    assert.deepEqual(Object.keys(answer.error), ['code', 'message', 'request_id'], `${type} ${body}`);
    assert.equal(answer.error.code, code, `${type} ${body}`);
    assert.ok(answer.error.message.length > 0);
  }
  const tooLarge = await post(url, `{"value":"DRY_RUN","pad":"${'x'.repeat(10_000)}"}`);
  assert.equal(tooLarge.status, 413);
  const { code, message } = ((await json(tooLarge)) as { error: { code: string; message: string } }).error;
  assert.deepEqual([code, message], ['OBS_ERR_BODY_TOO_LARGE', 'request body exceeds 4096 bytes']);
  assert.equal(obs.app.obs.mode.get(), 'ENFORCING', 'no refused request changed the mode');
});

test('actuator – a route that fails unexpectedly is a 500 OBS_ERR_INTERNAL; the details go to the log only', async (t) => {
  const obs = await startObsApp();
  t.after(() => obs.close());
  obs.app.obs.runtime = () => {
    throw Object.assign(new Error('secret detail'), { code: 'ESOMETHING' });
  };
  const response = await fetch(`${obs.url}/actuator/obs/runtime`);
  assert.equal(response.status, 500);
  const answer = (await json(response)) as { error: { code: string; message: string } };
  assert.equal(answer.error.code, 'OBS_ERR_INTERNAL');
  assert.equal(answer.error.message, 'internal error');
  const logged = obs.logger.lines.filter((l) => l.message === 'obs actuator route failed');
  assert.equal(logged.length, 1);
  const { err } = logged[0]!.object as { err: Error };
  assert.match(err.message, /secret detail/);
});

test('actuator – GET /actuator/obs lists every feature of the seed: built ones on or off with their config', async (t) => {
  const obs = await startObsApp({
    version: '9.9.9',
    serviceName: 'orders',
    config: {
      'container-memory': { 'readiness-enabled': true },
      'wide-events': { enabled: false },
      shutdown: { 'drain-timeout': '5s' },
    },
  });
  t.after(() => obs.close());
  const snapshot = (await json(await fetch(`${obs.url}/actuator/obs`))) as {
    features: Record<string, FeatureRow>;
    [k: string]: unknown;
  };
  assert.equal(Object.keys(snapshot.features).length, SEED_FEATURES.length);
  for (const [name, key, status] of SEED_FEATURES) {
    const feature = snapshot.features[key];
    assert.ok(feature, `${name} (${key}) is missing`);
    assert.equal(feature.name, name);
    assert.equal(feature.status, status, key);
    assert.equal(typeof (status === 'built' ? feature.default : feature.default_once_built), 'string', key);
    if (status === 'built') {
      assert.equal(typeof feature.enabled, 'boolean', key);
      if (Object.hasOwn(OBS_SCHEMA.properties, key)) assert.equal(typeof feature.config, 'object', key);
    }
  }
  assert.equal(snapshot.features['container-memory']?.enabled, true);
  assert.equal(snapshot.features['wide-events']?.enabled, false);
  assert.equal(snapshot.features['profile-presets']?.enabled, false, 'auto-apply is off');
  assert.equal(
    (snapshot.features.shutdown?.config as Record<string, unknown> | undefined)?.['drain-timeout'],
    '5s',
  );
  assert.equal(snapshot.mode, 'ENFORCING');
  assert.equal(snapshot.version, '9.9.9');
  assert.equal(snapshot.service, 'orders');
  assert.equal(snapshot.config_hash, obs.app.obs.resolved.hash);
  assert.deepEqual(snapshot.profile, { name: null, applied: false, auto_apply: false });
  const runtime = snapshot.runtime as Record<string, unknown>;
  for (const key of [
    'uptime_seconds',
    'memory',
    'event_loop_lag_ms',
    'in_flight_requests',
    'cardinality',
    'drain',
  ]) {
    assert.ok(key in runtime, `runtime.${key}`);
  }
  await post(`${obs.url}/actuator/obs/enforcement`, '{"value":"DRY_RUN"}');
  assert.equal((await json(await fetch(`${obs.url}/actuator/obs`))).mode, 'DRY_RUN');
});

test('actuator – effective-config, runtime and config-hash', async (t) => {
  const obs = await startObsApp(
    {
      env: { OBS_WIDE_EVENTS_MAX_ATTRIBUTES: '4' },
      config: { cardinality: { 'max-tag-values-per-meter': 2 } },
    },
    (app) => {
      app.get('/x/:v', async (request) =>
        app.obs.firewall.admit('x_total', 'v', (request.params as { v: string }).v),
      );
    },
  );
  t.after(() => obs.close());
  const effective = await json(await fetch(`${obs.url}/actuator/obs/effective-config`));
  const tree = effective.obs as Record<string, Record<string, unknown>>;
  assert.equal(tree['wide-events']?.['max-attributes'], 4);
  assert.equal(tree.shutdown?.['drain-timeout'], '30s');
  assert.equal(tree.profiling?.enabled, false, 'every feature has its effective configuration');
  assert.deepEqual(effective.origins, {
    'obs.cardinality.max-tag-values-per-meter': 'options',
    'obs.wide-events.max-attributes': 'env OBS_WIDE_EVENTS_MAX_ATTRIBUTES',
  });

  for (const v of ['a', 'b', 'c', 'd']) await fetch(`${obs.url}/x/${v}`);
  const runtime = await json(await fetch(`${obs.url}/actuator/obs/runtime`));
  // Other meters (the trace guard's `route` label) are offenders too; this test looks at its own.
  const offenders = (runtime.cardinality as { top_offenders: Array<{ meter: string }> }).top_offenders;
  assert.deepEqual(
    offenders.filter((o) => o.meter === 'x_total'),
    [{ meter: 'x_total', tagKey: 'v', values: 2, overflowed: 2 }],
  );
  assert.equal(runtime.in_flight_requests, 1, 'the request asking');
  assert.deepEqual(Object.keys(runtime.drain as object), ['state', 'since']);
  assert.equal((runtime.drain as { state: string }).state, 'idle');
  assert.ok((runtime.memory as { rss_bytes: number }).rss_bytes > 0);
  assert.equal(typeof (runtime.event_loop_lag_ms as { p99: number }).p99, 'number');

  const hash = await json(await fetch(`${obs.url}/actuator/obs/config-hash`));
  assert.equal(hash.hash, obs.app.obs.resolved.hash);
  assert.equal(hash.algorithm, 'sha256');
  const entries = hash.entries as Record<string, unknown>;
  assert.equal(entries['obs.wide-events.max-attributes'], 4);
  assert.deepEqual(entries['obs.trace-guard.enabled-when.header-not-equals'], {}, 'a map is one entry');
  assert.equal(entries['obs.enforcement.mode'], 'ENFORCING');
  assert.deepEqual(
    Object.keys(entries).filter((k) => /^obs\.slo\./.test(k)),
    ['obs.slo.enabled', 'obs.slo.objectives'],
    'every feature is hashed',
  );
});

test('actuator – in-flight requests are counted while served, in the runtime and as a gauge', async (t) => {
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let arrived = () => {};
  const arrival = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  const obs = await startObsApp({}, (app) => {
    app.get('/slow', async () => {
      arrived();
      await held;
      return 'done';
    });
  });
  t.after(() => obs.close());
  const slow = fetch(`${obs.url}/slow`);
  await arrival;
  const during = await json(await fetch(`${obs.url}/actuator/obs/runtime`));
  assert.equal(during.in_flight_requests, 2, 'the slow request and the one asking');
  assert.match(
    await obs.registry.metrics(),
    /obs_requests_in_flight 1\b/,
    'the scrape from code is no request',
  );
  release();
  assert.equal(await (await slow).text(), 'done');
  // The count drops when the response has finished on the server, which may be after the client has it.
  await until('no request in flight once the slow one has finished', () => obs.app.obs.inFlight === 0);
});

test('actuator – /actuator/health reports the readiness checks as components: 200 UP, 503 DOWN', async (t) => {
  let healthy = true;
  const obs = await startObsApp({}, (app) => {
    app.obs.addReadinessCheck('database', () => ({ ok: healthy, detail: healthy ? 'connected' : 'refused' }));
  });
  t.after(() => obs.close());
  const up = await fetch(`${obs.url}/actuator/health`);
  assert.equal(up.status, 200);
  assert.deepEqual(await json(up), {
    status: 'UP',
    components: {
      drain: { status: 'UP', details: 'idle' },
      dependencies: { status: 'UP', details: { threshold: 0.5, window_ms: 60_000, minimum_calls: 10 } },
      database: { status: 'UP', details: 'connected' },
    },
  });
  healthy = false;
  const down = await fetch(`${obs.url}/actuator/health`);
  assert.equal(down.status, 503);
  assert.equal((await json(down)).status, 'DOWN');
});

test('actuator – the base path is configurable; switches remove the lever, the page or every route', async (t) => {
  const moved = await startObsApp({ env: { OBS_ACTUATOR_BASE_PATH: '/manage' } });
  t.after(() => moved.close());
  assert.equal((await fetch(`${moved.url}/manage/obs`)).status, 200);
  assert.equal((await fetch(`${moved.url}/actuator/obs`)).status, 404);
  const alias = await fetch(`${moved.url}/manage/obs/mode`);
  assert.equal(alias.headers.get('link'), '</manage/obs/enforcement>; rel="successor-version"');

  const noLever = await startObsApp({
    config: { enforcement: { enabled: false }, actuator: { 'ui-enabled': false } },
  });
  t.after(() => noLever.close());
  assert.equal((await fetch(`${noLever.url}/actuator/obs/enforcement`)).status, 404);
  assert.equal((await post(`${noLever.url}/actuator/obs/mode`, '{"value":"DRY_RUN"}')).status, 404);
  assert.equal((await fetch(`${noLever.url}/actuator/obsui`)).status, 404);
  assert.equal((await fetch(`${noLever.url}/actuator/obs`)).status, 200);
  assert.equal(noLever.app.obs.mode.set('DRY_RUN').current, 'DRY_RUN', 'code can still set the mode');

  const none = await startObsApp({ config: { actuator: { enabled: false } } });
  t.after(() => none.close());
  assert.equal((await fetch(`${none.url}/actuator/obs`)).status, 404);
  assert.equal(typeof none.app.obs.snapshot().features, 'object');
});
