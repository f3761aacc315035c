import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crossCheck } from '../../../../src/obs/core/config/config.ts';
import { effectiveOf } from '../../../../src/obs/core/config/config-effective.ts';
import { ENV_VARIABLES, envVariableOf } from '../../../../src/obs/core/config/config-env.ts';
import {
  type Fields,
  isGroup,
  objectList,
  optionalDuration,
  ratio,
  requiredText,
} from '../../../../src/obs/core/config/config-fields.ts';
import {
  type EnforcementMode,
  OBS_SCHEMA,
  type ObsConfig,
} from '../../../../src/obs/core/config/config-schema.ts';
import { defaultsOf, normalise } from '../../../../src/obs/core/config/config-walk.ts';
import { type ConfigProblem, loadObsConfig, type ObsConfigInput } from '../../../../src/obs/index.ts';
import { problemsOf, tempFile } from '../../helpers.ts';

const yaml = (text: string) => ({ OBS_CONFIG_FILE: tempFile('obs.yml', text) });

test('config – defaults: the seed and decisions.md values; planned features read enabled=false', () => {
  const { config, warnings, origins, profile } = loadObsConfig();
  assert.equal(config.cardinality['max-tag-values-per-meter'], 1000);
  assert.equal(config.cardinality['overflow-value'], 'OVERFLOW');
  assert.equal(config.shutdown['drain-timeout'], 30_000);
  assert.equal(config.shutdown['flush-timeout'], 10_000);
  assert.equal(config['container-memory']['critical-headroom-ratio'], 0.1);
  assert.equal(config['container-memory']['readiness-enabled'], false);
  assert.equal(config['exception-handler']['fingerprint-frames'], 5);
  assert.equal(config['wide-events']['max-attributes'], 32);
  assert.equal(config.diagnostics['event-loop-resolution'], 10);
  assert.equal(config.context['request-id-header'], 'X-Request-ID');
  assert.deepEqual(config['trace-guard']['enabled-when'], { 'header-not-equals': {}, 'path-excludes': [] });
  assert.equal(config.enforcement.mode, 'ENFORCING');
  assert.equal(config.sampling.probability, 1);
  assert.equal(config.sampling['prefer-sampling-on-error'], true);
  assert.equal(config['profile-presets']['auto-apply'], false);
  assert.equal(config.actuator['base-path'], '/actuator');
  for (const on of [
    'cardinality',
    'trace-guard',
    'logging',
    'exception-handler',
    'wide-events',
    'shutdown',
    'container-memory',
    'diagnostics',
    'kafka',
  ] as const) {
    assert.equal(config[on].enabled, true, `${on} is on by default`);
  }
  const budget = config['timeout-budget'];
  assert.equal(budget.enabled, true);
  assert.equal(budget['default-budget'], 2000);
  assert.equal(budget['minimum-budget'], 100);
  assert.equal(budget['outbound-header'], 'Obs-Timeout-Ms', 'outbound defaults to the inbound header');
  // The schema still documents what the planned features will do; their switch reads off.
  assert.equal(config.kafka['skip-stale-max-age'], 300_000);
  assert.equal(config.kafka['skip-stale-records'], false);
  assert.equal(config.db['n-plus-one-threshold'], 50);
  assert.equal(config.dependencies.enabled, true, 'the dependency health map is built and on');
  assert.equal(config.dependencies.health['minimum-calls'], 10);
  for (const planned of ['slo'] as const) {
    assert.equal(config[planned].enabled, false, `${planned} is planned: not on`);
  }
  assert.deepEqual(warnings, []);
  assert.deepEqual(origins, {});
  assert.deepEqual(profile, { name: undefined, applied: false });
});

/** Whether two types are the same (not merely assignable to each other). */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

