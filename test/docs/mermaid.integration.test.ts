/**
 * The READMEs' ```mermaid diagrams are drawn on the docs site (vitepress-plugin-mermaid, mermaid
 * bundled into the site): in real Chromium, offline, the Getting started page's two diagrams become
 * SVG, opened directly and reached from the home page, and only a page with a diagram preloads
 * mermaid; the build prints no warning. Builds the site once into a scratch folder, as
 * test/docs/site.integration.test.ts does (its build is not shared: each test file runs in its own process),
 * and serves it under the site's base.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { openChromium } from '../helpers/chromium.ts';
import { buildDocsSite, DOCS_BASE } from '../helpers/docs-build.ts';

const BASE = DOCS_BASE;
/** The page that includes the README's "What it is for": two flowcharts. */
const DIAGRAM_PAGE = 'getting-started.html';
/** A word of each diagram's source, to tell that diagram's SVG. */
const DIAGRAM_LABELS = ['client under test', 'echo-chaos-operator'];

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/** The built site under BASE, as a static host (GitHub Pages, `npm run docs:preview`) serves it. */
function serve(outDir: string): Promise<Server> {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const inSite = path.startsWith(BASE) ? path.slice(BASE.length) : undefined;
    const file =
      inSite === undefined
        ? ''
        : normalize(join(outDir, inSite.endsWith('/') || inSite === '' ? `${inSite}index.html` : inSite));
    let ok = file.startsWith(outDir);
    try {
      ok &&= statSync(file).isFile();
    } catch {
      ok = false;
    }
    if (!ok) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** What a page asked for: every URL, and the ones that left this machine (refused). */
function watch(page: Page, origin: string): { requests: string[]; outside: string[]; errors: string[] } {
  const seen = { requests: [] as string[], outside: [] as string[], errors: [] as string[] };
  void page.route('**/*', (route) => {
    const url = route.request().url();
    seen.requests.push(url);
    if (url.startsWith(origin) || url.startsWith('data:')) return route.continue();
    seen.outside.push(url);
    return route.abort();
  });
  page.on('pageerror', (e) => seen.errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') seen.errors.push(m.text());
  });
  return seen;
}

/** Waits for the page's diagrams to be drawn, then checks they are SVG and no source is left. */
async function assertDiagrams(page: Page): Promise<void> {
  await page
    .locator('.vp-doc .mermaid svg')
    .nth(DIAGRAM_LABELS.length - 1)
    .waitFor({ state: 'attached', timeout: 20_000 });
  const drawn = await page.$$eval('.vp-doc .mermaid svg', (svgs) =>
    svgs.map((svg) => ({ text: svg.textContent ?? '', width: svg.getBoundingClientRect().width })),
  );
  assert.equal(drawn.length, DIAGRAM_LABELS.length, 'one SVG for each diagram');
  for (const [i, label] of DIAGRAM_LABELS.entries()) {
    assert.ok(drawn[i]!.text.includes(label), `diagram ${i + 1} is not the one with "${label}"`);
    assert.ok(drawn[i]!.width > 100, `diagram ${i + 1} is drawn ${drawn[i]!.width}px wide`);
  }
  const codeBlocks = await page.$$eval('.vp-doc div[class*="language-"] pre', (pres) =>
    pres.map((pre) => pre.textContent ?? ''),
  );
  const source = codeBlocks.filter((code) => /^\s*(flowchart|graph|sequenceDiagram)\b/.test(code));
  assert.deepEqual(source, [], 'a diagram left as its source in a code block');
  assert.equal(await page.locator('.vp-doc .language-mermaid').count(), 0, 'a ```mermaid code block');
}

describe('docs site – mermaid diagrams', () => {
  const outDir = mkdtempSync(join(tmpdir(), 'echo-chaos-docs-mermaid-'));
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
