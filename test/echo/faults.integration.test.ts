import assert from 'node:assert/strict';
import { STATUS_CODES } from 'node:http';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { request } from 'undici';
import { seededRandom } from '../../src/echo/random.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { within } from '../helpers/runtime.ts';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  elapsedMs: number;
}

async function get(url: string, headers: Record<string, string> = {}): Promise<Answer> {
  const start = performance.now();
  const res = await request(url, { headers });
  const body = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body, elapsedMs: performance.now() - start };
}

/** The value of one sample of /metrics, 0 when the series does not exist yet. */
async function metric(base: string, series: string): Promise<number> {
  const text = await (await request(`${base}/metrics`)).body.text();
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return 0;
}

interface RawExchange {
  /** Everything the server wrote, as latin1 text. */
  data: string;
  /** The socket error the client saw, if any (e.g. ECONNRESET). */
  error: string | undefined;
  /** True when the server closed the connection (FIN or RST) before `waitMs`. */
  closedByServer: boolean;
}

/** Sends raw HTTP/1.1 text and collects what comes back until the server closes or `waitMs` passes. */
function rawExchange(port: number, text: string, waitMs = 1000): Promise<RawExchange> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    let data = '';
    let error: string | undefined;
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ data, error, closedByServer: false });
    }, waitMs);
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1');
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      error = err.code;
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ data, error, closedByServer: true });
    });
  });
}

function injectedBody(status: number, kind: string): string {
  return `${status} ${STATUS_CODES[status]} (injected by echo-chaos: ${kind})\n`;
}

let echo: RunningEcho;

before(async () => {
  echo = await startEcho();
});

after(async () => {
  await echo.close();
});

// --- X-Echo-Status -------------------------------------------------------------------------------

test('X-Echo-Status – every status 200-599 is answered as asked, with the echo body where one is allowed', async () => {
  for (let status = 200; status <= 599; status++) {
    const r = await get(`${echo.url}/status`, { 'X-Echo-Status': String(status) });
    assert.equal(r.status, status, `X-Echo-Status: ${status}`);
    // 204, 205 and 304 carry no content by definition; every other status carries the echo.
    if (status === 204 || status === 205 || status === 304) assert.equal(r.body, '', `${status}`);
    else assert.match(r.body, /^GET \/status HTTP\/1\.1\n/, `${status}`);
    assert.equal(r.headers['x-echo-fault'], 'status', `${status} is an injected status`);
  }
});

test('X-Echo-Status – 204, 205 and 304 announce no content that never comes', async () => {
  for (const status of [204, 205, 304]) {
    const r = await rawExchange(
      echo.port,
      `GET /empty HTTP/1.1\r\nHost: x\r\nX-Echo-Status: ${status}\r\nConnection: close\r\n\r\n`,
    );
    const [head = '', body] = r.data.split('\r\n\r\n');
    assert.match(head, new RegExp(`^HTTP/1\\.1 ${status} `));
    assert.doesNotMatch(head, /content-length: [1-9]/i, `${status}: ${head}`);
    assert.equal(body, '', `${status} has no content`);
  }
});

test('X-Echo-Status – a POST with a status echoes its body under that status', async () => {
  const res = await request(`${echo.url}/created`, {
    method: 'POST',
    headers: { 'X-Echo-Status': '201', 'content-type': 'application/json' },
    body: '{"id":7}',
  });
  assert.equal(res.statusCode, 201);
  assert.equal(res.headers['content-type'], 'application/json');
  assert.equal(await res.body.text(), '{"id":7}');
});

for (const [status, line] of [
  [100, 'HTTP/1.1 100 Continue'],
  [102, 'HTTP/1.1 102 Processing'],
  [103, 'HTTP/1.1 103 Early Hints'],
  [150, 'HTTP/1.1 150 '],
] as const) {
  test(`X-Echo-Status – ${status} is sent as an interim response, then the request is answered 200`, async () => {
    const r = await rawExchange(
      echo.port,
      `GET /interim HTTP/1.1\r\nHost: x\r\nX-Echo-Status: ${status}\r\nConnection: close\r\n\r\n`,
    );
    assert.ok(r.data.startsWith(`${line}`), `the wire starts with the interim line: ${r.data.slice(0, 80)}`);
    const final = r.data.indexOf('HTTP/1.1 200 OK\r\n');
    assert.ok(final > 0, `a final 200 follows the interim response: ${r.data.slice(0, 200)}`);
    assert.match(r.data.slice(final), /\r\n\r\nGET \/interim HTTP\/1\.1\n/);
  });
}

