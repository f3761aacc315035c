import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { Counter, Registry } from 'prom-client';
import { ObsConfigError, obsPlugin } from '../../src/obs/index.ts';
import { startObsApp, tempFile } from './helpers.ts';

const EXAMPLE = new URL('../../examples/bare-fastify/server.ts', import.meta.url).pathname;

/** Runs the bare-fastify example with extra environment until it exits (it must, within 20s). */
function runExample(
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(OBS|OTEL)_/i.test(k)));
    const child = spawn(process.execPath, [EXAMPLE], { env: { ...clean, PORT: '0', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the example did not stop:\n${stdout}\n${stderr}`));
    }, 20_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

test('plugin – a typo in an OBS_* variable stops a real process, naming the variable and the nearest one', async () => {
  const { code, stderr, stdout } = await runExample({ OBS_TRACE_GUARD_FAIL_ON_MISING: 'true' });
  assert.equal(code, 1);
  assert.match(
    stderr,
    /OBS_TRACE_GUARD_FAIL_ON_MISING = "true" \(environment\): unknown variable; did you mean OBS_TRACE_GUARD_FAIL_ON_MISSING \(obs\.trace-guard\.fail-on-missing\)\?/,
  );
  assert.doesNotMatch(stdout, /listening/, 'it never listened');
});

test('plugin – a typo in the YAML file stops a real process, naming the key, the file and the nearest key', async () => {
  const file = tempFile('obs.yml', 'obs:\n  cardinality:\n    max-tag-values-per-metre: 10\n');
  const { code, stderr } = await runExample({ OBS_CONFIG_FILE: file });
  assert.equal(code, 1);
  assert.ok(
    stderr.includes(
      `obs.cardinality.max-tag-values-per-metre = 10 (file ${file}): unknown key; did you mean obs.cardinality.max-tag-values-per-meter?`,
    ),
    stderr,
  );
});

test('plugin – an invalid configuration makes register reject with ObsConfigError', async () => {
  const app = Fastify();
  await assert.rejects(
    async () => {
      await app.register(obsPlugin, { env: { OBS_SAMPLING_PROBABILITY: '2' } });
      await app.ready();
    },
    (error: unknown) =>
      error instanceof ObsConfigError && /obs\.sampling\.probability = "2"/.test(error.message),
  );
});

test('plugin – the legacy obs.runtime.mode is migrated with exactly one warning line in the app log', async () => {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  const app = Fastify({ loggerInstance: pino({ level: 'info' }, stream) as FastifyBaseLogger });
  await app.register(obsPlugin, {
    env: {
      OBS_RUNTIME_MODE: 'DRY_RUN',
      OBS_CONFIG_FILE: tempFile('obs.yml', 'obs:\n  runtime:\n    mode: DRY_RUN\n'),
    },
  });
  await app.ready();
  assert.equal(app.obs.mode.get(), 'DRY_RUN');
  const deprecations = lines.filter((l) => /obs\.runtime\.mode is deprecated/.test(String(l.msg)));
  assert.equal(deprecations.length, 1);
  assert.equal(deprecations[0]?.level, 40, 'a warning');
  await app.close();
});

test('plugin – hooks are global: routes of every encapsulated scope are counted in flight', async (t) => {
  let seen = -1;
  const obs = await startObsApp({}, async (app) => {
    await app.register(async (scope) => {
      scope.get('/scoped', async () => {
        seen = app.obs.inFlight;
        return 'ok';
      });
    });
  });
  t.after(() => obs.close());
  assert.equal(await (await fetch(`${obs.url}/scoped`)).text(), 'ok');
  assert.equal(seen, 1);
});

test('plugin – one scrape of the shared registry holds the app and obs series', async (t) => {
  const registry = new Registry();
  const hits = new Counter({
    name: 'app_hits_total',
    help: 'hits',
    labelNames: ['user'],
    registers: [registry],
  });
  const obs = await startObsApp({ registry }, (app) => {
    app.get('/hit/:user', async (request) => {
      hits.inc(
        app.obs.firewall.admitLabels('app_hits_total', { user: (request.params as { user: string }).user }),
      );
      return 'ok';
    });
    app.get('/metrics', async (_request, reply) =>
      reply.type(registry.contentType).send(await registry.metrics()),
    );
  });
  t.after(() => obs.close());
  await fetch(`${obs.url}/hit/ann`);
  const text = await (await fetch(`${obs.url}/metrics`)).text();
  assert.match(text, /^app_hits_total\{user="ann"\} 1$/m);
  assert.match(text, /^obs_config_info\{hash="[0-9a-f]{64}"\} 1$/m);
  assert.match(text, /^obs_requests_in_flight 1$/m, 'the scrape itself is in flight');
  assert.match(text, /^obs_enforcement_mode\{mode="ENFORCING"\} 1$/m);
});

test('plugin – closing the app drains: phases move to draining, then drained', async () => {
  const obs = await startObsApp();
  const phases: string[] = [];
  obs.app.obs.drainState.onChange((phase) => phases.push(phase));
  await obs.close();
  assert.deepEqual(phases, ['draining', 'drained']);
});
