import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * The two halves of the suite (docs/development.md, "The test suite"): `npm run test:unit` runs every
 * `*.test.ts` but the `*.integration.test.ts`, two files at a time, and stays under two minutes on two
 * cores because a unit file starts no process and no peer. This holds that rule: a unit file, and every
 * test helper it reaches, imports no `node:child_process` and none of the helpers that start a peer.
 */

const TEST_DIR = fileURLToPath(new URL('.', import.meta.url));
/** Helpers that start a process or a peer (Redis, Kafka, Postgres, Prometheus, Chromium, helm, curl, a build). */
const PEER_HELPERS = [
  'chromium.ts',
  'doc-commands.ts',
  'docs-build.ts',
  'helm.ts',
  'kafka-mock.ts',
  'liveness.ts',
  'postgres.ts',
  'prometheus.ts',
  'protocol-clients.ts',
  'redis.ts',
  'workflow.ts',
].map((name) => join(TEST_DIR, 'helpers', name));

/** Value imports of a source text (type-only imports start nothing), comments left out. */
export function valueImports(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found: string[] = [];
  for (const m of code.matchAll(/\bimport\s+(type\s+)?(?:[^'";]*?\sfrom\s*)?['"]([^'"]+)['"]/g)) {
    if (m[1] === undefined && m[2] !== undefined) found.push(m[2]);
  }
  for (const m of code.matchAll(/\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g))
    if (m[1] !== undefined) found.push(m[1]);
  return found;
}

/** Why `file` would start a process or a peer, following relative imports inside test/; undefined if it would not. */
function startsProcess(file: string, seen = new Set<string>()): string | undefined {
  if (seen.has(file)) return undefined;
  seen.add(file);
  if (PEER_HELPERS.includes(file)) return `imports ${relative(TEST_DIR, file)}`;
  for (const specifier of valueImports(readFileSync(file, 'utf8'))) {
    if (specifier === 'node:child_process' || specifier === 'child_process') {
      return `${relative(TEST_DIR, file)} imports ${specifier}`;
    }
    if (!specifier.startsWith('.')) continue;
    const target = resolve(dirname(file), specifier);
    // The code under test is judged by what the test does with it; a specifier in a string is no file.
    if (!target.startsWith(TEST_DIR) || !existsSync(target)) continue;
    const why = startsProcess(target, seen);
    if (why !== undefined) return why;
  }
  return undefined;
}

const testFiles = readdirSync(TEST_DIR, { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.test.ts') && !f.split('/').includes('node_modules'))
  .map((f) => join(TEST_DIR, f));

test('suite split – no unit test file starts a process or a peer, directly or through a helper', () => {
  // This file is left out: its own examples below are import lines in strings.
  const units = testFiles.filter(
    (f) => !f.endsWith('.integration.test.ts') && f !== fileURLToPath(import.meta.url),
  );
  assert.ok(units.length > 100, `only ${units.length} unit files found`);
  const offenders = units
    .map((f) => [relative(TEST_DIR, f), startsProcess(f)] as const)
    .filter(([, why]) => why !== undefined)
    .map(([f, why]) => `${f}: ${why} (rename it *.integration.test.ts)`);
  assert.deepEqual(offenders, []);
});

test('suite split – the rule sees value imports only, through helpers', () => {
  assert.deepEqual(valueImports("import type { ChildProcess } from 'node:child_process';"), []);
  assert.deepEqual(valueImports("import { spawn } from 'node:child_process';"), ['node:child_process']);
  assert.deepEqual(valueImports("// import { spawn } from 'node:child_process';"), []);
  assert.deepEqual(valueImports("const { x } = await import('./helpers/redis.ts');"), ['./helpers/redis.ts']);
  // A real integration file is caught, through its helper.
  assert.match(
    String(startsProcess(join(TEST_DIR, 'echo', 'shared-state.integration.test.ts'))),
    /liveness\.ts|redis\.ts|child_process/,
  );
});

test('suite split – the scripts run the two halves, and npm test runs both', () => {
  const { scripts } = JSON.parse(readFileSync(join(TEST_DIR, '..', 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  assert.match(String(scripts['test:unit']), /"test\/\*\*\/!\(\*\.integration\)\.test\.ts"/);
  assert.match(String(scripts['test:integration']), /"test\/\*\*\/\*\.integration\.test\.ts"/);
  assert.match(String(scripts['test']), /npm run test:unit && npm run test:integration/);
});
