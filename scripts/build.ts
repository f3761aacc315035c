/**
 * Builds the three packages this repository publishes (ADR 0005, ADR 0048):
 *
 * - `@echo-chaos/obs`: `src/obs` compiled to `src/obs/dist/`, which is the package as it ships
 *   (its own package.json, README, LICENSE and presets beside the JavaScript). `npm pack src/obs/dist`.
 * - `echo-chaos`: `src/{echo,scenario}` compiled to `dist/`, plus the pages the service serves and
 *   the console's bundled files (`dist/echo/console/static/`).
 *   `npm pack` at the root (its `prepack` runs this script).
 * - `@echo-chaos/operator`: `src/operator/dist/`, the operator's entry point bundled into one
 *   minified file with what it imports (ADR 0025): `@kubernetes/client-node` alone is 25 MB of
 *   JavaScript in about 1,000 files, whose text V8 keeps in the heap; minified, with the rest, it is
 *   about 5 MB. The OpenTelemetry SDK module stays outside it (`telemetry/otel.js` beside it),
 *   imported only when an `OTEL_*` variable asks for it, and the OpenTelemetry packages are the
 *   package's only dependencies. `npm run pack:operator` (this script, then `npm pack src/operator/dist`).
 *
 * In the repository the workspace `@echo-chaos/obs` resolves to the TypeScript sources (Node strips
 * the types; ADR 0001), so neither `npm start` nor `npm test` needs a build.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync, type Metafile } from 'esbuild';
import { writeConsoleAssets } from '../src/echo/console/assets.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OBS = join(ROOT, 'src', 'obs');
const OBS_OUT = join(OBS, 'dist');
const OUT = join(ROOT, 'dist');
const OPERATOR = join(ROOT, 'src', 'operator');
/** The operator's package as it ships (ADR 0048). */
export const OPERATOR_OUT = join(OPERATOR, 'dist');
/**
 * The service image's optional peers (the OpenTelemetry SDK, ioredis): a package.json of them and a
 * package-lock.json cut from the root's, which the Dockerfile installs beside the service's own
 * dependencies. A tarball user adds them by hand when a setting asks; the image has them all.
 */
export const IMAGE_PEERS_OUT = join(ROOT, '.image', 'peers');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

interface PackageJson {
  [key: string]: unknown;
  private?: boolean;
  exports?: unknown;
  scripts?: unknown;
}

/** The package.json `@echo-chaos/obs` ships with: the workspace's, pointed at the built files. */
export function publishedObsManifest(workspace: PackageJson): PackageJson {
  // The workspace's scripts stay behind: its `prepack` refuses to pack the sources.
  const { private: _private, exports: _exports, scripts: _scripts, ...rest } = workspace;
  return {
    ...rest,
    exports: {
      '.': { types: './index.d.ts', default: './index.js' },
      // What the other echo-chaos packages share with obs, outside semver (ADR 0043).
      './internal': { types: './internal.d.ts', default: './internal.js' },
      './package.json': './package.json',
    },
    main: './index.js',
    types: './index.d.ts',
    // `**/`: the built files keep src/obs's folders (core/, features/, integrations/; ADR 0046).
    files: ['**/*.js', '**/*.js.map', '**/*.d.ts', 'presets/', 'README.md', 'LICENSE'],
    sideEffects: false,
  };
}

function tsc(project: string): void {
  execFileSync(process.execPath, [TSC, '-p', project], { cwd: ROOT, stdio: 'inherit' });
}

const readJson = <T = PackageJson>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;
const writeJson = (file: string, value: unknown): void =>
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);

