/**
 * The API report of `@echo-chaos/obs`: its public surface as api-extractor reads it from the
 * declarations the package ships. `node scripts/api-report.ts --write` rewrites the checked-in
 * `src/obs/obs.api.md`; `test/obs/api-report.integration.test.ts` fails when the surface changed without it.
 *
 * api-extractor (74 MB, with a TypeScript of its own) is no dependency of the repository (issue #35
 * item 2, docs/adr/0047-docs-tools-on-demand.md): the first report installs it, at the version and
 * integrity pinned below, with its dependencies as the registry had them on PINNED_BEFORE
 * (`npm install --before`), into a cache outside the repository, `$XDG_CACHE_HOME/echo-chaos` or
 * `~/.cache/echo-chaos` (the system's temporary directory when neither can be written), keyed by the
 * version. Later runs, and later clones, reuse it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot } from './cache-dir.ts';

const PACKAGE = '@microsoft/api-extractor';
const VERSION = '7.60.1';
/** The registry's `dist.integrity` of that version (`npm view @microsoft/api-extractor@7.60.1 dist.integrity`). */
const INTEGRITY =
  'sha512-1FJ/Z30xLL3pWn6oYSJCjGsnlEWkWivwmVeCB7YrRPe+47J7H54NVR+m/1PIL1RYsh/mZsxm/FwirreD72G76g==';
/** Its dependencies resolve to the versions published before this instant, the same on every machine. */
const PINNED_BEFORE = '2026-11-28T00:00:00Z';

/** The part of api-extractor's API this report uses (its types are not installed with the repository). */
interface ApiExtractor {
  ExtractorConfig: {
    prepare(options: {
      configObject: Record<string, unknown>;
      configObjectFullPath: string | undefined;
      packageJsonFullPath: string;
    }): unknown;
  };
  Extractor: {
    invoke(
      config: unknown,
      options: { localBuild: boolean; messageCallback: (m: unknown) => void },
    ): {
      errorCount: number;
    };
  };
}

/** The integrity npm recorded for the package installed under `dir`. */
function installedIntegrity(dir: string): string | undefined {
  const lock = join(dir, 'node_modules', '.package-lock.json');
  if (!existsSync(lock)) return undefined;
  const packages = (
    JSON.parse(readFileSync(lock, 'utf8')) as { packages?: Record<string, { integrity?: string }> }
  ).packages;
  return packages?.[`node_modules/${PACKAGE}`]?.integrity;
}

/**
 * The folder api-extractor is installed in, installed when missing: into a folder of its own, then
 * renamed into place, so a concurrent run never sees half of it. Throws saying why when it cannot be.
 */
export function apiExtractorDir(): string {
  const root = cacheRoot();
  const dir = join(root, `api-extractor-${VERSION}`);
  if (installedIntegrity(dir) === INTEGRITY) return dir;
  const work = mkdtempSync(join(root, 'partial-'));
  try {
    writeFileSync(join(work, 'package.json'), '{ "private": true }\n');
    try {
      execFileSync(
        'npm',
        [
          'install',
          `${PACKAGE}@${VERSION}`,
          '--prefix',
          work,
          `--before=${PINNED_BEFORE}`,
          '--ignore-scripts',
          '--no-audit',
          '--no-fund',
          '--loglevel=error',
        ],
        { cwd: work, stdio: 'pipe', timeout: 300_000 },
      );
    } catch (err) {
      // The first lines say why (npm's stack trace and log path follow them).
      const stderr = (err as { stderr?: Buffer }).stderr
        ?.toString()
        .trim()
        .split('\n')
        .slice(0, 4)
        .join(' | ');
      throw new Error(
        `cannot install ${PACKAGE}@${VERSION} from the npm registry (npm install): ${stderr || String(err)}`,
      );
    }
    const actual = installedIntegrity(work);
    if (actual !== INTEGRITY)
      throw new Error(`${PACKAGE}@${VERSION} from the registry is ${actual}, expected ${INTEGRITY}`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(work, dir);
    return dir;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Why api-extractor cannot run here, or undefined when it can (installing it when missing). */
export function apiExtractorUnavailable(): string | undefined {
  try {
    apiExtractorDir();
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OBS = join(ROOT, 'src', 'obs');
/** The checked-in report. */
export const API_REPORT_FILE = join(OBS, 'obs.api.md');

/** The report of the surface the sources declare today. */
export function generateApiReport(): string {
  // Inside the repository, so the declarations resolve their imports from its node_modules.
  const work = mkdtempSync(join(ROOT, '.api-report-'));
  try {
    const types = join(work, 'types');
    execFileSync(
      process.execPath,
      [
        join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
        '-p',
        join(OBS, 'tsconfig.build.json'),
        '--emitDeclarationOnly',
        '--declarationMap',
        'false',
        '--outDir',
        types,
      ],
      { cwd: ROOT, stdio: 'pipe' },
    );
    const { Extractor, ExtractorConfig } = createRequire(join(apiExtractorDir(), 'package.json'))(
      PACKAGE,
    ) as ApiExtractor;
    const config = ExtractorConfig.prepare({
      configObject: {
        projectFolder: OBS,
        mainEntryPointFilePath: join(types, 'index.d.ts'),
        compiler: { overrideTsconfig: { compilerOptions: { types: ['node'], skipLibCheck: true } } },
        apiReport: {
          enabled: true,
          reportFolder: work,
          reportTempFolder: work,
          reportFileName: 'obs.api.md',
        },
        docModel: { enabled: false },
        dtsRollup: { enabled: false },
        tsdocMetadata: { enabled: false },
        messages: {
          extractorMessageReporting: {
            default: { logLevel: 'none' },
            'ae-missing-release-tag': { logLevel: 'none' },
          },
          tsdocMessageReporting: { default: { logLevel: 'none' } },
          compilerMessageReporting: { default: { logLevel: 'error' } },
        },
      },
      configObjectFullPath: undefined,
      packageJsonFullPath: join(OBS, 'package.json'),
    });
    const result = Extractor.invoke(config, { localBuild: true, messageCallback: (m) => void m });
    if (result.errorCount > 0) throw new Error(`api-extractor reported ${result.errorCount} errors`);
    return readFileSync(join(work, 'obs.api.md'), 'utf8');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const report = generateApiReport();
  if (process.argv.includes('--write')) writeFileSync(API_REPORT_FILE, report);
  else process.stdout.write(report);
}
