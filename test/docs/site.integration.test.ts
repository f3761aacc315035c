/**
 * The docs site (docs/, VitePress): it builds offline, no link or anchor in it is broken, the
 * generated chart-values page is fresh, every section of the READMEs it is made from is on a page,
 * and the sidebar reaches every page; the READMEs' ```mermaid diagrams (vitepress-plugin-mermaid, mermaid bundled into the site)
 * are drawn in real Chromium, offline: the Getting started page's two diagrams become SVG, opened
 * directly and reached from the home page, and only a page with a diagram preloads mermaid; the build
 * prints no warning. One build for the whole file (about 30 s idle, longer on a loaded machine).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext } from 'playwright-core';
import { CHART_VALUES_PAGE, renderChartValues } from '../../scripts/docs-chart-values.ts';
import {
  buildIndex,
  githubSlug,
  headingsOf,
  REPO_BLOB,
  REPO_TREE,
  ROOT,
  sitePages,
} from '../../scripts/docs-site.ts';
import { openChromium } from '../helpers/chromium.ts';
import { buildDocsSite, DOCS_BASE } from '../helpers/docs-build.ts';
import { brokenLinks } from './links.ts';
import { assertDiagrams, DIAGRAM_PAGE, serve, watch } from './site-browser.ts';

const BASE = DOCS_BASE;
/** The files the site is made from: each heading of theirs must be on a page. */
const SOURCES = [
  'README.md',
  'src/obs/README.md',
  'src/operator/README.md',
  'bench/README.md',
  'bench/RESULTS.md',
];