export function build(): void {
  rmSync(OBS_OUT, { recursive: true, force: true });
  rmSync(OUT, { recursive: true, force: true });
  rmSync(OPERATOR_OUT, { recursive: true, force: true });
  rmSync(IMAGE_PEERS_OUT, { recursive: true, force: true });

  tsc(join(OBS, 'tsconfig.build.json'));
  cpSync(join(OBS, 'presets'), join(OBS_OUT, 'presets'), { recursive: true });
  cpSync(join(OBS, 'README.md'), join(OBS_OUT, 'README.md'));
  cpSync(join(ROOT, 'LICENSE'), join(OBS_OUT, 'LICENSE'));
  writeJson(join(OBS_OUT, 'package.json'), publishedObsManifest(readJson(join(OBS, 'package.json'))));

  // The service's declarations refer to `@echo-chaos/obs` by name; tsconfig.build.json maps the
  // name to the declarations just built, so the service is checked against what obs ships.
  tsc(join(ROOT, 'tsconfig.build.json'));
  mkdirSync(join(OUT, 'echo', 'pages'), { recursive: true });
  cpSync(join(ROOT, 'src', 'echo', 'pages'), join(OUT, 'echo', 'pages'), { recursive: true });
  chmodSync(join(OUT, 'echo', 'main.js'), 0o755);
  // The console's page, script and style sheet, bundled once here (docs/adr/0053-console.md).
  writeConsoleAssets(buildSync, join(OUT, 'echo', 'console', 'static'));

  // tsc compiled the operator into dist/operator/ too: the bundle is made from there, and the
  // service's package (dist/) holds none of it.
  buildOperatorPackage();
  rmSync(join(OUT, 'operator'), { recursive: true, force: true });
  writeImagePeers();
}

/** The manifest of the service's optional peers, as dependencies of a package of their own. */
export function imagePeersManifest(root: PackageJson): PackageJson {
  return {
    name: 'echo-chaos-image-peers',
    version: root['version'],
    private: true,
    license: root['license'],
    dependencies: { ...(root['peerDependencies'] as Record<string, string> | undefined) },
  };
}

/** `.image/peers/`: the service image's optional peers, at the versions of the root's lockfile. */
function writeImagePeers(): void {
  mkdirSync(IMAGE_PEERS_OUT, { recursive: true });
  const manifest = imagePeersManifest(readJson(join(ROOT, 'package.json')));
  writeJson(join(IMAGE_PEERS_OUT, 'package.json'), manifest);
  writeJson(
    join(IMAGE_PEERS_OUT, 'package-lock.json'),
    operatorLockfile(readJson(join(ROOT, 'package-lock.json')), manifest),
  );
}

/**
 * What the operator's bundle leaves to `import` at run time: the OpenTelemetry SDK module (a dynamic
 * import, so it loads only when asked for; bundled, its packages would be imported at start) and the
 * OpenTelemetry packages (the SDK's, and the API that obs shares with it).
 */
export const OPERATOR_BUNDLE_EXTERNAL = ['../telemetry/otel.js', '@opentelemetry/*'];
/** Where the bundle imports the SDK module from, beside it in the operator's package. */
const OTEL_MODULE = './telemetry/otel.js';

/**
 * The package.json `@echo-chaos/operator` ships with: name, version, description and repository
 * from its kept manifest (`src/operator/package.json`, private), license and engines from the
 * root's, and as dependencies only the packages its files import at run time (`dependencies`).
 */
export function publishedOperatorManifest(
  kept: PackageJson,
  root: PackageJson,
  dependencies: OperatorDependencies,
): PackageJson {
  return {
    name: kept['name'],
    version: kept['version'],
    description: kept['description'],
    license: root['license'],
    repository: kept['repository'],
    type: 'module',
    engines: root['engines'],
    bin: { 'echo-chaos-operator': 'main.js' },
    files: ['main.js', 'main.js.LEGAL.txt', 'telemetry/', 'crds/', 'README.md', 'LICENSE'],
    ...dependencies,
  };
}

/** The dependency fields a package.json may declare a package in. */
const DEPENDENCY_FIELDS = ['dependencies', 'optionalDependencies', 'peerDependencies'] as const;
type DependencyField = (typeof DEPENDENCY_FIELDS)[number];
export type OperatorDependencies = Partial<
  Record<DependencyField | 'peerDependenciesMeta', Record<string, unknown>>
>;

/**
 * The operator package's dependencies: the packages it imports at run time (`names`), each at the
 * version the repository runs it at: the root's dependency, else its devDependency (the service's
 * optional peers, which the operator's image needs installed: the OpenTelemetry SDK, pinned there,
 * where the service's peer is a range). One the root lacks, or one of ours (the bundle holds obs),
 * fails the build.
 */
