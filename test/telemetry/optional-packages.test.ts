import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { IOREDIS_VERSION } from '../../src/echo/shared-state.ts';
import {
  installArguments,
  loadTelemetry,
  missingPackage,
  OTEL_SDK_PACKAGES,
  TelemetryUnavailableError,
} from '../../src/telemetry/optional-packages.ts';

interface Manifest {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}
const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as Manifest;
/** What the service's package declares for `name`: an optional peer, or a dependency. */
const declared = (name: string) => manifest.peerDependencies?.[name] ?? manifest.dependencies?.[name];

async function importError(specifier: string): Promise<unknown> {
  try {
    await import(specifier);
  } catch (err) {
    return err;
  }
  assert.fail(`${specifier} imported`);
}

test('optional packages – missingPackage names the package node could not find, and nothing else', async () => {
  assert.equal(missingPackage(await importError('echo-chaos-no-such-package')), 'echo-chaos-no-such-package');
  assert.equal(
    missingPackage(await importError('@echo-chaos-none/no-such/sub/path.js')),
    '@echo-chaos-none/no-such',
  );
  // A file of ours that is missing is a bug, not an optional package.
  assert.equal(missingPackage(await importError('./no-such-module.ts')), undefined);
  assert.equal(missingPackage(new Error('Cannot find package')), undefined);
  assert.equal(missingPackage(undefined), undefined);
});

test('optional packages – a missing SDK package stops with what to install; any other failure is left as it is', async () => {
  const gone = Object.assign(
    new Error("Cannot find package '@opentelemetry/sdk-trace' imported from /app/otel.js"),
    {
      code: 'ERR_MODULE_NOT_FOUND',
    },
  );
  await assert.rejects(
    loadTelemetry(() => Promise.reject(gone)),
    (err: unknown) => {
      assert.ok(err instanceof TelemetryUnavailableError);
      assert.equal(err.packageName, '@opentelemetry/sdk-trace');
      assert.match(err.message, /^OTEL_\* variables ask for OpenTelemetry, but its SDK is not installed/);
      assert.ok(err.message.endsWith(`npm install ${installArguments(OTEL_SDK_PACKAGES)}`), err.message);
      return true;
    },
  );
  const other = await importError('echo-chaos-no-such-package');
  await assert.rejects(
    loadTelemetry(() => Promise.reject(other)),
    (err) => err === other,
  );
  const loaded = await loadTelemetry(() => import('../../src/telemetry/otel.ts'));
  assert.equal(typeof loaded.startTelemetry, 'function');
});

test('optional packages – the list is every SDK package otel.ts imports, at the versions package.json declares', () => {
  const source = readFileSync(new URL('../../src/telemetry/otel.ts', import.meta.url), 'utf8');
  const imported = [...source.matchAll(/from '(@opentelemetry\/[^']+)'/g)]
    .map((m) => m[1]!)
    .filter((name) => name !== '@opentelemetry/api');
  assert.ok(imported.length > 5, 'otel.ts imports the SDK');
  assert.deepEqual(Object.keys(OTEL_SDK_PACKAGES).sort(), [...new Set(imported)].sort());
  for (const [name, version] of Object.entries(OTEL_SDK_PACKAGES))
    assert.equal(version, declared(name), name);
  assert.equal(IOREDIS_VERSION, declared('ioredis'));
});
