/**
 * The docs site built as `npm run docs:build` builds it, into a scratch folder, under the base the
 * release publishes it at (test/docs/site.integration.test.ts).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../../scripts/docs-site.ts';

/** The site's base path on GitHub Pages. */
export const DOCS_BASE = '/echo-chaos/';
const VITEPRESS = join(ROOT, 'node_modules', 'vitepress', 'bin', 'vitepress.js');

/** Runs the build into `outDir` (killed after 240 s); resolves with its exit code and output. */
export function buildDocsSite(outDir: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [VITEPRESS, 'build', 'docs', '--outDir', outDir], {
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
