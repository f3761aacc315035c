import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { buildApp } from '../../src/echo/app.ts';
import { type EchoConfig, loadConfig, VARIABLES } from '../../src/echo/config.ts';
import { type EchoConfigError, isEchoError } from '../../src/echo/errors.ts';
import { freePort } from '../helpers/runtime.ts';

/** Runs `loadConfig` expecting `ECHO_ERR_CONFIG` and returns its lines. */
function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (err) {
    assert.ok(
      isEchoError(err) && err.code === 'ECHO_ERR_CONFIG',
      `expected ECHO_ERR_CONFIG, got ${String(err)}`,
    );
    const { problems } = err as EchoConfigError;
    assert.equal(err.message, problems.join('\n'));
    return problems;
  }
  assert.fail(`loadConfig(${JSON.stringify(env)}) accepted the environment`);
}

/** The form a startup message names: the table's, without its Markdown backticks. */
function formOf(name: string): string {
  const spec = VARIABLES.find((v) => v.name === name);
  assert.ok(spec, `${name} is not in VARIABLES`);
  return spec.form.replaceAll('`', '');
}

const DEFAULTS: EchoConfig = {
  port: 8080,
  host: '0.0.0.0',
  enableTls: false,
  certFile: 'server.crt',
  keyFile: 'server.key',
  grpcPort: undefined,
  enableCors: true,
  maxBodyBytes: 10_485_760,
  maxScenarioBodyBytes: 33_554_432,
  chaosPercent: 0,
  defaultDelay: undefined,
  faultDefaults: undefined,
  maxDelayMs: 300_000,
  errorTimeoutMs: 65_000,
  maxResponseBytes: 104_857_600,
  rateLimitRps: 0,
  rateLimitBurst: 0,
  sseTickerMs: 5_000,
  maxStreams: 10_000,
  drainDelayMs: 5_000,
  drainTimeoutMs: 30_000,
  idleReclaimMs: 10_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 72_000,
  maxConnections: 10_000,
  h2MaxConcurrentStreams: 100,
  maxConcurrentCompression: 2,
  historySize: 100,
  historyMaxBodyBytes: 65_536,
  historyMaxBytes: 33_554_432,
  historySecrets: 'mask',
  adminToken: undefined,
  adminTokenFile: undefined,
  corsAdmin: false,
  scenarioFile: 'scenarios.yaml',
  scenarioFileExplicit: false,
  serverInfo: false,
  replayTimeoutMs: 30_000,
  upstream: undefined,
  upstreamTimeoutMs: 30_000,
  upstreamHostHeader: 'upstream',
  stateUrl: undefined,
  statePassword: undefined,
  replayAllowedTargets: [{ kind: 'any' }],
  replayCredentials: 'masked',
  seed: undefined,
  faultsEnabled: true,
  maxActiveFaults: 10_000,
  logLevel: 'info',
  logRequests: true,
  logWorker: true,
  logHeaders: false,
  logBody: false,
  logTransaction: false,
  logResponse: false,
  logResponseHeaders: false,
  logResponseBody: false,
  maxLogBodyBytes: 2048,
  extraHeaders: [],
};

test('loadConfig – an empty environment gives every documented default', () => {
  assert.deepEqual(loadConfig({}), DEFAULTS);
});

test('loadConfig – reads only the environment it is given, never process.env', () => {
  const saved = process.env['PORT'];
  process.env['PORT'] = '1234';
  try {
    assert.equal(loadConfig({}).port, 8080);
  } finally {
    if (saved === undefined) delete process.env['PORT'];
    else process.env['PORT'] = saved;
  }
});

/** A readable token file, for the accepted `ECHO_ADMIN_TOKEN_FILE` (buildApp reads it). */
const TOKEN_FILE = join(mkdtempSync(join(tmpdir(), 'echo-config-')), 'token');
writeFileSync(TOKEN_FILE, 'from-a-file\n');

