/**
 * The docs site's screenshots of /web-ws, /web-sse and /actuator/obsui, taken in real Chromium
 * against a running service. Each run writes them to test-output/docs/; with
 * DOCS_SCREENSHOTS=write it refreshes the checked-in copies in docs/public/screenshots/ too:
 *
 *   DOCS_SCREENSHOTS=write npx node --test test/docs/screenshots.integration.test.ts
 *
 * Pixels differ from run to run (times, counters, fonts), so the checked-in copies are compared by
 * what does not: each is a PNG of the viewport's size.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import { openChromium, screenshotPath } from '../helpers/chromium.ts';
import { startEcho } from '../helpers/echo-server.ts';

const SHOTS_DIR = new URL('../../docs/public/screenshots/', import.meta.url).pathname;
const VIEWPORT = { width: 1100, height: 700 };

/** Width and height of a PNG, from its IHDR chunk; throws when the bytes are not a PNG. */
export function pngSize(bytes: Buffer): { width: number; height: number } {
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  assert.ok(bytes.subarray(0, 8).equals(signature), 'not a PNG (signature)');
  assert.equal(bytes.toString('latin1', 12, 16), 'IHDR', 'not a PNG (no IHDR first)');
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

/** Takes the shot, keeps it in test-output/docs/, refreshes the docs copy on request, checks both. */
async function shoot(page: Page, name: string): Promise<void> {
  const fresh = screenshotPath(`docs-${name}`);
  await page.screenshot({ path: fresh });
  assert.deepEqual(pngSize(readFileSync(fresh)), VIEWPORT);
  const kept = join(SHOTS_DIR, name);
  if (process.env['DOCS_SCREENSHOTS'] === 'write') {
    mkdirSync(SHOTS_DIR, { recursive: true });
    copyFileSync(fresh, kept);
  }
  assert.ok(
    existsSync(kept),
    `${kept} is missing: DOCS_SCREENSHOTS=write npx node --test ${import.meta.filename}`,
  );
  assert.deepEqual(
    pngSize(readFileSync(kept)),
    VIEWPORT,
    `${kept} is not a ${VIEWPORT.width}x${VIEWPORT.height} PNG`,
  );
}

test('docs screenshots – pngSize reads a PNG header and refuses other bytes', () => {
  const header = Buffer.alloc(24);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(header);
  header.writeUInt32BE(13, 8);
  header.write('IHDR', 12, 'latin1');
  header.writeUInt32BE(640, 16);
  header.writeUInt32BE(480, 20);
  assert.deepEqual(pngSize(header), { width: 640, height: 480 });
  assert.throws(() => pngSize(Buffer.from('GIF89a and more bytes here')), /not a PNG/);
});

test('docs screenshots – /web-ws, /web-sse and /actuator/obsui in Chromium, as the docs show them', async (t) => {
  const echo = await startEcho({ ECHO_SSE_TICKER: '200ms' });
  const browser = await openChromium(t).finally(() => t.after(() => echo.close()));
  if (browser === undefined) return;
  const base = `http://127.0.0.1:${echo.port}`;
  const page = await browser.newPage();
  await page.setViewportSize(VIEWPORT);
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));

  await page.goto(`${base}/web-ws`);
  await page.locator('#state[data-state="open"]').waitFor({ timeout: 10_000 });
  for (const message of ['hello from the docs', '{"order":42}']) {
    await page.locator('#message').fill(message);
    await page.locator('#send').click();
  }
  await page.locator('#log li[data-kind="in"]').nth(1).waitFor({ timeout: 10_000 });
  await shoot(page, 'web-ws.png');

  await page.goto(`${base}/web-sse`);
  await page.locator('#log li[data-kind="in"]').nth(2).waitFor({ timeout: 10_000 });
  await shoot(page, 'web-sse.png');

  const obsui = await page.goto(`${base}/actuator/obsui`);
  assert.equal(obsui?.status(), 200);
  await page.locator('#features tbody tr').first().waitFor({ timeout: 10_000 });
  await shoot(page, 'obsui.png');

  assert.deepEqual(problems, []);
});
