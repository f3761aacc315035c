/** The console page's script type-checks against the DOM, with its own tsconfig (docs/adr/0053-console.md). */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CONSOLE_PAGE_DIR } from '../../../src/echo/console/assets.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

test('console page – its script type-checks against the DOM (page/tsconfig.json)', () => {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(process.execPath, [tsc, '--noEmit', '-p', CONSOLE_PAGE_DIR], { cwd: ROOT, stdio: 'pipe' });
});