/** [variable, value as written, config key, value the service uses]. */
const ACCEPTED: ReadonlyArray<readonly [string, string, keyof EchoConfig, unknown]> = [
  ['PORT', '0', 'port', 0],
  ['PORT', '65535', 'port', 65535],
  ['PORT', ' 9090 ', 'port', 9090],
  ['HOST', '127.0.0.1', 'host', '127.0.0.1'],
  ['HOST', '::', 'host', '::'],
  ['ENABLE_TLS', 'true', 'enableTls', true],
  ['ENABLE_TLS', 'TRUE', 'enableTls', true],
  ['ENABLE_TLS', 'false', 'enableTls', false],
  ['CERT_FILE', '/etc/tls/tls.crt', 'certFile', '/etc/tls/tls.crt'],
  ['KEY_FILE', '/etc/tls/tls.key', 'keyFile', '/etc/tls/tls.key'],
  ['ECHO_GRPC_PORT', '9090', 'grpcPort', 9090],
  ['ECHO_GRPC_PORT', '', 'grpcPort', undefined],
  ['ENABLE_CORS', 'false', 'enableCors', false],
  ['MAX_BODY_SIZE', '1', 'maxBodyBytes', 1],
  ['MAX_BODY_SIZE', '1073741824', 'maxBodyBytes', 1_073_741_824],
  ['ECHO_CHAOS', '', 'chaosPercent', 0],
  ['ECHO_CHAOS', '0', 'chaosPercent', 0],
  ['ECHO_CHAOS', '100', 'chaosPercent', 100],
  ['ECHO_DELAY', '', 'defaultDelay', undefined],
  ['ECHO_DELAY', '250ms', 'defaultDelay', { minMs: 250, maxMs: 250 }],
  ['ECHO_DELAY', '1.5s', 'defaultDelay', { minMs: 1500, maxMs: 1500 }],
  ['ECHO_DELAY', '2m', 'defaultDelay', { minMs: 120_000, maxMs: 120_000 }],
  ['ECHO_DELAY', '40', 'defaultDelay', { minMs: 40, maxMs: 40 }],
  ['ECHO_DELAY', '100-500ms', 'defaultDelay', { minMs: 100, maxMs: 500 }],
  ['ECHO_MAX_DELAY', '0', 'maxDelayMs', 0],
  ['ECHO_MAX_DELAY', '1440m', 'maxDelayMs', 86_400_000],
  ['ECHO_MAX_DELAY', '10s', 'maxDelayMs', 10_000],
  ['ECHO_ERROR_TIMEOUT', '2s', 'errorTimeoutMs', 2000],
  ['ECHO_ERROR_TIMEOUT', '0ms', 'errorTimeoutMs', 0],
  ['ECHO_MAX_RESPONSE_SIZE', '10737418240', 'maxResponseBytes', 10_737_418_240],
  ['ECHO_MAX_RESPONSE_SIZE', '1024', 'maxResponseBytes', 1024],
  ['ECHO_RATE_LIMIT_RPS', '2', 'rateLimitRps', 2],
  ['ECHO_RATE_LIMIT_RPS', '0.5', 'rateLimitRps', 0.5],
  ['ECHO_RATE_LIMIT_RPS', '1000000', 'rateLimitRps', 1_000_000],
  ['ECHO_RATE_LIMIT_BURST', '10', 'rateLimitBurst', 10],
  ['ECHO_SSE_TICKER', '10ms', 'sseTickerMs', 10],
  ['ECHO_SSE_TICKER', '60m', 'sseTickerMs', 3_600_000],
  ['ECHO_MAX_STREAMS', '0', 'maxStreams', 0],
  ['ECHO_MAX_STREAMS', '1000000', 'maxStreams', 1_000_000],
  ['ECHO_DRAIN_DELAY', '0', 'drainDelayMs', 0],
  ['ECHO_DRAIN_DELAY', '1.5s', 'drainDelayMs', 1_500],
  ['ECHO_DRAIN_DELAY', '10m', 'drainDelayMs', 600_000],
  ['ECHO_DRAIN_TIMEOUT', '0', 'drainTimeoutMs', 0],
  ['ECHO_DRAIN_TIMEOUT', '60m', 'drainTimeoutMs', 3_600_000],
  ['ECHO_IDLE_RECLAIM', '0', 'idleReclaimMs', 0],
  ['ECHO_IDLE_RECLAIM', '1h', 'idleReclaimMs', 3_600_000],
  ['ECHO_HISTORY_SIZE', '0', 'historySize', 0],
  ['ECHO_HISTORY_SIZE', '100000', 'historySize', 100_000],
  ['ECHO_HISTORY_MAX_BODY', '10485760', 'historyMaxBodyBytes', 10_485_760],
  ['ECHO_HISTORY_MAX_BYTES', '1048576', 'historyMaxBytes', 1_048_576],
  ['ECHO_HISTORY_MAX_BYTES', '1073741824', 'historyMaxBytes', 1_073_741_824],
  ['ECHO_SCENARIO_FILE', '/config/scenarios.yaml', 'scenarioFile', '/config/scenarios.yaml'],
  ['ECHO_SERVER_INFO', 'true', 'serverInfo', true],
  ['ECHO_REPLAY_TIMEOUT', '1ms', 'replayTimeoutMs', 1],
  ['ECHO_REPLAY_TIMEOUT', '5s', 'replayTimeoutMs', 5000],
  ['ECHO_UPSTREAM', '', 'upstream', undefined],
  ['ECHO_UPSTREAM', 'http://orders:8080', 'upstream', new URL('http://orders:8080')],
  ['ECHO_UPSTREAM', 'https://api.example/v2', 'upstream', new URL('https://api.example/v2')],
  ['ECHO_UPSTREAM_TIMEOUT', '1ms', 'upstreamTimeoutMs', 1],
  ['ECHO_UPSTREAM_TIMEOUT', '2m', 'upstreamTimeoutMs', 120_000],
  ['ECHO_UPSTREAM_HOST_HEADER', 'preserve', 'upstreamHostHeader', 'preserve'],
  ['ECHO_UPSTREAM_HOST_HEADER', 'upstream', 'upstreamHostHeader', 'upstream'],
  ['ECHO_STATE_URL', 'redis://redis:6379', 'stateUrl', new URL('redis://redis:6379')],
  ['ECHO_STATE_URL', 'rediss://:pw@redis.example/3', 'stateUrl', new URL('rediss://:pw@redis.example/3')],
  ['ECHO_STATE_PASSWORD', 's3cret', 'statePassword', 's3cret'],
  [
    'ECHO_REPLAY_ALLOWED_TARGETS',
    'API.internal:8443, *',
    'replayAllowedTargets',
    [{ kind: 'host', host: 'api.internal', port: 8443 }, { kind: 'any' }],
  ],
  ['ECHO_SEED', '', 'seed', undefined],
  ['ECHO_SEED', '0', 'seed', 0],
  ['ECHO_SEED', '4294967295', 'seed', 4_294_967_295],
  ['ECHO_HISTORY_SECRETS', 'show', 'historySecrets', 'show'],
  ['ECHO_REPLAY_CREDENTIALS', 'original', 'replayCredentials', 'original'],
  ['ECHO_MAX_SCENARIO_BODY', '1024', 'maxScenarioBodyBytes', 1024],
  ['ECHO_ADMIN_TOKEN', 's3cr3t-T0ken_~!', 'adminToken', 's3cr3t-T0ken_~!'],
  ['ECHO_ADMIN_TOKEN_FILE', TOKEN_FILE, 'adminTokenFile', TOKEN_FILE],
  ['ECHO_CORS_ADMIN', 'true', 'corsAdmin', true],
  ['ECHO_HEADERS_TIMEOUT', '1ms', 'headersTimeoutMs', 1],
  ['ECHO_REQUEST_TIMEOUT', '60m', 'requestTimeoutMs', 3_600_000],
  ['ECHO_KEEP_ALIVE_TIMEOUT', '5s', 'keepAliveTimeoutMs', 5000],
  ['ECHO_MAX_CONNECTIONS', '1', 'maxConnections', 1],
  ['ECHO_H2_MAX_CONCURRENT_STREAMS', '10000', 'h2MaxConcurrentStreams', 10_000],
  ['ECHO_MAX_CONCURRENT_COMPRESSION', '1', 'maxConcurrentCompression', 1],
  ['ECHO_FAULTS_ENABLED', 'false', 'faultsEnabled', false],
  ['ECHO_MAX_ACTIVE_FAULTS', '1', 'maxActiveFaults', 1],
  ['ECHO_MAX_ACTIVE_FAULTS', '1000000', 'maxActiveFaults', 1_000_000],
  ['LOG_LEVEL', 'debug', 'logLevel', 'debug'],
  ['LOG_LEVEL', 'silent', 'logLevel', 'silent'],
  ['LOG_REQUESTS', 'false', 'logRequests', false],
  ['LOG_WORKER', 'false', 'logWorker', false],
  ['LOG_HEADERS', 'true', 'logHeaders', true],
  ['LOG_BODY', 'true', 'logBody', true],
  ['LOG_TRANSACTION', 'true', 'logTransaction', true],
  ['LOG_RESPONSE', 'true', 'logResponse', true],
  ['LOG_RESPONSE_HEADERS', 'true', 'logResponseHeaders', true],
  ['LOG_RESPONSE_BODY', 'true', 'logResponseBody', true],
  ['MAX_LOG_BODY_SIZE', '0', 'maxLogBodyBytes', 0],
  ['MAX_LOG_BODY_SIZE', '1048576', 'maxLogBodyBytes', 1_048_576],
];

