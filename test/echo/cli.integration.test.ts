import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Exit, exitOf, freePort, until } from '../helpers/runtime.ts';

const MAIN = fileURLToPath(new URL('../../src/echo/main.ts', import.meta.url));
const TIMEOUT_MS = 15_000;

// A working directory of its own, so no scenarios.yaml of the repository is picked up.
const cwd = mkdtempSync(join(tmpdir(), 'echo-cli-'));
after(() => rmSync(cwd, { recursive: true, force: true }));

/**
 * Starts the entry point with exactly `env` (plus PATH and no drain delay, which only
 * test/echo/drain*.test.ts wait for), never the test runner's environment.
 */
function launch(env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [MAIN], {
    cwd,
    env: { PATH: process.env['PATH'] ?? '', ECHO_DRAIN_DELAY: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: TIMEOUT_MS,
  });
}

const exited = exitOf;

function run(env: Record<string, string>): Promise<Exit> {
  return exited(launch(env));
}

function lines(text: string): string[] {
  return text.split('\n').filter((l) => l !== '');
}

/** Resolves once the server logs that it listens; rejects if the process ends first. */
function listening(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const onData = (chunk: Buffer) => {
      buffered += chunk;
      if (buffered.includes('Server listening at')) {
        child.stdout?.off('data', onData);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.once('close', (code) => reject(new Error(`exited with ${code} before listening: ${buffered}`)));
  });
}

test('echo-chaos CLI – PORT=abc and ECHO_CHAOS=150: exit 1, one stderr line per bad setting', async () => {
  const result = await run({ PORT: 'abc', ECHO_CHAOS: '150' });
  assert.equal(result.code, 1);
  assert.deepEqual(lines(result.stderr), [
    'echo-chaos: PORT="abc" is invalid: expected integer 0-65535',
    'echo-chaos: ECHO_CHAOS="150" is invalid: expected empty, or integer 0-100',
  ]);
  assert.equal(result.stdout, '');
});

test('echo-chaos CLI – a typo in an OBS_* variable stops startup, naming the key and the nearest one', async () => {
  const result = await run({ PORT: '0', OBS_CARDINALTY_ENABLED: 'false' });
  assert.equal(result.code, 1);
  const errors = lines(result.stderr);
  assert.equal(errors.length, 1, result.stderr);
  assert.match(errors[0]!, /^echo-chaos: OBS_CARDINALTY_ENABLED .*did you mean OBS_CARDINALITY_ENABLED/);
});

test('echo-chaos CLI – a typo in the obs YAML file stops startup, naming the key and the nearest one', async () => {
  const file = join(cwd, 'obs-typo.yml');
  writeFileSync(file, 'obs:\n  enforcement:\n    mdoe: DRY_RUN\n');
  const result = await run({ PORT: '0', OBS_CONFIG_FILE: file });
  assert.equal(result.code, 1);
  const errors = lines(result.stderr);
  assert.equal(errors.length, 1, result.stderr);
  assert.match(errors[0]!, /obs\.enforcement\.mdoe/);
  assert.match(errors[0]!, /obs\.enforcement\.mode/);
});

test('echo-chaos CLI – one bad boolean is exactly one line naming variable, value and form', async () => {
  const result = await run({ LOG_BODY: 'yes' });
  assert.equal(result.code, 1);
  assert.deepEqual(lines(result.stderr), ['echo-chaos: LOG_BODY="yes" is invalid: expected true or false']);
});

test('echo-chaos CLI – ECHO_DELAY above ECHO_MAX_DELAY stops startup', async () => {
  const result = await run({ ECHO_DELAY: '2s', ECHO_MAX_DELAY: '1s' });
  assert.equal(result.code, 1);
  assert.deepEqual(lines(result.stderr), [
    'echo-chaos: ECHO_DELAY="2s" is invalid: expected a delay of at most ECHO_MAX_DELAY (1000 ms)',
  ]);
});

test('echo-chaos CLI – an explicit ECHO_SCENARIO_FILE that is missing stops startup with one line', async () => {
  const file = join(cwd, 'nope.yaml');
  const result = await run({ ECHO_SCENARIO_FILE: file, PORT: '0', HOST: '127.0.0.1' });
  assert.equal(result.code, 1);
  assert.deepEqual(lines(result.stderr), [
    `echo-chaos: ECHO_SCENARIO_FILE=${JSON.stringify(file)} is invalid: the file does not exist`,
  ]);
});

test('echo-chaos CLI – an explicit ECHO_SCENARIO_FILE that is invalid stops startup, naming the problem', async () => {
  const file = join(cwd, 'invalid.yaml');
  writeFileSync(file, '- path: /orders\n  responses:\n    - status: 999\n');
  const result = await run({ ECHO_SCENARIO_FILE: file, PORT: '0', HOST: '127.0.0.1' });
  assert.equal(result.code, 1);
  const out = lines(result.stderr);
  assert.equal(out.length, 1, result.stderr);
  assert.ok(
    out[0]!.startsWith(`echo-chaos: ECHO_SCENARIO_FILE=${JSON.stringify(file)} is invalid: `),
    out[0],
  );
  assert.match(out[0]!, /status/);
  assert.match(out[0]!, /999/);
});