test('X-Echo-Status – an HTTP client sees the final 200 after an interim 103', async () => {
  const r = await get(`${echo.url}/interim`, { 'X-Echo-Status': '103' });
  assert.equal(r.status, 200);
  assert.match(r.body, /^GET \/interim HTTP\/1\.1\n/);
});

test('X-Echo-Status – malformed or out-of-range values and 101 are a 400 naming the header', async () => {
  for (const value of ['abc', '99', '600', '20x', '2000', '', '101', '-200']) {
    const r = await get(`${echo.url}/status`, { 'X-Echo-Status': value });
    assert.equal(r.status, 400, `X-Echo-Status: ${JSON.stringify(value)}`);
    assert.match(String(r.headers['content-type']), /^application\/json/);
    const body = JSON.parse(r.body);
    assert.equal(body.error.code, 'ECHO_ERR_INVALID_HEADER');
    assert.equal(body.error.message, 'invalid control header: x-echo-status');
    assert.deepEqual(body.error.details, [
      {
        field: 'x-echo-status',
        value,
        message: 'expected an HTTP status 100-599 (101 cannot be injected)',
      },
    ]);
  }
});

// --- X-Echo-Error ---------------------------------------------------------------------------------

test('X-Echo-Error – every numeric code 400-599 answers with that status, X-Echo-Fault and a plain-text body', async () => {
  for (let status = 400; status <= 599; status++) {
    const r = await get(`${echo.url}/fail`, { 'X-Echo-Error': String(status) });
    assert.equal(r.status, status, `X-Echo-Error: ${status}`);
    assert.equal(r.headers['x-echo-fault'], 'error', `${status}`);
    assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8', `${status}`);
    assert.equal(r.body, `${status} ${STATUS_CODES[status] ?? 'Error'} (injected by echo-chaos: error)\n`);
  }
});

const NAMED: ReadonlyArray<readonly [string, number]> = [
  ['internal', 500],
  ['bad-gateway', 502],
  ['unavailable', 503],
  ['gateway-timeout', 504],
  ['rate-limit', 429],
];

for (const [name, status] of NAMED) {
  test(`X-Echo-Error – ${name} answers ${status} as an injected fault`, async () => {
    const r = await get(`${echo.url}/named`, { 'X-Echo-Error': name });
    assert.equal(r.status, status);
    assert.equal(r.headers['x-echo-fault'], 'error');
    assert.equal(r.body, injectedBody(status, 'error'));
    if (status === 429) assert.equal(r.headers['retry-after'], '1');
  });
}

test('X-Echo-Error – names are case-insensitive', async () => {
  const r = await get(`${echo.url}/named`, { 'X-Echo-Error': 'Bad-Gateway' });
  assert.equal(r.status, 502);
});

test('X-Echo-Error – rate-limit carries a Retry-After of whole seconds', async () => {
  const r = await get(`${echo.url}/limited`, { 'X-Echo-Error': 'rate-limit' });
  assert.equal(r.status, 429);
  assert.match(String(r.headers['retry-after']), /^[1-9]\d*$/);
});

for (const [draw, status] of [
  [0, 500],
  [0.2, 502],
  [0.4, 503],
  [0.6, 504],
  [0.999, 429],
] as const) {
  test(`X-Echo-Error – random with a draw of ${draw} picks ${status}`, async () => {
    const server = await startEcho({}, { random: () => draw });
    try {
      const r = await get(`${server.url}/random`, { 'X-Echo-Error': 'random' });
      assert.equal(r.status, status);
      assert.equal(r.headers['x-echo-fault'], 'error');
      assert.equal(r.body, injectedBody(status, 'error'));
      assert.equal(await metric(server.url, 'echo_chaos_errors_total{type="random"}'), 1);
    } finally {
      await server.close();
    }
  });
}

