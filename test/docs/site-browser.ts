/**
 * The built docs site in a browser (test/docs/site.integration.test.ts): served under its base as a
 * static host serves it, what a page asked for, and the READMEs' ```mermaid diagrams drawn as SVG.
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { extname, join, normalize } from 'node:path';
import type { Page } from 'playwright-core';
import { DOCS_BASE } from '../helpers/docs-build.ts';

const BASE = DOCS_BASE;
/** The page that includes the README's "What it is for": two flowcharts. */
export const DIAGRAM_PAGE = 'getting-started.html';
/** A word of each diagram's source, to tell that diagram's SVG. */
export const DIAGRAM_LABELS = ['client under test', 'echo-chaos-operator'];

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
export function serve(outDir: string): Promise<Server> {
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
export function watch(
  page: Page,
  origin: string,
): { requests: string[]; outside: string[]; errors: string[] } {
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
export async function assertDiagrams(page: Page): Promise<void> {
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