test('echo-chaos CLI – an explicit ECHO_SCENARIO_FILE that is not YAML stops startup with one line', async () => {
  const file = join(cwd, 'broken.yaml');
  writeFileSync(file, '- path: /a\n  responses: [\n');
  const result = await run({ ECHO_SCENARIO_FILE: file, PORT: '0', HOST: '127.0.0.1' });
  assert.equal(result.code, 1);
  const out = lines(result.stderr);
  assert.equal(out.length, 1, result.stderr);
  assert.ok(
    out[0]!.startsWith(`echo-chaos: ECHO_SCENARIO_FILE=${JSON.stringify(file)} is invalid: `),
    out[0],
  );
});

test('echo-chaos CLI – a port already in use stops startup with one line and exit 1', async () => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  try {
    const address = blocker.address();
    assert.ok(typeof address === 'object' && address !== null);
    const result = await run({ PORT: String(address.port), HOST: '127.0.0.1' });
    assert.equal(result.code, 1);
    const out = lines(result.stderr);
    assert.equal(out.length, 1, result.stderr);
    assert.match(out[0]!, /^echo-chaos: cannot start: .*EADDRINUSE/);
  } finally {
    await new Promise<void>((resolve) => blocker.close(() => resolve()));
  }
});

test('echo-chaos CLI – starts on the given port, GET /hello answers the plain-text summary, SIGTERM exits 0', async () => {
  const port = await freePort();
  const child = launch({ PORT: String(port), HOST: '127.0.0.1' });
  const done = exited(child);
  await listening(child);

  const response = await fetch(`http://127.0.0.1:${port}/hello?x=1`, { headers: { 'X-Probe': 'cli' } });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
  const text = await response.text();
  const summary = text.split('\n');
  assert.equal(summary[0], 'GET /hello?x=1 HTTP/1.1');
  assert.ok(summary.includes('X-Probe: cli') || summary.includes('x-probe: cli'), text);
  assert.ok(summary.includes('Client IP: 127.0.0.1'), text);
  assert.match(text, /^Timestamp: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/m);

  child.kill('SIGTERM');
  const result = await done;
  assert.equal(result.signal, null);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, '');
});

test('echo-chaos CLI – SIGTERM answers a request held in a long delay at ECHO_DRAIN_TIMEOUT, then exits 0', async () => {
  const port = await freePort();
  const child = launch({
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    ECHO_DRAIN_TIMEOUT: '500ms',
  });
  const done = exited(child);
  // LOG_LEVEL=warn hides the listening line: poll /ready instead.
  const ready = () =>
    fetch(`http://127.0.0.1:${port}/ready`).then(
      (r) => r.ok,
      () => false, // not yet listening
    );
  await until('the server is ready', ready, TIMEOUT_MS, 50);

  const started = Date.now();
  const slow = fetch(`http://127.0.0.1:${port}/slow`, { headers: { 'X-Echo-Delay': '10s' } });
  const inFlight = async () =>
    ((await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as { metrics: { in_flight: number } })
      .metrics.in_flight;
  await until(
    'the slow request is in flight (besides the /health asking)',
    async () => (await inFlight()) === 2,
  );
  child.kill('SIGTERM');
  const response = await slow;
  assert.equal(response.status, 200);
  assert.match(await response.text(), /^GET \/slow HTTP\/1\.1/);
  const result = await done;
  assert.equal(result.code, 0, result.stderr);
  assert.ok(Date.now() - started < 5_000, 'the 10 s delay was cut short at the drain timeout');
});

function runArgs(args: string[]): Promise<Exit> {
  return exited(
    spawn(process.execPath, [MAIN, ...args], {
      cwd,
      env: { PATH: process.env['PATH'] ?? '' },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: TIMEOUT_MS,
    }),
  );
}

test('cli – --help lists every variable with its default and exits 0 without serving', async () => {
  const { FAULT_DEFAULT_VARIABLES, VARIABLES } = await import('../../src/echo/config.ts');
  const result = await runArgs(['--help']);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^Usage: echo-chaos/m);
  for (const v of [...VARIABLES, ...FAULT_DEFAULT_VARIABLES]) {
    assert.match(result.stdout, new RegExp(`^  ${v.name}$`, 'm'), `${v.name} missing from --help`);
  }
  assert.match(result.stdout, /^ {2}ECHO_HEADER_<Name>$/m);
  assert.match(result.stdout, /default: 8080; integer 0-65535/);
});

test('cli – --version prints the package version; an unknown argument is a usage error (exit 2)', async () => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  const version = await runArgs(['--version']);
  assert.equal(version.code, 0);
  assert.equal(version.stdout.trim(), pkg.version);
  const wrong = await runArgs(['--port=1']);
  assert.equal(wrong.code, 2);
  assert.equal(lines(wrong.stderr).length, 1);
  assert.match(wrong.stderr, /unexpected argument "--port=1".*environment variables/);
});

test('echo-chaos CLI – every problem at once: the service, obs and OpenTelemetry settings, one line each', async () => {
  const result = await run({ PORT: 'abc', OBS_SHUTDOWN_ENABLED: 'maybe', OTEL_TRACES_EXPORTER: 'zipkin' });
  assert.equal(result.code, 1);
  assert.deepEqual(lines(result.stderr), [
    'echo-chaos: PORT="abc" is invalid: expected integer 0-65535',
    'echo-chaos: obs.shutdown.enabled = "maybe" (env OBS_SHUTDOWN_ENABLED): expected true or false',
    'echo-chaos: OTEL_TRACES_EXPORTER="zipkin" is invalid: expected otlp or none',
  ]);
});