for (const [name, raw, key, expected] of ACCEPTED) {
  test(`loadConfig – ${name}=${JSON.stringify(raw)} is accepted as ${JSON.stringify(expected)}`, () => {
    const config = loadConfig({ [name]: raw });
    assert.deepEqual(config[key], expected);
  });
}

test('loadConfig – every accepted value, extremes included, builds a service that answers', async () => {
  const logger = pino({ level: 'silent' });
  for (const [name, accepted] of ACCEPTED) {
    // A gRPC port is bound when the app is ready: a free one, not the table's 9090 (another server may hold it).
    const raw = name === 'ECHO_GRPC_PORT' && accepted !== '' ? String(await freePort()) : accepted;
    const app = await buildApp(loadConfig({ [name]: raw }), { scenarios: [], logger });
    try {
      const response = await app.inject({ url: '/health' });
      assert.equal(response.statusCode, 200, `${name}=${raw}`);
    } finally {
      await app.close();
    }
  }
});

test('loadConfig – every variable in VARIABLES has an accepted form under test', () => {
  const covered = new Set(ACCEPTED.map(([name]) => name));
  assert.deepEqual(
    VARIABLES.map((v) => v.name).filter((n) => !covered.has(n)),
    [],
  );
});

test('loadConfig – ECHO_SCENARIO_FILE set explicitly is marked explicit, even to the default name', () => {
  assert.equal(loadConfig({}).scenarioFileExplicit, false);
  assert.equal(loadConfig({ ECHO_SCENARIO_FILE: 'scenarios.yaml' }).scenarioFileExplicit, true);
});

