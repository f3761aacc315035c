/**
 * `/console` in Debian's Chromium (issue #37): one service and one browser for the file. The page
 * loads nothing from elsewhere and reports no error; each request is one row; filters hide the
 * others; a row opens its detail (masked as history masks it) with a curl command; pause holds rows;
 * a closed console leaves history unwatched. The docs' screenshots come from here:
 *
 *   DOCS_SCREENSHOTS=write node --test test/echo/console/console.integration.test.ts
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import { CONSOLE_CSP } from '../../../src/echo/console/index.ts';
import { openChromium, screenshotPath } from '../../helpers/chromium.ts';
import { startEcho } from '../../helpers/echo-server.ts';

const WAIT_MS = 20_000;
const SHOTS_DIR = new URL('../../../docs/public/screenshots/', import.meta.url).pathname;

/** Script errors, console errors (CSP violations among them) of a page. */
function watchProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  return problems;
}

/** The paths of the rows shown (not hidden by a filter), newest first. */
function shownPaths(page: Page): Promise<string[]> {
  return page.$$eval('#rows tr:not([hidden]) td.path', (tds) => tds.map((td) => td.textContent ?? ''));
}

async function waitForRows(page: Page, count: number): Promise<void> {
  // A locator, not waitForFunction with a string: the page's CSP (no 'unsafe-eval') refuses the
  // eval its polling uses once the first check has not held.
  await page
    .locator('#rows tr')
    .nth(count - 1)
    .waitFor({ state: 'attached', timeout: WAIT_MS });
}

/** A screenshot in test-output/, copied to the docs with DOCS_SCREENSHOTS=write, which must have it. */
async function shoot(page: Page, name: string): Promise<void> {
  const fresh = screenshotPath(`docs-${name}`);
  await page.screenshot({ path: fresh });
  const kept = join(SHOTS_DIR, name);
  if (process.env['DOCS_SCREENSHOTS'] === 'write') {
    mkdirSync(SHOTS_DIR, { recursive: true });
    copyFileSync(fresh, kept);
  }
  assert.ok(
    existsSync(kept),
    `${kept} is missing: DOCS_SCREENSHOTS=write node --test ${import.meta.filename}`,
  );
}