test('config – the types are mapped over the TypeBox schemas: durations in ms, optional keys unset', () => {
  // Checked by the compiler (tsc); a type that changed shape fails to compile here.
  const same: [
    Same<
      ObsConfig['shutdown'],
      { readonly enabled: boolean; readonly 'drain-timeout': number; readonly 'flush-timeout': number }
    >,
    Same<
      ObsConfigInput['shutdown'],
      | {
          readonly enabled?: boolean;
          readonly 'drain-timeout'?: string | number;
          readonly 'flush-timeout'?: string | number;
        }
      | undefined
    >,
    Same<ObsConfig['timeout-budget']['outbound-header'], string | undefined>,
    Same<
      ObsConfig['slo']['objectives'],
      ReadonlyArray<{
        readonly name: string;
        readonly sli: 'availability' | 'latency';
        readonly target: number;
        readonly threshold: number | undefined;
        readonly metric: string;
        readonly filter: string | undefined;
        readonly 'error-filter': string;
      }>
    >,
    Same<ObsConfig['dependencies']['map'], Readonly<Record<string, string>>>,
    Same<ObsConfig['trace-guard']['exclude-path-prefixes'], readonly string[]>,
    Same<ObsConfig['enforcement']['mode'], EnforcementMode>,
  ] = [true, true, true, true, true, true, true];
  assert.ok(same.every((s) => s));
});

test('config – the resolved tree is frozen', () => {
  const { config } = loadObsConfig();
  assert.throws(() => {
    (config.enforcement as { mode: string }).mode = 'DRY_RUN';
  }, TypeError);
});

test('config – every key has its own environment variable', () => {
  let leaves = 0;
  const walk = (fields: Fields, path: string): void => {
    for (const [key, field] of Object.entries(fields)) {
      if (isGroup(field)) walk(field.properties, `${path}.${key}`);
      else {
        leaves++;
        assert.equal(ENV_VARIABLES.get(envVariableOf(`${path}.${key}`))?.path, `${path}.${key}`);
      }
    }
  };
  walk(OBS_SCHEMA.properties, 'obs');
  assert.equal(ENV_VARIABLES.size, leaves);
  assert.equal(envVariableOf('obs.timeout-budget.default-budget'), 'OBS_TIMEOUT_BUDGET_DEFAULT_BUDGET');
});

test('config – YAML file: nested and dotted keys, durations in every unit', () => {
  const { config, origins, configFile } = loadObsConfig({
    env: yaml(
      [
        'obs:',
        '  shutdown:',
        '    drain-timeout: 5m',
        '    flush-timeout: 250ms',
        '  diagnostics.event-loop-resolution: 1s',
        '  container-memory.critical-headroom-ratio: 0.25',
        '  trace-guard:',
        '    exclude-path-prefixes: [/internal]',
        '    enabled-when:',
        '      header-not-equals:',
        '        X-Synthetic: true',
        '  _matchers: &m { ignored: yes }',
      ].join('\n'),
    ),
  });
  assert.equal(config.shutdown['drain-timeout'], 300_000);
  assert.equal(config.shutdown['flush-timeout'], 250);
  assert.equal(config.diagnostics['event-loop-resolution'], 1000);
  assert.equal(config['container-memory']['critical-headroom-ratio'], 0.25);
  assert.deepEqual(config['trace-guard']['exclude-path-prefixes'], ['/internal']);
  assert.deepEqual(
    config['trace-guard']['enabled-when']['header-not-equals'],
    { 'x-synthetic': 'true' },
    'header names lower-cased, a YAML boolean read as the text of a header value',
  );
  assert.equal(origins['obs.shutdown.drain-timeout'], `file ${configFile}`);
  assert.equal(origins['obs.diagnostics.event-loop-resolution'], `file ${configFile}`);
});

test('config – environment: scalars, lists, maps in both forms, names in any case', () => {
  const { config, origins } = loadObsConfig({
    env: {
      OBS_SHUTDOWN_DRAIN_TIMEOUT: '5s',
      obs_cardinality_enabled: 'FALSE',
      OBS_TRACE_GUARD_EXCLUDE_PATH_PREFIXES: '/a, /b/c',
      OBS_EXCEPTION_HANDLER_ENABLED_WHEN_HEADER_NOT_EQUALS: 'x-probe=1,client-id=probe',
      OBS_TRACE_GUARD_ENABLED_WHEN_HEADER_NOT_EQUALS: '{"client-id":"probe"}',
      OBS_TRACE_GUARD_ENABLED_WHEN_HEADER_NOT_EQUALS_X_SYNTHETIC: 'true',
      OBS_TRACE_GUARD_ENABLED_WHEN_PATH_EXCLUDES: '["/internal"]',
      OBS_ENFORCEMENT_MODE: 'dry-run',
    },
  });
  assert.equal(config.shutdown['drain-timeout'], 5000);
  assert.equal(config.cardinality.enabled, false);
  assert.deepEqual(config['trace-guard']['exclude-path-prefixes'], ['/a', '/b/c']);
  assert.deepEqual(config['exception-handler']['enabled-when']['header-not-equals'], {
    'x-probe': '1',
    'client-id': 'probe',
  });
  assert.deepEqual(config['trace-guard']['enabled-when'], {
    'header-not-equals': { 'client-id': 'probe', 'x-synthetic': 'true' },
    'path-excludes': ['/internal'],
  });
  assert.equal(config.enforcement.mode, 'DRY_RUN', 'enumerations are relaxed like Spring binding');
  assert.equal(origins['obs.cardinality.enabled'], 'env obs_cardinality_enabled');
  assert.equal(
    origins['obs.trace-guard.enabled-when.header-not-equals'],
    'env OBS_TRACE_GUARD_ENABLED_WHEN_HEADER_NOT_EQUALS, OBS_TRACE_GUARD_ENABLED_WHEN_HEADER_NOT_EQUALS_X_SYNTHETIC',
  );
});

