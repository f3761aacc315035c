import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';

// `obs.tenant.tag-meters` on echo-chaos's own request meters: each request is counted under the
// tenant it came with, not under the context of whatever hands the batched recordings to
// prom-client (a scrape has none).

let echo: RunningEcho;
before(async () => {
  echo = await startEcho({
    OBS_TENANT_ENABLED: 'true',
    OBS_TENANT_TAG_METERS: 'echo_requests_total,echo_request_duration_seconds',
  });
});
after(() => echo.close());

test('tenant-tagged request meters count each request under its own tenant', async () => {
  for (const tenant of ['acme', 'acme', 'globex', undefined]) {
    const res = await fetch(`${echo.url}/orders`, {
      headers: tenant === undefined ? {} : { 'obs-tenant-id': tenant },
    });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
  }
  const text = await (await fetch(`${echo.url}/metrics`)).text();
  /** The value of the series of `metric` whose labels include every one of `labels`. */
  const value = (metric: string, labels: readonly string[]) => {
    const line = text
      .split('\n')
      .find((l) => l.startsWith(`${metric}{`) && labels.every((label) => l.includes(label)));
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  const requests = (tenant: string) => value('echo_requests_total', ['path="/orders"', `tenant="${tenant}"`]);
  const timed = (tenant: string) =>
    value('echo_request_duration_seconds_count', ['fault="none"', `tenant="${tenant}"`]);
  assert.equal(requests('acme'), 2, text);
  assert.equal(requests('globex'), 1);
  assert.equal(requests('none'), 1);
  assert.equal(timed('acme'), 2);
  assert.equal(timed('globex'), 1);
});
