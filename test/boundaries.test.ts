import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * The layering (docs/development.md, ADR 0043): `obs/` (the published `@echo-chaos/obs`) is the
 * bottom layer and imports nothing else of ours; `scenario/` imports nothing else of ours but obs,
 * by its package name (the error base from its public entry, the one duration grammar from
 * `@echo-chaos/obs/internal`); `echo/` and `operator/` may use both, but the service never reaches
 * into the operator. Only our own packages use obs's internal entry, never an example.
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

const LEAVES: readonly { area: string; allowed: readonly string[] }[] = [
  { area: 'obs', allowed: [] },
  { area: 'scenario', allowed: [OBS_PACKAGE, `${OBS_PACKAGE}/internal`] },
];
for (const { area, allowed } of LEAVES) {
  const but = allowed.length > 0 ? ` but ${allowed.join(', ')}` : '';
  test(`boundaries – src/${area} imports nothing of ours outside src/${area}${but}`, () => {
    const dir = join(SRC, area);
    assert.ok(sourceFiles(dir).length > 0, `src/${area} has no source files to check`);
    const allowedLines = (line: string) => allowed.some((name) => line.endsWith(`: ${name}`));
    assert.deepEqual(
      violations(dir).filter((line) => !allowedLines(line)),
      [],
    );
  });
}

/** `file: specifier` for every relative import in `files` that reaches into the folder `dir`. */
function relativeImportsInto(files: readonly string[], dir: string): string[] {
  const offending: string[] = [];
  for (const file of files) {
    for (const specifier of importsOf(readFileSync(file, 'utf8'))) {
      if (!specifier.startsWith('.')) continue;
      const target = resolve(dirname(file), specifier);
      if (target === dir || target.startsWith(dir + sep))
        offending.push(`${relative(ROOT, file)}: ${specifier}`);
    }
  }
  return offending;
}

test('boundaries – src/echo does not import src/operator', () => {
  const files = sourceFiles(join(SRC, 'echo'));
  assert.ok(files.length > 0);
  assert.deepEqual(relativeImportsInto(files, join(SRC, 'operator')), []);
});

/** obs's own layers (ADR 0044, 0046): the core under the features, the features under their list. */
const OBS = join(SRC, 'obs');
const OBS_TOP = ['obs.ts', 'plugin.ts', 'feature-plugins.ts', 'index.ts', 'internal.ts'].map((f) =>
  join(OBS, f),
);

test('boundaries – src/obs/core imports no feature, no integration and nothing that lists them', () => {
  const files = sourceFiles(join(OBS, 'core'));
  assert.ok(files.length > 0);
  const offending = [
    ...relativeImportsInto(files, join(OBS, 'features')),
    ...relativeImportsInto(files, join(OBS, 'integrations')),
    ...OBS_TOP.flatMap((top) => relativeImportsInto(files, top)),
  ];
  assert.deepEqual(offending, []);
});

test("boundaries – obs's features and integrations build on the core, not on the Obs that lists them", () => {
  const files = [...sourceFiles(join(OBS, 'features')), ...sourceFiles(join(OBS, 'integrations'))];
  assert.ok(files.length > 20);
  assert.deepEqual(
    OBS_TOP.flatMap((top) => relativeImportsInto(files, top)),
    [],
  );
});

test('boundaries – the examples use obs as an application does: its public entry only', () => {
  const files = sourceFiles(join(ROOT, 'examples'));
  assert.ok(files.length > 0);
  const internal = files.flatMap((file) =>
    importsOf(readFileSync(file, 'utf8'))
      .filter((specifier) => specifier.startsWith(`${OBS_PACKAGE}/`))
      .map((specifier) => `${relative(ROOT, file)}: ${specifier}`),
  );
  assert.deepEqual(internal, []);
});

