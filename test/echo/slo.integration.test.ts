/**
 * The echo service's own SLOs: `/actuator/obs/slo` serves rules out of the box (availability of its
 * own answers, and latency), promtool accepts them, and the request meters carry the `fault` label
 * that keeps injected faults out of the budget.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { dump, load } from 'js-yaml';
import { ECHO_DURATION_BUCKETS, ECHO_OBS_DEFAULTS } from '../../src/echo/metrics.ts';
import { startEcho } from '../helpers/echo-server.ts';

async function get(url: string, headers: Record<string, string> = {}): Promise<Response> {
  const response = await fetch(url, { headers });
  await response.arrayBuffer();
  return response;
}

/** `echo_requests_total` samples of one path, as `status fault` → count. */
function byFault(text: string, path: string): Record<string, number> {
  const out: Record<string, number> = {};
  const re = /^echo_requests_total\{method="GET",path="([^"]*)",status="(\d+)",fault="([a-z]+)"\} (\S+)$/gm;
  for (const m of text.matchAll(re)) if (m[1] === path) out[`${m[2]} ${m[3]}`] = Number(m[4]);
  return out;
}

test('echo slo – every injected fault is labelled, the service\'s own answers are fault="none"', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await get(`${echo.url}/own`);
  await get(`${echo.url}/chaos`, { 'X-Echo-Chaos': '100' });
  await get(`${echo.url}/error`, { 'X-Echo-Error': 'internal' });
  await get(`${echo.url}/status`, { 'X-Echo-Status': '503' });
  await get(`${echo.url}/delay`, { 'X-Echo-Delay': '10ms' });
  const posted = await fetch(`${echo.url}/scenario`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([{ path: '/scenario-path', responses: [{ status: 500 }] }]),
  });
  assert.equal(posted.status, 200);
  await get(`${echo.url}/scenario-path`);
  const text = await (await fetch(`${echo.url}/metrics`)).text();
  assert.deepEqual(byFault(text, '/own'), { '200 none': 1 });
  assert.equal(Object.keys(byFault(text, '/chaos'))[0]?.split(' ')[1], 'chaos');
  assert.deepEqual(byFault(text, '/error'), { '500 error': 1 });
  assert.deepEqual(byFault(text, '/status'), { '503 status': 1 });
  assert.deepEqual(byFault(text, '/delay'), { '200 delay': 1 });
  assert.deepEqual(byFault(text, '/scenario-path'), { '500 scenario': 1 });
  assert.match(text, /^echo_request_duration_seconds_count\{fault="delay"\} 1$/m);
});

test('echo slo – /actuator/obs/slo serves the default objectives out of the box; the snapshot shows their live burn', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const answer = await fetch(`${echo.url}/actuator/obs/slo`);
  assert.equal(answer.status, 200);
  assert.match(answer.headers.get('content-type') ?? '', /^application\/yaml/);
  const rule = load(await answer.text()) as {
    kind: string;
    spec: {
      groups: Array<{ name: string; rules: Array<{ record?: string; alert?: string; expr: string }> }>;
    };
  };
  assert.equal(rule.kind, 'PrometheusRule');
  assert.deepEqual(
    rule.spec.groups.map((g) => g.name),
    ['slo-echo-availability', 'slo-echo-latency'],
  );
  for (const group of rule.spec.groups) {
    for (const r of group.rules.filter((x) => x.record !== undefined)) {
      assert.match(r.expr, /fault="none"/, `${r.record} counts the service's own answers only`);
    }
  }
  // The latency threshold is one of the histogram's buckets (else startup would have stopped).
  const latency = ECHO_OBS_DEFAULTS.slo.objectives[1];
  assert.ok(ECHO_DURATION_BUCKETS.includes(Number.parseInt(latency.threshold, 10) / 1000));
  const snapshot = (await (await fetch(`${echo.url}/actuator/obs`)).json()) as {
    sections: {
      slo: { enabled: boolean; live: { objectives: Array<{ name: string; metric_state: string }> } };
    };
  };
  assert.equal(snapshot.sections.slo.enabled, true);
  assert.deepEqual(
    snapshot.sections.slo.live.objectives.map((o) => [o.name, o.metric_state]),
    [
      ['echo-availability', 'ok'],
      ['echo-latency', 'ok'],
    ],
  );
  const ui = await (await fetch(`${echo.url}/actuator/obsui`)).text();
  assert.match(ui, /echo-availability/);
  // A person can still turn them off.
  const off = await startEcho({ OBS_SLO_ENABLED: 'false' });
  t.after(() => off.close());
  assert.equal((await fetch(`${off.url}/actuator/obs/slo`)).status, 404);
});

test('echo slo – promtool check rules accepts the served rules', async (t) => {
  const probe = spawnSync('promtool', ['--version'], { encoding: 'utf8', timeout: 10_000 });
  if (probe.error !== undefined || probe.status !== 0) {
    const why = 'promtool not found on PATH (Debian package prometheus); .ci/run installs it';
    if (process.env['CI']) assert.fail(`${why}: required in CI`);
    t.skip(why);
    return;
  }
  const echo = await startEcho();
  t.after(() => echo.close());
  const rule = load(await (await fetch(`${echo.url}/actuator/obs/slo`)).text()) as { spec: unknown };
  const dir = mkdtempSync(join(tmpdir(), 'echo-slo-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'rules.yaml');
  writeFileSync(file, dump(rule.spec));
  const result = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(result.status, 0, `promtool check rules:\n${result.stdout}${result.stderr}`);
  assert.match(result.stdout, /SUCCESS: 14 rules found/);
});