/** [variable, bad value, why it is bad]. */
const REJECTED: ReadonlyArray<readonly [string, string, string]> = [
  ['PORT', 'abc', 'not a number'],
  ['PORT', '65536', 'out of range'],
  ['PORT', '-1', 'negative'],
  ['PORT', '80.5', 'not an integer'],
  ['PORT', '', 'empty'],
  ['HOST', '', 'empty'],
  ['HOST', '   ', 'blank'],
  ['ENABLE_TLS', 'yes', 'not true/false'],
  ['ENABLE_TLS', '1', 'not true/false'],
  ['CERT_FILE', '', 'empty'],
  ['KEY_FILE', '', 'empty'],
  ['ECHO_GRPC_PORT', '0', 'out of range: gRPC has no port 0'],
  ['ECHO_GRPC_PORT', '65536', 'out of range'],
  ['ENABLE_CORS', 'on', 'not true/false'],
  ['MAX_BODY_SIZE', '10MB', 'not a number'],
  ['MAX_BODY_SIZE', '1073741825', 'out of range'],
  ['MAX_BODY_SIZE', '0', 'below 1 byte'],
  ['ECHO_CHAOS', '150', 'out of range'],
  ['ECHO_CHAOS', '12.5', 'not an integer'],
  ['ECHO_CHAOS', 'lots', 'not a number'],
  ['ECHO_DELAY', 'soon', 'not a duration'],
  ['ECHO_DELAY', '5w', 'unknown unit'],
  ['ECHO_DELAY', '500-100ms', 'reversed range'],
  ['ECHO_DELAY', '-5ms', 'negative'],
  ['ECHO_MAX_DELAY', 'forever', 'not a duration'],
  ['ECHO_MAX_DELAY', '1441m', 'above 24 hours'],
  ['ECHO_MAX_DELAY', '1-2s', 'a range where one duration is expected'],
  ['ECHO_ERROR_TIMEOUT', '1 minute', 'not a duration'],
  ['ECHO_ERROR_TIMEOUT', '1441m', 'above 24 hours'],
  ['ECHO_MAX_RESPONSE_SIZE', '1GiB', 'not a number'],
  ['ECHO_MAX_RESPONSE_SIZE', '10737418241', 'out of range'],
  ['ECHO_RATE_LIMIT_RPS', 'fast', 'not a number'],
  ['ECHO_RATE_LIMIT_RPS', '-1', 'negative'],
  ['ECHO_RATE_LIMIT_RPS', '1000001', 'out of range'],
  ['ECHO_RATE_LIMIT_RPS', '1e3', 'exponent notation'],
  ['ECHO_RATE_LIMIT_BURST', '2.5', 'not an integer'],
  ['ECHO_RATE_LIMIT_BURST', '1000001', 'out of range'],
  ['ECHO_SSE_TICKER', '5ms', 'below 10ms'],
  ['ECHO_SSE_TICKER', '61m', 'above 1h'],
  ['ECHO_SSE_TICKER', 'often', 'not a duration'],
  ['ECHO_MAX_STREAMS', '1000001', 'out of range'],
  ['ECHO_MAX_STREAMS', 'many', 'not a number'],
  ['ECHO_DRAIN_DELAY', '11m', 'above 10m'],
  ['ECHO_DRAIN_DELAY', 'later', 'not a duration'],
  ['ECHO_DRAIN_DELAY', '-1s', 'negative'],
  ['ECHO_IDLE_RECLAIM', '61m', 'above 1h'],
  ['ECHO_IDLE_RECLAIM', 'off', 'not a duration'],
  ['ECHO_DRAIN_TIMEOUT', '61m', 'above 1h'],
  ['ECHO_DRAIN_TIMEOUT', 'soon', 'not a duration'],
  ['ECHO_HISTORY_SIZE', '100001', 'out of range'],
  ['ECHO_HISTORY_SIZE', 'all', 'not a number'],
  ['ECHO_HISTORY_MAX_BODY', '10485761', 'out of range'],
  ['ECHO_HISTORY_MAX_BYTES', '1048575', 'below 1 MiB'],
  ['ECHO_HISTORY_MAX_BYTES', '32MiB', 'not a number'],
  ['ECHO_SCENARIO_FILE', '', 'empty'],
  ['ECHO_SERVER_INFO', 'y', 'not true/false'],
  ['ECHO_REPLAY_TIMEOUT', '0', 'below 1ms'],
  ['ECHO_REPLAY_TIMEOUT', 'later', 'not a duration'],
  ['ECHO_UPSTREAM', 'orders:8080', 'not an http(s) URL'],
  ['ECHO_UPSTREAM', 'ftp://orders', 'not http or https'],
  ['ECHO_UPSTREAM', 'http://orders/?x=1', 'a query'],
  ['ECHO_UPSTREAM', 'http://user:pw@orders', 'credentials'],
  ['ECHO_UPSTREAM_TIMEOUT', '0', 'below 1ms'],
  ['ECHO_UPSTREAM_HOST_HEADER', 'client', 'neither upstream nor preserve'],
  ['ECHO_STATE_URL', 'http://redis:6379', 'not redis: or rediss:'],
  ['ECHO_STATE_URL', 'redis://:pw@redis/16', 'db above 15'],
  ['ECHO_STATE_URL', 'redis://redis:6379?db=1', 'a query'],
  ['ECHO_STATE_URL', 'redis:6379', 'no host'],
  ['ECHO_STATE_PASSWORD', 'pass\tword', 'a control character'],
  ['ECHO_SEED', '4294967296', 'out of range'],
  ['ECHO_SEED', 'abc', 'not a number'],
  ['ECHO_HISTORY_SECRETS', 'hide', 'not mask/show'],
  ['ECHO_REPLAY_CREDENTIALS', 'unmasked', 'not masked/original'],
  ['ECHO_MAX_SCENARIO_BODY', '1023', 'below 1 KiB'],
  ['ECHO_MAX_SCENARIO_BODY', '67108865', 'above 64 MiB'],
  ['ECHO_ADMIN_TOKEN', 'has a space', 'not a header token'],
  ['ECHO_REPLAY_ALLOWED_TARGETS', '10.0.0.0/33', 'prefix too long'],
  ['ECHO_ADMIN_TOKEN_FILE', 'a\0b', 'NUL in the path'],
  ['ECHO_CORS_ADMIN', 'yes', 'not true/false'],
  ['ECHO_HEADERS_TIMEOUT', '11m', 'above 10m'],
  ['ECHO_REQUEST_TIMEOUT', '0', 'below 1ms'],
  ['ECHO_KEEP_ALIVE_TIMEOUT', '61m', 'above 60m'],
  ['ECHO_MAX_CONNECTIONS', '0', 'below 1'],
  ['ECHO_H2_MAX_CONCURRENT_STREAMS', '10001', 'out of range'],
  ['ECHO_MAX_CONCURRENT_COMPRESSION', 'all', 'not a number'],
  ['ECHO_FAULTS_ENABLED', 'off', 'not true/false'],
  ['ECHO_MAX_ACTIVE_FAULTS', '0', 'below 1'],
  ['ECHO_MAX_ACTIVE_FAULTS', '1000001', 'out of range'],
  ['LOG_LEVEL', 'verbose', 'not a level'],
  ['LOG_REQUESTS', 'no', 'not true/false'],
  ['LOG_WORKER', 'off', 'not true/false'],
  ['LOG_HEADERS', '0', 'not true/false'],
  ['LOG_BODY', 'yes', 'not true/false'],
  ['LOG_TRANSACTION', 'enabled', 'not true/false'],
  ['LOG_RESPONSE', 't', 'not true/false'],
  ['LOG_RESPONSE_HEADERS', 'off', 'not true/false'],
  ['LOG_RESPONSE_BODY', 'truee', 'not true/false'],
  ['MAX_LOG_BODY_SIZE', '2KiB', 'not a number'],
  ['MAX_LOG_BODY_SIZE', '1048577', 'out of range'],
];