test('X-Echo-Error – timeout holds the request for ECHO_ERROR_TIMEOUT, then answers 504', async () => {
  const server = await startEcho({ ECHO_ERROR_TIMEOUT: '200ms' });
  try {
    const r = await get(`${server.url}/hang`, { 'X-Echo-Error': 'timeout' });
    assert.equal(r.status, 504);
    assert.ok(r.elapsedMs >= 180, `answered after ${r.elapsedMs.toFixed(1)} ms, expected at least 200`);
    assert.ok(r.elapsedMs < 200 + 2000, `answered after ${r.elapsedMs.toFixed(1)} ms: held far past 200 ms`);
    assert.equal(r.headers['x-echo-fault'], 'error');
    assert.equal(r.body, injectedBody(504, 'timeout'));
    assert.equal(await metric(server.url, 'echo_chaos_errors_total{type="timeout"}'), 1);
  } finally {
    await server.close();
  }
});

test('X-Echo-Error – reset: the client sees a connection reset and no response', async () => {
  const r = await rawExchange(echo.port, 'GET /reset HTTP/1.1\r\nHost: x\r\nX-Echo-Error: reset\r\n\r\n');
  assert.equal(r.closedByServer, true);
  assert.equal(r.error, 'ECONNRESET');
  assert.equal(r.data, '');
});

test('X-Echo-Error – close: the server closes the connection without a response', async () => {
  const r = await rawExchange(echo.port, 'GET /close HTTP/1.1\r\nHost: x\r\nX-Echo-Error: close\r\n\r\n');
  assert.equal(r.closedByServer, true);
  assert.equal(r.data, '');
});

test('X-Echo-Error – an HTTP client sees a socket error for reset and close', async () => {
  for (const kind of ['reset', 'close']) {
    await assert.rejects(
      request(`${echo.url}/${kind}`, { headers: { 'X-Echo-Error': kind } }).then((res) => res.body.text()),
      (err: Error & { code?: string }) => {
        assert.ok(
          ['UND_ERR_SOCKET', 'ECONNRESET'].includes(String(err.code)),
          `${kind}: unexpected error ${err.code} ${err.message}`,
        );
        return true;
      },
    );
  }
});

test('X-Echo-Error – after reset and close the server keeps serving and records status 0', async () => {
  const server = await startEcho();
  try {
    await rawExchange(
      server.port,
      'GET /r HTTP/1.1\r\nHost: x\r\nX-Request-ID: r-1\r\nX-Echo-Error: reset\r\n\r\n',
    );
    await rawExchange(
      server.port,
      'GET /c HTTP/1.1\r\nHost: x\r\nX-Request-ID: c-1\r\nX-Echo-Error: close\r\n\r\n',
    );
    const ok = await get(`${server.url}/after`);
    assert.equal(ok.status, 200);
    assert.equal((await get(`${server.url}/health`)).status, 200);
    const history = (await (await request(`${server.url}/history`)).body.json()) as Array<{
      id: string;
      status: number | null;
    }>;
    assert.deepEqual(
      history.filter((e) => e.id === 'r-1' || e.id === 'c-1').map((e) => [e.id, e.status]),
      [
        ['r-1', 0],
        ['c-1', 0],
      ],
    );
    assert.equal(await metric(server.url, 'echo_chaos_errors_total{type="reset"}'), 1);
    assert.equal(await metric(server.url, 'echo_chaos_errors_total{type="close"}'), 1);
  } finally {
    await server.close();
  }
});

test('X-Echo-Error – anything else is a 400 listing the accepted values', async () => {
  for (const value of ['teapot', '399', '600', '200', '5000', 'random-ish', '']) {
    const r = await get(`${echo.url}/fail`, { 'X-Echo-Error': value });
    assert.equal(r.status, 400, `X-Echo-Error: ${JSON.stringify(value)}`);
    assert.equal(r.headers['x-echo-fault'], undefined);
    const body = JSON.parse(r.body);
    assert.equal(body.error.code, 'ECHO_ERR_INVALID_HEADER');
    assert.equal(body.error.details[0].field, 'x-echo-error');
    assert.match(
      body.error.details[0].message,
      /internal, bad-gateway, unavailable, gateway-timeout, rate-limit/,
    );
  }
});

