/**
 * The console's dry run in Chromium (issue #37, "which scenario matches this request?"): the
 * scenarios tab names the scenario that would answer a described request and why each other would
 * not, and nothing moves (positions, sessions, counters); its API refuses a malformed description
 * with a 400 naming the part. The docs' screenshot comes from here:
 *
 *   DOCS_SCREENSHOTS=write node --test test/echo/console/dry-run.integration.test.ts
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Scenario } from '../../../src/scenario/index.ts';
import { openChromium } from '../../helpers/chromium.ts';
import { startEcho } from '../../helpers/echo-server.ts';
import { openConsole, shoot, WAIT_MS, watchProblems } from './page-helpers.ts';

const SET: Scenario[] = [
  { name: 'pay-post', path: '/pay', method: ['POST'], responses: [{ status: 201 }] },
  { name: 'pay-vip', path: '/pay', headers: { 'X-Tier': 'vip' }, times: 1, responses: [{ status: 202 }] },
  { name: 'pay', path: '/pay', responses: [{ status: 500 }, { status: 200 }] },
  { name: 'catch-all', pathPattern: '/*', responses: [{ status: 404 }] },
];

test('console dry run – in Chromium, against a running service', async (t) => {
  const echo = await startEcho({}, { scenarios: SET });
  const browser = await openChromium(t).finally(() => t.after(() => echo.close()));
  if (browser === undefined) return;
  const base = `http://127.0.0.1:${echo.port}`;
  const store = echo.app.echo.scenarios;
  const match = async (body: unknown) => {
    const res = await fetch(`${base}/console/api/scenarios/match`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  // Somewhere to stand first: pay served once, vip once for alice.
  for (const headers of [{}, { 'x-tier': 'vip', 'x-echo-session': 'alice' }]) {
    const res = await fetch(`${base}/pay`, { headers });
    await res.arrayBuffer();
  }
  const standing = () => ({ states: store.states(), alice: store.states('alice'), counts: store.counts() });
  const before = standing();

  await t.test('the API: which scenario answers, why the others do not, nothing moved', async () => {
    const { status, json } = await match({
      path: '/pay?x=1',
      headers: { 'X-Tier': 'vip', 'X-Echo-Session': 'alice' },
    });
    assert.equal(status, 200);
    assert.equal(json['answer'], 2);
    assert.deepEqual(json['request'], { method: 'GET', path: '/pay', query: 'x=1', session: 'alice' });
    const scenarios = json['scenarios'] as Array<{ outcome: string; reason?: { message: string } }>;
    assert.deepEqual(
      scenarios.map((s) => [s.outcome, s.reason?.message]),
      [
        ['no-match', 'method is not POST'],
        ['expired', 'times: 1, all answered'],
        ['answers', undefined],
        ['shadowed', undefined],
      ],
    );
    assert.equal((await match({ path: '/pay', headers: { 'x-tier': 'vip' } })).json['answer'], 1);
    assert.equal((await match({ path: '/nothing', method: 'DELETE' })).json['answer'], 3);
    assert.deepEqual(standing(), before, 'a dry run moved something');
  });

  await t.test('a malformed description is a 400 naming the part; nothing moves', async () => {
    for (const [body, named] of [
      [{}, /path must be a string starting with \//],
      [[], /the body must be a JSON object/],
      [{ path: 'pay' }, /path must be a string starting with \//],
      [{ path: '/pay', method: 'GE T' }, /method must be an HTTP method/],
      [{ path: '/pay', headers: { 'bad name': 'x' } }, /header name "bad name" is not a token/],
      [{ path: '/pay', headers: { 'x-a': 1 } }, /header x-a must be a string/],
      [{ path: '/pay', headers: { 'x-echo-session': 'a b' } }, /X-Echo-Session must be a session id/],
      [{ path: '/pay', body: 'x'.repeat(70_000) }, /body must be a string of at most 65536 characters/],
      [{ path: '/pay', colour: 'red' }, /unknown field "colour"/],
    ] as const) {
      const { status, json } = await match(body);
      assert.equal(status, 400, JSON.stringify(body).slice(0, 80));
      const error = json['error'] as { code: string; message: string };
      assert.equal(error.code, 'ECHO_ERR_INVALID_CONSOLE_REQUEST');
      assert.match(error.message, named);
    }
    assert.deepEqual(standing(), before);
  });

  await t.test('the scenarios tab: a request tried shows who answers and why the others do not', async () => {
    const page = await browser.newPage();
    const problems = watchProblems(page);
    await page.setViewportSize({ width: 1280, height: 800 });
    await openConsole(page, base);
    await page.locator('#tab-scenarios-button').click();
    await page.locator('#s-etag', { hasText: '4 scenarios' }).waitFor({ timeout: WAIT_MS });
    await page.locator('#m-path').fill('/pay');
    await page.locator('#m-headers').fill('X-Tier: vip\nX-Echo-Session: bob');
    await page.locator('#m-try').click();
    await page.locator('#m-answer', { hasText: '#1 pay-vip answers' }).waitFor({ timeout: WAIT_MS });
    assert.deepEqual(await page.locator('#m-result li').allTextContents(), [
      '#0 pay-post: method is not POST',
      '#1 pay-vip: answers, with response 0 (202)',
      '#2 pay: matches too, but an earlier scenario answers first',
      '#3 catch-all: matches too, but an earlier scenario answers first',
    ]);
    await page.locator('#m-headers').fill('X-Tier: vip\nX-Echo-Session: alice');
    await page.locator('#m-try').click();
    await page.locator('#m-answer', { hasText: '#2 pay answers' }).waitFor({ timeout: WAIT_MS });
    assert.equal(
      await page.locator('#m-result li[data-outcome="expired"]').textContent(),
      '#1 pay-vip: times: 1, all answered',
    );
    await page.locator('#m-headers').fill('no colon here');
    await page.locator('#m-try').click();
    await page
      .locator('#m-error', { hasText: 'header line 1 is not "Name: value"' })
      .waitFor({ timeout: WAIT_MS });
    await page.locator('#m-headers').fill('X-Tier: vip\nX-Echo-Session: alice');
    await page.locator('#m-try').click();
    await page.locator('#m-answer', { hasText: '#2 pay answers' }).waitFor({ timeout: WAIT_MS });
    await shoot(page, 'console-dry-run.png', import.meta.filename);
    assert.deepEqual(standing(), before, 'the page’s dry run moved something');
    assert.deepEqual(problems, []);
    await page.close();
  });
});
