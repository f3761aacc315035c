import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import {
  type ConfigProblem,
  loadObsConfig,
  ObsConfigError,
  type ObsConfigInput,
  type ObsLogger,
  type ObsPluginOptions,
  obsPlugin,
} from '../../src/obs/index.ts';

/** A logger that keeps what it is given. */
export interface CapturingLogger extends ObsLogger {
  readonly lines: Array<{ level: 'info' | 'warn'; object: object; message: string | undefined }>;
}

export function capturingLogger(): CapturingLogger {
  const lines: CapturingLogger['lines'] = [];
  return {
    lines,
    info: (object, message) => lines.push({ level: 'info', object, message }),
    warn: (object, message) => lines.push({ level: 'warn', object, message }),
  };
}

export interface RunningObsApp {
  readonly app: FastifyInstance;
  readonly url: string;
  readonly registry: Registry;
  readonly logger: CapturingLogger;
  close(): Promise<void>;
}

/**
 * A real fastify app with obs, listening on 127.0.0.1 and a free port. `env` defaults to empty, so
 * the machine's own `OBS_*` variables never leak into a test. `setup` adds the test's routes.
 */
export async function startObsApp(
  options: ObsPluginOptions = {},
  setup: (app: FastifyInstance) => void | Promise<void> = () => {},
): Promise<RunningObsApp> {
  const registry = options.registry ?? new Registry();
  const logger = capturingLogger();
  const app = Fastify();
  await app.register(obsPlugin, { env: {}, logger, ...options, registry });
  await setup(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return { app, url: `http://127.0.0.1:${port}`, registry, logger, close: () => app.close() };
}

/**
 * A fastify app with obs, ready for `app.inject()` (no port). `env` defaults to empty, like
 * {@link startObsApp}. Closed when the test ends.
 */
export async function injectableObsApp(
  t: { after(fn: () => Promise<void>): void },
  options: ObsPluginOptions = {},
): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(obsPlugin, { env: {}, logger: capturingLogger(), registry: new Registry(), ...options });
  await app.ready();
  t.after(() => app.close());
  return app;
}

/** Writes `text` to a new temporary file and returns its path. */
export function tempFile(name: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'obs-test-'));
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** POSTs a text with the given content type (`null`: no Content-Type header at all). */
export function post(url: string, body: string, contentType: string | null = 'application/json') {
  return fetch(url, {
    method: 'POST',
    headers: contentType === null ? {} : { 'content-type': contentType },
    // Bytes, not a string: fetch would add `text/plain` to a string body.
    body: new TextEncoder().encode(body),
  });
}

/** The problems of a configuration that must fail to load. */
export function problemsOf(input: Parameters<typeof loadObsConfig>[0]): readonly ConfigProblem[] {
  try {
    loadObsConfig(input);
  } catch (error) {
    assert.ok(error instanceof ObsConfigError, `expected ObsConfigError, got ${String(error)}`);
    assert.equal(error.code, 'OBS_ERR_CONFIG');
    return error.problems;
  }
  assert.fail('the configuration was accepted');
}

/** Plugin options with `over` applied to `obs.timeout-budget` (in code, the last source). */
export function budgetOptions(
  over: NonNullable<ObsConfigInput['timeout-budget']> = {},
): Pick<ObsPluginOptions, 'config'> {
  return { config: { 'timeout-budget': over } };
}
