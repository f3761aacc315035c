/**
 * The docs site built as `npm run docs:build` builds it, into a scratch folder, under the base the
 * release publishes it at (test/docs/site.integration.test.ts). The docs tools are installed first
 * when missing or stale (scripts/docs-tools.ts: `npm ci --prefix docs`, from the registry when npm's
 * cache lacks them); an install that fails is the build's failure, in CI and out of it.
 */
import { spawn } from 'node:child_process';
import { ROOT } from '../../scripts/docs-site.ts';
import { ensureDocsTools } from '../../scripts/docs-tools.ts';

/** The site's base path on GitHub Pages. */
export const DOCS_BASE = '/echo-chaos/';

/** Runs the build into `outDir` (killed after 240 s); resolves with its exit code and output. */
export function buildDocsSite(outDir: string): Promise<{ code: number | null; output: string }> {
  let vitepress: string;
  try {
    vitepress = ensureDocsTools({ quiet: true });
  } catch (err) {
    return Promise.resolve({ code: null, output: err instanceof Error ? err.message : String(err) });
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [vitepress, 'build', 'docs', '--outDir', outDir], {
      cwd: ROOT,
      env: { ...process.env, DOCS_BASE, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 240_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}
