/**
 * Builds the two packages this repository publishes (ADR 0005):
 *
 * - `@echo-chaos/obs`: `src/obs` compiled to `src/obs/dist/`, which is the package as it ships
 *   (its own package.json, README, LICENSE and presets beside the JavaScript). `npm pack src/obs/dist`.
 * - `echo-chaos`: `src/{echo,operator,scenario}` compiled to `dist/`, plus the pages the service
 *   serves. `npm pack` at the root (its `prepack` runs this script).
 *
 * The operator's entry point, `dist/operator/main.js`, is then bundled into one minified file with
 * what it imports (ADR 0025): `@kubernetes/client-node` alone is 25 MB of JavaScript in about 1,000
 * files, whose text V8 keeps in the heap; minified, with the rest, it is about 5 MB. The
 * OpenTelemetry SDK stays outside it, imported only when an `OTEL_*` variable asks for it.
 *
 * In the repository the workspace `@echo-chaos/obs` resolves to the TypeScript sources (Node strips
 * the types; ADR 0001), so neither `npm start` nor `npm test` needs a build.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OBS = join(ROOT, 'src', 'obs');
const OBS_OUT = join(OBS, 'dist');
const OUT = join(ROOT, 'dist');
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

export function build(): void {
  rmSync(OBS_OUT, { recursive: true, force: true });
  rmSync(OUT, { recursive: true, force: true });

  tsc(join(OBS, 'tsconfig.build.json'));
  cpSync(join(OBS, 'presets'), join(OBS_OUT, 'presets'), { recursive: true });
  cpSync(join(OBS, 'README.md'), join(OBS_OUT, 'README.md'));
  cpSync(join(ROOT, 'LICENSE'), join(OBS_OUT, 'LICENSE'));
  const workspace = JSON.parse(readFileSync(join(OBS, 'package.json'), 'utf8')) as PackageJson;
  writeFileSync(
    join(OBS_OUT, 'package.json'),
    `${JSON.stringify(publishedObsManifest(workspace), null, 2)}\n`,
  );

  // The service's declarations refer to `@echo-chaos/obs` by name; tsconfig.build.json maps the
  // name to the declarations just built, so the service is checked against what obs ships.
  tsc(join(ROOT, 'tsconfig.build.json'));
  mkdirSync(join(OUT, 'echo', 'pages'), { recursive: true });
  cpSync(join(ROOT, 'src', 'echo', 'pages'), join(OUT, 'echo', 'pages'), { recursive: true });
  bundleOperator();
  for (const bin of ['echo/main.js', 'operator/main.js']) chmodSync(join(OUT, bin), 0o755);
}

/**
 * What the operator's bundle leaves to `import` at run time: the OpenTelemetry SDK module (a dynamic
 * import, so it loads only when asked for; bundled, its packages would be imported at start) and the
 * OpenTelemetry packages (the SDK's, and the API that obs shares with it).
 */
export const OPERATOR_BUNDLE_EXTERNAL = ['../telemetry/otel.js', '@opentelemetry/*'];

/** `dist/operator/main.js` and what it imports, as one minified ES module in its place. */
function bundleOperator(): void {
  const entry = join(OUT, 'operator', 'main.js');
  const bundled = join(OUT, 'operator', 'main.bundle.js');
  buildSync({
    entryPoints: [entry],
    outfile: bundled,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    minify: true,
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
  rmSync(join(OUT, 'operator', 'main.js.map'), { force: true });
  renameSync(bundled, entry);
  renameSync(`${bundled}.LEGAL.txt`, `${entry}.LEGAL.txt`);
}

if (import.meta.main) build();
