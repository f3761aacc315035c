/**
 * The console's files: its page, one script and one style sheet bundled by esbuild from
 * `page/`, and its icon. `npm run build` writes them to `dist/echo/console/static/` (the package
 * and the image serve those); run from the repository's TypeScript (`npm start`), where no build
 * has run, they are bundled in memory on the first request for one and kept (docs/adr/0053).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildOptions, BuildResult } from 'esbuild';
import { EchoError } from '../errors.ts';

export interface ConsoleAssets {
  readonly html: Buffer;
  readonly js: Buffer;
  readonly css: Buffer;
  readonly icon: Buffer;
}

/** The file name of each asset, under `/console/` and in `static/`. */
export const CONSOLE_FILES = {
  html: 'console.html',
  js: 'console.js',
  css: 'console.css',
  icon: 'favicon.svg',
} as const satisfies Record<keyof ConsoleAssets, string>;

/** The sources: the page, its script's entry point and its style sheet. */
export const CONSOLE_PAGE_DIR = fileURLToPath(new URL('./page/', import.meta.url));
/** Where a build puts the bundled files, beside the built module (absent in the repository's `src/`). */
export const CONSOLE_STATIC_DIR = fileURLToPath(new URL('./static/', import.meta.url));

/** esbuild's `buildSync` (a devDependency: the build passes its own, the repository's start imports it). */
export type BuildSync = (options: BuildOptions & { write: false }) => BuildResult<{ write: false }>;

/**
 * Bundles the console from its sources with `buildSync`: the script with every module it imports
 * and the style sheet, minified, for the browsers of the last few years; nothing is fetched from
 * elsewhere at run time.
 */
export function bundleConsole(buildSync: BuildSync): ConsoleAssets {
  const result = buildSync({
    entryPoints: [join(CONSOLE_PAGE_DIR, 'console.ts'), join(CONSOLE_PAGE_DIR, 'console.css')],
    outdir: '/console',
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022', 'chrome111', 'firefox115', 'safari16'],
    minify: true,
    legalComments: 'none',
    charset: 'utf8',
    write: false,
    logLevel: 'silent',
  });
  const output = (name: string): Buffer => {
    const file = result.outputFiles.find((f) => f.path === `/console/${name}`);
    if (file === undefined) throw new EchoError('ECHO_ERR_CONSOLE_UNAVAILABLE', [`esbuild wrote no ${name}`]);
    return Buffer.from(file.contents);
  };
  return {
    html: readFileSync(join(CONSOLE_PAGE_DIR, CONSOLE_FILES.html)),
    js: output(CONSOLE_FILES.js),
    css: output(CONSOLE_FILES.css),
    icon: readFileSync(join(CONSOLE_PAGE_DIR, CONSOLE_FILES.icon)),
  };
}

/** Writes the bundled console to `dir` (`npm run build`: `dist/echo/console/static/`). */
export function writeConsoleAssets(buildSync: BuildSync, dir: string): void {
  const assets = bundleConsole(buildSync);
  mkdirSync(dir, { recursive: true });
  for (const key of Object.keys(CONSOLE_FILES) as Array<keyof ConsoleAssets>) {
    writeFileSync(join(dir, CONSOLE_FILES[key]), assets[key]);
  }
}

/** The files a build wrote to `dir`, or undefined when it holds none. */
export function readConsoleAssets(dir: string): ConsoleAssets | undefined {
  if (!existsSync(join(dir, CONSOLE_FILES.js))) return undefined;
  const read = (key: keyof ConsoleAssets): Buffer => readFileSync(join(dir, CONSOLE_FILES[key]));
  return { html: read('html'), js: read('js'), css: read('css'), icon: read('icon') };
}

let loaded: Promise<ConsoleAssets> | undefined;

/**
 * The console's files, made once per process: the built ones when there are, else bundled from
 * the sources with the repository's esbuild. A failure is not kept: the next request tries again.
 */
export function consoleAssets(): Promise<ConsoleAssets> {
  loaded ??= (async () => {
    const built = readConsoleAssets(CONSOLE_STATIC_DIR);
    if (built !== undefined) return built;
    let esbuild: { buildSync: BuildSync };
    try {
      esbuild = await import('esbuild');
    } catch (cause) {
      // Installed without devDependencies and never built: a packaging mistake.
      throw new EchoError(
        'ECHO_ERR_CONSOLE_UNAVAILABLE',
        [`no ${CONSOLE_STATIC_DIR} and esbuild is not installed`],
        {
          cause,
        },
      );
    }
    return bundleConsole(esbuild.buildSync);
  })().catch((error: unknown) => {
    loaded = undefined;
    throw error;
  });
  return loaded;
}
