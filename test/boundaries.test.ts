import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * The layering of STYLE.md: `scenario/` and `obs/` import nothing else of ours; `echo/` and
 * `operator/` may use both, but the service never reaches into the operator.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');
const PACKAGE_NAME = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string }).name;
/** The workspace package of src/obs: the service and the operator import obs by this name. */
const OBS_PACKAGE = (JSON.parse(readFileSync(join(SRC, 'obs', 'package.json'), 'utf8')) as { name: string })
  .name;

const IMPORT_PATTERNS = [
  // import x from '…', import type { X } from '…', import '…', export { x } from '…', export * from '…'
  /\b(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s*)?['"]([^'"]+)['"]/g,
  // import('…')
  /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  // require('…'), createRequire(…)('…') included
  /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
];

/** Every module specifier a source text imports, comments left out. */
function importsOf(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found = new Set<string>();
  for (const pattern of IMPORT_PATTERNS) {
    for (const m of code.matchAll(pattern)) if (m[1] !== undefined) found.add(m[1]);
  }
  return [...found];
}

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(c|m)?[jt]s$/.test(f) && !/(^|[\\/])(dist|node_modules)[\\/]/.test(f))
    .map((f) => join(dir, f));
}

/** Whether a specifier written in `file` points at code of ours outside `area` (a folder). */
function leaves(file: string, specifier: string, area: string): boolean {
  if (specifier === PACKAGE_NAME || specifier.startsWith(`${PACKAGE_NAME}/`)) return true;
  if (specifier === OBS_PACKAGE || specifier.startsWith(`${OBS_PACKAGE}/`)) {
    const obs = join(SRC, 'obs');
    return area !== obs && !area.startsWith(obs + sep);
  }
  if (!specifier.startsWith('.') && !specifier.startsWith('/') && !specifier.startsWith('file:')) {
    return false; // a package or a node: builtin
  }
  const target = specifier.startsWith('file:') ? fileURLToPath(specifier) : resolve(dirname(file), specifier);
  return target !== area && !target.startsWith(area + sep);
}

/** `file: specifier` for every import in `area` that leaves it. */
function violations(area: string): string[] {
  const out: string[] = [];
  for (const file of sourceFiles(area)) {
    for (const specifier of importsOf(readFileSync(file, 'utf8'))) {
      if (leaves(file, specifier, area)) out.push(`${relative(ROOT, file)}: ${specifier}`);
    }
  }
  return out;
}

test('boundaries – importsOf finds static, type-only, re-export, side-effect, dynamic and require imports', () => {
  const source = [
    "import { a } from './a.ts';",
    "import type { B } from '../echo/b.ts';",
    'import {',
    '  c,',
    '  d,',
    "} from '../operator/c.ts';",
    "import './side-effect.ts';",
    "export { e } from '../echo/e.ts';",
    "export * as f from './f.ts';",
    "const g = await import('../echo/g.ts');",
    "const h = require('../echo/h.ts');",
    "// import { x } from '../echo/commented.ts';",
    "/* import { y } from '../echo/block.ts'; */",
    "export const label = 'from here';",
  ].join('\n');
  assert.deepEqual(importsOf(source).sort(), [
    '../echo/b.ts',
    '../echo/e.ts',
    '../echo/g.ts',
    '../echo/h.ts',
    '../operator/c.ts',
    './a.ts',
    './f.ts',
    './side-effect.ts',
  ]);
});

test('boundaries – an import is leaving its folder when it climbs out or names the package itself', () => {
  const area = join(SRC, 'obs');
  const file = join(area, 'sub', 'x.ts');
  assert.equal(leaves(file, '../y.ts', area), false);
  assert.equal(leaves(file, './z.ts', area), false);
  assert.equal(leaves(file, '../../echo/app.ts', area), true);
  assert.equal(leaves(file, '../../obs-extra/a.ts', area), true, 'a sibling folder sharing the prefix');
  assert.equal(leaves(file, `${PACKAGE_NAME}/scenario`, area), true);
  assert.equal(leaves(file, '@opentelemetry/api', area), false);
  assert.equal(leaves(file, OBS_PACKAGE, area), false, 'obs naming its own package stays inside obs');
  assert.equal(leaves(join(SRC, 'scenario', 'x.ts'), OBS_PACKAGE, join(SRC, 'scenario')), true);
  assert.equal(leaves(file, 'node:fs', area), false);
});

for (const area of ['scenario', 'obs']) {
  test(`boundaries – src/${area} imports nothing of ours outside src/${area}`, () => {
    const dir = join(SRC, area);
    assert.ok(sourceFiles(dir).length > 0, `src/${area} has no source files to check`);
    assert.deepEqual(violations(dir), []);
  });
}

test('boundaries – src/echo does not import src/operator', () => {
  const operator = join(SRC, 'operator');
  const files = sourceFiles(join(SRC, 'echo'));
  assert.ok(files.length > 0);
  const offending: string[] = [];
  for (const file of files) {
    for (const specifier of importsOf(readFileSync(file, 'utf8'))) {
      if (!specifier.startsWith('.')) continue;
      const target = resolve(dirname(file), specifier);
      if (target === operator || target.startsWith(operator + sep)) {
        offending.push(`${relative(ROOT, file)}: ${specifier}`);
      }
    }
  }
  assert.deepEqual(offending, []);
});

test('boundaries – the service and the operator reach obs through its package name only', () => {
  // A relative import would compile a second copy of obs into the echo-chaos package.
  const obs = join(SRC, 'obs');
  const files = [...sourceFiles(join(SRC, 'echo')), ...sourceFiles(join(SRC, 'operator'))];
  assert.ok(files.length > 0);
  const offending: string[] = [];
  for (const file of files) {
    for (const specifier of importsOf(readFileSync(file, 'utf8'))) {
      if (!specifier.startsWith('.')) continue;
      const target = resolve(dirname(file), specifier);
      if (target === obs || target.startsWith(obs + sep))
        offending.push(`${relative(ROOT, file)}: ${specifier}`);
    }
  }
  assert.deepEqual(offending, []);
});