for (const [name, raw, why] of REJECTED) {
  test(`loadConfig – ${name}=${JSON.stringify(raw)} (${why}) is one line naming variable, value and form`, () => {
    const problems = problemsOf({ [name]: raw });
    assert.equal(problems.length, 1, problems.join('\n'));
    // A secret's value is never quoted back.
    const shown = VARIABLES.find((v) => v.name === name)?.secret ? name : `${name}=${JSON.stringify(raw)}`;
    assert.equal(problems[0], `${shown} is invalid: expected ${formOf(name)}`);
  });
}

test('loadConfig – ECHO_HISTORY_MAX_BYTES below one full entry (a body, room for its JSON, a head) is one line naming both', () => {
  assert.deepEqual(problemsOf({ ECHO_HISTORY_MAX_BODY: '10485760', ECHO_HISTORY_MAX_BYTES: '21102591' }), [
    'ECHO_HISTORY_MAX_BYTES="21102591" is invalid: expected at least 2 x ECHO_HISTORY_MAX_BODY (10485760: a body and room for its JSON) + 131072 bytes for one request\'s head, 21102592',
  ]);
  // The default budget (32 MiB) holds the largest body.
  assert.equal(loadConfig({ ECHO_HISTORY_MAX_BODY: '10485760' }).historyMaxBytes, 32 * 1024 * 1024);
  assert.equal(
    loadConfig({ ECHO_HISTORY_MAX_BODY: '10485760', ECHO_HISTORY_MAX_BYTES: '21102592' }).historyMaxBytes,
    21_102_592,
  );
});

