/**
 * The console's charts in Chromium (issue #37): requests per second, p50/p99 latency, the status
 * mix and the faulted requests move under load, drawn by the bundled uPlot with nothing off the
 * page's origin and no error (CSP `default-src 'self'` refuses no style uPlot sets). The service
 * makes the points only while a console is open. The docs' screenshot comes from here:
 *
 *   DOCS_SCREENSHOTS=write node --test test/echo/console/charts.integration.test.ts
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openChromium } from '../../helpers/chromium.ts';
import { startEcho } from '../../helpers/echo-server.ts';
import { eventually, openConsole, shoot, WAIT_MS, watchProblems } from './page-helpers.ts';

test('console charts – in Chromium, against a running service', async (t) => {
  const echo = await startEcho({ ECHO_HISTORY_SIZE: '500' });
  const browser = await openChromium(t).finally(() => t.after(() => echo.close()));
  if (browser === undefined) return;
  const base = `http://127.0.0.1:${echo.port}`;
  const history = echo.app.echo.history;
  const send = async (path: string, headers: Record<string, string> = {}): Promise<number> => {
    const res = await fetch(`${base}${path}`, { headers });
    await res.arrayBuffer();
    return res.status;
  };
  const page = await browser.newPage();
  await page.setViewportSize({ width: 1280, height: 900 });
  const problems = watchProblems(page);
  const requested: string[] = [];
  page.on('request', (request) => requested.push(request.url()));
  const summary = page.locator('#c-summary');
  const plotted = async () => Number(await summary.getAttribute('data-requests'));

  await t.test('nobody has the console open: no point is made', async () => {
    await send('/before');
    assert.equal(history.completionWatchers.size, 0);
  });

  await t.test('the charts move under load: rate, latency, status mix and faults', async () => {
    await openConsole(page, base);
    await page.locator('#tab-charts-button').click();
    await page.locator('#c-grid .uplot canvas').nth(3).waitFor({ timeout: WAIT_MS });
    await eventually(async () => Number(await summary.getAttribute('data-points')) >= 1, 'no point came');
    const before = await plotted();
    assert.equal(before, 0, 'the request sent before the console opened is not counted');
    // In a few bursts a second apart, so the screenshot shows a shape.
    for (let burst = 0; burst < 5; burst++) {
      for (let i = 0; i < 8; i++)
        assert.equal(await send(`/load/${i}`, { 'x-echo-delay': `${i * 5}ms` }), 200);
      for (let i = 0; i < 2; i++) assert.equal(await send('/load/bad', { 'x-echo-status': '503' }), 503);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    await eventually(async () => (await plotted()) >= before + 50, 'the charts did not count the load');
    const points = await page.locator('#c-summary').getAttribute('data-points');
    assert.ok(Number(points) >= 1);
    // The points the page holds are the service's: 40 2xx, 10 5xx with a fault, a p99.
    const text = (await summary.textContent()) ?? '';
    assert.match(text, /50 requests in the \d+ s shown/);
    assert.equal(await page.locator('#c-grid figcaption').count(), 4);
    assert.deepEqual(await page.locator('#c-grid .u-legend .u-label').allTextContents(), [
      'Time',
      'req/s',
      'Time',
      'p50',
      'p99',
      'Time',
      '2xx',
      '3xx',
      '4xx',
      '5xx',
      'Time',
      'faulted',
    ]);
    await shoot(page, 'console-charts.png', import.meta.filename);
  });

  await t.test('nothing off the origin, no script or CSP error', async () => {
    assert.deepEqual(
      requested.filter((url) => new URL(url).origin !== base),
      [],
    );
    assert.deepEqual(problems, []);
  });

  await t.test('once the console closes, no point is made and history is not watched', async () => {
    await page.close();
    await eventually(
      () => history.completionWatchers.size === 0 && echo.app.echo.openStreams.sse === 0,
      'the charts kept watching after the console closed',
    );
  });
});
