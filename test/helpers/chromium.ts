import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { type BrowserContext, chromium } from 'playwright-core';

/** Debian's `chromium` package (`.ci/run` installs it). */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Headless, no sandbox (tests may run as root), and nothing that reaches beyond this machine. */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Where CI keeps test output (gitignored). */
export const TEST_OUTPUT_DIR = new URL('../../test-output/', import.meta.url).pathname;

/**
 * A fresh Chromium (its own user-data-dir, removed afterwards), closed when the test ends. When
 * Chromium is missing the test fails under CI (`CI` set) and is skipped elsewhere, saying why;
 * then this returns undefined.
 */
export async function openChromium(t: TestContext): Promise<BrowserContext | undefined> {
  if (!existsSync(CHROMIUM_PATH)) {
    const why = `${CHROMIUM_PATH} not found: install the Debian package chromium (apt-get install -y chromium)`;
    if (process.env['CI']) assert.fail(why);
    t.skip(why);
    return undefined;
  }
  const userDataDir = await mkdtemp(join(tmpdir(), 'echo-chaos-chromium-'));
  let context: BrowserContext | undefined;
  // One hook, in this order: Chromium first (bounded, then its processes are killed, so a close
  // that hangs cannot hold the test file open), then its profile. Removing the profile while
  // Chromium still wrote to it failed with ENOTEMPTY, and the close then never ran.
  t.after(async () => {
    if (context !== undefined) {
      const closed = context.close().then(
        () => true,
        () => false,
      );
      const timedOut = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 10_000).unref());
      if (!(await Promise.race([closed, timedOut]))) spawnSync('pkill', ['-KILL', '-f', userDataDir]);
    }
    await rm(userDataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }).catch(() => {
      // A profile left in the temp dir is not a failure of the page under test.
    });
  });
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [...CHROMIUM_ARGS],
    // The TLS tests run on a self-signed certificate.
    ignoreHTTPSErrors: true,
    viewport: { width: 1100, height: 760 },
    timeout: 30_000,
  });
  return context;
}

/** The path of a screenshot in the test output folder (created on demand). */
export function screenshotPath(name: string): string {
  mkdirSync(TEST_OUTPUT_DIR, { recursive: true });
  return join(TEST_OUTPUT_DIR, name);
}
