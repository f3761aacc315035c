import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { isOperatorError } from '../../src/operator/errors.ts';
import { createPushClient } from '../../src/operator/push-client.ts';

function pushClient() {
  const results: string[] = [];
  const push = createPushClient({
    timeoutMs: 5000,
    metrics: {
      pushes: { inc: ({ result }: { result: string }) => results.push(result) },
      pushSeconds: { startTimer: () => () => 0 },
    } as never,
  });
  return { push, results };
}

const endpoint = (port: number) => ({ ip: '127.0.0.1', port }) as never;

test('push client – a refused connection rejects with OPERATOR_ERR_PUSH naming the URL and the cause', async () => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  const { push, results } = pushClient();
  await assert.rejects(push(endpoint(port), '[]'), (error: unknown) => {
    assert.ok(isOperatorError(error) && error.code === 'OPERATOR_ERR_PUSH', String(error));
    assert.equal(error.message, `POST http://127.0.0.1:${port}/scenario: ECONNREFUSED`);
    assert.ok(error.cause instanceof Error);
    return true;
  });
  assert.deepEqual(results, ['failure']);
});

test('push client – an answer that is not 2xx rejects with OPERATOR_ERR_PUSH and the start of the body', async (t) => {
  const server = createServer((_req, res) => res.writeHead(400).end('{"error":"nope"}'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const { port } = server.address() as AddressInfo;
  const { push, results } = pushClient();
  await assert.rejects(push(endpoint(port), '[]'), {
    code: 'OPERATOR_ERR_PUSH',
    message: `POST http://127.0.0.1:${port}/scenario: HTTP 400: {"error":"nope"}`,
  });
  assert.deepEqual(results, ['failure']);
});

test('push client – pushes are conditional: a real echo that holds the array answers 412 (unchanged), its sequence going on', async (t) => {
  const { startEcho } = await import('../helpers/echo-server.ts');
  const { scenarioSetHash } = await import('../../src/scenario/index.ts');
  const echo = await startEcho();
  t.after(() => echo.close());
  const set = [{ path: '/seq', cycle: false, responses: [{ body: 'one' }, { body: 'two' }] }];
  const body = JSON.stringify(set);
  const hash = scenarioSetHash(set);
  const { push, results } = pushClient();
  const at = endpoint(Number(new URL(echo.url).port));
  assert.equal(await push(at, body, hash), 'pushed');
  assert.equal(await (await fetch(`${echo.url}/seq`)).text(), 'one');
  // The operator again (restarted, or retrying): the pod holds the array, nothing restarts.
  assert.equal(await push(at, body, hash), 'unchanged');
  assert.equal(await (await fetch(`${echo.url}/seq`)).text(), 'two');
  // Neither counted here: only the read-back proves them (verify.ts counts success and unchanged).
  assert.deepEqual(results, []);
});

test('push client – a 412 to an unconditional push is a failure', async (t) => {
  const server = createServer((_req, res) => res.writeHead(412).end('{}'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const { port } = server.address() as AddressInfo;
  const { push, results } = pushClient();
  await assert.rejects(push(endpoint(port), '[]'), { code: 'OPERATOR_ERR_PUSH' });
  assert.deepEqual(results, ['failure']);
});