test('config – environment: Kubernetes service links, OBS_PROFILE and OBS_CONFIG_FILE are not keys', () => {
  const { config } = loadObsConfig({
    env: {
      OBS_SERVICE_HOST: '10.0.0.7',
      OBS_SERVICE_PORT: '80',
      OBS_SERVICE_PORT_HTTP: '80',
      OBS_PORT: 'tcp://10.0.0.7:80',
      OBS_PORT_80_TCP: 'tcp://10.0.0.7:80',
      OBS_PORT_80_TCP_ADDR: '10.0.0.7',
      OBS_PROFILE: 'prod',
      OBS_CONFIG_FILE: '',
    },
  });
  assert.equal(config.sampling.probability, 1, 'the prod preset is not applied without auto-apply');
});

test('config – precedence: defaults < preset < file < OTEL_TRACES_SAMPLER_ARG < OBS_* < code', () => {
  const file = yaml(
    [
      'obs:',
      '  profile-presets:',
      '    auto-apply: true',
      '  sampling:',
      '    probability: 0.5',
      '  shutdown:',
      '    drain-timeout: 3s',
      '    flush-timeout: 20ms',
      '  cardinality:',
      '    max-tag-values-per-meter: 7',
    ].join('\n'),
  );
  const env = {
    ...file,
    OBS_PROFILE: 'prod',
    OTEL_TRACES_SAMPLER_ARG: '0.25',
    OBS_SHUTDOWN_DRAIN_TIMEOUT: '4s',
    OBS_CARDINALITY_MAX_TAG_VALUES_PER_METER: '8',
  };
  const options: ObsConfigInput = { cardinality: { 'max-tag-values-per-meter': 9 } };
  const { config, origins, profile } = loadObsConfig({ env, options });
  assert.deepEqual(profile, { name: 'prod', applied: true });
  assert.equal(config['trace-guard']['fail-on-missing'], false);
  assert.equal(origins['obs.trace-guard.fail-on-missing'], 'preset prod', 'only the preset sets it');
  assert.equal(config.shutdown['flush-timeout'], 20, 'file over default');
  assert.equal(
    config.sampling.probability,
    0.25,
    'OTEL_TRACES_SAMPLER_ARG over the file and the preset (0.1)',
  );
  assert.equal(origins['obs.sampling.probability'], 'env OTEL_TRACES_SAMPLER_ARG');
  assert.equal(config.shutdown['drain-timeout'], 4000, 'OBS_* over the file');
  assert.equal(config.cardinality['max-tag-values-per-meter'], 9, 'code over everything');
  assert.equal(origins['obs.cardinality.max-tag-values-per-meter'], 'options');

  const withObsVariable = loadObsConfig({ env: { ...env, OBS_SAMPLING_PROBABILITY: '0.75' } });
  assert.equal(
    withObsVariable.config.sampling.probability,
    0.75,
    'OBS_SAMPLING_PROBABILITY over OTEL_TRACES_SAMPLER_ARG',
  );
});

