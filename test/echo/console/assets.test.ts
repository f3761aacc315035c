/**
 * The console's files (docs/adr/0053-console.md): bundled from page/ by esbuild, in memory when
 * the service runs from the repository's TypeScript, written to dist/ by `npm run build`; nothing
 * in them loads from another origin.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { buildSync } from 'esbuild';
import { needsAdminToken } from '../../../src/echo/admin-auth.ts';
import {
  bundleConsole,
  CONSOLE_STATIC_DIR,
  consoleAssets,
  readConsoleAssets,
  writeConsoleAssets,
} from '../../../src/echo/console/assets.ts';

test('console assets – the page names only its own files, relative to itself; script and style are external, not inline', () => {
  const { html } = bundleConsole(buildSync);
  const text = html.toString('utf8');
  const refs = [...text.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((m) => m[1]);
  assert.deepEqual(refs.sort(), ['console/console.css', 'console/console.js', 'console/favicon.svg']);
  assert.doesNotMatch(text, /<style|\sstyle=|<script(?![^>]*\bsrc=)/i, 'inline style or script');
  assert.doesNotMatch(text, /\son[a-z]+=/i, 'inline event handler');
});

test('console assets – the bundle holds everything it runs: no import, no URL of another origin', () => {
  const { js, css } = bundleConsole(buildSync);
  const script = js.toString('utf8');
  assert.ok(script.length > 1000);
  assert.doesNotMatch(script, /\bimport\s*[("'{*]|\bimport\s+\w/, 'the bundle imports a module');
  assert.doesNotMatch(script, /https?:\/\//, 'the bundle names an absolute URL');
  assert.doesNotMatch(css.toString('utf8'), /@import|url\(/, 'the style sheet loads something');
});

test('console assets – running from the sources (npm start in a clone) they are bundled on the first ask and kept', async () => {
  assert.equal(readConsoleAssets(CONSOLE_STATIC_DIR), undefined, 'src/ holds no built console');
  const first = await consoleAssets();
  assert.equal(await consoleAssets(), first);
  assert.deepEqual(first, bundleConsole(buildSync));
});

// The package holds them: test/packages.integration.test.ts looks for them in the tarball.
test('console assets – npm run build writes them, and a built service serves those', () => {
  const dir = mkdtempSync(join(tmpdir(), 'h37-console-'));
  try {
    assert.equal(readConsoleAssets(dir), undefined);
    writeConsoleAssets(buildSync, dir);
    assert.deepEqual(readConsoleAssets(dir), bundleConsole(buildSync));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('console – its API needs the admin token; the page and its files do not (they hold no data)', () => {
  for (const route of ['/console/api/live', '/console/api/entries/:id']) {
    assert.equal(needsAdminToken('GET', route, '/actuator'), true, route);
  }
  for (const route of ['/console', '/console/', '/console/console.js', '/console/console.css']) {
    assert.equal(needsAdminToken('GET', route, '/actuator'), false, route);
  }
});