test('boundaries – the service and the operator reach obs through its package name only', () => {
  // A relative import would compile a second copy of obs into the echo-chaos package.
  const files = [...sourceFiles(join(SRC, 'echo')), ...sourceFiles(join(SRC, 'operator'))];
  assert.ok(files.length > 0);
  assert.deepEqual(relativeImportsInto(files, join(SRC, 'obs')), []);
});

/**
 * The import graph of `files`: each file and the files of `files` it imports with a relative
 * specifier (type-only imports and re-exports included). Imports of anything else are left out.
 */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = importsOf(readFileSync(file, 'utf8'))
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => resolve(dirname(file), specifier))
      .filter((target) => known.has(target));
    graph.set(file, [...new Set(targets)].sort());
  }
  return graph;
}

/**
 * The groups of files that import one another, directly or not: each strongly connected component
 * of `graph` that holds a cycle (Tarjan's algorithm), its members sorted, the groups by first member.
 */
function cycleGroups(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== node);
    if (group.length > 1 || (graph.get(node) ?? []).includes(node)) groups.push(group.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return groups.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** A shortest cycle through the first member of `group`, inside it: `[a, b, a]`. */
function cycleOf(graph: ReadonlyMap<string, readonly string[]>, group: readonly string[]): string[] {
  const members = new Set(group);
  const start = group[0]!;
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0 && !cameFrom.has(start)) {
    const node = queue.shift()!;
    for (const next of graph.get(node) ?? []) {
      if (!members.has(next) || cameFrom.has(next)) continue;
      cameFrom.set(next, node);
      if (next === start) break;
      queue.push(next);
    }
  }
  const cycle = [start];
  for (let node = cameFrom.get(start)!; node !== start; node = cameFrom.get(node)!) cycle.unshift(node);
  return [start, ...cycle];
}

/** One line per group of files importing one another: a cycle, and the others caught in it. */
function describeCycles(graph: ReadonlyMap<string, readonly string[]>, name = (f: string) => f): string[] {
  return cycleGroups(graph).map((group) => {
    const cycle = cycleOf(graph, group);
    const others = group.filter((f) => !cycle.includes(f));
    const also = others.length === 0 ? '' : ` (also in this cycle: ${others.map(name).join(', ')})`;
    return `${cycle.map(name).join(' → ')}${also}`;
  });
}

test('boundaries – describeCycles names one cycle per group of files importing one another', () => {
  const graph = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a', 'd', 'b']],
    ['d', []],
    ['e', ['e']],
    ['f', ['d']],
    ['g', ['h']],
    ['h', ['g']],
  ]);
  assert.deepEqual(cycleGroups(graph), [['a', 'b', 'c'], ['e'], ['g', 'h']]);
  assert.deepEqual(describeCycles(graph), ['a → b → c → a', 'e → e', 'g → h → g']);
  assert.deepEqual(
    describeCycles(
      new Map([
        ['a', ['b']],
        ['b', ['a', 'c']],
        ['c', ['b']],
      ]),
    ),
    ['a → b → a (also in this cycle: c)'],
  );
  assert.deepEqual(
    describeCycles(
      new Map([
        ['a', ['b']],
        ['b', ['c']],
        ['c', []],
      ]),
    ),
    [],
  );
});

test('boundaries – importGraph follows relative imports, type-only ones included', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'boundaries-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const app = join(dir, 'app.ts');
  const routes = join(dir, 'routes.ts');
  writeFileSync(app, "import { routes } from './routes.ts';\nimport 'node:fs';\n");
  writeFileSync(routes, "import type { State } from './app.ts';\nimport '../outside.ts';\n");
  const graph = importGraph([app, routes]);
  assert.deepEqual(Object.fromEntries(graph), { [app]: [routes], [routes]: [app] });
  assert.deepEqual(describeCycles(graph), [`${app} → ${routes} → ${app}`]);
});

test('boundaries – src has no import cycle, type-only imports included', () => {
  const files = sourceFiles(SRC);
  assert.ok(files.length > 0);
  assert.deepEqual(
    describeCycles(importGraph(files), (file) => relative(ROOT, file)),
    [],
  );
});