test('X-Echo-Error – echo_chaos_errors_total counts each fault under its type', async () => {
  const server = await startEcho();
  try {
    const sends: Record<string, number> = { internal: 2, 'rate-limit': 1, '418': 3, unavailable: 1 };
    for (const [value, times] of Object.entries(sends)) {
      for (let i = 0; i < times; i++) await get(`${server.url}/count`, { 'X-Echo-Error': value });
    }
    for (const [value, times] of Object.entries(sends)) {
      assert.equal(await metric(server.url, `echo_chaos_errors_total{type="${value}"}`), times, value);
    }
    assert.equal(await metric(server.url, 'echo_chaos_errors_total{type="chaos"}'), 0);
    assert.equal(
      await metric(server.url, 'echo_requests_total{method="GET",path="/count",status="418",fault="error"}'),
      3,
    );
  } finally {
    await server.close();
  }
});

test('X-Echo-Error – a delay runs before the error: Delay 150ms + Error 503 answers 503 after ~150 ms', async () => {
  const r = await get(`${echo.url}/slow-fail`, { 'X-Echo-Delay': '150ms', 'X-Echo-Error': '503' });
  assert.equal(r.status, 503);
  assert.ok(r.elapsedMs >= 130, `answered after ${r.elapsedMs.toFixed(1)} ms`);
  assert.equal(r.headers['retry-after'], '1');
});

test('X-Echo-Error – beats X-Echo-Status', async () => {
  const r = await get(`${echo.url}/both`, { 'X-Echo-Status': '201', 'X-Echo-Error': '502' });
  assert.equal(r.status, 502);
  assert.equal(r.headers['x-echo-fault'], 'error');
});

// --- Chaos ---------------------------------------------------------------------------------------

const CHAOS_STATUSES = new Set([500, 502, 503, 504, 408, 429]);

/** Sends `count` sequential requests and returns the statuses in order. */
async function statuses(
  base: string,
  count: number,
  headers: Record<string, string> = {},
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const res = await request(`${base}/chaos`, { headers });
    await res.body.dump();
    out.push(res.statusCode);
  }
  return out;
}

test('X-Echo-Chaos – 30% over 1000 requests fails about 300 times, reproducibly for a seed', async () => {
  const first = await startEcho({}, { random: seededRandom(20240601) });
  const second = await startEcho({}, { random: seededRandom(20240601) });
  try {
    const a = await statuses(first.url, 1000, { 'X-Echo-Chaos': '30' });
    const b = await statuses(second.url, 1000, { 'X-Echo-Chaos': '30' });
    const failures = a.filter((s) => s !== 200);
    // Binomial(1000, 0.3): sd ≈ 14.5, so ±60 is more than 4 sd.
    assert.ok(failures.length >= 240 && failures.length <= 360, `${failures.length} failures of 1000`);
    assert.deepEqual(b, a, 'the same seed gives the very same sequence of answers');
    for (const s of failures) assert.ok(CHAOS_STATUSES.has(s), `chaos status ${s}`);
    // Over ~300 failures every one of the six statuses turns up.
    assert.deepEqual([...new Set(failures)].sort(), [408, 429, 500, 502, 503, 504]);
    assert.equal(await metric(first.url, 'echo_chaos_errors_total{type="chaos"}'), failures.length);
  } finally {
    await Promise.all([first.close(), second.close()]);
  }
});