export function operatorDependencies(root: PackageJson, names: readonly string[]): OperatorDependencies {
  const dependencies: Record<string, unknown> = {};
  const fields = ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'];
  for (const name of [...names].sort()) {
    if (name.startsWith('@echo-chaos/')) {
      throw new Error(`build: the operator's package imports ${name} at run time; it must be bundled`);
    }
    const field = fields.find((f) => (root[f] as Record<string, string> | undefined)?.[name] !== undefined);
    if (field === undefined) {
      throw new Error(
        `build: the operator imports ${name} at run time, which package.json declares in no dependencies`,
      );
    }
    dependencies[name] = (root[field] as Record<string, string>)[name];
  }
  return { dependencies };
}

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`. */
const packageOf = (specifier: string): string =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

/**
 * The packages an output of `metafile` imports and leaves outside: node's own modules aside, and
 * those that are not installed, which esbuild leaves outside only when a `require` in a `try` asks
 * for them (ws's optional `bufferutil`, for one).
 */
function externalPackages(metafile: Metafile): string[] {
  return Object.values(metafile.outputs).flatMap((output) =>
    output.imports
      .filter((i) => i.external && !isBuiltin(i.path) && !i.path.startsWith('.'))
      .map((i) => packageOf(i.path))
      .filter((name) => existsSync(join(ROOT, 'node_modules', name, 'package.json'))),
  );
}

/**
 * The operator's package in `src/operator/dist/` (ADR 0048): the bundle, its license notices, the
 * OpenTelemetry SDK module it imports when asked, the CRD, a README, the LICENSE, its package.json
 * and a package-lock.json for the image's `npm ci` (npm never packs a package-lock.json).
 */
function buildOperatorPackage(): void {
  mkdirSync(OPERATOR_OUT, { recursive: true });
  const main = bundleOperator();
  const otel = bundleOtelModule();
  const rootManifest = readJson(join(ROOT, 'package.json'));
  const dependencies = operatorDependencies(rootManifest, [
    ...new Set([...externalPackages(main), ...externalPackages(otel)]),
  ]);
  const manifest = publishedOperatorManifest(
    readJson(join(OPERATOR, 'package.json')),
    rootManifest,
    dependencies,
  );
  writeJson(join(OPERATOR_OUT, 'package.json'), manifest);
  writeJson(
    join(OPERATOR_OUT, 'package-lock.json'),
    operatorLockfile(readJson(join(ROOT, 'package-lock.json')), manifest),
  );
  mkdirSync(join(OPERATOR_OUT, 'crds'));
  cpSync(join(ROOT, 'charts', 'echo-chaos', 'crds'), join(OPERATOR_OUT, 'crds'), { recursive: true });
  writeFileSync(join(OPERATOR_OUT, 'README.md'), operatorReadme());
  cpSync(join(ROOT, 'LICENSE'), join(OPERATOR_OUT, 'LICENSE'));
  chmodSync(join(OPERATOR_OUT, 'main.js'), 0o755);
}

/** `dist/operator/main.js` and what it imports, as one minified ES module: `src/operator/dist/main.js`. */
function bundleOperator(): Metafile {
  const outfile = join(OPERATOR_OUT, 'main.js');
  const { metafile } = buildSync({
    entryPoints: [join(OUT, 'operator', 'main.js')],
    outfile,
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    minify: true,
    metafile: true,
    // The obs that was just built, not its TypeScript sources (the workspace's export).
    alias: {
      '@echo-chaos/obs': join(OBS_OUT, 'index.js'),
      '@echo-chaos/obs/internal': join(OBS_OUT, 'internal.js'),
    },
    external: OPERATOR_BUNDLE_EXTERNAL,
    // CommonJS packages inside an ES module bundle call `require` for node's own modules.
    banner: {
      js: "import { createRequire as __ecRequire } from 'node:module'; const require = __ecRequire(import.meta.url);",
    },
    // The bundled packages' license comments go to a file beside it: one of them has a non-ASCII
    // letter, and a single one makes node decode the whole 5 MB source into a two-byte string
    // (10 MB of heap instead of 5).
    legalComments: 'external',
    logLevel: 'error',
  });
  // The SDK module sits beside the bundle in the package, not in a sibling folder as in dist/.
  const code = readFileSync(outfile, 'utf8');
  const [from, to] = [JSON.stringify(OPERATOR_BUNDLE_EXTERNAL[0]), JSON.stringify(OTEL_MODULE)];
  const found = code.split(from).length - 1;
  if (found !== 1) throw new Error(`build: the operator's bundle names ${from} ${found} times, not once`);
  writeFileSync(outfile, code.replace(from, to));
  return metafile;
}

