/**
 * The console's faults panel in Chromium (issue #37): what injects faults now (the environment's
 * defaults, the scenarios), the safety valve's use, a banner while faults are on; turning them off
 * asks in the page's own dialog, and only a confirmation changes the service's switch.
 *
 *   DOCS_SCREENSHOTS=write node --test test/echo/console/faults.integration.test.ts
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openChromium } from '../../helpers/chromium.ts';
import { startEcho } from '../../helpers/echo-server.ts';
import { eventually, openConsole, shoot, WAIT_MS, watchProblems } from './page-helpers.ts';

test('console faults panel – in Chromium, against a running service', async (t) => {
  const echo = await startEcho(
    { ECHO_STATUS: '503', ECHO_MAX_ACTIVE_FAULTS: '7' },
    { scenarios: [{ path: '/pay', responses: [{ status: 502 }] }] },
  );
  const browser = await openChromium(t).finally(() => t.after(() => echo.close()));
  if (browser === undefined) return;
  const base = `http://127.0.0.1:${echo.port}`;
  const gate = echo.app.echo.faults;
  const page = await browser.newPage();
  const problems = watchProblems(page);
  const statusOf = async (path: string) => {
    const res = await fetch(`${base}${path}`);
    await res.arrayBuffer();
    return res.status;
  };

  await t.test('the panel says what injects faults, and a banner says they are on', async () => {
    await openConsole(page, base);
    await page.locator('#faults-banner').waitFor({ state: 'visible', timeout: WAIT_MS });
    const banner = (await page.locator('#faults-banner').textContent()) ?? '';
    assert.match(banner, /Faults are on/);
    assert.match(banner, /ECHO_STATUS/);
    assert.match(banner, /1 scenario\b/);
    assert.equal(await page.locator('#fp-switch').textContent(), 'on');
    assert.equal(await page.locator('#fp-max').textContent(), '7');
    assert.equal(await page.locator('#fp-scenarios').textContent(), '1');
    assert.deepEqual(await page.locator('#fp-defaults code').allTextContents(), ['ECHO_STATUS=503']);
  });

  await t.test('a fault in progress is counted against the safety valve', async () => {
    const controller = new AbortController();
    const held = fetch(`${base}/slow`, {
      headers: { 'x-echo-delay': '60s' },
      signal: controller.signal,
    }).catch(() => undefined);
    try {
      await page.locator('#fp-active', { hasText: '1' }).waitFor({ timeout: WAIT_MS });
      assert.equal(gate.active, 1);
    } finally {
      controller.abort();
      await held;
    }
  });

  await t.test('turning faults off asks first; cancel leaves them on', async () => {
    await page.locator('#fp-toggle').click();
    await page.locator('#fp-confirm').waitFor({ state: 'visible', timeout: WAIT_MS });
    await shoot(page, 'console-faults.png', import.meta.filename);
    await page.locator('#fp-cancel').click();
    await page.locator('#fp-confirm').waitFor({ state: 'hidden', timeout: WAIT_MS });
    // Escape is a cancel too.
    await page.locator('#fp-toggle').click();
    await page.locator('#fp-confirm').waitFor({ state: 'visible', timeout: WAIT_MS });
    await page.keyboard.press('Escape');
    await page.locator('#fp-confirm').waitFor({ state: 'hidden', timeout: WAIT_MS });
    // Long enough for a PUT the page should not have sent to arrive.
    await page.waitForTimeout(300);
    assert.equal(gate.enabled, true);
    assert.equal(await page.locator('#faults-banner').isVisible(), true);
    assert.equal(await statusOf('/still-faulty'), 503);
  });

  await t.test('confirming turns them off on the service; the banner goes', async () => {
    await page.locator('#fp-toggle').click();
    await page.locator('#fp-confirm-off').click();
    await eventually(() => !gate.enabled, 'the service still has faults on');
    await page.locator('#faults-banner').waitFor({ state: 'hidden', timeout: WAIT_MS });
    assert.equal(await page.locator('#fp-switch').textContent(), 'off');
    assert.equal(await statusOf('/plain'), 200);
    assert.equal(await statusOf('/pay'), 200);
  });

  await t.test('turning them on again needs no confirmation', async () => {
    await page.locator('#fp-toggle', { hasText: 'Turn faults on' }).click();
    await eventually(() => gate.enabled, 'the service still has faults off');
    await page.locator('#faults-banner').waitFor({ state: 'visible', timeout: WAIT_MS });
    assert.equal(await page.locator('#fp-confirm').isHidden(), true);
    assert.deepEqual(problems, []);
  });
});
