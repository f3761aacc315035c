import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import tls from 'node:tls';
import type { Page } from 'playwright-core';
import { openChromium, screenshotPath } from '../helpers/chromium.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';

/** A message a page must show as text: as HTML it would become an element that runs script. */
const HOSTILE = '<img src=x onerror="window.__xss=1"><b>bold?</b>';

type Scheme = 'http' | 'https';

/** An echo server on HTTP or HTTPS (a self-signed certificate made at startup), and its base URL. */
async function startFor(
  scheme: Scheme,
  env: Record<string, string> = {},
): Promise<{ echo: RunningEcho; base: string }> {
  const echo = await startEcho({ ...env, ...(scheme === 'https' ? { ENABLE_TLS: 'true' } : {}) });
  if (scheme === 'https') assert.ok(echo.app.server instanceof tls.Server, 'ENABLE_TLS=true serves no TLS');
  return { echo, base: `${scheme}://127.0.0.1:${echo.port}` };
}

/** Records what the page reports as going wrong: script errors, console errors, CSP violations. */
function watchProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  return problems;
}

/** The text of each log line of a kind, in order. */
function logLines(page: Page, kind: 'in' | 'out' | 'info'): Promise<string[]> {
  return page.$$eval(`#log li[data-kind="${kind}"] .text`, (els) => els.map((e) => e.textContent ?? ''));
}

async function pageTexts(page: Page) {
  return {
    images: await page.locator('#log img').count(),
    bolds: await page.locator('#log b').count(),
    xss: await page.evaluate(() => (globalThis as { __xss?: number }).__xss),
  };
}

