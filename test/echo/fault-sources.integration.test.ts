import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { request } from 'undici';
import { loadConfig } from '../../src/echo/config.ts';
import { EchoConfigError } from '../../src/echo/errors.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { rawExchange } from '../helpers/protocol-clients.ts';

/**
 * One fault vocabulary (ADR 0033, #31 items 1 and 2): every control header has an environment
 * default read by the header's own parser, and every fault a scenario response can carry; per
 * field, the request's header wins over its scenario response, which wins over the environment.
 * Each checked over HTTP against a started server, the way a client that sends no header meets it.
 */

type Applied = Array<{ kind: string; control: string; source: string; value: string | number }>;

async function get(url: string, headers: Record<string, string> = {}) {
  const res = await request(url, { headers });
  const body = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, headers: res.headers, body };
}

function applied(headers: Record<string, string | string[] | undefined>): Applied {
  const raw = headers['x-echo-applied'];
  return raw === undefined ? [] : (JSON.parse(String(raw)) as Applied);
}

async function postScenarios(echo: RunningEcho, scenarios: unknown) {
  const res = await request(`${echo.url}/scenario`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(scenarios),
  });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}

async function listedScenarios(echo: RunningEcho): Promise<unknown> {
  return (await request(`${echo.url}/scenario`)).body.json();
}

/** Whether a request to `url` fails at the socket (a reset or a close), as a crashed server's would. */
async function socketFails(url: string): Promise<boolean> {
  try {
    const res = await request(url);
    await res.body.arrayBuffer();
    return false;
  } catch (error) {
    // A reset reaches undici as ECONNRESET, a close as UND_ERR_SOCKET ("other side closed").
    return ['ECONNRESET', 'UND_ERR_SOCKET'].includes((error as { code?: string }).code ?? '');
  }
}

describe('environment defaults', () => {
  let echo: RunningEcho;
  before(async () => {
    echo = await startEcho({
      ECHO_STATUS: '503',
      ECHO_RETRY_AFTER: '7',
      ECHO_CONTENT_TYPE: 'application/x-env',
      ECHO_LATENCY: '5ms',
    });
  });
  after(() => echo.close());

  test('a request without headers gets every default, each named as coming from its variable', async () => {
    const res = await get(`${echo.url}/orders`, { 'x-echo-explain': 'true' });
    assert.equal(res.status, 503);
    assert.equal(res.headers['retry-after'], '7');
    assert.equal(res.headers['content-type'], 'application/x-env');
    const faults = applied(res.headers);
    assert.deepEqual(
      faults.map((f) => [f.kind, f.control, f.source]),
      [
        ['delay', 'ECHO_LATENCY', 'env'],
        ['status', 'ECHO_STATUS', 'env'],
      ],
    );
  });

  test("a request's header wins over the variable, field by field", async () => {
    const res = await get(`${echo.url}/orders`, {
      'x-echo-status': '201',
      'x-echo-delay': '0ms',
      'x-echo-explain': 'true',
    });
    assert.equal(res.status, 201);
    // The fields the headers leave unset still come from the environment.
    assert.equal(res.headers['content-type'], 'application/x-env');
    assert.deepEqual(applied(res.headers), [
      { kind: 'status', control: 'X-Echo-Status', source: 'header', value: 201 },
    ]);
  });

  test('the service routes are untouched: /health, /ready and /metrics answer as always', async () => {
    for (const path of ['/health', '/ready', '/metrics', '/scenario', '/history']) {
      const res = await get(`${echo.url}${path}`);
      assert.equal(res.status, 200, path);
      assert.notEqual(res.headers['content-type'], 'application/x-env', path);
      assert.equal(res.headers['retry-after'], undefined, path);
    }
  });

  test('a scenario response without a status takes ECHO_STATUS; one with a status keeps its own', async () => {
    const set = [
      { path: '/no-status', responses: [{ body: 'scripted' }] },
      { path: '/own-status', responses: [{ status: 201, body: 'scripted' }] },
    ];
    assert.equal((await postScenarios(echo, set)).status, 200);
    try {
      const without = await get(`${echo.url}/no-status`);
      assert.equal(without.status, 503);
      assert.equal(without.body.toString(), 'scripted');
      assert.equal((await get(`${echo.url}/own-status`)).status, 201);
    } finally {
      await postScenarios(echo, []);
    }
  });

  test("a scenario response's status wins over ECHO_STATUS, and its contentType over ECHO_CONTENT_TYPE", async () => {
    assert.equal(
      (
        await postScenarios(echo, [
          { path: '/scripted', responses: [{ status: 202, body: 'ok', contentType: 'text/x-scn' }] },
        ])
      ).status,
      200,
    );
    try {
      const res = await get(`${echo.url}/scripted`);
      assert.equal(res.status, 202);
      assert.equal(res.headers['content-type'], 'text/x-scn');
      assert.equal(res.body.toString(), 'ok');
    } finally {
      await postScenarios(echo, []);
    }
  });
});

