/**
 * Where each scenario stands, in the console's scenarios tab (issue #37, item 3): positions, what
 * each response served, windows (`activeFor`'s end, `times` left, expired) and sessions, with a
 * reset of one scenario or of all, for everyone or for one session.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Scenario } from '../../../src/scenario/index.ts';
import { openChromium } from '../../helpers/chromium.ts';
import { startEcho } from '../../helpers/echo-server.ts';
import { openConsole, WAIT_MS, watchProblems } from './page-helpers.ts';

const SET: Scenario[] = [
  { name: 'pay', path: '/pay', responses: [{ status: 500, repeat: 2 }, { status: 200 }] },
  { name: 'once', path: '/once', times: 2, responses: [{ status: 201 }] },
  { name: 'flash', path: '/flash', activeFor: '1h', responses: [{ status: 418 }] },
];

test('console state – in Chromium, against a running service', async (t) => {
  const echo = await startEcho({}, { scenarios: SET });
  const browser = await openChromium(t).finally(() => t.after(() => echo.close()));
  if (browser === undefined) return;
  const base = `http://127.0.0.1:${echo.port}`;
  const store = echo.app.echo.scenarios;
  const send = async (path: string, session?: string) => {
    const res = await fetch(`${base}${path}`, {
      headers: session === undefined ? {} : { 'x-echo-session': session },
    });
    await res.arrayBuffer();
    return res.status;
  };
  for (const path of ['/pay', '/pay', '/pay', '/pay', '/once', '/once']) await send(path);
  assert.equal(await send('/pay', 'alice'), 500);
  assert.equal(await send('/once', 'bob'), 201);
  const page = await browser.newPage();
  const problems = watchProblems(page);
  await page.setViewportSize({ width: 1280, height: 800 });
  const cells = (index: number) =>
    page.locator(`#s-state-rows tr[data-index="${index}"] td`).allTextContents();

  await t.test('the sessions API lists the sessions kept, the most recently used first', async () => {
    const res = await fetch(`${base}/console/api/sessions`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { count: 2, ids: ['bob', 'alice'] });
  });

  await t.test('each scenario: position in its run, served per response, its window', async () => {
    await openConsole(page, base);
    await page.locator('#tab-scenarios-button').click();
    await page.locator('#s-state-rows tr').nth(2).waitFor({ timeout: WAIT_MS });
    assert.deepEqual(await cells(0), ['0', 'pay', '0 (served 1× in this run)', '4 (3 · 1)', '', 'Reset']);
    assert.deepEqual(await cells(1), ['1', 'once', '0', '2', 'expired, 0 left', 'Reset']);
    const flash = await cells(2);
    assert.match(flash[4] ?? '', /^until \d\d:\d\d:\d\d$/);
    assert.equal(await page.locator('#s-state-rows tr.expired').count(), 1);
    assert.match((await page.locator('#s-sessions').textContent()) ?? '', /^2 sessions with a place/);
  });

  await t.test('a session chosen shows its own state; a reset there leaves the others', async () => {
    await page.locator('#s-session').selectOption('alice');
    // Waited on what only alice's table shows: the table for the requests without a session also
    // says "served 1×" in its first row, and read before alice's came it failed the check below.
    await page
      .locator('#s-state-rows tr[data-index="1"] td', { hasText: '2 left' })
      .waitFor({ timeout: WAIT_MS });
    assert.match((await cells(0))[2] ?? '', /served 1×/);
    assert.deepEqual((await cells(1)).slice(2, 5), ['0', '0', '2 left']);
    await page.locator('#s-state-rows tr[data-index="0"] button').click();
    await page
      .locator('#s-status', { hasText: 'pay starts again (session alice)' })
      .waitFor({ timeout: WAIT_MS });
    await page
      .locator('#s-state-rows tr[data-index="0"] td:nth-child(3)', { hasText: /^0$/ })
      .waitFor({ timeout: WAIT_MS });
    assert.equal(store.states('alice')[0]?.total, 0);
    assert.equal(store.states()[0]?.total, 4, 'the requests without a session kept their place');
    assert.equal(store.states('bob')[1]?.total, 1);
  });

  await t.test('one scenario reset for everyone, then all', async () => {
    await page.locator('#s-session').selectOption('');
    await page
      .locator('#s-state-rows tr[data-index="1"] td', { hasText: 'expired' })
      .waitFor({ timeout: WAIT_MS });
    await page.locator('#s-state-rows tr[data-index="1"] button').click();
    await page.locator('#s-status', { hasText: 'once starts again' }).waitFor({ timeout: WAIT_MS });
    await page
      .locator('#s-state-rows tr[data-index="1"] td', { hasText: '2 left' })
      .waitFor({ timeout: WAIT_MS });
    assert.equal(store.states()[0]?.total, 4, 'pay was not reset');
    assert.equal(await send('/once'), 201);
    await page.locator('#s-reset').click();
    await page.locator('#s-status', { hasText: 'every scenario starts again' }).waitFor({ timeout: WAIT_MS });
    assert.deepEqual(
      store.states().map((s) => s.total),
      [0, 0, 0],
    );
    assert.equal(store.counts().sessions, 0, 'a reset of all drops every session');
    await page.locator('#s-sessions', { hasText: /^0 sessions/ }).waitFor({ timeout: WAIT_MS });
    assert.deepEqual(problems, []);
  });
});