test('config – OTEL_TRACES_SAMPLER_ARG counts only for ratio samplers, and is validated', () => {
  const read = (env: Record<string, string>) => loadObsConfig({ env }).config.sampling.probability;
  assert.equal(read({ OTEL_TRACES_SAMPLER_ARG: '0.2' }), 0.2);
  assert.equal(
    read({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.2' }),
    0.2,
  );
  assert.equal(read({ OTEL_TRACES_SAMPLER: 'jaeger_remote', OTEL_TRACES_SAMPLER_ARG: 'endpoint=x' }), 1);
  const [p] = problemsOf({ env: { OTEL_TRACES_SAMPLER_ARG: '1.5' } });
  assert.equal(p?.key, 'obs.sampling.probability');
  assert.equal(p?.source, 'env OTEL_TRACES_SAMPLER_ARG');
});

test('config – maps merge key by key across sources, lists are replaced', () => {
  const { config } = loadObsConfig({
    env: {
      ...yaml(
        'obs:\n  trace-guard:\n    exclude-path-prefixes: [/x, /y]\n    enabled-when:\n      header-not-equals: { x-a: alpha, x-b: beta }',
      ),
      OBS_TRACE_GUARD_ENABLED_WHEN_HEADER_NOT_EQUALS: 'x-b=bravo',
    },
    options: { 'trace-guard': { 'exclude-path-prefixes': ['/z'] } },
  });
  assert.deepEqual(config['trace-guard']['enabled-when']['header-not-equals'], {
    'x-a': 'alpha',
    'x-b': 'bravo',
  });
  assert.deepEqual(config['trace-guard']['exclude-path-prefixes'], ['/z']);
});

test('config – presets: auto-apply is opt-in; each preset applies its own values', () => {
  const off = loadObsConfig({ env: { OBS_PROFILE: 'test' } });
  assert.equal(off.config.cardinality.enabled, true);
  assert.deepEqual(off.profile, { name: 'test', applied: false });

  const on = (profile: string) =>
    loadObsConfig({ env: { OBS_PROFILE: profile }, options: { 'profile-presets': { 'auto-apply': true } } });
  const dev = on('dev');
  assert.equal(dev.config.cardinality['max-tag-values-per-meter'], 5000);
  assert.equal(dev.config.sampling.probability, 1);
  const prod = on('prod');
  assert.equal(prod.config.sampling.probability, 0.1);
  assert.equal(prod.config.enforcement.mode, 'ENFORCING');
  assert.equal(
    prod.config['container-memory']['readiness-enabled'],
    false,
    'the prod preset does not turn an opt-in feature on',
  );
  const testing = on('TEST');
  assert.equal(testing.config.cardinality.enabled, false);
  assert.equal(testing.config['trace-guard'].enabled, false);
  assert.equal(testing.config.sampling.probability, 0);
  assert.deepEqual(testing.profile, { name: 'test', applied: true });
});

test('config – the canary preset pins DRY_RUN; a later source that undoes it is warned about', () => {
  const canary = loadObsConfig({ env: { OBS_PROFILE: 'canary', OBS_PROFILE_PRESETS_AUTO_APPLY: 'true' } });
  assert.equal(canary.config.enforcement.mode, 'DRY_RUN');
  assert.equal(canary.origins['obs.enforcement.mode'], 'preset canary');
  assert.equal(canary.config['trace-guard']['fail-on-missing'], true);
  assert.deepEqual(canary.warnings, []);

  const undone = loadObsConfig({
    env: { OBS_PROFILE: 'canary', OBS_PROFILE_PRESETS_AUTO_APPLY: 'true', OBS_ENFORCEMENT_MODE: 'ENFORCING' },
  });
  assert.equal(undone.config.enforcement.mode, 'ENFORCING', 'later sources win');
  assert.equal(undone.warnings.length, 1);
  assert.match(
    undone.warnings[0] ?? '',
    /preset canary pins obs\.enforcement\.mode=DRY_RUN.*OBS_ENFORCEMENT_MODE/,
  );
});

test('config – auto-apply without OBS_PROFILE warns; an unknown profile fails', () => {
  const { warnings, profile } = loadObsConfig({ options: { 'profile-presets': { 'auto-apply': true } } });
  assert.deepEqual(profile, { name: undefined, applied: false });
  assert.match(warnings.join('\n'), /OBS_PROFILE is not set/);
  const [p] = problemsOf({ env: { OBS_PROFILE: 'staging' } });
  assert.equal(p?.key, 'OBS_PROFILE');
  assert.match(p?.message ?? '', /"staging".*one of dev, prod, test, canary/);
});

test('config – a typo in an OBS_* variable fails naming it and the nearest variable', () => {
  const problems = problemsOf({ env: { OBS_SHUTDOWN_DRAIN_TIMOUT: '5s' } });
  assert.equal(problems.length, 1);
  assert.equal(problems[0]?.key, 'OBS_SHUTDOWN_DRAIN_TIMOUT');
  assert.equal(
    problems[0]?.message,
    'OBS_SHUTDOWN_DRAIN_TIMOUT = "5s" (environment): unknown variable; did you mean OBS_SHUTDOWN_DRAIN_TIMEOUT (obs.shutdown.drain-timeout)?',
  );
  const [far] = problemsOf({ env: { OBS_COMPLETELY_MADE_UP: '1' } });
  assert.match(far?.message ?? '', /unknown variable; no obs key has this variable/);
});

test('config – a typo in the YAML file fails naming the key, the file and the nearest key', () => {
  const env = yaml('obs:\n  shutdown:\n    drian-timeout: 5s\n  trace-gaurd:\n    enabled: false\n');
  const problems = problemsOf({ env });
  assert.deepEqual(
    problems.map((p) => p.message),
    [
      `obs.shutdown.drian-timeout = "5s" (file ${env.OBS_CONFIG_FILE}): unknown key; did you mean obs.shutdown.drain-timeout?`,
      `obs.trace-gaurd = {"enabled":false} (file ${env.OBS_CONFIG_FILE}): unknown key; did you mean obs.trace-guard?`,
    ],
  );
});

test('config – a known key in the wrong place is pointed to its place', () => {
  const [misplaced] = problemsOf({ options: { 'pii-masking-enabled': true } as ObsConfigInput });
  assert.match(misplaced?.message ?? '', /did you mean obs\.logging\.pii-masking-enabled\?/);
  const [outside] = problemsOf({ env: yaml('shutdown:\n  drain-timeout: 5s\n') });
  assert.match(
    outside?.message ?? '',
    /did you mean obs\.shutdown\? \(the file's settings go under a top-level obs: mapping\)/,
  );
  const [none] = problemsOf({ options: { cardinality: { zzz: 1 } } as ObsConfigInput });
  assert.match(none?.message ?? '', /valid keys under obs\.cardinality: enabled, max-tag-values-per-meter/);
});

test('config – wrong types and ranges fail, every problem listed, one line each', () => {
  const env = {
    OBS_SHUTDOWN_DRAIN_TIMEOUT: '5 seconds',
    OBS_CARDINALITY_MAX_TAG_VALUES_PER_METER: '0',
    OBS_SAMPLING_PROBABILITY: 'half',
    OBS_TRACE_GUARD_FAIL_ON_MISSING: 'yes',
    OBS_ENFORCEMENT_MODE: 'OFF',
    OBS_CONTEXT_REQUEST_ID_HEADER: 'Bad Header',
    OBS_TRACE_GUARD_EXCLUDE_PATH_PREFIXES: 'no-slash',
    OBS_TRACE_GUARD_ENABLED_WHEN_HEADER_NOT_EQUALS: 'novalue',
    OBS_ACTUATOR_BASE_PATH: '/actuator/',
  };
  const problems = problemsOf({ env, options: { 'wide-events': { 'max-attributes': 2.5 } } });
  const byKey = new Map(problems.map((p) => [p.key, p]));
  const expectations: Record<string, RegExp> = {
    'obs.shutdown.drain-timeout':
      /= "5 seconds" \(env OBS_SHUTDOWN_DRAIN_TIMEOUT\): expected a duration such as 100ms, 2s, 5m or 1h/,
    'obs.cardinality.max-tag-values-per-meter': /= "0" .*expected a whole number from 1 to 1000000/,
    'obs.sampling.probability': /= "half" .*expected a number from 0 to 1/,
    'obs.trace-guard.fail-on-missing': /= "yes" .*expected true or false/,
    'obs.enforcement.mode': /= "OFF" .*expected one of ENFORCING, DRY_RUN/,
    'obs.context.request-id-header': /expected an HTTP header name/,
    'obs.trace-guard.exclude-path-prefixes': /expected a list of items, each a path starting with \//,
    'obs.trace-guard.enabled-when.header-not-equals': /expected a map of header name to text/,
    'obs.actuator.base-path': /expected a path starting with \/ and not ending with \//,
    'obs.wide-events.max-attributes': /= 2\.5 \(options\): expected a whole number/,
  };
  for (const [key, pattern] of Object.entries(expectations)) {
    assert.match(byKey.get(key)?.message ?? `(no problem for ${key})`, pattern);
  }
  assert.equal(problems.length, Object.keys(expectations).length);
  for (const p of problems) assert.ok(!p.message.includes('\n'), 'one line each');
  assert.throws(
    () => loadObsConfig({ env }),
    /^ObsConfigError: invalid obs configuration \(9 problems\):\n {2}- /,
  );
});

test('config – cross-key rules: budgets within the maximum, a latency objective needs a threshold', () => {
  // Checked on a tree directly (test/obs/features/slo.integration.test.ts covers the SLO rules through loadObsConfig).
  const tree = defaultsOf(OBS_SCHEMA.properties) as Record<string, Record<string, unknown>>;
  tree['timeout-budget'] = { ...tree['timeout-budget'], 'default-budget': 60_000, 'maximum-budget': 10_000 };
  tree.slo = { ...tree.slo, objectives: [{ name: 'fast', sli: 'latency', target: 0.99 }] };
  const problems: ConfigProblem[] = [];
  crossCheck(tree, new Map([['obs.timeout-budget.default-budget', 'options']]), problems);
  assert.deepEqual(
    problems.map((p) => p.message),
    [
      'obs.timeout-budget.default-budget = "1m" (options): expected at most obs.timeout-budget.maximum-budget (10s)',
      'obs.slo.objectives[0].threshold (defaults): expected a duration (required by a latency objective)',
    ],
  );
  const defaults: ConfigProblem[] = [];
  crossCheck(defaultsOf(OBS_SCHEMA.properties), new Map(), defaults);
  assert.deepEqual(defaults, [], 'the defaults keep the rules');
});

test('config – the file: missing, unreadable YAML, not a mapping', () => {
  const [missing] = problemsOf({ env: { OBS_CONFIG_FILE: '/nonexistent/obs.yml' } });
  assert.match(
    missing?.message ?? '',
    /^OBS_CONFIG_FILE = "\/nonexistent\/obs\.yml" \(environment\): expected a readable YAML file; it does not exist$/,
  );
  const [syntax] = problemsOf({ env: yaml('obs:\n  a: [unclosed\n') });
  assert.match(syntax?.message ?? '', /expected valid YAML; line \d+, column \d+/);
  const [list] = problemsOf({ env: yaml('- obs\n') });
  assert.match(list?.message ?? '', /expected a mapping with the key obs/);
  const [scalar] = problemsOf({ env: yaml('obs:\n  cardinality: 5\n') });
  assert.match(
    scalar?.message ?? '',
    /obs\.cardinality = 5 .*expected a mapping of the keys of obs\.cardinality/,
  );
  assert.doesNotThrow(() => loadObsConfig({ env: yaml('') }), 'an empty file sets nothing');
});

test('config – a relative OBS_CONFIG_FILE is read from cwd', () => {
  const path = tempFile('relative.yml', 'obs:\n  wide-events:\n    max-attributes: 5\n');
  const dir = path.slice(0, path.lastIndexOf('/'));
  const { config, configFile } = loadObsConfig({ env: { OBS_CONFIG_FILE: 'relative.yml' }, cwd: dir });
  assert.equal(config['wide-events']['max-attributes'], 5);
  assert.equal(configFile, path);
});

test('config – legacy obs.runtime.mode migrates to obs.enforcement.mode with exactly one warning', () => {
  for (const input of [
    { env: { OBS_RUNTIME_MODE: 'DRY_RUN' } },
    { env: yaml('obs:\n  runtime:\n    mode: DRY_RUN\n') },
    { env: yaml('obs:\n  runtime.mode: DRY_RUN\n') },
    { options: { runtime: { mode: 'DRY_RUN' } } },
  ]) {
    const { config, warnings, origins } = loadObsConfig(input);
    assert.equal(config.enforcement.mode, 'DRY_RUN');
    assert.equal(warnings.length, 1, JSON.stringify(input));
    assert.match(warnings[0] ?? '', /^obs\.runtime\.mode is deprecated .*migrated to obs\.enforcement\.mode/);
    assert.match(origins['obs.enforcement.mode'] ?? '', /\(as obs\.runtime\.mode\)$/);
  }
  const twice = loadObsConfig({
    env: { OBS_RUNTIME_MODE: 'DRY_RUN', ...yaml('obs:\n  runtime:\n    mode: DRY_RUN\n') },
  });
  assert.equal(twice.warnings.length, 1, 'one warning even when several sources use the legacy key');

  const both = loadObsConfig({
    options: { runtime: { mode: 'DRY_RUN' }, enforcement: { mode: 'ENFORCING' } },
  });
  assert.equal(both.config.enforcement.mode, 'ENFORCING', 'the new key wins within a source');
  assert.match(both.warnings[0] ?? '', /ignored: obs\.enforcement\.mode is also set there/);

  const newer = loadObsConfig({
    env: { OBS_RUNTIME_MODE: 'DRY_RUN' },
    options: { enforcement: { mode: 'ENFORCING' } },
  });
  assert.equal(newer.config.enforcement.mode, 'ENFORCING', 'a later source still wins');

  const [off] = problemsOf({ env: { OBS_RUNTIME_MODE: 'OFF' } });
  assert.match(
    off?.message ?? '',
    /OFF mode was dropped, turn a feature off with obs\.<feature>\.enabled=false/,
  );
  const [extra] = problemsOf({ options: { runtime: { mode: 'DRY_RUN', level: 1 } } as ObsConfigInput });
  assert.equal(extra?.key, 'obs.runtime.level');
});

test('config – in code, undefined means not set; null is a value (and only optional keys take it)', () => {
  const { config, origins } = loadObsConfig({
    env: { OBS_WIDE_EVENTS_MAX_ATTRIBUTES: '5' },
    options: { 'wide-events': { 'max-attributes': undefined } },
  });
  assert.equal(config['wide-events']['max-attributes'], 5);
  assert.equal(origins['obs.wide-events.max-attributes'], 'env OBS_WIDE_EVENTS_MAX_ATTRIBUTES');
  const [p] = problemsOf({
    options: { 'wide-events': { 'max-attributes': null } } as unknown as ObsConfigInput,
  });
  assert.equal(
    p?.message,
    'obs.wide-events.max-attributes = null (options): expected a whole number from 1 to 256',
  );
});

test('config – optional keys and lists of objects, read against a schema of their own', () => {
  // Read against a small schema of their own, apart from the SLO objectives that use them.
  const fields = {
    threshold: optionalDuration('A threshold.'),
    items: objectList('Items.', ['name'], {
      name: requiredText('A name.', /^\w+$/, 'a word'),
      target: ratio(0.5, 'A ratio.'),
    }),
  };
  const read = (raw: unknown) => {
    const problems: ConfigProblem[] = [];
    const origins = new Map<string, string>();
    const tree = normalise(raw, { source: () => 'test', problems, origins, allowScaffolding: false }, fields);
    return { tree, problems: problems.map((p) => p.message), origins: Object.fromEntries(origins) };
  };
  assert.deepEqual(read({ threshold: '300ms' }).tree, { threshold: 300 });
  for (const unset of [null, '']) {
    const { tree, origins } = read({ threshold: unset });
    assert.ok(Object.hasOwn(tree, 'threshold') && tree.threshold === undefined, 'set to unset');
    assert.deepEqual(origins, { 'obs.threshold': 'test' });
  }
  assert.deepEqual(effectiveOf(fields, { threshold: undefined, items: [] }), { threshold: null, items: [] });
  assert.deepEqual(read({ items: '[{"name":"a","target":0.9},{"name":"b"}]' }).tree, {
    items: [
      { name: 'a', target: 0.9 },
      { name: 'b', target: 0.5 },
    ],
  });
  assert.deepEqual(read({ items: [{ target: 2 }] }).problems, [
    'obs.items[0].target = 2 (test): expected a number from 0 to 1',
    'obs.items[0].name (test): expected a value (required)',
  ]);
});

test('config – loadObsConfig reads nothing but what it is given', () => {
  process.env.OBS_SHUTDOWN_DRAIN_TIMEOUT = '9s';
  try {
    assert.equal(loadObsConfig().config.shutdown['drain-timeout'], 30_000);
  } finally {
    delete process.env.OBS_SHUTDOWN_DRAIN_TIMEOUT;
  }
});