test('ECHO_SEED – two processes with the same seed replay the same run; each request replays alone with its X-Echo-Seed', async () => {
  const first = await startEcho({ ECHO_SEED: '7', ECHO_CHAOS: '50' });
  const second = await startEcho({ ECHO_SEED: '7', ECHO_CHAOS: '50' });
  const unseeded = await startEcho({ ECHO_CHAOS: '50' });
  try {
    const run = async (base: string) => {
      const out: Array<{ status: number; seed: string }> = [];
      for (let i = 0; i < 200; i++) {
        const res = await request(`${base}/chaos`);
        await res.body.dump();
        out.push({ status: res.statusCode, seed: String(res.headers['x-echo-seed']) });
      }
      return out;
    };
    const a = await run(first.url);
    const b = await run(second.url);
    assert.deepEqual(b, a, 'the same ECHO_SEED gives the same seeds and answers');
    assert.equal(new Set(a.map((r) => r.seed)).size, 200, 'each request has a seed of its own');
    const failures = a.filter((r) => r.status !== 200).length;
    assert.ok(failures > 60 && failures < 140, `${failures} failures of 200 at 50%`);
    // Any one request replays on another process, unseeded, from its X-Echo-Seed alone.
    for (const { status, seed } of a.slice(0, 40)) {
      const res = await request(`${unseeded.url}/chaos`, { headers: { 'X-Echo-Seed': seed } });
      await res.body.dump();
      assert.equal(res.statusCode, status, `seed ${seed}`);
      assert.equal(res.headers['x-echo-seed'], seed);
    }
  } finally {
    await Promise.all([first.close(), second.close(), unseeded.close()]);
  }
});

test('X-Echo-Chaos – an injected chaos failure is plain text with X-Echo-Fault: chaos', async () => {
  const server = await startEcho({}, { random: () => 0 });
  try {
    const r = await get(`${server.url}/chaos`, { 'X-Echo-Chaos': '100', 'X-Request-ID': 'chaos-1' });
    // A draw of 0 is below any percentage and picks the first chaos status, 500.
    assert.equal(r.status, 500);
    assert.equal(r.headers['x-echo-fault'], 'chaos');
    assert.equal(r.headers['x-request-id'], 'chaos-1');
    assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(r.body, injectedBody(500, 'chaos'));
  } finally {
    await server.close();
  }
});

test('X-Echo-Chaos – 0 never fails, even with the most failure-prone draw', async () => {
  const server = await startEcho({}, { random: () => 0 });
  try {
    const all = await statuses(server.url, 200, { 'X-Echo-Chaos': '0' });
    assert.deepEqual(new Set(all), new Set([200]));
  } finally {
    await server.close();
  }
});

test('X-Echo-Chaos – 100 always fails, even with the least failure-prone draw', async () => {
  const server = await startEcho({}, { random: () => 0.999999 });
  try {
    const all = await statuses(server.url, 200, { 'X-Echo-Chaos': '100' });
    assert.equal(all.filter((s) => CHAOS_STATUSES.has(s)).length, 200);
  } finally {
    await server.close();
  }
});

test('X-Echo-Chaos – 100 with a real random source always fails with a chaos status', async () => {
  const all = await statuses(echo.url, 300, { 'X-Echo-Chaos': '100' });
  for (const s of all) assert.ok(CHAOS_STATUSES.has(s), `status ${s}`);
});

test('ECHO_CHAOS – sets the default percentage for requests without the header', async () => {
  const server = await startEcho({ ECHO_CHAOS: '100' }, { random: seededRandom(1) });
  try {
    const all = await statuses(server.url, 50);
    for (const s of all) assert.ok(CHAOS_STATUSES.has(s), `status ${s}`);
  } finally {
    await server.close();
  }
});

test('X-Echo-Chaos – the header beats ECHO_CHAOS in both directions', async () => {
  const always = await startEcho({ ECHO_CHAOS: '100' }, { random: () => 0 });
  const never = await startEcho({ ECHO_CHAOS: '0' }, { random: () => 0.5 });
  try {
    assert.deepEqual(new Set(await statuses(always.url, 50, { 'X-Echo-Chaos': '0' })), new Set([200]));
    const forced = await statuses(never.url, 50, { 'X-Echo-Chaos': '100' });
    for (const s of forced) assert.ok(CHAOS_STATUSES.has(s), `status ${s}`);
    // 50 with a draw of 0.5 (50.0 < 50 is false) does not fail; 51 does.
    assert.equal((await get(`${never.url}/edge`, { 'X-Echo-Chaos': '50' })).status, 200);
    assert.notEqual((await get(`${never.url}/edge`, { 'X-Echo-Chaos': '51' })).status, 200);
  } finally {
    await Promise.all([always.close(), never.close()]);
  }
});

