/**
 * `POST /scenario` with a response's gRPC fields (issue #36 item 4): a valid set is stored with
 * them as written; a bad `grpcStatus` (or any other gRPC field) is a 400 naming the field and the
 * value, and the stored set, its tag and its cycle stay as they were.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startEcho } from '../helpers/echo-server.ts';
import { type Answer, send } from '../helpers/http.ts';

const ECHO = '/echochaos.v1.EchoService/Echo';

const GOOD = [
  {
    name: 'echo-flaky',
    path: ECHO,
    cycle: false,
    responses: [
      {
        grpcStatus: 'UNAVAILABLE',
        grpcMessage: 'warming up',
        grpcTrailers: { 'retry-after-ms': '100', 'trace-bin': 'AAEC' },
        repeat: 2,
      },
      { grpcStatus: 0, grpcMetadata: { 'x-served-by': 'echo-chaos' } },
    ],
  },
  { path: '/keep', responses: [{ status: 201 }, { status: 202 }] },
];

function post(url: string, body: unknown): Promise<Answer> {
  return send(`${url}/scenario`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

interface ErrorBody {
  error: { code: string; message: string; details?: Array<{ field: string; message: string }> };
}

test('scenario gRPC fields – POST /scenario stores them as written; a bad grpcStatus is a 400 naming it and the set stays', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  assert.equal((await post(echo.url, GOOD)).status, 200);
  const stored = await send(`${echo.url}/scenario`);
  assert.deepEqual(JSON.parse(stored.text), GOOD);
  const tag = stored.headers['etag'];
  assert.equal((await send(`${echo.url}/keep`)).status, 201);

  const cases: Array<{ response: object; field: string; says: RegExp }> = [
    {
      response: { grpcStatus: 'UNAVAILABLE_NOW' },
      field: '/0/responses/0/grpcStatus',
      says: /^grpcStatus must be a gRPC status code 0-16 or its name in any case \(.*\), got "UNAVAILABLE_NOW"$/,
    },
    {
      response: { grpcStatus: 17 },
      field: '/0/responses/0/grpcStatus',
      says: /^grpcStatus must be a gRPC status code 0-16 .*, got 17$/,
    },
    {
      response: { grpcStatus: 'OK', grpcMessage: 'all good' },
      field: '/0/responses/0/grpcMessage',
      says: /^grpcMessage cannot go beside grpcStatus "OK" \(OK\)/,
    },
    {
      response: { grpcStatus: 14, grpcTrailers: { 'grpc-status': '0' } },
      field: '/0/responses/0/grpcTrailers/grpc-status',
      says: /^trailer key "grpc-status" is reserved/,
    },
  ];
  for (const { response, field, says } of cases) {
    const res = await post(echo.url, [{ path: ECHO, responses: [response] }]);
    assert.equal(res.status, 400, res.text);
    const body = JSON.parse(res.text) as ErrorBody;
    assert.equal(body.error.code, 'ECHO_ERR_INVALID_SCENARIOS');
    assert.deepEqual(
      body.error.details?.map((d) => d.field),
      [field],
      JSON.stringify(body.error.details),
    );
    assert.match(body.error.details?.[0]?.message ?? '', says);
    assert.ok(body.error.message.includes(field), body.error.message);
  }

  const after = await send(`${echo.url}/scenario`);
  assert.deepEqual(JSON.parse(after.text), GOOD, 'the old set stays');
  assert.equal(after.headers['etag'], tag, 'and so does its tag');
  assert.equal((await send(`${echo.url}/keep`)).status, 202, 'and its cycle goes on where it was');
});

test('scenario gRPC fields – the same set posted as YAML, status as a number, has its own tag', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const yaml = (status: string) =>
    [`- path: ${ECHO}`, '  responses:', `    - grpcStatus: ${status}`, '      grpcMessage: down'].join('\n');
  const tags: string[] = [];
  for (const status of ['14', 'UNAVAILABLE', '13']) {
    const res = await send(`${echo.url}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/yaml' },
      body: yaml(status),
    });
    assert.equal(res.status, 200, res.text);
    const stored = await send(`${echo.url}/scenario`);
    tags.push(String(stored.headers['etag']));
    assert.equal(
      (JSON.parse(stored.text) as Array<{ responses: Array<{ grpcStatus: unknown }> }>)[0]?.responses[0]
        ?.grpcStatus,
      status === 'UNAVAILABLE' ? status : Number(status),
    );
  }
  assert.equal(new Set(tags).size, 3, `a changed grpcStatus is a different set: ${tags.join(' ')}`);
});
