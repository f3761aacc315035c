import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * Runs every example so that none can rot. An example is a folder of `examples/` with a
 * `server.ts` that listens on `PORT` (0: any free port) and `HOST`, logs `listening at <url>`
 * (fastify's own line does), serves `GET /`, mounts obs at `/actuator/obs`, and exits 0 on SIGTERM.
 */

const EXAMPLES = fileURLToPath(new URL('../examples/', import.meta.url));

/**
 * Loaded with `--import` into each example: every `@opentelemetry/*` package but the API fails to
 * resolve, so an example runs as if no OpenTelemetry SDK were installed, whatever node_modules holds.
 */
const HIDE_OTEL_SDK = `data:text/javascript,${encodeURIComponent(`
import { registerHooks } from 'node:module';
registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier.startsWith('@opentelemetry/') && specifier !== '@opentelemetry/api') {
      const error = new Error('Cannot find package ' + specifier + ' (hidden: no OpenTelemetry SDK)');
      error.code = 'ERR_MODULE_NOT_FOUND';
      throw error;
    }
    return nextResolve(specifier, context);
  },
});
`)}`;
const START_TIMEOUT_MS = 20_000;

const examples = existsSync(EXAMPLES)
  ? readdirSync(EXAMPLES, { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(join(EXAMPLES, d.name, 'server.ts')))
      .map((d) => d.name)
  : [];

/** Resolves with the URL the example logs once it listens. */
function listening(child: ChildProcessWithoutNullStreams, output: { text: string }): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no "listening at" line within ${START_TIMEOUT_MS}ms:\n${output.text}`)),
      START_TIMEOUT_MS,
    );
    const look = (chunk: Buffer) => {
      output.text += chunk;
      const m = /listening at (https?:\/\/[^\s"]+)/i.exec(output.text);
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout.on('data', look);
    child.stderr.on('data', (chunk: Buffer) => {
      output.text += chunk;
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening:\n${output.text}`));
    });
  });
}

test('examples – there is at least the bare fastify example', () => {
  assert.ok(examples.includes('bare-fastify'), `examples found: ${examples.join(', ')}`);
});

test('examples – each has a README that says what it shows and how to run it', () => {
  for (const name of examples) {
    const readme = join(EXAMPLES, name, 'README.md');
    assert.ok(existsSync(readme), `examples/${name} has no README.md`);
    const text = readFileSync(readme, 'utf8');
    assert.match(text, /^What it shows: /m, `examples/${name}/README.md says what it shows`);
    assert.ok(text.includes(`npx node examples/${name}/server.ts`), `examples/${name}/README.md runs it`);
  }
});

test('examples – the hook hides every OpenTelemetry package but the API', () => {
  const probe = (specifier: string) =>
    spawnSync(
      process.execPath,
      [
        '--import',
        HIDE_OTEL_SDK,
        '--input-type=module',
        '-e',
        `import(${JSON.stringify(specifier)}).then(() => process.exit(0), (e) => process.exit(e.code === 'ERR_MODULE_NOT_FOUND' ? 3 : 4))`,
      ],
      { cwd: EXAMPLES },
    ).status;
  assert.equal(probe('@opentelemetry/api'), 0);
  assert.equal(probe('@opentelemetry/sdk-trace-base'), 3);
  assert.equal(probe('@opentelemetry/sdk-trace'), 3);
  assert.equal(probe('@opentelemetry/sdk-node'), 3);
});

for (const name of examples) {
  test(`examples – ${name} starts without an OpenTelemetry SDK, serves a route and /actuator/obs, and stops on SIGTERM`, async (t) => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(OBS|OTEL)_/i.test(k)));
    const child = spawn(process.execPath, ['--import', HIDE_OTEL_SDK, join(EXAMPLES, name, 'server.ts')], {
      env: { ...env, PORT: '0', HOST: '127.0.0.1' },
    });
    t.after(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    const output = { text: '' };
    const url = await listening(child, output);

    const home = await fetch(`${url}/`);
    assert.equal(home.status, 200, output.text);
    await home.arrayBuffer();

    const snapshot = await fetch(`${url}/actuator/obs`);
    assert.equal(snapshot.status, 200);
    const body = (await snapshot.json()) as {
      mode: string;
      features: Record<string, unknown>;
      config_hash: string;
    };
    assert.equal(body.mode, 'ENFORCING');
    assert.match(body.config_hash, /^[0-9a-f]{64}$/);
    assert.ok(Object.keys(body.features).length > 20);

    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    assert.equal(await exited, 0, output.text);
  });
}

test('examples – bare-fastify logs with obs’s logger options: an email in a URL is masked', async (t) => {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(OBS|OTEL)_/i.test(k)));
  const child = spawn(
    process.execPath,
    ['--import', HIDE_OTEL_SDK, join(EXAMPLES, 'bare-fastify', 'server.ts')],
    { env: { ...env, PORT: '0', HOST: '127.0.0.1' } },
  );
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const output = { text: '' };
  const url = await listening(child, output);
  const res = await fetch(`${url}/users/jane.doe@example.com`);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { hello: 'jane.doe@example.com' });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  assert.equal(await exited, 0, output.text);
  const lines = output.text.split('\n').filter((line) => line.includes('/users/'));
  assert.ok(lines.length > 0, output.text);
  assert.ok(
    lines.every((line) => line.includes('/users/[MASKED:email]')),
    lines.join('\n'),
  );
  assert.doesNotMatch(output.text, /jane\.doe@example\.com/);
});