/**
 * `dist/telemetry/otel.js`, the module the bundle imports when an `OTEL_*` variable asks for the
 * SDK, with the repository's modules it imports (none of obs: the bundle has obs, and two copies
 * would not share its state); the packages stay outside, dependencies of the operator's package.
 */
function bundleOtelModule(): Metafile {
  const { metafile } = buildSync({
    entryPoints: [join(OUT, 'telemetry', 'otel.js')],
    outfile: join(OPERATOR_OUT, OTEL_MODULE),
    absWorkingDir: ROOT,
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node24',
    metafile: true,
    logLevel: 'error',
  });
  const outside = Object.keys(metafile.inputs).filter(
    (input) => !input.startsWith(`${relative(ROOT, OUT).split(sep).join('/')}/`),
  );
  if (outside.length > 0) {
    throw new Error(`build: telemetry/otel.js of the operator's package holds ${outside.join(', ')}`);
  }
  return metafile;
}

interface LockEntry {
  [key: string]: unknown;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

interface Lockfile {
  [key: string]: unknown;
  packages: Record<string, LockEntry>;
}

/**
 * A package-lock.json for `manifest` made of the root's: the root's entries for the packages the
 * manifest's dependencies need, at the same places, so `npm ci` in the operator's package installs
 * exactly the versions the repository tested, without asking the registry what is newest.
 */
export function operatorLockfile(root: Lockfile, manifest: PackageJson): Lockfile {
  const packages: Record<string, LockEntry> = {};
  /** Where node would find `name` from the package at `from` (`''`: the root), as it lies in the root's tree. */
  const visit = (from: string, name: string, optional: boolean): void => {
    for (let dir = from; ; ) {
      const key = `${dir === '' ? '' : `${dir}/`}node_modules/${name}`;
      const entry = root.packages[key];
      if (entry !== undefined) {
        if (packages[key] === undefined) {
          const { dev: _dev, devOptional, ...kept } = entry;
          packages[key] = devOptional === true ? { ...kept, optional: true } : kept;
          walk(key, entry);
        }
        return;
      }
      if (dir === '') {
        if (optional) return;
        throw new Error(`build: package-lock.json has no ${name} for ${from === '' ? 'the root' : from}`);
      }
      const up = dir.lastIndexOf('/node_modules/');
      dir = up === -1 ? '' : dir.slice(0, up);
    }
  };
  const walk = (key: string, entry: LockEntry): void => {
    for (const name of Object.keys(entry.dependencies ?? {})) visit(key, name, false);
    for (const name of Object.keys(entry.optionalDependencies ?? {})) visit(key, name, true);
    for (const name of Object.keys(entry.peerDependencies ?? {}))
      visit(key, name, entry.peerDependenciesMeta?.[name]?.optional === true);
  };
  const top: LockEntry = {
    name: manifest['name'],
    version: manifest['version'],
    license: manifest['license'],
    ...Object.fromEntries(
      [...DEPENDENCY_FIELDS, 'peerDependenciesMeta']
        .filter((field) => manifest[field] !== undefined)
        .map((field) => [field, manifest[field]]),
    ),
    bin: manifest['bin'],
    engines: manifest['engines'],
  };
  walk('', top);
  const sorted = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => a.localeCompare(b)));
  return {
    name: manifest['name'],
    version: manifest['version'],
    lockfileVersion: 3,
    requires: true,
    packages: { '': top, ...sorted },
  };
}

/**
 * The operator package's README: `src/operator/package-readme.md` with the settings table of
 * `src/operator/README.md` (which scripts/readme-tables.ts generates from the operator's settings).
 */
function operatorReadme(): string {
  const table =
    /<!-- generated:operator-settings[^>]*-->\n([\s\S]*?)<!-- \/generated:operator-settings -->/.exec(
      readFileSync(join(OPERATOR, 'README.md'), 'utf8'),
    )?.[1];
  if (table === undefined) throw new Error('build: src/operator/README.md has no operator-settings table');
  const template = readFileSync(join(OPERATOR, 'package-readme.md'), 'utf8');
  if (!template.includes('<!-- operator-settings -->')) {
    throw new Error('build: src/operator/package-readme.md has no <!-- operator-settings --> placeholder');
  }
  return template.replace('<!-- operator-settings -->\n', table);
}

if (import.meta.main) build();
