import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { after, before, test } from 'node:test';
import { request } from 'undici';
import pkg from '../../package.json' with { type: 'json' };
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { scrapeValue } from '../helpers/metrics.ts';
import { h2Request, openH2 } from '../helpers/protocol-clients.ts';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

async function send(
  url: string,
  headers: Record<string, string> = {},
  options: { method?: 'GET' | 'POST'; body?: string } = {},
): Promise<Answer> {
  const res = await request(url, {
    method: options.method ?? 'GET',
    headers,
    ...(options.body === undefined ? {} : { body: options.body }),
  });
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
}

interface ErrorJson {
  error: {
    code: string;
    message: string;
    request_id: string;
    details?: Array<{ field: string; value?: string; message: string }>;
  };
}

function errorOf(answer: Answer): ErrorJson['error'] {
  assert.match(String(answer.headers['content-type']), /^application\/json/);
  return (JSON.parse(answer.body) as ErrorJson).error;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let echo: RunningEcho;

before(async () => {
  echo = await startEcho();
});

after(async () => {
  await echo.close();
});

// --- X-Echo-Set-Header-<Name> ----------------------------------------------------------------------

test('X-Echo-Set-Header – sets the named response header with the given value', async () => {
  const r = await send(`${echo.url}/set`, {
    'X-Echo-Set-Header-Cache-Control': 'no-store, max-age=0',
    'x-echo-set-header-x-custom-thing': 'a value, with commas',
    'X-Echo-Set-Header-Location': '/elsewhere',
  });
  assert.equal(r.status, 200);
  assert.equal(r.headers['cache-control'], 'no-store, max-age=0');
  assert.equal(r.headers['x-custom-thing'], 'a value, with commas');
  assert.equal(r.headers['location'], '/elsewhere');
  assert.match(r.body, /^GET \/set HTTP\/1\.1\n/);
});

test('X-Echo-Set-Header – also applies to injected faults', async () => {
  const r = await send(`${echo.url}/set`, {
    'X-Echo-Set-Header-Retry-After': '30',
    'X-Echo-Error': 'internal',
  });
  assert.equal(r.status, 500);
  assert.equal(r.headers['retry-after'], '30');
});

test('X-Echo-Set-Header – framing headers are refused with a 400 naming each', async () => {
  const framing = [
    'content-length',
    'transfer-encoding',
    'connection',
    'keep-alive',
    'upgrade',
    'trailer',
    'te',
    'proxy-connection',
    'http2-settings',
  ];
  for (const name of framing) {
    const r = await send(`${echo.url}/set`, { [`X-Echo-Set-Header-${name}`]: '5' });
    assert.equal(r.status, 400, name);
    const error = errorOf(r);
    assert.equal(error.code, 'ECHO_ERR_INVALID_HEADER');
    assert.deepEqual(error.details, [
      {
        field: `x-echo-set-header-${name}`,
        value: '5',
        message: `${name} frames the message or is connection-specific (HTTP/2 forbids it) and cannot be set`,
      },
    ]);
  }
});

// --- X-Echo-Headers ---------------------------------------------------------------------------------

test('X-Echo-Headers – echoes the listed request headers as X-Echoed-<Name>', async () => {
  const r = await send(`${echo.url}/mirror`, {
    'X-Echo-Headers': 'x-trace-id, User-Agent,authorization',
    'X-Trace-Id': 'trace-123',
    'User-Agent': 'probe/1.0',
    Authorization: 'Bearer abc',
  });
  assert.equal(r.status, 200);
  assert.equal(r.headers['x-echoed-x-trace-id'], 'trace-123');
  assert.equal(r.headers['x-echoed-user-agent'], 'probe/1.0');
  assert.equal(r.headers['x-echoed-authorization'], 'Bearer abc');
});

test('X-Echo-Headers – a listed header the request lacks is simply not echoed', async () => {
  const r = await send(`${echo.url}/mirror`, { 'X-Echo-Headers': 'x-missing,x-present', 'X-Present': 'yes' });
  assert.equal(r.status, 200);
  assert.equal(r.headers['x-echoed-x-present'], 'yes');
  assert.equal(r.headers['x-echoed-x-missing'], undefined);
});

test('X-Echo-Headers – more than 64 names or an invalid name is a 400', async () => {
  const many = Array.from({ length: 65 }, (_, i) => `h${i}`).join(',');
  const sixtyFour = Array.from({ length: 64 }, (_, i) => `h${i}`).join(',');
  assert.equal((await send(`${echo.url}/mirror`, { 'X-Echo-Headers': sixtyFour })).status, 200);
  for (const value of [many, 'bad name', ',,']) {
    const r = await send(`${echo.url}/mirror`, { 'X-Echo-Headers': value });
    assert.equal(r.status, 400, `X-Echo-Headers: ${value.slice(0, 30)}`);
    assert.equal(errorOf(r).details?.[0]?.field, 'x-echo-headers');
  }
});

// --- Server info ----------------------------------------------------------------------------------

function assertServerInfo(headers: Answer['headers'], where: string): void {
  assert.equal(headers['x-echo-server'], hostname(), where);
  assert.equal(headers['x-echo-version'], pkg.version, where);
  assert.match(String(headers['x-echo-uptime']), /^(\d+d)?(\d+h)?(\d+m)?\d+s$/, where);
}

test('X-Echo-Server-Info – true adds X-Echo-Server, X-Echo-Version and X-Echo-Uptime', async () => {
  const r = await send(`${echo.url}/info-headers`, { 'X-Echo-Server-Info': 'true' });
  assert.equal(r.status, 200);
  assertServerInfo(r.headers, 'header true');
});

test('X-Echo-Server-Info – absent by default, and absent with false', async () => {
  for (const headers of [{}, { 'X-Echo-Server-Info': 'false' }] as Array<Record<string, string>>) {
    const r = await send(`${echo.url}/info-headers`, headers);
    assert.equal(r.status, 200);
    assert.equal(r.headers['x-echo-server'], undefined);
    assert.equal(r.headers['x-echo-version'], undefined);
    assert.equal(r.headers['x-echo-uptime'], undefined);
  }
});

test('X-Echo-Server-Info – a value other than true or false is a 400', async () => {
  const r = await send(`${echo.url}/info-headers`, { 'X-Echo-Server-Info': 'yes' });
  assert.equal(r.status, 400);
  assert.deepEqual(errorOf(r).details, [
    { field: 'x-echo-server-info', value: 'yes', message: 'expected true or false' },
  ]);
});

test('ECHO_SERVER_INFO – true adds the headers to every response; the header false beats it', async () => {
  const server = await startEcho({ ECHO_SERVER_INFO: 'true' });
  try {
    for (const path of ['/anything', '/health', '/metrics']) {
      assertServerInfo((await send(`${server.url}${path}`)).headers, path);
    }
    assertServerInfo((await send(`${server.url}/bad`, { 'X-Echo-Status': 'x' })).headers, 'on a 400');
    const off = await send(`${server.url}/anything`, { 'X-Echo-Server-Info': 'false' });
    assert.equal(off.headers['x-echo-server'], undefined);
    assert.equal(off.headers['x-echo-version'], undefined);
  } finally {
    await server.close();
  }
});

// --- ECHO_HEADER_<Name> -----------------------------------------------------------------------------

test('ECHO_HEADER_<Name> – set on every response: echo, service routes, errors and faults', async () => {
  const server = await startEcho({ ECHO_HEADER_X_Team: 'platform', ECHO_HEADER_X_Env_Name: 'test' });
  try {
    const answers: Record<string, Answer> = {
      echo: await send(`${server.url}/x`),
      post: await send(`${server.url}/x`, { 'content-type': 'text/plain' }, { method: 'POST', body: 'b' }),
      health: await send(`${server.url}/health`),
      info: await send(`${server.url}/info`),
      history: await send(`${server.url}/history`),
      invalid: await send(`${server.url}/x`, { 'X-Echo-Chaos': '500' }),
      fault: await send(`${server.url}/x`, { 'X-Echo-Error': 'unavailable' }),
    };
    for (const [what, r] of Object.entries(answers)) {
      assert.equal(r.headers['x-team'], 'platform', what);
      assert.equal(r.headers['x-env-name'], 'test', what);
    }
    assert.equal(answers['invalid']?.status, 400);
    assert.equal(answers['fault']?.status, 503);
  } finally {
    await server.close();
  }
});

// --- X-Request-ID and X-Echo-Request-Count ----------------------------------------------------------

test('X-Request-ID – a sent id is returned unchanged', async () => {
  const r = await send(`${echo.url}/id`, { 'X-Request-ID': 'client-chosen-id-42' });
  assert.equal(r.headers['x-request-id'], 'client-chosen-id-42');
});

test('X-Request-ID – generated when absent, different each time', async () => {
  const a = await send(`${echo.url}/id`);
  const b = await send(`${echo.url}/id`);
  assert.match(String(a.headers['x-request-id']), UUID);
  assert.match(String(b.headers['x-request-id']), UUID);
  assert.notEqual(a.headers['x-request-id'], b.headers['x-request-id']);
});

test('X-Request-ID – on a 400 the header and the error body carry the same id', async () => {
  const kept = await send(`${echo.url}/id`, { 'X-Request-ID': 'bad-req-1', 'X-Echo-Status': 'nope' });
  assert.equal(kept.status, 400);
  assert.equal(kept.headers['x-request-id'], 'bad-req-1');
  assert.equal(errorOf(kept).request_id, 'bad-req-1');
  const generated = await send(`${echo.url}/id`, { 'X-Echo-Status': 'nope' });
  assert.match(String(generated.headers['x-request-id']), UUID);
  assert.equal(errorOf(generated).request_id, generated.headers['x-request-id']);
});

test('X-Request-ID – kept on injected faults and on a 413', async () => {
  const fault = await send(`${echo.url}/id`, { 'X-Request-ID': 'fault-1', 'X-Echo-Error': '502' });
  assert.equal(fault.status, 502);
  assert.equal(fault.headers['x-request-id'], 'fault-1');
  const server = await startEcho({ MAX_BODY_SIZE: '10' });
  try {
    const big = await send(
      `${server.url}/id`,
      { 'X-Request-ID': 'too-big-1', 'content-type': 'text/plain' },
      { method: 'POST', body: 'x'.repeat(100) },
    );
    assert.equal(big.status, 413);
    assert.equal(big.headers['x-request-id'], 'too-big-1');
    assert.equal(errorOf(big).request_id, 'too-big-1');
  } finally {
    await server.close();
  }
});

test('X-Echo-Request-Count – counts up by one per request, errors and service routes included', async () => {
  const server = await startEcho();
  try {
    const counts: number[] = [];
    const requests: Array<Record<string, string>> = [
      {},
      { 'X-Echo-Status': 'bad' },
      {},
      { 'X-Echo-Error': '500' },
    ];
    for (const headers of requests) {
      counts.push(Number((await send(`${server.url}/count`, headers)).headers['x-echo-request-count']));
    }
    counts.push(Number((await send(`${server.url}/health`)).headers['x-echo-request-count']));
    assert.deepEqual(counts, [1, 2, 3, 4, 5]);
  } finally {
    await server.close();
  }
});

test('X-Echo-Request-Count – response-only headers sent back by a client are ignored, not refused', async () => {
  const r = await send(`${echo.url}/reflect`, {
    'X-Echo-Request-Count': '999',
    'X-Echo-Fault': 'chaos',
    'X-Echo-Server': 'someone',
    'X-Echo-Version': '9.9.9',
    'X-Echo-Uptime': '1s',
    'X-Echo-Replay-Of': 'abc',
    'X-Echo-Applied': '[{"kind":"delay"}]',
    'X-Echo-History-Id': 'abc-1',
  });
  assert.equal(r.status, 200);
  assert.notEqual(r.headers['x-echo-request-count'], '999');
  assert.equal(r.headers['x-echo-fault'], undefined);
});

// --- Unknown and invalid control headers --------------------------------------------------------------

test('unknown X-Echo-* header – a 400 with a did-you-mean for a near miss', async () => {
  const cases: Record<string, string> = {
    'X-Echo-Dealy': 'X-Echo-Delay',
    'X-Echo-Stauts': 'X-Echo-Status',
    'X-Echo-Chaoss': 'X-Echo-Chaos',
    'X-Echo-Compres': 'X-Echo-Compress',
  };
  for (const [typo, meant] of Object.entries(cases)) {
    const r = await send(`${echo.url}/typo`, { [typo]: '1' });
    assert.equal(r.status, 400, typo);
    const error = errorOf(r);
    assert.equal(error.code, 'ECHO_ERR_INVALID_HEADER');
    assert.deepEqual(error.details, [
      { field: typo.toLowerCase(), value: '1', message: `unknown control header; did you mean ${meant}?` },
    ]);
  }
});

test('unknown X-Echo-* header – a 400 without a suggestion when nothing is near', async () => {
  const r = await send(`${echo.url}/typo`, { 'X-Echo-Something-Else-Entirely': 'x' });
  assert.equal(r.status, 400);
  assert.deepEqual(errorOf(r).details, [
    { field: 'x-echo-something-else-entirely', value: 'x', message: 'unknown control header' },
  ]);
});

test('invalid control headers – several bad headers in one request give one 400 listing each', async () => {
  const r = await send(`${echo.url}/many`, {
    'X-Request-ID': 'many-1',
    'X-Echo-Status': 'abc',
    'X-Echo-Delay': 'soon',
    'X-Echo-Chaos': '150',
    'X-Echo-Dealy': '5',
    'X-Echo-Set-Header-Content-Length': '1',
    'X-Echo-Compress': 'gzip',
  });
  assert.equal(r.status, 400);
  assert.equal(r.headers['x-request-id'], 'many-1');
  assert.equal(r.headers['content-encoding'], undefined, 'a valid X-Echo-Compress does not act on a 400');
  const error = errorOf(r);
  assert.equal(error.code, 'ECHO_ERR_INVALID_HEADER');
  assert.equal(error.request_id, 'many-1');
  const fields = (error.details ?? []).map((d) => d.field).sort();
  assert.deepEqual(fields, [
    'x-echo-chaos',
    'x-echo-dealy',
    'x-echo-delay',
    'x-echo-set-header-content-length',
    'x-echo-status',
  ]);
  for (const field of fields)
    assert.ok(error.message.includes(field), `message names ${field}: ${error.message}`);
  for (const detail of error.details ?? []) assert.ok(detail.message.length > 0, detail.field);
});

test('invalid control headers – nothing happens: no history, no delay, no fault, no scenario step', async () => {
  const server = await startEcho(
    {},
    {
      scenarios: [
        {
          path: '/scripted',
          responses: [
            { status: 201, body: 'first' },
            { status: 202, body: 'second' },
          ],
        },
      ],
    },
  );
  try {
    const scenariosBefore = await send(`${server.url}/scenario`);
    const start = performance.now();
    const bad = await send(`${server.url}/scripted`, {
      'X-Echo-Delay': '300ms',
      'X-Echo-Error': 'internal',
      'X-Echo-Chaos': 'always',
    });
    assert.equal(bad.status, 400);
    assert.ok(performance.now() - start < 200, 'the valid delay did not run');
    assert.equal(bad.headers['x-echo-fault'], undefined);
    const again = await send(`${server.url}/scripted`, { 'X-Echo-Stauts': '200' });
    assert.equal(again.status, 400);

    // The server still answers; the scenario cycle did not move; nothing was recorded.
    const first = await send(`${server.url}/scripted`);
    assert.equal(first.status, 201);
    assert.equal(first.body, 'first');
    const history = JSON.parse((await send(`${server.url}/history`)).body) as Array<{ path: string }>;
    assert.deepEqual(
      history.map((e) => e.path),
      ['/scripted'],
    );
    const scenariosAfter = await send(`${server.url}/scenario`);
    assert.equal(scenariosAfter.body, scenariosBefore.body);
    assert.equal(await scrapeValue(server.url, 'echo_chaos_errors_total{type="internal"}'), 0);
  } finally {
    await server.close();
  }
});

test('X-Echo-History-Enabled – false keeps the request out of history; a bad value is a 400', async () => {
  const server = await startEcho();
  try {
    await send(`${server.url}/hidden`, { 'X-Echo-History-Enabled': 'false' });
    await send(`${server.url}/shown`, { 'X-Echo-History-Enabled': 'true' });
    const bad = await send(`${server.url}/bad`, { 'X-Echo-History-Enabled': 'nope' });
    assert.equal(bad.status, 400);
    const history = JSON.parse((await send(`${server.url}/history`)).body) as Array<{ path: string }>;
    assert.deepEqual(
      history.map((e) => e.path),
      ['/shown'],
    );
  } finally {
    await server.close();
  }
});

test('X-Echo-Set-Header – a header HTTP/2 forbids is a 400 over HTTP/2 too, and the server keeps serving', async () => {
  const session = await openH2(echo.url);
  try {
    for (const name of ['Proxy-Connection', 'HTTP2-Settings', 'Connection', 'Upgrade', 'Keep-Alive']) {
      const r = await h2Request(session, {
        ':path': '/h2-set',
        [`x-echo-set-header-${name.toLowerCase()}`]: 'x',
      });
      assert.equal(r.status, 400, name);
      assert.equal(
        (JSON.parse(r.body.toString()) as { error: { code: string } }).error.code,
        'ECHO_ERR_INVALID_HEADER',
      );
    }
    const fine = await h2Request(session, { ':path': '/h2-set', 'x-echo-set-header-x-ok': 'yes' });
    assert.equal(fine.status, 200);
    assert.equal(fine.headers['x-ok'], 'yes');
  } finally {
    session.close();
  }
  assert.equal((await send(`${echo.url}/health`)).status, 200, 'the process is alive');
});

test('X-Echo-Error – a name of an Object property (constructor, __proto__, toString) is a 400, not a 500', async () => {
  for (const value of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
    const r = await send(`${echo.url}/proto`, { 'X-Echo-Error': value });
    assert.equal(r.status, 400, value);
    assert.equal(errorOf(r).code, 'ECHO_ERR_INVALID_HEADER');
  }
});
