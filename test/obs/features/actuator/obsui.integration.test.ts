import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { test } from 'node:test';
import { FEATURES } from '../../../../src/obs/core/features.ts';
import { OBSUI_CSP } from '../../../../src/obs/features/actuator/obsui.ts';
import { openChromium, screenshotPath } from '../../../helpers/chromium.ts';
import { injectableObsApp, post, startObsApp } from '../../helpers.ts';

test('obsui – an HTML page of the snapshot: every feature, the mode, the hash, the runtime', async (t) => {
  const obs = await startObsApp({
    version: '2.3.4',
    serviceName: 'orders',
    config: { 'container-memory': { enabled: false } },
  });
  t.after(() => obs.close());
  await post(`${obs.url}/actuator/obs/enforcement`, '{"value":"DRY_RUN"}');
  const response = await fetch(`${obs.url}/actuator/obsui`);
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.equal(response.headers.get('content-security-policy'), OBSUI_CSP);
  assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
  const html = await response.text();
  assert.match(html, /^<!doctype html>/);
  assert.match(html, /<title>obs · orders<\/title>/);
  assert.match(html, /<span class="mode mode-DRY_RUN" id="mode">DRY_RUN<\/span>/);
  assert.match(html, /version <b>2\.3\.4<\/b>/);
  assert.ok(html.includes(obs.app.obs.resolved.hash), 'the full hash is on the page');
  for (const feature of FEATURES) {
    assert.ok(html.includes(`<b>${feature.name.replaceAll('&', '&amp;')}</b>`), feature.name);
    assert.ok(html.includes(`<code>obs.${feature.key}</code>`), feature.key);
  }
  assert.match(
    html,
    /<b>Cardinality firewall<\/b><br><code>obs\.cardinality<\/code><\/td><td><span class="on">on<\/span>/,
  );
  assert.match(
    html,
    /<b>Container-aware memory metrics<\/b><br><code>obs\.container-memory<\/code><\/td><td><span class="off">off<\/span>/,
  );
  assert.match(html, /drain-timeout:<\/span> <span class="mono">30s</);
  assert.match(html, /enabled-when\.path-excludes:/);
  assert.match(html, /in-flight requests/);
  assert.match(html, /"value":"ENFORCING"/, 'the page says how to switch back');
  // What DRY_RUN changes, as the snapshot's dry_run section says it, each setting with whether it is on here.
  const snapshot = (await (await fetch(`${obs.url}/actuator/obs`)).json()) as {
    dry_run: { changes: { setting: string; applies: boolean }[] };
  };
  assert.match(html, /<h2>What DRY_RUN changes \(this process is in DRY_RUN\)<\/h2>/);
  assert.ok(snapshot.dry_run.changes.length > 0);
  for (const change of snapshot.dry_run.changes) {
    assert.ok(
      html.includes(`<td class="mono">${change.setting}</td>`) &&
        new RegExp(
          `${change.setting.replaceAll('.', '\\.')}</td><td>[^<]*</td><td>[^<]*</td><td>${change.applies ? 'yes' : 'no'}</td>`,
        ).test(html),
      change.setting,
    );
  }
});

test('obsui – no feature shows as planned; each built one shows on or off with its configuration', async (t) => {
  const app = await injectableObsApp(t);
  const response = await app.inject({ method: 'GET', url: '/actuator/obsui' });
  assert.equal(response.statusCode, 200);
  const html = response.body;
  const planned = FEATURES.filter((f) => f.status === 'planned');
  assert.equal(planned.length, 0);
  assert.match(html, /request-id-header:<\/span> <span class="mono">X-Request-ID</, 'a built key of context');
  const built = FEATURES.filter((f) => f.status === 'built' && f.key !== 'config-validation');
  for (const feature of built) {
    assert.match(
      html,
      new RegExp(`<code>obs\\.${feature.key}</code></td><td><span class="(?:on|off)">`),
      feature.key,
    );
  }
});

test('obsui – self-contained: no script, no external resource, a CSP that allows only its own style', async (t) => {
  const obs = await startObsApp();
  t.after(() => obs.close());
  const html = await (await fetch(`${obs.url}/actuator/obsui`)).text();
  assert.doesNotMatch(html, /<script/i);
  assert.doesNotMatch(html, /\s(?:src|href)=/i);
  assert.doesNotMatch(html, /<link/i);
  assert.match(OBSUI_CSP, /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/]+=*';/);
  assert.doesNotMatch(OBSUI_CSP, /unsafe-inline|unsafe-eval|https?:/);
});

test('obsui – every value is escaped', async (t) => {
  const evil = '<script>alert(1)</script>';
  const obs = await startObsApp(
    {
      serviceName: evil,
      version: '"><img src=x onerror=alert(1)>',
      config: {
        'trace-guard': { 'enabled-when': { 'header-not-equals': { 'x-evil': evil } } },
        cardinality: { 'max-tag-values-per-meter': 1 },
      },
    },
    (app) => {
      app.obs.addSnapshotSection('custom', () => ({ note: evil }));
      app.get('/r', async () => {
        app.obs.firewall.admit('m</td>', 'k<b>', 'v');
        return 'ok';
      });
    },
  );
  t.after(() => obs.close());
  await fetch(`${obs.url}/r`);
  const html = await (await fetch(`${obs.url}/actuator/obsui`)).text();
  assert.doesNotMatch(html, /<script>/);
  assert.doesNotMatch(html, /<img/);
  assert.doesNotMatch(html, /m<\/td>|k<b>/);
  assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
  assert.ok(html.includes('&quot;&gt;&lt;img src=x onerror=alert(1)&gt;'));
  assert.ok(html.includes('m&lt;/td&gt;'));
});

test('obsui – real Chromium renders the page under its CSP; a screenshot is kept in test-output/obsui.png', async (t) => {
  const browser = await openChromium(t);
  if (browser === undefined) return;
  const obs = await startObsApp({ version: '1.0.0', serviceName: 'echo-chaos' }, (app) => {
    app.obs.addSnapshotSection('example', () => ({ jobs: 2, healthy: true }));
    app.get('/u/:id', async (request) => app.obs.firewall.admit('echo_requests_total', 'path', request.url));
  });
  t.after(() => obs.close());
  for (let i = 0; i < 5; i++) await fetch(`${obs.url}/u/${i}`);
  const page = await browser.newPage();
  await page.setViewportSize({ width: 1280, height: 900 });
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('request', (request) => {
    if (!request.url().startsWith(obs.url)) problems.push(`external request ${request.url()}`);
  });
  const response = await page.goto(`${obs.url}/actuator/obsui`);
  assert.equal(response?.status(), 200);
  assert.equal(await page.title(), 'obs · echo-chaos');
  assert.equal(await page.textContent('#mode'), 'ENFORCING');
  assert.equal(await page.locator('#features tbody tr').count(), FEATURES.length);
  // A style blocked by the CSP would leave the table's borders separate (the browser default).
  const border = await page.evaluate('getComputedStyle(document.querySelector("#features")).borderCollapse');
  assert.equal(border, 'collapse', 'the stylesheet allowed by the CSP hash is applied');
  assert.deepEqual(problems, [], 'no CSP violation, script error or external request');
  const path = screenshotPath('obsui.png');
  await page.screenshot({ path, fullPage: true });
  assert.ok(statSync(path).size > 10_000, 'the screenshot has content');
});
