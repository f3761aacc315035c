import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { loadConfig } from '../../../src/echo/config.ts';
import { GRPC_PACKAGES, loadGrpcServer } from '../../../src/echo/grpc/index.ts';
import { installArguments } from '../../../src/telemetry/optional-packages.ts';

interface Manifest {
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  devDependencies?: Record<string, string>;
  dependencies?: Record<string, string>;
}
const manifest = JSON.parse(
  readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'),
) as Manifest;

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (err) {
    return (err as { problems: readonly string[] }).problems;
  }
  return [];
}

test('grpc setup – ECHO_GRPC_PORT: unset is no server, 1-65535 a port, never PORT', () => {
  assert.equal(loadConfig({}).grpcPort, undefined);
  assert.equal(loadConfig({ ECHO_GRPC_PORT: '' }).grpcPort, undefined);
  assert.equal(loadConfig({ ECHO_GRPC_PORT: '9090' }).grpcPort, 9090);
  for (const bad of ['0', '65536', 'grpc', '-1']) {
    const problems = problemsOf({ ECHO_GRPC_PORT: bad });
    assert.equal(problems.length, 1, bad);
    assert.match(problems[0] ?? '', /^ECHO_GRPC_PORT=.* is invalid/);
  }
  assert.deepEqual(problemsOf({ ECHO_GRPC_PORT: '8080' }), [
    'ECHO_GRPC_PORT="8080" is invalid: expected a port other than PORT (8080): the gRPC server has its own',
  ]);
  // Reported with the other settings, one line each.
  assert.deepEqual(
    problemsOf({ PORT: '9090', ECHO_GRPC_PORT: '9090', ECHO_CHAOS: 'lots' }).map(
      (line) => line.split(' ')[0],
    ),
    ['ECHO_CHAOS="lots"', 'ECHO_GRPC_PORT="9090"'],
  );
});

test('grpc setup – a missing gRPC package stops startup with one line saying what to install', async () => {
  const gone = Object.assign(
    new Error("Cannot find package '@grpc/reflection' imported from /app/dist/echo/grpc/server.js"),
    { code: 'ERR_MODULE_NOT_FOUND' },
  );
  await assert.rejects(
    loadGrpcServer(9090, () => Promise.reject(gone)),
    (err: unknown) => {
      const { code, problems } = err as { code: string; problems: readonly string[] };
      assert.equal(code, 'ECHO_ERR_CONFIG');
      assert.deepEqual(problems, [
        `ECHO_GRPC_PORT=9090 needs the packages @grpc/grpc-js, @grpc/proto-loader, @grpc/reflection and grpc-health-check, which are not installed (@grpc/reflection is missing); install them beside echo-chaos: npm install ${installArguments(GRPC_PACKAGES)}`,
      ]);
      return true;
    },
  );
  // Any other failure is left as it is.
  const other = Object.assign(new Error("Cannot find package 'left-pad' imported from /x.js"), {
    code: 'ERR_MODULE_NOT_FOUND',
  });
  await assert.rejects(
    loadGrpcServer(9090, () => Promise.reject(other)),
    (err) => err === other,
  );
  const loaded = await loadGrpcServer(9090, () => import('../../../src/echo/grpc/server.ts'));
  assert.equal(typeof loaded.startGrpcServer, 'function');
});

test('grpc setup – the gRPC packages are optional peers and devDependencies, at the versions the message names', () => {
  for (const [name, version] of Object.entries(GRPC_PACKAGES)) {
    assert.equal(manifest.peerDependencies?.[name], version, name);
    assert.equal(manifest.peerDependenciesMeta?.[name]?.optional, true, name);
    assert.equal(manifest.devDependencies?.[name], version, name);
    assert.equal(manifest.dependencies?.[name], undefined, name);
  }
  // Every package server.ts and echo-service.ts import is in the list.
  const imported = new Set<string>();
  for (const file of ['server.ts', 'echo-service.ts']) {
    const source = readFileSync(new URL(`../../../src/echo/grpc/${file}`, import.meta.url), 'utf8');
    for (const m of source.matchAll(/from '((?:@[^/']+\/)?[^./'][^/']*)/g))
      if (!m[1]?.startsWith('node:')) imported.add(m[1] ?? '');
  }
  assert.deepEqual([...imported].sort(), Object.keys(GRPC_PACKAGES).sort());
});