describe('an environment error default', () => {
  let echo: RunningEcho;
  before(async () => {
    echo = await startEcho({ ECHO_ERROR: 'reset' });
  });
  after(() => echo.close());

  test('ECHO_ERROR=reset resets every echo request and none of the service routes', async () => {
    assert.equal(await socketFails(`${echo.url}/pay`), true);
    assert.equal((await get(`${echo.url}/health`)).status, 200);
    // A header says otherwise for its own request.
    assert.equal((await get(`${echo.url}/pay`, { 'x-echo-error': '500:0' })).status, 200);
  });
});

describe('scenario responses carry any fault', () => {
  let echo: RunningEcho;
  before(async () => {
    echo = await startEcho();
  });
  after(() => echo.close());

  test('reset twice, then succeed: the retry test written without a header', async () => {
    const set = [
      {
        path: '/flaky',
        responses: [
          { status: 200, error: 'reset', repeat: 2 },
          { status: 200, body: 'ok' },
        ],
      },
    ];
    assert.equal((await postScenarios(echo, set)).status, 200);
    assert.equal(await socketFails(`${echo.url}/flaky`), true, 'first request reset');
    assert.equal(await socketFails(`${echo.url}/flaky`), true, 'second request reset');
    const third = await get(`${echo.url}/flaky`);
    assert.equal(third.status, 200);
    assert.equal(third.body.toString(), 'ok');
    const history = (await (await request(`${echo.url}/history?limit=3`)).body.json()) as Array<{
      url: string;
      faults?: Applied;
    }>;
    const resets = history.filter((e) => e.url === '/flaky' && e.faults?.some((f) => f.kind === 'reset'));
    assert.equal(resets.length, 2);
    assert.deepEqual(
      resets[0]?.faults?.find((f) => f.kind === 'reset'),
      { kind: 'reset', control: 'scenario /flaky', source: 'scenario', value: 'reset' },
    );
  });

  test('size, compress, contentType, retryAfter, throttle, chunking and body delay from a response', async () => {
    const set = [
      {
        path: '/shaped',
        responses: [
          {
            status: 429,
            size: '2048',
            compress: 'gzip',
            contentType: 'application/x-shaped',
            retryAfter: '30',
            throttle: '1MB/s',
            chunkSize: '512',
            chunkDelay: '1ms',
            bodyDelay: '1ms',
          },
        ],
      },
    ];
    assert.equal((await postScenarios(echo, set)).status, 200);
    const res = await get(`${echo.url}/shaped`, { 'x-echo-explain': 'true' });
    assert.equal(res.status, 429);
    assert.equal(res.headers['content-encoding'], 'gzip');
    assert.equal(res.headers['content-type'], 'application/x-shaped');
    assert.equal(res.headers['retry-after'], '30');
    assert.equal(gunzipSync(res.body).length, 2048);
    const kinds = applied(res.headers).map((f) => `${f.kind}:${f.control}:${f.source}`);
    for (const kind of ['throttle', 'delay']) {
      assert.ok(
        kinds.includes(`${kind}:scenario /shaped:scenario`),
        `${kind} from the scenario in ${kinds.join(' ')}`,
      );
    }
  });

  test("a header wins over the scenario's field; the fields it leaves unset stay the scenario's", async () => {
    const set = [
      {
        path: '/typed',
        responses: [{ status: 200, body: '{}', contentType: 'application/json', retryAfter: '9' }],
      },
    ];
    assert.equal((await postScenarios(echo, set)).status, 200);
    const res = await get(`${echo.url}/typed`, { 'x-echo-content-type': 'text/csv', 'x-echo-status': '503' });
    assert.equal(res.status, 503);
    assert.equal(res.headers['content-type'], 'text/csv');
    assert.equal(res.headers['retry-after'], '9');
  });

  test('a weighted error list in a scenario draws per request, seeded', async () => {
    const set = [{ path: '/weighted', responses: [{ status: 200, body: 'fine', error: '503:50' }] }];
    assert.equal((await postScenarios(echo, set)).status, 200);
    const statuses = new Set<number>();
    for (let seed = 1; seed <= 40; seed++) {
      statuses.add((await get(`${echo.url}/weighted`, { 'x-echo-seed': String(seed) })).status);
    }
    assert.deepEqual([...statuses].sort(), [200, 503]);
    const a = await get(`${echo.url}/weighted`, { 'x-echo-seed': '7' });
    const b = await get(`${echo.url}/weighted`, { 'x-echo-seed': '7' });
    assert.equal(a.status, b.status, 'the same seed draws the same answer');
  });

  test("truncate and malformed from a scenario break that response's own status, headers and body", async () => {
    const body = '{"orders":[1,2,3,4]}';
    const set = [
      {
        path: '/broken',
        responses: [
          {
            status: 503,
            error: 'truncate',
            body,
            headers: { 'Content-Type': 'application/json', 'X-Shard': '7' },
          },
          { status: 201, error: 'malformed', body },
        ],
      },
    ];
    assert.equal((await postScenarios(echo, set)).status, 200);
    const truncated = await rawExchange(echo.port, 'GET /broken HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.match(truncated, /^HTTP\/1\.1 503 Service Unavailable\r\n/);
    assert.match(truncated, /\r\ncontent-type: application\/json\r\n/i);
    assert.match(truncated, /\r\nx-shard: 7\r\n/i);
    assert.match(truncated, new RegExp(`\\r\\ncontent-length: ${body.length}\\r\\n`, 'i'));
    assert.ok(truncated.endsWith(`\r\n\r\n${body.slice(0, body.length / 2)}`), truncated);
    const malformed = await rawExchange(echo.port, 'GET /broken HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.match(malformed, /^HTTP\/1\.1 201 Created\r\n/);
    assert.ok(malformed.includes(`\r\n\r\na\r\n${body.slice(0, 10)}\r\nzz\r\n`), malformed);
  });

  test('the same fields in YAML, as a scenario file holds them', async () => {
    const yaml = [
      '- path: /yaml-flaky',
      '  responses:',
      '    - { status: 200, error: reset, repeat: 1 }',
      '    - { status: 503, retryAfter: "12", contentType: text/x-yaml-set, body: later }',
    ].join('\n');
    const posted = await request(`${echo.url}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/yaml' },
      body: yaml,
    });
    assert.equal(posted.statusCode, 200, await posted.body.text());
    assert.equal(await socketFails(`${echo.url}/yaml-flaky`), true);
    const second = await get(`${echo.url}/yaml-flaky`);
    assert.equal(second.status, 503);
    assert.equal(second.headers['retry-after'], '12');
    assert.equal(second.headers['content-type'], 'text/x-yaml-set');
    assert.equal(second.body.toString(), 'later');
  });

  test('a bad fault field is a 400 naming it, and the stored set stays as it was', async () => {
    const stored = [{ path: '/kept', responses: [{ status: 200, error: 'truncate' }] }];
    assert.equal((await postScenarios(echo, stored)).status, 200);
    const before = await listedScenarios(echo);
    const bad: Array<[string, string]> = [
      ['error', 'explode'],
      ['error', '503:150'],
      ['size', 'lots'],
      ['compress', 'zip'],
      ['contentType', 'not a type'],
      ['throttle', 'fast'],
      ['chunkDelay', '1 fortnight'],
      ['chunkSize', '0'],
      ['bodyDelay', '999h'],
      ['retryAfter', 'tomorrow'],
    ];
    for (const [field, value] of bad) {
      const res = await postScenarios(echo, [{ path: '/bad', responses: [{ status: 200, [field]: value }] }]);
      assert.equal(res.status, 400, `${field}=${value}`);
      assert.match(JSON.stringify(res.body), new RegExp(`/0/responses/0/${field}`), `${field} named`);
      assert.deepEqual(await listedScenarios(echo), before, `set unchanged after ${field}=${value}`);
    }
    // A problem of the whole set is said without an empty location in front of it.
    const notAList = await postScenarios(echo, { path: '/x' });
    assert.equal(notAList.status, 400);
    const error = notAList.body['error'] as { message?: string } | undefined;
    assert.match(String(error?.message), /^invalid scenarios: input must be an array of scenarios/);
    assert.deepEqual(await listedScenarios(echo), before);
    // Read back as sent: the fields are part of the stored set.
    assert.deepEqual(before, stored);
  });
});

describe('a bad environment default stops startup', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['ECHO_STATUS', 'teapot', /ECHO_STATUS="teapot" is invalid: expected an HTTP status/],
    ['ECHO_ERROR', 'explode', /ECHO_ERROR="explode" is invalid: expected a status 400-599/],
    ['ECHO_JITTER', '200', /ECHO_JITTER="200" is invalid: expected base,jitter/],
    ['ECHO_RANDOM_DELAY', '5,1', /ECHO_RANDOM_DELAY="5,1" is invalid: expected min,max/],
    ['ECHO_EXPONENTIAL', '100,99', /ECHO_EXPONENTIAL="100,99" is invalid: expected base_ms,attempt/],
    ['ECHO_LATENCY', '10h', /ECHO_LATENCY="10h" is invalid: .*above ECHO_MAX_DELAY/],
    ['ECHO_RESPONSE_SIZE', '-1', /ECHO_RESPONSE_SIZE="-1" is invalid: expected a non-negative integer/],
    ['ECHO_COMPRESS', 'zip', /ECHO_COMPRESS="zip" is invalid: expected gzip, br or deflate/],
    ['ECHO_CONTENT_TYPE', 'json', /ECHO_CONTENT_TYPE="json" is invalid: expected a media type/],
    ['ECHO_THROTTLE', 'fast', /ECHO_THROTTLE="fast" is invalid: expected a rate/],
    ['ECHO_CHUNK_DELAY', 'soon', /ECHO_CHUNK_DELAY="soon" is invalid: expected a duration/],
    ['ECHO_CHUNK_SIZE', '0', /ECHO_CHUNK_SIZE="0" is invalid: expected an integer number of bytes/],
    ['ECHO_BODY_DELAY', '9h', /ECHO_BODY_DELAY="9h" is invalid: .*above ECHO_MAX_DELAY/],
    ['ECHO_RETRY_AFTER', 'later', /ECHO_RETRY_AFTER="later" is invalid: expected whole seconds/],
  ];
  for (const [name, value, expected] of cases) {
    test(`${name}=${value}`, () => {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (error: unknown) => {
          assert.ok(error instanceof EchoConfigError);
          assert.match(error.message, expected);
          return true;
        },
      );
    });
  }

  test('a good value of each is taken, an empty one is no default', () => {
    const config = loadConfig({ ECHO_STATUS: '503:10', ECHO_THROTTLE: '', ECHO_CHUNK_SIZE: '512' });
    assert.deepEqual(config.faultDefaults?.chunkBytes, 512);
    assert.equal(config.faultDefaults?.throttle, undefined);
    assert.equal(config.faultDefaults?.statuses?.total, 100_000);
    assert.equal(loadConfig({}).faultDefaults, undefined);
  });
});