test('ECHO_CHAOS – never touches the service routes, even at 100', async () => {
  const server = await startEcho({ ECHO_CHAOS: '100' }, { random: () => 0 });
  try {
    for (const path of ['/health', '/ready', '/metrics', '/info', '/history', '/scenario']) {
      for (let i = 0; i < 5; i++) {
        const r = await get(`${server.url}${path}`);
        assert.equal(r.status, 200, `${path}`);
        assert.equal(r.headers['x-echo-fault'], undefined, `${path}`);
      }
    }
    // The same server does fail an echo path, so chaos is really on.
    assert.equal((await get(`${server.url}/anything`)).status, 500);
  } finally {
    await server.close();
  }
});

test('X-Echo-Chaos – the header at 100 does not touch the service routes either', async () => {
  for (const path of ['/health', '/ready', '/metrics', '/info']) {
    const r = await get(`${echo.url}${path}`, { 'X-Echo-Chaos': '100' });
    assert.equal(r.status, 200, path);
  }
});

test('X-Echo-Chaos – values outside 0-100 or not integers are a 400', async () => {
  for (const value of ['101', '-1', '30%', '0.5', 'lots', '']) {
    const r = await get(`${echo.url}/chaos`, { 'X-Echo-Chaos': value });
    assert.equal(r.status, 400, `X-Echo-Chaos: ${JSON.stringify(value)}`);
    const body = JSON.parse(r.body);
    assert.equal(body.error.details[0].field, 'x-echo-chaos');
    assert.equal(body.error.details[0].message, 'expected an integer percentage 0-100');
  }
});

test('X-Echo-Chaos – a failed draw leaves the request to X-Echo-Error', async () => {
  const server = await startEcho({}, { random: () => 0.99 });
  try {
    const r = await get(`${server.url}/x`, { 'X-Echo-Chaos': '10', 'X-Echo-Error': 'bad-gateway' });
    assert.equal(r.status, 502);
    assert.equal(r.headers['x-echo-fault'], 'error');
  } finally {
    await server.close();
  }
});

/** Sends `head` on a keep-alive connection; answers what came back and whether the server closed it. */
async function keepAliveExchange(port: number, head: string): Promise<{ response: string; closed: boolean }> {
  const socket = net.connect(port, '127.0.0.1');
  let response = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    response += chunk;
  });
  // Open or closed is told by a second request once the first answer is whole: a kept-alive
  // connection answers it, a closed one ends first. Not by waiting for a close that does not come.
  let firstEnd = -1;
  const closed = new Promise<boolean>((resolve) => {
    socket.on('data', () => {
      if (firstEnd === -1) {
        firstEnd = wholeAnswerEnd(response);
        if (firstEnd !== -1) socket.write('GET /second HTTP/1.1\r\nHost: a\r\n\r\n');
      }
      if (firstEnd !== -1 && /^HTTP\/1\.1 \d{3} /.test(response.slice(firstEnd))) resolve(false);
    });
    socket.once('close', () => resolve(true));
    socket.once('error', () => resolve(true));
  });
  socket.write(head);
  const result = { response: '', closed: await within(closed, 'the connection closed, or a second answer') };
  socket.destroy();
  result.response = firstEnd === -1 ? response : response.slice(0, firstEnd);
  return result;
}

/** Where the first HTTP/1.1 answer in `text` ends (framed by its Content-Length), or -1 while it is not whole. */
function wholeAnswerEnd(text: string): number {
  const headEnd = text.indexOf('\r\n\r\n');
  if (headEnd === -1) return -1;
  const length = /\r\ncontent-length: (\d+)\r\n/i.exec(text.slice(0, headEnd + 2))?.[1];
  assert.ok(length !== undefined, `an answer framed by its Content-Length: ${text.slice(0, headEnd)}`);
  const end = headEnd + 4 + Number(length);
  return text.length >= end ? end : -1;
}

