import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';
import { startEcho } from '../helpers/echo-server.ts';
import { send } from '../helpers/http.ts';

/**
 * A dependency on a port of its own that fails every call at the transport (the connection is
 * closed before any answer) until `recover()`, then answers 200. It holds its port throughout: a
 * port merely released could be taken by another test's server before the replays reach it.
 */
async function flakyDependency(): Promise<{ port: number; recover(): void; close(): Promise<void> }> {
  let failing = true;
  const server = createServer((request, response) => {
    if (failing) request.socket.destroy();
    else response.end('back');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    recover() {
      failing = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Health {
  status: string;
  components: Record<
    string,
    { status: string; details?: { degraded?: Record<string, { error_ratio: number }> } }
  >;
}

async function health(url: string): Promise<{ code: number; body: Health }> {
  const res = await send(`${url}/actuator/health`);
  return { code: res.status, body: JSON.parse(res.body.toString()) as Health };
}

test('echo dependency health – replays to a failing target turn /actuator/health DEGRADED; the target recovering brings it back UP', async (t) => {
  const dependency = await flakyDependency();
  t.after(() => dependency.close());
  const port = dependency.port;
  const echo = await startEcho({
    OBS_DEPENDENCIES_HEALTH_MINIMUM_CALLS: '3',
    OBS_DEPENDENCIES_HEALTH_ERROR_RATE_THRESHOLD: '0.5',
    OBS_DEPENDENCIES_MAP: `127.0.0.1:${port}=replay-target`,
  });
  t.after(() => echo.close());
  await send(`${echo.url}/orders`, { headers: { 'X-Request-ID': 'dep-1' } });

  const replay = (target: string) =>
    send(`${echo.url}/replay`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ id: 'dep-1', target }),
    });

  assert.equal((await health(echo.url)).body.components.dependencies?.status, 'UP');
  for (let i = 0; i < 3; i++) assert.equal((await replay(`http://127.0.0.1:${port}`)).status, 502);
  const degraded = await health(echo.url);
  assert.equal(degraded.code, 200, 'DEGRADED still answers 200');
  assert.equal(degraded.body.status, 'DEGRADED');
  assert.equal(degraded.body.components.dependencies?.status, 'DEGRADED');
  assert.equal(degraded.body.components.dependencies?.details?.degraded?.['replay-target']?.error_ratio, 1);
  assert.equal((await send(`${echo.url}/ready`)).status, 200, 'a degraded echo stays ready');

  const metrics = (await send(`${echo.url}/metrics`)).body.toString();
  assert.match(
    metrics,
    /obs_dependency_requests_total\{dep="replay-target",method="GET",status="none",outcome="transport_error"\} 3/,
  );

  // The target recovers: it answers from now on. The failures stay in the sliding window
  // (obs.dependencies.health.window, 1m by default), so "back" takes enough successful calls to
  // bring the ratio below the threshold (3 errors in 7 calls), or the window passing.
  dependency.recover();
  for (let i = 0; i < 3; i++) assert.equal((await replay(`http://127.0.0.1:${port}`)).status, 200);
  assert.equal(
    (await health(echo.url)).body.components.dependencies?.status,
    'DEGRADED',
    '3 errors in 6 calls is at the threshold',
  );
  assert.equal((await replay(`http://127.0.0.1:${port}`)).status, 200);
  const up = await health(echo.url);
  assert.equal(up.code, 200);
  assert.equal(up.body.components.dependencies?.status, 'UP');
  assert.equal(up.body.status, 'UP');
});