test('loadConfig – every variable in VARIABLES has a rejected value under test', () => {
  const covered = new Set(REJECTED.map(([name]) => name));
  assert.deepEqual(
    VARIABLES.map((v) => v.name).filter((n) => !covered.has(n)),
    [],
  );
});

test('loadConfig – every variable documents a form that says what is expected', () => {
  for (const spec of VARIABLES) {
    assert.ok(spec.form.length > 0, spec.name);
    assert.ok(spec.meaning.length > 0, spec.name);
  }
  // Each unset variable is read from its default as written; one that did not read would throw.
  assert.doesNotThrow(() => loadConfig({}), 'every default reads as a value of its variable');
});

test('loadConfig – several bad values are all listed, one line each, in the order of the configuration page', () => {
  const problems = problemsOf({
    LOG_BODY: 'maybe',
    PORT: 'abc',
    ECHO_CHAOS: '150',
    ENABLE_TLS: 'yes',
    ECHO_SSE_TICKER: '1ms',
    HOST: '127.0.0.1',
  });
  assert.deepEqual(problems, [
    `PORT="abc" is invalid: expected ${formOf('PORT')}`,
    `ENABLE_TLS="yes" is invalid: expected ${formOf('ENABLE_TLS')}`,
    `ECHO_CHAOS="150" is invalid: expected ${formOf('ECHO_CHAOS')}`,
    `ECHO_SSE_TICKER="1ms" is invalid: expected ${formOf('ECHO_SSE_TICKER')}`,
    `LOG_BODY="maybe" is invalid: expected ${formOf('LOG_BODY')}`,
  ]);
});

test('loadConfig – a value with a line break stays on one line of the error', () => {
  const problems = problemsOf({ PORT: '80\n81' });
  assert.equal(problems.length, 1);
  assert.ok(!problems[0]!.includes('\n'));
  assert.ok(problems[0]!.startsWith('PORT="80\\n81" is invalid'));
});

