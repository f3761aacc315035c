import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startEcho } from '../helpers/echo-server.ts';

/**
 * Kubernetes lifecycle faults: `PUT /control/readiness` and `PUT /control/liveness` make `/ready`
 * and `/health` answer 503 until set back, so a platform's reaction to an unready or unhealthy pod
 * can be tested.
 */

async function put(url: string, body: string, type = 'application/json') {
  const response = await fetch(url, { method: 'PUT', headers: { 'content-type': type }, body });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

test('lifecycle – PUT /control/readiness {"ready": false} turns /ready 503 until set back; /health and /info show it', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  assert.equal((await fetch(`${echo.url}/ready`)).status, 200);

  const set = await put(`${echo.url}/control/readiness`, '{"ready": false}');
  assert.equal(set.status, 200);
  assert.deepEqual(set.body, { previous: { ready: true }, current: { ready: false } });
  const ready = await fetch(`${echo.url}/ready`);
  assert.equal(ready.status, 503);
  assert.deepEqual(await ready.json(), { status: 'not ready', reason: 'set by PUT /control/readiness' });
  assert.deepEqual(await (await fetch(`${echo.url}/control/readiness`)).json(), { ready: false });
  const health = await fetch(`${echo.url}/health`);
  assert.equal(health.status, 200, 'an unready pod is still alive');
  assert.deepEqual(((await health.json()) as { lifecycle: unknown }).lifecycle, {
    ready: false,
    healthy: true,
  });
  const info = (await (await fetch(`${echo.url}/info`)).json()) as { server: { lifecycle: unknown } };
  assert.deepEqual(info.server.lifecycle, { ready: false, healthy: true });

  assert.deepEqual((await put(`${echo.url}/control/readiness`, '{"ready": true}')).body, {
    previous: { ready: false },
    current: { ready: true },
  });
  assert.equal((await fetch(`${echo.url}/ready`)).status, 200);
});

test('lifecycle – PUT /control/liveness {"healthy": false} turns /health 503 with the same body; /ready is untouched', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const set = await put(`${echo.url}/control/liveness`, '{"healthy": false}');
  assert.deepEqual(set.body, { previous: { healthy: true }, current: { healthy: false } });
  const health = await fetch(`${echo.url}/health`);
  assert.equal(health.status, 503);
  const body = (await health.json()) as { status: string; lifecycle: unknown; metrics: unknown };
  assert.equal(body.status, 'unhealthy');
  assert.deepEqual(body.lifecycle, { ready: true, healthy: false });
  assert.ok(body.metrics !== undefined, 'the same body as a healthy answer');
  assert.equal((await fetch(`${echo.url}/ready`)).status, 200);
  await put(`${echo.url}/control/liveness`, '{"healthy": true}');
  assert.equal((await fetch(`${echo.url}/health`)).status, 200);
});

test('lifecycle – a bad control body is a 400 naming the problem, and the state stays as it was', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await put(`${echo.url}/control/readiness`, '{"ready": false}');
  const bad: Array<[string, string, number, string]> = [
    ['/control/readiness', '{"ready": "no"}', 400, 'ECHO_ERR_INVALID_CONTROL'],
    ['/control/readiness', '{"ready": true, "extra": 1}', 400, 'ECHO_ERR_INVALID_CONTROL'],
    ['/control/readiness', '[true]', 400, 'ECHO_ERR_INVALID_CONTROL'],
    ['/control/readiness', '{"healthy": true}', 400, 'ECHO_ERR_INVALID_CONTROL'],
    ['/control/liveness', '{"ready": false}', 400, 'ECHO_ERR_INVALID_CONTROL'],
    ['/control/readiness', '{"ready":', 400, 'ECHO_ERR_INVALID_JSON'],
  ];
  for (const [path, body, status, code] of bad) {
    const answer = await put(`${echo.url}${path}`, body);
    assert.equal(answer.status, status, `${path} ${body}`);
    assert.equal((answer.body.error as { code: string }).code, code, `${path} ${body}`);
  }
  const plain = await put(`${echo.url}/control/readiness`, 'ready=true', 'text/plain');
  assert.equal(plain.status, 415);
  assert.deepEqual(
    await (await fetch(`${echo.url}/control/readiness`)).json(),
    { ready: false },
    'unchanged',
  );
  assert.deepEqual(
    await (await fetch(`${echo.url}/control/liveness`)).json(),
    { healthy: true },
    'unchanged',
  );
  assert.equal((await fetch(`${echo.url}/ready`)).status, 503);
});

test('lifecycle – the drain still wins over a readiness set back to ready', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  await put(`${echo.url}/control/readiness`, '{"ready": true}');
  echo.app.echo.drain.abort();
  const ready = await fetch(`${echo.url}/ready`);
  assert.equal(ready.status, 503);
  assert.deepEqual(await ready.json(), { status: 'draining' });
});
