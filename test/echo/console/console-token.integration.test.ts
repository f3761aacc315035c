/**
 * `/console` behind `ECHO_ADMIN_TOKEN` (issue #37): the console's API answers 401 without the token;
 * the page asks for it, refuses a wrong one, keeps the right one in this tab's session storage and
 * sends it in a header only, never in a URL. One service and one browser for the file.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ADMIN_CHALLENGE } from '../../../src/echo/admin-auth.ts';
import { openChromium } from '../../helpers/chromium.ts';
import { startEcho } from '../../helpers/echo-server.ts';

const TOKEN = 'console-t0ken-h37';
const WAIT_MS = 20_000;

test('console – with ECHO_ADMIN_TOKEN set', async (t) => {
  const echo = await startEcho({ ECHO_ADMIN_TOKEN: TOKEN });
  const browser = await openChromium(t).finally(() => t.after(() => echo.close()));
  const base = `http://127.0.0.1:${echo.port}`;

  await t.test('the console API answers 401 without the token or with another, 200 with it', async () => {
    await fetch(`${base}/seen`).then((res) => res.arrayBuffer());
    const [entry] = echo.app.echo.history.list();
    assert.ok(entry);
    for (const path of ['/console/api/live', `/console/api/entries/${entry.id}`, '/console/api/sessions']) {
      for (const authorization of [undefined, 'Bearer wrong', TOKEN]) {
        const res = await fetch(
          `${base}${path}`,
          authorization === undefined ? {} : { headers: { authorization } },
        );
        assert.equal(res.status, 401, `${path} with ${authorization}`);
        assert.equal(res.headers.get('www-authenticate'), ADMIN_CHALLENGE);
        assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'ECHO_ERR_UNAUTHORIZED');
      }
    }
    // The dry run too: it reads the scenarios' state.
    for (const authorization of [undefined, 'Bearer wrong']) {
      const res = await fetch(`${base}/console/api/scenarios/match`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(authorization === undefined ? {} : { authorization }),
        },
        body: JSON.stringify({ path: '/seen' }),
      });
      assert.equal(res.status, 401, `the dry run with ${authorization}`);
      await res.arrayBuffer();
    }
    const detail = await fetch(`${base}/console/api/entries/${entry.id}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(detail.status, 200);
    assert.equal(((await detail.json()) as { path: string }).path, '/seen');
    const controller = new AbortController();
    const live = await fetch(`${base}/console/api/live`, {
      headers: { authorization: `Bearer ${TOKEN}` },
      signal: controller.signal,
    });
    assert.equal(live.status, 200);
    assert.equal(live.headers.get('content-type'), 'text/event-stream');
    controller.abort();
    // The page and its files hold no data: they need no token.
    for (const path of ['/console', '/console/console.js']) {
      const res = await fetch(`${base}${path}`);
      assert.equal(res.status, 200, path);
      await res.arrayBuffer();
    }
  });

  if (browser === undefined) return;
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  const urls: string[] = [];
  page.on('request', (request) => urls.push(request.url()));

  await t.test('the page asks for the token and shows no log until it has it', async () => {
    await page.goto(`${base}/console`);
    await page.locator('#login').waitFor({ state: 'visible', timeout: WAIT_MS });
    assert.equal(await page.locator('#main').isHidden(), true);
    assert.equal(await page.locator('#conn').getAttribute('data-state'), 'locked');
  });

  await t.test('a wrong token is refused, and the page still asks', async () => {
    await page.locator('#token').fill('not-the-token');
    await page.locator('#login-submit').click();
    await page.locator('#login-error', { hasText: 'refused' }).waitFor({ timeout: WAIT_MS });
    assert.equal(await page.locator('#main').isHidden(), true);
  });

  await t.test(
    'the right token opens the live log; it is kept in session storage and sent in a header only',
    async () => {
      const authorizations: string[] = [];
      page.on('request', (request) => {
        const value = request.headers()['authorization'];
        if (value !== undefined) authorizations.push(`${new URL(request.url()).pathname} ${value}`);
      });
      await page.locator('#token').fill(TOKEN);
      await page.locator('#login-submit').click();
      await page.locator('#conn[data-state="open"]').waitFor({ timeout: WAIT_MS });
      await fetch(`${base}/after-login`).then((res) => res.arrayBuffer());
      await page.locator('#rows tr', { hasText: '/after-login' }).waitFor({ timeout: WAIT_MS });
      assert.ok(authorizations.includes(`/console/api/live Bearer ${TOKEN}`), authorizations.join('\n'));
      assert.equal(await page.evaluate(() => sessionStorage.getItem('echo-chaos.console.token')), TOKEN);
      assert.deepEqual(
        urls.filter((url) => url.includes(TOKEN)),
        [],
        'the token went in a URL',
      );
      // A reload in the same tab keeps it: no question asked again.
      await page.reload();
      await page.locator('#conn[data-state="open"]').waitFor({ timeout: WAIT_MS });
      assert.equal(await page.locator('#login').isHidden(), true);
      assert.deepEqual(problems, []);
    },
  );

  await t.test('"Forget token" locks the page again', async () => {
    await page.locator('#forget').click();
    await page.locator('#login').waitFor({ state: 'visible', timeout: WAIT_MS });
    assert.equal(await page.evaluate(() => sessionStorage.getItem('echo-chaos.console.token')), null);
  });
});