test('loadConfig – ECHO_DELAY above the default ECHO_MAX_DELAY (300s) is rejected', () => {
  assert.deepEqual(problemsOf({ ECHO_DELAY: '301s' }), [
    'ECHO_DELAY="301s" is invalid: expected a delay of at most ECHO_MAX_DELAY (300000 ms)',
  ]);
});

test('loadConfig – ECHO_DELAY above an explicit ECHO_MAX_DELAY is rejected, a range by its upper bound', () => {
  assert.deepEqual(problemsOf({ ECHO_DELAY: '100-1500ms', ECHO_MAX_DELAY: '1s' }), [
    'ECHO_DELAY="100-1500ms" is invalid: expected a delay of at most ECHO_MAX_DELAY (1000 ms)',
  ]);
});

test('loadConfig – ECHO_DELAY takes a weighted list and lognormal; the ceiling applies to the longest entry and the median', () => {
  const list = loadConfig({ ECHO_DELAY: '100ms:90,2s:10' }).defaultDelay;
  assert.equal(list?.maxMs, 2000);
  assert.equal(list?.choices?.entries.length, 2);
  assert.deepEqual(loadConfig({ ECHO_DELAY: 'lognormal:200ms,0.5' }).defaultDelay?.lognormal, {
    medianMs: 200,
    sigma: 0.5,
  });
  assert.deepEqual(problemsOf({ ECHO_DELAY: '100ms:90,2s:10', ECHO_MAX_DELAY: '1s' }), [
    'ECHO_DELAY="100ms:90,2s:10" is invalid: expected a delay of at most ECHO_MAX_DELAY (1000 ms)',
  ]);
  assert.deepEqual(problemsOf({ ECHO_DELAY: 'lognormal:2s,1', ECHO_MAX_DELAY: '1s' }), [
    'ECHO_DELAY="lognormal:2s,1" is invalid: expected a delay of at most ECHO_MAX_DELAY (1000 ms)',
  ]);
  for (const raw of ['100ms:60,2s:50', 'lognormal:1s,0', '100ms:90,2s']) {
    assert.deepEqual(problemsOf({ ECHO_DELAY: raw }), [
      `ECHO_DELAY=${JSON.stringify(raw)} is invalid: expected ${formOf('ECHO_DELAY')}`,
    ]);
  }
});

test('loadConfig – ECHO_DELAY equal to ECHO_MAX_DELAY, or under a raised one, is accepted', () => {
  assert.deepEqual(loadConfig({ ECHO_DELAY: '1s', ECHO_MAX_DELAY: '1000ms' }).defaultDelay, {
    minMs: 1000,
    maxMs: 1000,
  });
  assert.equal(loadConfig({ ECHO_DELAY: '10m', ECHO_MAX_DELAY: '20m' }).maxDelayMs, 1_200_000);
});

test('loadConfig – with ECHO_MAX_DELAY malformed, ECHO_DELAY is not also blamed', () => {
  assert.deepEqual(problemsOf({ ECHO_DELAY: '10m', ECHO_MAX_DELAY: 'never' }), [
    `ECHO_MAX_DELAY="never" is invalid: expected ${formOf('ECHO_MAX_DELAY')}`,
  ]);
});

test('loadConfig – ECHO_HEADER_<Name> sets a response header, underscores becoming dashes', () => {
  const config = loadConfig({
    ECHO_HEADER_Cache_Control: 'no-store',
    ECHO_HEADER_X_Team: 'platform',
    ECHO_HEADER_X_Empty: '',
  });
  assert.deepEqual(
    [...config.extraHeaders].sort(([a], [b]) => a.localeCompare(b)),
    [
      ['Cache-Control', 'no-store'],
      ['X-Empty', ''],
      ['X-Team', 'platform'],
    ],
  );
});

test('loadConfig – other ECHO_ variables (Kubernetes service links) are ignored', () => {
  const config = loadConfig({
    ECHO_SERVICE_HOST: '10.0.0.1',
    ECHO_PORT: 'tcp://10.0.0.1:80',
    ECHO_CHAOS_SERVICE_PORT: '8080',
  });
  assert.deepEqual(config, DEFAULTS);
});

