/**
 * Replay from the console in Chromium (issue #37): a logged request re-sent with an edit, its
 * answer beside the request re-sent as recorded, the lines that differ marked; an answer saved as a
 * scenario. The set is replaced only with the tag it was read with (If-Match).
 *
 *   DOCS_SCREENSHOTS=write node --test test/echo/console/replay.integration.test.ts
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openChromium } from '../../helpers/chromium.ts';
import { startEcho } from '../../helpers/echo-server.ts';
import { openConsole, shoot, WAIT_MS, watchProblems } from './page-helpers.ts';

test('console replay – in Chromium, against a running service', async (t) => {
  const echo = await startEcho({ ECHO_HISTORY_SIZE: '200' });
  const browser = await openChromium(t).finally(() => t.after(() => echo.close()));
  if (browser === undefined) return;
  const base = `http://127.0.0.1:${echo.port}`;
  const scenarios = echo.app.echo.scenarios;
  const page = await browser.newPage();
  const problems = watchProblems(page);
  // Chromium reports each answer of status 400 or more on its console: the 503 is the point here.
  const pageProblems = () => problems.filter((p) => !p.includes('Failed to load resource'));

  await t.test('a replay with X-Echo-Status: 503 added shows the 503 beside the original', async () => {
    await openConsole(page, base);
    const sent = await fetch(`${base}/orders/7`, {
      method: 'POST',
      body: '{"qty":2}',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(sent.status, 200);
    await sent.arrayBuffer();
    await page.locator('#rows tr', { hasText: '/orders/7' }).click();
    await page.locator('#d-replay:not([disabled])').click();
    await page.locator('#replay').waitFor({ state: 'visible', timeout: WAIT_MS });
    assert.equal(await page.locator('#r-body').inputValue(), '{"qty":2}', 'the recorded body, to edit');
    await page.locator('#r-headers').fill('X-Echo-Status: 503');
    await page.locator('#r-body').fill('{"qty":3}');
    await page.locator('#r-send').click();
    await page.locator('.r-edited .r-status').waitFor({ timeout: WAIT_MS });
    assert.equal(await page.locator('.r-original .r-status').textContent(), '200');
    assert.equal(await page.locator('.r-edited .r-status').textContent(), '503');
    assert.match((await page.locator('.r-edited .r-status').getAttribute('class')) ?? '', /differs/);
    // Each status in its class's colour, as in the log: the 200 is not drawn as an error.
    assert.match((await page.locator('.r-original .r-status').getAttribute('class')) ?? '', /\bs-2\b/);
    assert.match((await page.locator('.r-edited .r-status').getAttribute('class')) ?? '', /\bs-5\b/);
    // The body was edited too: its changed line is marked on each side, the rest is not.
    assert.deepEqual(await page.locator('.r-original .line.differs').allTextContents(), ['  "qty": 2\n']);
    assert.deepEqual(await page.locator('.r-edited .line.differs').allTextContents(), ['  "qty": 3\n']);
    await page.setViewportSize({ width: 1280, height: 900 });
    await shoot(page, 'console-replay.png', import.meta.filename);
  });

  await t.test(
    '"Save as scenario" turns the 503 answer into a scenario of that method and path',
    async () => {
      assert.equal(scenarios.size, 0);
      await page.locator('.r-edited .r-save').click();
      await page.locator('#r-saved', { hasText: 'saved as scenario' }).waitFor({ timeout: WAIT_MS });
      const [saved] = scenarios.list();
      assert.equal(scenarios.size, 1);
      assert.equal(saved?.path, '/orders/7');
      assert.deepEqual(saved?.method, ['POST']);
      assert.equal(saved?.responses[0]?.status, 503);
      const res = await fetch(`${base}/orders/7`, { method: 'POST', body: '{}' });
      assert.equal(res.status, 503);
      // The body as the target sent it, not as the page shows it (indented, to compare by line).
      assert.equal(await res.text(), '{"qty":3}');
      assert.deepEqual(pageProblems(), []);
    },
  );

  await t.test('POST /scenario with a stale If-Match is a 412 and the set stays', async () => {
    const before = await fetch(`${base}/scenario`);
    const etag = before.headers.get('etag');
    await before.arrayBuffer();
    assert.ok(etag);
    const stale = await fetch(`${base}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'if-match': '"not-the-set"' },
      body: JSON.stringify([{ path: '/other', responses: [{ status: 201 }] }]),
    });
    assert.equal(stale.status, 412);
    assert.equal(
      ((await stale.json()) as { error: { code: string } }).error.code,
      'ECHO_ERR_SCENARIO_SET_CHANGED',
    );
    assert.equal(scenarios.list()[0]?.path, '/orders/7');
    const fresh = await fetch(`${base}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'if-match': etag },
      body: JSON.stringify([{ path: '/other', responses: [{ status: 201 }] }]),
    });
    assert.equal(fresh.status, 200);
    await fresh.arrayBuffer();
    assert.equal(scenarios.list()[0]?.path, '/other');
  });
});