test('408 – an injected 408 announces Connection: close and closes the connection; other statuses keep it', async () => {
  for (const control of ['X-Echo-Error: 408', 'X-Echo-Status: 408']) {
    const { response, closed } = await keepAliveExchange(
      echo.port,
      `GET /timeout-408 HTTP/1.1\r\nHost: a\r\n${control}\r\n\r\n`,
    );
    assert.match(response, /^HTTP\/1\.1 408 /, control);
    assert.match(response, /\r\nconnection: close\r\n/i, control);
    assert.ok(closed, `${control}: the server closed the connection`);
  }
  const kept = await keepAliveExchange(
    echo.port,
    'GET /kept HTTP/1.1\r\nHost: a\r\nX-Echo-Error: 503\r\n\r\n',
  );
  assert.match(kept.response, /^HTTP\/1\.1 503 /);
  assert.doesNotMatch(kept.response, /\r\nconnection: close\r\n/i);
  assert.equal(kept.closed, false, 'a 503 keeps the connection');
});

test('Retry-After – one rule: 1 s on every 429 and 503 answered on purpose, X-Echo-Retry-After sets it, a scenario keeps its own', async () => {
  // Error, status, chaos: each 429 and 503 says when to come back; other statuses do not.
  const controls: Record<string, string>[] = [
    { 'X-Echo-Error': '503' },
    { 'X-Echo-Error': 'rate-limit' },
    { 'X-Echo-Status': '503' },
    { 'X-Echo-Status': '429' },
    { 'X-Echo-Chaos': '100', 'X-Echo-Seed': '1' },
  ];
  for (const headers of controls) {
    const r = await get(`${echo.url}/retry-rule`, headers);
    if (r.status === 429 || r.status === 503)
      assert.equal(r.headers['retry-after'], '1', `${JSON.stringify(headers)}: ${r.status}`);
    else assert.equal(r.headers['retry-after'], undefined, `${JSON.stringify(headers)}: ${r.status}`);
  }
  assert.equal(
    (await get(`${echo.url}/retry-rule`, { 'X-Echo-Error': '500' })).headers['retry-after'],
    undefined,
  );
  assert.equal((await get(`${echo.url}/retry-rule`)).headers['retry-after'], undefined);

  // X-Echo-Retry-After: seconds (leading zeros dropped) or an HTTP date, on any answer it comes with.
  const date = 'Wed, 21 Oct 2026 07:28:00 GMT';
  for (const [value, sent, control] of [
    ['120', '120', { 'X-Echo-Error': '503' }],
    ['007', '7', { 'X-Echo-Status': '429' }],
    [date, date, { 'X-Echo-Error': 'unavailable' }],
    ['0', '0', { 'X-Echo-Status': '301' }],
  ] as const) {
    const r = await get(`${echo.url}/retry-set`, { ...control, 'X-Echo-Retry-After': value });
    assert.equal(r.headers['retry-after'], sent, value);
  }

  // A scenario's own Retry-After is its answer's.
  const set = [
    { name: 'own-retry', path: '/own-retry', responses: [{ status: 503, headers: { 'Retry-After': '30' } }] },
    { name: 'no-retry', path: '/no-retry', responses: [{ status: 503 }] },
  ];
  const posted = await request(`${echo.url}/scenario`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(set),
  });
  assert.equal(posted.statusCode, 200, await posted.body.text());
  try {
    assert.equal((await get(`${echo.url}/own-retry`)).headers['retry-after'], '30');
    assert.equal((await get(`${echo.url}/no-retry`)).headers['retry-after'], '1');
  } finally {
    const cleared = await request(`${echo.url}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '[]',
    });
    await cleared.body.dump();
  }
});

test('Retry-After – a bad X-Echo-Retry-After is a 400 naming the header and the forms it takes', async () => {
  for (const value of ['-1', '86401', '1.5', 'tomorrow', 'Sat, 31 Feb 2026 00:00:00 GMT', '21 Oct 2026']) {
    const r = await get(`${echo.url}/retry-bad`, { 'X-Echo-Error': '503', 'X-Echo-Retry-After': value });
    assert.equal(r.status, 400, value);
    const error = JSON.parse(r.body).error;
    assert.equal(error.details[0].field, 'x-echo-retry-after', value);
    assert.match(error.details[0].message, /whole seconds 0-86400 or an HTTP date/, value);
  }
});
