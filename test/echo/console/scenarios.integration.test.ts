/**
 * The console's scenarios tab in Chromium (issue #37): the set as YAML; an invalid set shows each
 * problem at its line and leaves the stored set unchanged; a save over a set changed meanwhile is a
 * 412 shown to the user; where each scenario stands, and a reset.
 *
 *   DOCS_SCREENSHOTS=write node --test test/echo/console/scenarios.integration.test.ts
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openChromium } from '../../helpers/chromium.ts';
import { startEcho } from '../../helpers/echo-server.ts';
import { openConsole, shoot, WAIT_MS, watchProblems } from './page-helpers.ts';

const INVALID = `- name: pay
  path: /pay
  responses:
    - status: 200
    - status: 503
    - status: 999
- name: orders
  responses:
    - status: 201
`;

test('console scenarios – in Chromium, against a running service', async (t) => {
  const echo = await startEcho(
    {},
    { scenarios: [{ name: 'pay', path: '/pay', responses: [{ status: 200 }, { status: 503 }] }] },
  );
  const browser = await openChromium(t).finally(() => t.after(() => echo.close()));
  if (browser === undefined) return;
  const base = `http://127.0.0.1:${echo.port}`;
  const store = echo.app.echo.scenarios;
  const page = await browser.newPage();
  const problems = watchProblems(page);
  const pageProblems = () => problems.filter((p) => !p.includes('Failed to load resource'));

  await t.test('the tab shows the set as YAML, and where each scenario stands', async () => {
    await openConsole(page, base);
    await page.locator('#tab-scenarios-button').click();
    await page.locator('#s-etag', { hasText: '1 scenario' }).waitFor({ timeout: WAIT_MS });
    assert.match(await page.locator('#s-yaml').inputValue(), /name: pay\n\s+path: \/pay/);
    assert.deepEqual(await page.locator('#s-state-rows td').allTextContents(), [
      '0',
      'pay',
      '0',
      '0 (0 · 0)',
      '',
      'Reset',
    ]);
  });

  await t.test(
    'an invalid scenario shows its error at the right line and leaves the stored set unchanged',
    async () => {
      const before = store.contentHash();
      await page.locator('#s-yaml').fill(INVALID);
      await page.locator('#s-save').click();
      await page.locator('#s-problems li').first().waitFor({ timeout: WAIT_MS });
      const listed = await page.locator('#s-problems li').allTextContents();
      assert.ok(
        listed.some((p) => /^line 6: status must be an integer 100-599, got 999/.test(p)),
        listed.join('\n'),
      );
      assert.ok(
        listed.some((p) => /^line 7: path or pathPattern is required/.test(p)),
        listed.join('\n'),
      );
      assert.deepEqual(await page.locator('#s-gutter .bad').allTextContents(), ['6\n', '7\n']);
      assert.match((await page.locator('#s-error').textContent()) ?? '', /nothing was saved/);
      assert.equal(store.contentHash(), before, 'the stored set changed');
      assert.equal(store.list()[0]?.responses.length, 2);
      await page.locator('#s-problems button', { hasText: 'line 6' }).click();
      const selected = await page
        .locator('#s-yaml')
        .evaluate((t: { value: string; selectionStart: number; selectionEnd: number }) =>
          t.value.slice(t.selectionStart, t.selectionEnd),
        );
      assert.equal(selected, '    - status: 999');
      await page.setViewportSize({ width: 1280, height: 720 });
      await shoot(page, 'console-scenarios.png', import.meta.filename);
    },
  );

  await t.test(
    'a save over a set changed since it was read is refused, said, and changes nothing',
    async () => {
      // Another tab (here: a client) replaces the set after this one read it.
      const other = await fetch(`${base}/scenario`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify([{ name: 'other', path: '/other', responses: [{ status: 202 }] }]),
      });
      assert.equal(other.status, 200);
      await other.arrayBuffer();
      const theirs = store.contentHash();
      await page.locator('#s-yaml').fill('- name: mine\n  path: /mine\n  responses:\n    - status: 418\n');
      await page.locator('#s-save').click();
      await page
        .locator('#s-error', { hasText: 'changed since you loaded it' })
        .waitFor({ timeout: WAIT_MS });
      assert.equal(store.contentHash(), theirs);
      // Read again, the same text saves.
      await page.locator('#s-reload').click();
      await page.locator('#s-etag', { hasText: theirs }).waitFor({ timeout: WAIT_MS });
      await page.locator('#s-yaml').fill('- name: mine\n  path: /mine\n  responses:\n    - status: 418\n');
      await page.locator('#s-save').click();
      await page.locator('#s-status', { hasText: 'saved' }).waitFor({ timeout: WAIT_MS });
      assert.equal(store.list()[0]?.name, 'mine');
    },
  );

  await t.test('the state moves with requests, and a reset starts every scenario again', async () => {
    const res = await fetch(`${base}/mine`);
    assert.equal(res.status, 418);
    await res.arrayBuffer();
    await page.locator('#s-reload').click();
    await page.locator('#s-state-rows td', { hasText: 'mine' }).waitFor({ timeout: WAIT_MS });
    // A locator, not waitForFunction with a string: the page's CSP refuses the eval of its polling.
    await page
      .locator('#s-state-rows tr:first-child td:nth-child(4)', { hasText: /^1$/ })
      .waitFor({ timeout: WAIT_MS });
    await page.locator('#s-reset').click();
    await page.locator('#s-status', { hasText: 'starts again' }).waitFor({ timeout: WAIT_MS });
    assert.equal(store.states()[0]?.total, 0);
    assert.deepEqual(pageProblems(), []);
  });
});
