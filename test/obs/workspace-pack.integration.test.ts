import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const ROOT = new URL('../..', import.meta.url).pathname;

test('obs workspace – packing the TypeScript sources stops with the command that packs the package', (t) => {
  const out = mkdtempSync(join(tmpdir(), 'obs-pack-'));
  t.after(() => rmSync(out, { recursive: true, force: true }));
  for (const args of [
    ['pack', '-w', 'src/obs', '--pack-destination', out],
    ['pack', './src/obs', '--pack-destination', out],
  ]) {
    const result = spawnSync('npm', args, { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
    assert.notEqual(result.status, 0, `npm ${args.join(' ')} succeeded`);
    assert.match(result.stderr, /src\/obs is the TypeScript source of the package, not the package/);
    assert.match(result.stderr, /npm run build && npm pack \.\/src\/obs\/dist/);
    assert.deepEqual(readdirSync(out), [], 'no tarball was written');
  }
});