/** The one build of this file, shared by the page checks and the browser checks. */
const outDir = mkdtempSync(join(tmpdir(), 'echo-chaos-docs-'));
let built: { code: number | null; output: string };
let server: Server | undefined;
let origin = '';
before(async () => {
  built = await buildDocsSite(outDir);
  if (built.code !== 0) return;
  server = await serve(outDir);
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server?.close());
process.on('exit', () => rmSync(outDir, { recursive: true, force: true }));

describe('docs site', () => {
  test('docs site – npm run docs:build builds every page, offline', () => {
    assert.equal(built.code, 0, built.output);
    for (const page of ['index.html', 'faults/delay.html', 'obs/slo.html', 'kubernetes/chart-values.html']) {
      assert.ok(readFileSync(join(outDir, page), 'utf8').includes('<main'), `${page} was not built`);
    }
  });

  test('docs site – no internal link, anchor or asset is broken, and every repository link names a file', () => {
    assert.equal(built.code, 0, 'the build failed');
    const problems = brokenLinks({
      outDir,
      base: BASE,
      repoPrefixes: [REPO_BLOB, REPO_TREE],
      repoRoot: ROOT,
    });
    assert.deepEqual(problems, []);
  });

  test('docs site – the included sections are rendered, with their tables and the screenshots', () => {
    assert.equal(built.code, 0, 'the build failed');
    const delay = readFileSync(join(outDir, 'faults', 'delay.html'), 'utf8');
    assert.match(delay, /<code>X-Echo-Jitter<\/code>/, 'the X-Echo-Jitter row of the control-header table');
    assert.match(delay, /<code>ECHO_MAX_DELAY<\/code>/, 'the ECHO_MAX_DELAY row of the settings table');
    assert.doesNotMatch(delay, /<code>X-Echo-Chaos<\/code>/, 'a row the page did not ask for');
    assert.doesNotMatch(delay, /@section/, 'a directive left unexpanded');
    const ws = readFileSync(join(outDir, 'service', 'websocket-sse.html'), 'utf8');
    assert.match(ws, /src="\/echo-chaos\/screenshots\/web-ws\.png"/);
    const values = readFileSync(join(outDir, 'kubernetes', 'chart-values.html'), 'utf8');
    assert.match(values, /<code>operator\.watchAllNamespaces<\/code>/);
  });

  test('docs site – the chart-values page is fresh (npm run gen:chart-values)', () => {
    assert.equal(
      readFileSync(CHART_VALUES_PAGE, 'utf8'),
      renderChartValues(),
      'docs/kubernetes/chart-values.md is stale: npm run gen:chart-values',
    );
  });

  test('docs site – every section of the READMEs it is made from is on a page', () => {
    const index = buildIndex();
    const missing: string[] = [];
    for (const file of SOURCES) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const h of headingsOf(text).filter((h) => h.level > 1)) {
        const anchor = githubSlug(h.raw);
        if (!index.has(`${file}#${anchor}`)) missing.push(`${file}#${anchor}`);
      }
    }
    assert.deepEqual(missing, [], 'add a <!--@section: ...--> of each to a page of docs/');
  });

  test('docs site – the sidebar reaches every page', () => {
    assert.equal(built.code, 0, 'the build failed');
    const html = readFileSync(join(outDir, 'faults', 'delay.html'), 'utf8');
    const sidebar = html.slice(html.indexOf('class="VPSidebar'), html.indexOf('class="VPContent'));
    assert.ok(sidebar.length > 0, 'faults/delay.html has no sidebar');
    const linked = new Set([...sidebar.matchAll(/href="([^"#]+)"/g)].map((m) => m[1]!));
    const unreached = sitePages()
      .filter((page) => page !== 'index.md')
      .map((page) => `${BASE}${page.replace(/(^|\/)index\.md$/, '$1').replace(/\.md$/, '.html')}`)
      .filter((href) => !linked.has(href));
    assert.deepEqual(unreached, [], 'add each page to the sidebar of docs/.vitepress/config.ts');
  });
});

test('docs site – the link check notices a missing page, asset, anchor, base and repository file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'echo-chaos-links-'));
  try {
    mkdirSync(join(dir, 'guide'));
    writeFileSync(join(dir, 'style.css'), '');
    writeFileSync(join(dir, 'guide', 'a.html'), '<main><h2 id="here">Here</h2></main>');
    const links = [
      'href="/echo-chaos/guide/a.html#here"',
      'href="./a.html"',
      'href="#here"',
      'href="../style.css"',
      'href="https://example.org/elsewhere"',
      `href="${REPO_BLOB}README.md"`,
      'href="/echo-chaos/guide/missing.html"',
      'src="/echo-chaos/missing.png"',
      'href="./a.html#gone"',
      'href="/guide/a.html"',
      `href="${REPO_BLOB}src/nothing-here.ts"`,
    ];
    writeFileSync(
      join(dir, 'guide', 'b.html'),
      `<main id="top">${links.map((l) => `<a ${l}>x</a>`).join('')}</main>`,
    );
    const problems = brokenLinks({ outDir: dir, base: BASE, repoPrefixes: [REPO_BLOB], repoRoot: ROOT });
    assert.deepEqual(problems, [
      'guide/b.html: href="#here" (guide/b.html has no id "here")',
      'guide/b.html: href="/echo-chaos/guide/missing.html" (no such file in the built site)',
      'guide/b.html: src="/echo-chaos/missing.png" (no such file in the built site)',
      'guide/b.html: href="./a.html#gone" (guide/a.html has no id "gone")',
      'guide/b.html: href="/guide/a.html" (outside the site\'s base /echo-chaos/)',
      `guide/b.html: href="${REPO_BLOB}src/nothing-here.ts" (the repository has no src/nothing-here.ts)`,
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

describe('docs site – mermaid diagrams', () => {
  test('docs site – the build prints no warning', () => {
    assert.equal(built.code, 0, built.output);
    const warnings = built.output.split('\n').filter((line) => /warn|\(!\)|deprecat/i.test(line));
    assert.deepEqual(warnings, [], built.output);
  });

  test('docs site – the diagrams of a page opened directly are SVG, drawn offline', async (t) => {
    assert.equal(built.code, 0, 'the build failed');
    const context: BrowserContext | undefined = await openChromium(t);
    if (context === undefined) return;
    const page = await context.newPage();
    const seen = watch(page, origin);
    await page.goto(`${origin}${BASE}${DIAGRAM_PAGE}`, { waitUntil: 'load' });
    await assertDiagrams(page);
    assert.deepEqual(seen.outside, [], 'requests that left this machine');
    assert.deepEqual(seen.errors, [], 'errors in the page');
  });

  test('docs site – mermaid is preloaded by the pages with a diagram only', () => {
    assert.equal(built.code, 0, 'the build failed');
    const preloads = (page: string): string[] =>
      [
        ...readFileSync(join(outDir, page), 'utf8').matchAll(
          /<link rel="(modulepreload|prefetch)" href="([^"]+)"/g,
        ),
      ]
        .filter((m) => /\/Mermaid\.[\w-]+\.js$/.test(m[2]!))
        .map((m) => m[1]!);
    assert.deepEqual(preloads(DIAGRAM_PAGE), ['modulepreload']);
    assert.deepEqual(preloads('index.html'), ['prefetch'], 'the home page has no diagram: fetched when idle');
    assert.deepEqual(preloads('faults/delay.html'), ['prefetch']);
  });

  test('docs site – a page without a diagram draws none; its link to one draws that one', async (t) => {
    assert.equal(built.code, 0, 'the build failed');
    const context = await openChromium(t);
    if (context === undefined) return;
    const page = await context.newPage();
    const seen = watch(page, origin);
    await page.goto(`${origin}${BASE}`, { waitUntil: 'load' });
    assert.equal(await page.locator('.mermaid').count(), 0);
    // Client-side navigation, as a reader clicks: the page's diagrams are drawn without a reload.
    await page.locator('.vp-doc a[href$="getting-started.html"]').first().click();
    await page.waitForURL(`**${BASE}${DIAGRAM_PAGE}`);
    await assertDiagrams(page);
    assert.deepEqual(seen.outside, [], 'requests that left this machine');
    assert.deepEqual(seen.errors, [], 'errors in the page');
  });
});
