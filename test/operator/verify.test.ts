import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { isOperatorError } from '../../src/operator/errors.ts';
import { createPodDispatcher, createPushClient } from '../../src/operator/push-client.ts';
import { scenarioOf } from '../../src/operator/scenario-spec.ts';
import { createReadBackClient, createVerifiedPush, heldHashOf } from '../../src/operator/verify.ts';
import { scenarioSetHash, validateScenarios } from '../../src/scenario/index.ts';
import { startEcho } from '../helpers/echo-server.ts';
import { until } from '../helpers/runtime.ts';

const endpoint = (port: number) => ({ key: `u:${port}`, podName: 'p', podUid: 'u', ip: '127.0.0.1', port });
const readBack = createReadBackClient({ timeoutMs: 5000 });
const push = createPushClient({
  timeoutMs: 5000,
  metrics: { pushes: { inc() {} }, pushSeconds: { startTimer: () => () => 0 } } as never,
});

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

test('verify – a push to a real echo is read back with a 304 and resolves with the hash pushed', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const seen: Array<number | undefined> = [];
  // The statuses of the GETs, from the echo's own HTTP server.
  echo.app.server.on('request', (req, res) => {
    if (req.method === 'GET') res.on('finish', () => seen.push(res.statusCode));
  });
  const result = validateScenarios([{ path: '/a', responses: [{ status: 503 }] }]);
  assert.ok(result.ok);
  const verified = createVerifiedPush(push, readBack);
  const hash = await verified(endpoint(echo.port), result.scenarios, JSON.stringify(result.scenarios));
  assert.equal(hash, scenarioSetHash(result.scenarios));
  assert.deepEqual(seen, [304]);
});

test('verify – a pod that keeps other scenarios: OPERATOR_ERR_NOT_APPLIED with the hash it holds', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const dropAll = async () => 'pushed' as const;
  const results: string[] = [];
  const metrics = { pushes: { inc: ({ result }: { result: string }) => results.push(result) } } as never;
  const verified = createVerifiedPush(dropAll, readBack, metrics);
  const wanted = [{ path: '/a', responses: [{ status: 503 }] }];
  await assert.rejects(verified(endpoint(echo.port), wanted, JSON.stringify(wanted)), (error: unknown) => {
    assert.ok(isOperatorError(error) && error.code === 'OPERATOR_ERR_NOT_APPLIED', String(error));
    assert.equal(heldHashOf(error), scenarioSetHash([]));
    assert.equal(
      error.message,
      `GET http://127.0.0.1:${echo.port}/scenario: the pod holds ${scenarioSetHash([])}, not the ${scenarioSetHash(wanted)} pushed`,
    );
    return true;
  });
  assert.deepEqual(results, ['not_applied'], 'a push the pod dropped silently is no success');
});

test('verify – pushes_total counts success only once read back, unchanged for a 412 proven', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const results: string[] = [];
  const metrics = { pushes: { inc: ({ result }: { result: string }) => results.push(result) } } as never;
  const verified = createVerifiedPush(push, readBack, metrics);
  const wanted = [{ path: '/a', responses: [{ status: 503 }] }];
  await verified(endpoint(echo.port), wanted, JSON.stringify(wanted));
  await verified(endpoint(echo.port), wanted, JSON.stringify(wanted));
  assert.deepEqual(results, ['success', 'unchanged']);
});

