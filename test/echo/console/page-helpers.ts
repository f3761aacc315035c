/** What the console's browser tests share: the page's problems, waiting, the docs' screenshots. */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { screenshotPath } from '../../helpers/chromium.ts';

/** How long a test waits for the page to show something: long, for a loaded 2-core machine. */
export const WAIT_MS = 20_000;
const SHOTS_DIR = new URL('../../../docs/public/screenshots/', import.meta.url).pathname;

/** Script errors, console errors (CSP violations among them) of a page. */
export function watchProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  return problems;
}

/** Opens `/console` of `base` and waits until its live log is open. */
export async function openConsole(page: Page, base: string): Promise<void> {
  await page.goto(`${base}/console`);
  await page.locator('#conn[data-state="open"]').waitFor({ timeout: WAIT_MS });
}

/** A screenshot in test-output/, copied to the docs with DOCS_SCREENSHOTS=write, which must have it. */
export async function shoot(page: Page, name: string, testFile: string): Promise<void> {
  const fresh = screenshotPath(`docs-${name}`);
  await page.screenshot({ path: fresh });
  const kept = join(SHOTS_DIR, name);
  if (process.env['DOCS_SCREENSHOTS'] === 'write') {
    mkdirSync(SHOTS_DIR, { recursive: true });
    copyFileSync(fresh, kept);
  }
  assert.ok(existsSync(kept), `${kept} is missing: DOCS_SCREENSHOTS=write node --test ${testFile}`);
}

/** Polls `check` until it holds, failing with `what` after {@link WAIT_MS}. */
export async function eventually(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, what);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