test('pages – /web-ws and /web-sse are self-contained HTML under a strict Content-Security-Policy', async (t) => {
  const { echo, base } = await startFor('http');
  t.after(() => echo.close());
  for (const path of ['/web-ws', '/web-sse']) {
    const res = await fetch(`${base}${path}`);
    assert.equal(res.status, 200, path);
    assert.match(String(res.headers.get('content-type')), /^text\/html; charset=utf-8/);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    const html = await res.text();
    // Nothing loaded from anywhere: no external script, style, font or image, no absolute URL.
    assert.doesNotMatch(html, /\b(src|href)=["']?(https?:)?\/\//i, `${path} refers to another origin`);
    assert.doesNotMatch(html, /<script[^>]*\bsrc=|<link[^>]*stylesheet|@import/i, `${path} loads a resource`);
    assert.doesNotMatch(html, /\burl\(/, `${path} loads a resource from its CSS`);
    assert.doesNotMatch(
      html,
      /innerHTML|outerHTML|insertAdjacentHTML|document\.write/,
      `${path} writes HTML`,
    );

    const csp = String(res.headers.get('content-security-policy'));
    const directives = new Map(
      csp.split(';').map((d) => {
        const [name, ...values] = d.trim().split(/\s+/);
        return [name ?? '', values];
      }),
    );
    assert.deepEqual(directives.get('default-src'), ["'none'"]);
    assert.ok(!csp.includes('unsafe-inline') && !csp.includes('unsafe-eval'), csp);
    assert.deepEqual(directives.get('connect-src'), ["'self'", 'ws:', 'wss:']);
    assert.deepEqual(directives.get('frame-ancestors'), ["'none'"]);
    // The inline script runs by its hash, and only it.
    const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1] ?? '');
    assert.equal(scripts.length, 1, `${path} has one inline script`);
    const hash = `'sha256-${createHash('sha256').update(scripts[0]!).digest('base64')}'`;
    assert.deepEqual(directives.get('script-src'), [hash]);
  }
});

for (const scheme of ['http', 'https'] as const) {
  test(`pages – Chromium over ${scheme}: /web-ws sends a typed message and shows its echo, as text`, async (t) => {
    const { echo, base } = await startFor(scheme);
    // The echo closes after the browser's own hooks (hooks run in order), so no page holds a
    // connection open then; registered even when the browser fails to start.
    const browser = await openChromium(t).finally(() => t.after(() => echo.close()));
    if (browser === undefined) return;
    const page = await browser.newPage();
    const problems = watchProblems(page);
    await page.goto(`${base}/web-ws`);
    await page.locator('#state[data-state="open"]').waitFor({ timeout: 10_000 });
    assert.equal(
      await page.locator('#url').textContent(),
      `${scheme === 'https' ? 'wss' : 'ws'}://127.0.0.1:${echo.port}/ws`,
    );
    assert.equal(echo.app.echo.openStreams.ws, 1);

    // A person types and presses Send.
    await page.locator('#message').fill('hello from chromium');
    await page.locator('#send').click();
    await page.locator('#log li[data-kind="in"]').first().waitFor({ timeout: 5000 });
    assert.deepEqual(await logLines(page, 'in'), ['hello from chromium']);
    assert.deepEqual(await logLines(page, 'out'), ['hello from chromium']);

    // Enter sends too; hostile text comes back as text, never as elements.
    await page.locator('#message').fill(HOSTILE);
    await page.locator('#message').press('Enter');
    await page.locator('#log li[data-kind="in"]').nth(1).waitFor({ timeout: 5000 });
    assert.equal((await logLines(page, 'in'))[1], HOSTILE);
    assert.deepEqual(await pageTexts(page), { images: 0, bolds: 0, xss: undefined });

    // A binary frame is echoed as binary.
    await page.locator('#binary').check();
    await page.locator('#message').fill('bytes');
    await page.locator('#send').click();
    await page.locator('#log li[data-kind="in"]').nth(2).waitFor({ timeout: 5000 });
    assert.equal((await logLines(page, 'in'))[2], '[binary, 5 bytes] bytes');

    await page.screenshot({ path: screenshotPath(`web-ws-${scheme}.png`), fullPage: true });
    assert.deepEqual(problems, []);
  });

  test(`pages – Chromium over ${scheme}: /web-sse shows at least two events`, async (t) => {
    const { echo, base } = await startFor(scheme, { ECHO_SSE_TICKER: '200ms' });
    // The echo closes after the browser's own hooks (hooks run in order), so no page holds a
    // connection open then; registered even when the browser fails to start.
    const browser = await openChromium(t).finally(() => t.after(() => echo.close()));
    if (browser === undefined) return;
    const page = await browser.newPage();
    const problems = watchProblems(page);
    await page.goto(`${base}/web-sse`);
    await page.locator('#log li[data-kind="in"]').nth(1).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('#url').textContent(), `${scheme}://127.0.0.1:${echo.port}/sse`);
    assert.equal(await page.locator('#state').getAttribute('data-state'), 'open');
    // Events keep coming: the shown last id is read first, so the log holds its line by then.
    const lastId = await page.locator('#last-id').textContent();
    const lines = await logLines(page, 'in');
    assert.match(lines[0] ?? '', /^#1 {2}counter=1 {2}timestamp=\d{4}-\d\d-\d\dT[\d:.]+Z {2}uptime=\d+s$/);
    assert.match(lines[1] ?? '', /^#2 {2}counter=2 /);
    assert.ok(Number(lastId) >= 2, `last id ${lastId}`);
    assert.match(lines[Number(lastId) - 1] ?? '', new RegExp(`^#${lastId} {2}counter=${lastId} `));
    if (scheme === 'https') {
      // Under TLS the page itself comes over HTTP/2 (ALPN h2).
      const protocol = await page.evaluate(() => {
        type Timing = { nextHopProtocol?: string };
        const perf = (globalThis as unknown as { performance: { getEntriesByType(type: string): Timing[] } })
          .performance;
        return perf.getEntriesByType('navigation')[0]?.nextHopProtocol;
      });
      assert.equal(protocol, 'h2');
    }
    await page.screenshot({ path: screenshotPath(`web-sse-${scheme}.png`), fullPage: true });
    assert.deepEqual(problems, []);
  });
}

test('pages – Chromium: /web-sse shows hostile event data as text', async (t) => {
  const { echo, base } = await startFor('http');
  // The echo closes after the browser's own hooks (hooks run in order), so no page holds a
  // connection open then; registered even when the browser fails to start.
  const browser = await openChromium(t).finally(() => t.after(() => echo.close()));
  if (browser === undefined) return;
  const page = await browser.newPage();
  // The real /sse sends only numbers and dates: a stand-in stream sends what a hostile one could.
  await page.route('**/sse', (route) =>
    route.fulfill({
      status: 200,
      headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
      body:
        `id: 1\ndata: ${HOSTILE}\n\n` +
        `id: 2\ndata: ${JSON.stringify({ counter: HOSTILE, timestamp: '<b>t</b>', uptime: '1s' })}\n\n` +
        `event: close\ndata: ${HOSTILE}\n\n`,
    }),
  );
  await page.goto(`${base}/web-sse`);
  await page.locator('#log li[data-kind="in"]').nth(1).waitFor({ timeout: 10_000 });
  const lines = await logLines(page, 'in');
  assert.equal(lines[0], `#1  ${HOSTILE}`);
  assert.equal(lines[1], `#2  counter=${HOSTILE}  timestamp=<b>t</b>  uptime=1s`);
  await page.locator('#log li[data-kind="info"]', { hasText: 'server closed the stream' }).first().waitFor();
  assert.deepEqual(await pageTexts(page), { images: 0, bolds: 0, xss: undefined });
});
