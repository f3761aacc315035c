/**
 * The API report of `@echo-chaos/obs`: its public surface as api-extractor reads it from the
 * declarations the package ships. `node scripts/api-report.ts --write` rewrites the checked-in
 * `src/obs/obs.api.md`; `test/obs/api-report.integration.test.ts` fails when the surface changed without it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Extractor, ExtractorConfig, ExtractorLogLevel } from '@microsoft/api-extractor';

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
            default: { logLevel: ExtractorLogLevel.None },
            'ae-missing-release-tag': { logLevel: ExtractorLogLevel.None },
          },
          tsdocMessageReporting: { default: { logLevel: ExtractorLogLevel.None } },
          compilerMessageReporting: { default: { logLevel: ExtractorLogLevel.Error } },
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