test('verify – without an ETag the array read back is hashed; a bad answer is OPERATOR_ERR_READ_BACK', async (t) => {
  let answer: [number, string] = [200, '[{"responses":[{"status":503}],"path":"/a"}]'];
  const server = createServer((_req, res) =>
    res.writeHead(answer[0], { 'content-type': 'application/json' }).end(answer[1]),
  );
  const port = await listen(server);
  t.after(() => server.close());
  assert.equal(
    await readBack(endpoint(port), 'sha256-x'),
    scenarioSetHash([{ path: '/a', responses: [{ status: 503 }] }]),
  );
  for (const [bad, message] of [
    [[500, 'boom'], /^GET http:\/\/127\.0\.0\.1:\d+\/scenario: HTTP 500: boom$/],
    [[200, '{"not":"an array"}'], /not a JSON array/],
    [[200, 'not json'], /JSON/],
  ] as Array<[[number, string], RegExp]>) {
    answer = bad;
    await assert.rejects(readBack(endpoint(port), 'sha256-x'), (error: unknown) => {
      assert.ok(isOperatorError(error) && error.code === 'OPERATOR_ERR_READ_BACK', String(error));
      assert.match(error.message, message);
      return true;
    });
  }
});

test('verify – every scenario field an EchoScenario may carry reads back with the hash the operator computes', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const rich = scenarioOf({
    metadata: { name: 'rich' },
    spec: {
      target: { service: 'echo', port: 'http' },
      pathPattern: 're:/api/v[0-9]+/orders',
      method: ['get', 'POST'],
      headers: { 'X-Tenant': 'acme' },
      query: { page: 're:[0-9]+' },
      body: { jsonPointer: '/order/id', value: '7' },
      cycle: false,
      responses: [
        { status: 503, delay: '100-500ms', body: 'down', headers: { 'Retry-After': '1' }, repeat: 2 },
        // Every fault a control header gives (#31), as the header's text.
        {
          status: 200,
          error: 'reset:50,503:10',
          size: '1024',
          compress: 'gzip',
          contentType: 'application/json',
          throttle: '10KB/s',
          chunkDelay: '5ms',
          chunkSize: '512',
          bodyDelay: '10ms',
          retryAfter: '30',
        },
        { status: 200 },
      ],
    },
  });
  const plain = scenarioOf({
    metadata: { name: 'plain' },
    spec: { target: { service: 'echo', port: 'http' }, path: '/a', responses: [{ status: 418 }] },
  });
  // Order by weight and the windows (#31 items 3, 4).
  const drawn = scenarioOf({
    metadata: { name: 'drawn' },
    spec: {
      target: { service: 'echo', port: 'http' },
      path: '/drawn',
      order: 'random',
      activeFor: '10m',
      times: 5,
      responses: [
        { status: 503, weight: 2 },
        { status: 200, weight: 8, repeat: 2 },
      ],
    },
  });
  assert.deepEqual([drawn.order, drawn.activeFor, drawn.times], ['random', '10m', 5]);
  const array = [rich, plain, drawn];
  const verified = createVerifiedPush(push, readBack);
  assert.equal(await verified(endpoint(echo.port), array, JSON.stringify(array)), scenarioSetHash(array));
});

test('verify – with the pod dispatcher a push and its read-backs share one connection, closed with it', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const sockets: Array<{ closed: boolean }> = [];
  echo.app.server.on('connection', (socket) => {
    const entry = { closed: false };
    sockets.push(entry);
    socket.on('close', () => {
      entry.closed = true;
    });
  });
  const dispatcher = createPodDispatcher();
  const metrics = { pushes: { inc() {} }, pushSeconds: { startTimer: () => () => 0 } } as never;
  const verified = createVerifiedPush(
    createPushClient({ timeoutMs: 5000, metrics, dispatcher }),
    createReadBackClient({ timeoutMs: 5000, dispatcher }),
  );
  for (const status of [503, 502, 501]) {
    const result = validateScenarios([{ path: '/a', responses: [{ status }] }]);
    assert.ok(result.ok);
    await verified(endpoint(echo.port), result.scenarios, JSON.stringify(result.scenarios));
  }
  assert.equal(sockets.length, 1, 'three pushes and three read-backs, one connection');
  await dispatcher.close();
  // Closing the dispatcher closes its idle connection (long before echo's keep-alive timeout).
  await until("the dispatcher's idle connection closed", () => sockets[0]!.closed, 10_000);
});