test('console – in Chromium, against a running service', async (t) => {
  const echo = await startEcho({ ECHO_HISTORY_SIZE: '500' });
  const browser = await openChromium(t).finally(() => t.after(() => echo.close()));
  if (browser === undefined) return;
  const base = `http://127.0.0.1:${echo.port}`;
  const history = echo.app.echo.history;
  const send = async (path: string, init: RequestInit = {}): Promise<number> => {
    const res = await fetch(`${base}${path}`, init);
    await res.arrayBuffer();
    return res.status;
  };

  await t.test('/console and its files: the page under default-src self, no-sniff everywhere', async () => {
    const page = await fetch(`${base}/console`);
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(page.headers.get('content-security-policy'), CONSOLE_CSP);
    assert.match(CONSOLE_CSP, /^default-src 'self';/);
    assert.doesNotMatch(CONSOLE_CSP, /unsafe|https?:|\*/);
    for (const [file, type] of [
      ['console.js', 'text/javascript; charset=utf-8'],
      ['console.css', 'text/css; charset=utf-8'],
      ['favicon.svg', 'image/svg+xml'],
    ]) {
      const res = await fetch(`${base}/console/${file}`);
      assert.equal(res.status, 200, file);
      assert.equal(res.headers.get('content-type'), type, file);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', file);
      await res.arrayBuffer();
    }
    assert.equal(history.size, 0, "the console's own requests are not in history");
  });

  const page = await browser.newPage();
  const problems = watchProblems(page);
  const requested: string[] = [];
  page.on('request', (request) => requested.push(request.url()));

  await t.test(
    'the page loads with no request off its origin and no script error, then goes live',
    async () => {
      await page.goto(`${base}/console`);
      await page.locator('#conn[data-state="open"]').waitFor({ timeout: WAIT_MS });
      assert.equal(
        await page.locator('#login').isHidden(),
        true,
        'no token asked for without ECHO_ADMIN_TOKEN',
      );
      assert.ok(requested.length >= 4, requested.join(', '));
      assert.deepEqual(
        requested.filter((url) => new URL(url).origin !== base),
        [],
      );
      assert.deepEqual(problems, []);
      assert.equal(
        history.completionWatchers.size,
        2,
        'the open console watches history: its log and its charts',
      );
    },
  );

  await t.test(
    'N requests give N rows, newest first, with method, path, status, faults and session',
    async () => {
      const sent: Array<[string, RequestInit]> = [
        ['/orders/1', {}],
        ['/orders/2', { headers: { 'x-echo-status': '503' } }],
        ['/orders/3', { method: 'POST', body: '{"qty":3}', headers: { 'content-type': 'application/json' } }],
        ['/users/1', { headers: { 'x-echo-session': 'alice' } }],
        ['/users/2', { headers: { 'x-echo-delay': '5ms', 'x-echo-session': 'bob' } }],
        ['/health-of-echo', { headers: { 'x-echo-status': '404' } }],
        ['/pay', { method: 'PUT', body: 'x', headers: { authorization: 'Bearer s3cr3t-token' } }],
      ];
      for (const [path, init] of sent) await send(path, init);
      await waitForRows(page, sent.length);
      // A little longer: a row too many would show now.
      await page.waitForTimeout(300);
      assert.equal(await page.locator('#rows tr').count(), sent.length);
      assert.deepEqual(await shownPaths(page), sent.map(([path]) => path).reverse());
      assert.equal(await page.locator('#shown').textContent(), String(sent.length));
      const second = page.locator('#rows tr', { hasText: '/orders/2' });
      assert.match((await second.locator('td.status').textContent()) ?? '', /^503/);
      assert.equal(await second.locator('td.faults .tag').textContent(), 'status');
      const bob = page.locator('#rows tr', { hasText: '/users/2' });
      assert.equal(await bob.locator('td.c-session').textContent(), 'bob');
      assert.equal(await bob.locator('td.faults .tag').textContent(), 'delay');
    },
  );

  await t.test('a filter hides the others; clearing it shows them again', async () => {
    await page.locator('#f-path').fill('/orders/*');
    assert.deepEqual(await shownPaths(page), ['/orders/3', '/orders/2', '/orders/1']);
    await page.locator('#f-status').selectOption('5xx');
    assert.deepEqual(await shownPaths(page), ['/orders/2']);
    assert.equal(await page.locator('#shown').textContent(), '1');
    await page.locator('#f-path').fill('');
    await page.locator('#f-status').selectOption('');
    await page.locator('#f-fault').selectOption('delay');
    assert.deepEqual(await shownPaths(page), ['/users/2']);
    await page.locator('#f-fault').selectOption('');
    await page.locator('#f-session').fill('alice');
    assert.deepEqual(await shownPaths(page), ['/users/1']);
    // A row that arrives while a filter is set is filtered too.
    await send('/later');
    await waitForRows(page, 8);
    assert.deepEqual(await shownPaths(page), ['/users/1']);
    await page.locator('#f-session').fill('');
    assert.equal((await shownPaths(page)).length, 8);
  });

  await t.test(
    'a row opens its detail: headers masked as in history, the body, the faults, and curl',
    async () => {
      await page.locator('#rows tr', { hasText: '/pay' }).click();
      await page.locator('#d-curl', { hasText: 'curl' }).waitFor({ timeout: WAIT_MS });
      assert.equal(await page.locator('#d-title').textContent(), 'PUT /pay');
      const headers = await page.$$eval('#d-headers tr', (trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)),
      );
      assert.deepEqual(
        headers.find(([name]) => name === 'authorization'),
        ['authorization', '[MASKED]'],
      );
      assert.equal(await page.locator('#d-body').textContent(), 'x');
      assert.equal(await page.locator('#d-faults').textContent(), 'none');
      const curl = (await page.locator('#d-curl').textContent()) ?? '';
      assert.match(curl, new RegExp(`^curl -X 'PUT' '${base}/pay' `));
      assert.match(curl, /--data-binary 'x'$/);
      assert.doesNotMatch(curl, /s3cr3t|MASKED/);
      assert.match((await page.locator('#d-curl-note').textContent()) ?? '', /masked: authorization/);

      await page.locator('#rows tr', { hasText: '/orders/2' }).click();
      await page.locator('#d-faults', { hasText: 'X-Echo-Status' }).waitFor({ timeout: WAIT_MS });
      assert.match(
        (await page.locator('#d-faults').textContent()) ?? '',
        /^status 503 \(X-Echo-Status\), from header$/,
      );
    },
  );

  await t.test('the laptop and phone screenshots of the docs', async () => {
    await page.setViewportSize({ width: 1280, height: 720 });
    await shoot(page, 'console.png');
    await page.locator('#d-close').click();
    await page.setViewportSize({ width: 390, height: 844 });
    // The phone's log is a list of cards: no table head, no overflow sideways.
    assert.equal(await page.locator('#log thead').isHidden(), true);
    assert.equal(
      await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth'),
      true,
      'the phone page scrolls sideways',
    );
    await shoot(page, 'console-phone.png');
    await page.setViewportSize({ width: 1100, height: 760 });
  });

  await t.test('pause holds new rows (counted) until resumed', async () => {
    await page.locator('#pause').click();
    await send('/while-paused/1');
    await send('/while-paused/2');
    await page.locator('#waiting', { hasText: '2' }).waitFor({ timeout: WAIT_MS });
    assert.equal((await shownPaths(page)).filter((p) => p.startsWith('/while-paused')).length, 0);
    await page.locator('#pause').click();
    assert.deepEqual((await shownPaths(page)).slice(0, 2), ['/while-paused/2', '/while-paused/1']);
  });

  await t.test('once no console is open, history is no longer watched and the stream is closed', async () => {
    assert.deepEqual(problems, []);
    await page.close();
    const deadline = Date.now() + WAIT_MS;
    while (history.completionWatchers.size > 0 || echo.app.echo.openStreams.sse > 0) {
      assert.ok(Date.now() < deadline, 'the console stream stayed subscribed after its page closed');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(await send('/after'), 200);
  });
});