test('loadConfig – ECHO_HEADER_ with a bad header name is rejected, naming variable and name', () => {
  const problems = problemsOf({ 'ECHO_HEADER_X(Bad)': '1', ECHO_HEADER_: 'x', 'ECHO_HEADER_A B': 'y' });
  assert.equal(problems.length, 3, problems.join('\n'));
  for (const [variable, header] of [
    ['ECHO_HEADER_X(Bad)', 'X(Bad)'],
    ['ECHO_HEADER_', ''],
    ['ECHO_HEADER_A B', 'A B'],
  ] as const) {
    assert.ok(
      problems.includes(
        `${variable}: ${JSON.stringify(header)} is not a valid header name: expected letters, digits and -`,
      ),
      `no line for ${variable} in\n${problems.join('\n')}`,
    );
  }
});

test('loadConfig – ECHO_HEADER_ value with CR, LF or NUL is rejected (no header injection)', () => {
  assert.deepEqual(problemsOf({ ECHO_HEADER_X_Inject: 'a\r\nSet-Cookie: x=1' }), [
    `ECHO_HEADER_X_Inject="a\\r\\nSet-Cookie: x=1" is invalid: ${HEADER_VALUE_EXPECTED}`,
  ]);
});

const HEADER_VALUE_EXPECTED =
  'expected at most 8192 characters of visible ASCII, Latin-1, spaces and tabs (what HTTP/1.1 and HTTP/2 carry in a header)';

test('loadConfig – ECHO_HEADER_ value node would refuse to write (beyond Latin-1, a control character) stops startup, as a scenario header is a 400', () => {
  assert.deepEqual(
    problemsOf({ ECHO_HEADER_X_V: 'é一', ECHO_HEADER_X_E: '€', ECHO_HEADER_X_C: 'a\u0001b' }).toSorted(),
    [
      `ECHO_HEADER_X_C="a\\u0001b" is invalid: ${HEADER_VALUE_EXPECTED}`,
      `ECHO_HEADER_X_E="€" is invalid: ${HEADER_VALUE_EXPECTED}`,
      `ECHO_HEADER_X_V="é一" is invalid: ${HEADER_VALUE_EXPECTED}`,
    ],
  );
  assert.deepEqual(
    loadConfig({ ECHO_HEADER_X_Latin: 'café\tok' }).extraHeaders,
    [['X-Latin', 'café\tok']],
    'Latin-1 and tabs are carried',
  );
});

test('loadConfig – ECHO_HEADER_ naming a framing or connection-specific header (Content-Length, Connection, Proxy-Connection) is rejected', () => {
  const problems = problemsOf({
    ECHO_HEADER_Content_Length: '5',
    ECHO_HEADER_connection: 'close',
    ECHO_HEADER_Proxy_Connection: 'x',
  });
  const why =
    'frames the message or is connection-specific (HTTP/2 forbids it) and cannot be set: expected any other header name';
  assert.deepEqual(problems.toSorted(), [
    `ECHO_HEADER_Content_Length: "Content-Length" ${why}`,
    `ECHO_HEADER_Proxy_Connection: "Proxy-Connection" ${why}`,
    `ECHO_HEADER_connection: "connection" ${why}`,
  ]);
});

test('loadConfig – bad variables and bad ECHO_HEADER_ names are reported together', () => {
  const problems = problemsOf({ PORT: 'x', 'ECHO_HEADER_?': '1' });
  assert.equal(problems.length, 2);
  assert.match(problems[0]!, /^PORT="x"/);
  assert.match(problems[1]!, /^ECHO_HEADER_\?: "\?"/);
});

test('loadConfig – ECHO_HEADERS_TIMEOUT above ECHO_REQUEST_TIMEOUT is one line naming both', () => {
  assert.deepEqual(problemsOf({ ECHO_HEADERS_TIMEOUT: '20s', ECHO_REQUEST_TIMEOUT: '10s' }), [
    'ECHO_HEADERS_TIMEOUT="20s" is invalid: expected at most ECHO_REQUEST_TIMEOUT (10000 ms)',
  ]);
});

test('loadConfig – an ECHO_REQUEST_TIMEOUT below the default head timeout takes the head timeout down with it', () => {
  const config = loadConfig({ ECHO_REQUEST_TIMEOUT: '4s' });
  assert.equal(config.requestTimeoutMs, 4000);
  assert.equal(config.headersTimeoutMs, 4000, 'the default 10s head timeout follows');
  assert.equal(loadConfig({ ECHO_REQUEST_TIMEOUT: '30s' }).headersTimeoutMs, 10_000, 'the default otherwise');
});
