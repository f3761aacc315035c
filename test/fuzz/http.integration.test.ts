/**
 * HTTP-level fuzz on a real server: random control headers, values, paths, methods and bodies over
 * HTTP/1.1 (node:http), HTTP/2 with prior knowledge (node:http2) and after an h2c upgrade (curl
 * --http2). Every answer is below 500 unless it says it was injected (`X-Echo-Fault`), and the server
 * keeps serving (`/health` after every property). Connection-breaking faults (`X-Echo-Error`,
 * `X-Echo-Chaos`) and slow shaping are left to their own tests: here a response must arrive.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { ClientHttp2Session } from 'node:http2';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { SET_HEADER_PREFIX } from '../../src/echo/controls.ts';
import { UNSETTABLE_HEADERS } from '../../src/scenario/index.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { curl, h2Request, needCurl, openH2, TIMEOUT_MS } from '../helpers/protocol-clients.ts';
import { fuzzParameters, headerValue } from './fuzz.ts';
import { badWindowFieldArb, withBadWindowField } from './scenario-windows.ts';

const FILE = 'http';

let echo: RunningEcho;
let session: ClientHttp2Session;
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
before(async () => {
  // Short ceilings keep each request quick; every knob is still exercised up to its ceiling.
  echo = await startEcho({ ECHO_MAX_DELAY: '40ms', ECHO_MAX_RESPONSE_SIZE: '4096' });
  session = await openH2(echo.url);
});
after(async () => {
  agent.destroy();
  session.close();
  await echo.close();
});

/** Control headers whose every value yields a whole, timely response. */
const SAFE_CONTROLS = [
  'x-echo-delay',
  'x-echo-jitter',
  'x-echo-random-delay',
  'x-echo-exponential',
  'x-echo-latency',
  'x-echo-status',
  'x-echo-response-size',
  'x-echo-body-delay',
  'x-echo-compress',
  'x-echo-content-type',
  'x-echo-headers',
  'x-echo-server-info',
  'x-echo-seed',
  'x-echo-explain',
  'x-echo-history-enabled',
  'x-echo-session',
  'x-echo-dealy',
  'x-echo-constructor',
] as const;

/** A value HTTP can carry: Latin-1 without control characters but tab. */
const carried = (text: string) => text.replace(/[^\t\x20-\x7e\x80-\xff]/g, '');

const controlHeader: fc.Arbitrary<[string, string]> = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(fc.constantFrom(...SAFE_CONTROLS), headerValue.map(carried)) },
  // Slow shaping only at rates and sizes that finish quickly, plus malformed values.
  {
    weight: 1,
    arbitrary: fc.tuple(
      fc.constant('x-echo-throttle'),
      fc.constantFrom('10MB/s', '1GiB/s', '0B/s', 'fast', ''),
    ),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(
      fc.constant('x-echo-chunk-size'),
      fc.constantFrom('4096', '65536', '0', 'x', '1048577'),
    ),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constant('x-echo-chunk-delay'), fc.constantFrom('0', '1ms', '41ms', 'x')),
  },
  {
    weight: 2,
    arbitrary: fc.tuple(
      fc
        .oneof(
          fc.constantFrom(
            'cache-control',
            'x-a',
            'location',
            'constructor',
            '__proto__',
            'retry-after',
            'content-type',
            'set-cookie',
            ...UNSETTABLE_HEADERS,
          ),
          fc.stringMatching(/^[a-z0-9!#$%&'*+.^_`|~-]{1,12}$/),
        )
        // Connection-specific names included: a 400, never a crash (see connection-headers.integration.test.ts).
        .map((n) => `${SET_HEADER_PREFIX}${n}`),
      headerValue.map(carried),
    ),
  },
  // Unrelated request headers the echo lists back.
  { weight: 1, arbitrary: fc.tuple(fc.stringMatching(/^x-[a-z0-9-]{1,10}$/), headerValue.map(carried)) },
);

const PATHS = [
  '/',
  '/x',
  '/a/b?q=1&q=2',
  '/info',
  '/history',
  '/metrics',
  '/ready',
  '/scenario',
  '/scenario/state',
  '/replay',
  '/%zz',
  '/..%2f..',
  '/x?constructor=1&__proto__=2',
];
const TYPES = [
  'application/json',
  'application/yaml',
  'text/plain',
  'application/octet-stream',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'x/y;;;',
];
const bodyArb: fc.Arbitrary<Buffer | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.json({ maxDepth: 3 }).map((t) => Buffer.from(t)),
  fc
    .constantFrom(
      '[{"path":"/x","responses":[{"status":503,"delay":"10ms"},{"status":200}]}]',
      '- path: /x\n  responses: [{status: 599}]\n',
      '[{"path":"/x","order":"random","times":3,"activeFor":"1m","responses":[{"status":503,"weight":2},{"status":200}]}]',
      // With a deep body below, once a 500: the pointed node could not be printed back.
      '[{"path":"/x","body":{"jsonPointer":"","value":"re:.*"},"responses":[{"status":201}]}]',
      '{"enabled": false}',
      '{"id": "x"}',
      '{"__proto__": {"a": 1}}',
      // Once made GET /history a 500: masking printed back a body nesting thousands deep.
      `{"password":"x","deep":${'['.repeat(20_000)}${']'.repeat(20_000)}}`,
      `{"a":${'['.repeat(64)}${']'.repeat(64)}}`,
    )
    .map((t) => Buffer.from(t)),
  fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
  // Nesting around the bound, as JSON (and YAML flow, which reads the same).
  fc
    .tuple(
      fc.integer({ min: 1, max: 300 }),
      fc.constantFrom(
        '{"enabled":true,"x":%}',
        '[%]',
        '{"id":"x","modify_headers":%}',
        '{"name":%,"position":0}',
      ),
    )
    .map(([n, shape]) => Buffer.from(shape.replace('%', `${'['.repeat(n)}${']'.repeat(n)}`))),
  fc
    .array(
      fc.constantFrom(
        '- ',
        'path: /x\n',
        '  responses: [{status: 503}]\n',
        '&a [1, 1]',
        '*a',
        '<<: *a',
        '[',
        ']',
        '{',
        '}',
        '\n',
        '  ',
        'headers: {Connection: x}',
      ),
      { maxLength: 12 },
    )
    .map((p) => Buffer.from(p.join(''))),
);

const requestArb = fc.record({
  method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD'),
  path: fc.constantFrom(...PATHS),
  headers: fc.array(controlHeader, { maxLength: 5 }),
  type: fc.option(fc.constantFrom(...TYPES), { nil: undefined }),
  body: bodyArb,
});
type FuzzRequest = typeof requestArb extends fc.Arbitrary<infer T> ? T : never;

interface Answer {
  readonly status: number;
  readonly fault: string | undefined;
}

function headerObject(request: FuzzRequest): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [name, value] of request.headers) out[name] = value;
  if (request.type !== undefined && request.body !== undefined) out['content-type'] = request.type;
  return out;
}

function sendH1(request: FuzzRequest): Promise<Answer> {
  const body = request.method === 'HEAD' ? undefined : request.body;
  const headers = headerObject(request);
  // node:http frames a GET's body only when told its length (else it writes the bytes unframed).
  if (body !== undefined) headers['content-length'] = String(body.length);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: echo.port,
        method: request.method,
        path: request.path,
        headers,
        agent,
        timeout: TIMEOUT_MS,
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, fault: res.headers['x-echo-fault'] as string | undefined }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer in time')));
    req.on('error', reject);
    req.end(body);
  });
}

/** The session, opened again when the server closed it for idleness (between properties). */
async function h2Session(): Promise<ClientHttp2Session> {
  if (session.closed || session.destroyed) session = await openH2(echo.url);
  return session;
}

async function sendH2(request: FuzzRequest): Promise<Answer> {
  const body = request.method === 'HEAD' ? undefined : request.body;
  const r = await h2Request(
    await h2Session(),
    { ':method': request.method, ':path': request.path, ...headerObject(request) },
    body,
  );
  return { status: r.status, fault: r.headers['x-echo-fault'] as string | undefined };
}

function check(answer: Answer, request: FuzzRequest, protocol: string): void {
  if (answer.status >= 500) {
    assert.ok(
      answer.fault !== undefined && answer.fault !== '',
      `${protocol}: a ${answer.status} not injected for ${JSON.stringify({ ...request, body: request.body?.toString('latin1') })}`,
    );
  }
  assert.ok(answer.status >= 100 && answer.status <= 599, `${protocol}: status ${answer.status}`);
}

async function healthy(): Promise<void> {
  const h1 = await sendH1({ method: 'GET', path: '/health', headers: [], type: undefined, body: undefined });
  assert.equal(h1.status, 200);
  const h2 = await sendH2({ method: 'GET', path: '/health', headers: [], type: undefined, body: undefined });
  assert.equal(h2.status, 200);
}

test('HTTP fuzz – HTTP/1.1 and h2c prior knowledge: every answer is below 500 unless injected; the server stays up', async () => {
  await fc.assert(
    fc.asyncProperty(requestArb, async (request) => {
      check(await sendH1(request), request, 'HTTP/1.1');
      check(await sendH2(request), request, 'HTTP/2');
    }),
    fuzzParameters(FILE, 'h1 and h2', 150),
  );
  await healthy();
});

test('HTTP fuzz – after an h2c upgrade (curl --http2): every answer is below 500 unless injected', async (t) => {
  if (!needCurl(t)) return;
  await fc.assert(
    fc.asyncProperty(
      fc
        .array(controlHeader, { maxLength: 4 })
        .map((headers) => headers.filter(([, v]) => v.trim() !== '' && !v.includes(';'))),
      fc.constantFrom('/x', '/a/b?q=1', '/info', '/scenario'),
      async (headers, path) => {
        const args = [
          '--http2',
          '-o',
          '/dev/null',
          '-D',
          '-',
          '-w',
          'status=%{http_code} version=%{http_version}\n',
        ];
        for (const [name, value] of headers) args.push('-H', `${name}: ${value}`);
        const result = await curl([...args, `${echo.url}${path}`]);
        assert.equal(result.code, 0, result.stderr);
        const status = Number(/status=(\d+)/.exec(result.stdout)?.[1]);
        assert.match(result.stdout, /version=2\b/, 'upgraded to HTTP/2');
        const fault = /^x-echo-fault: *(.*)$/im.exec(result.stdout)?.[1];
        check(
          { status, fault },
          { method: 'GET', path, headers, type: undefined, body: undefined },
          'h2c upgrade',
        );
      },
    ),
    fuzzParameters(FILE, 'h2c upgrade', 25),
  );
  await healthy();
});

test('HTTP fuzz – POST /scenario with a bad order, weight, activeFor or times: a 400 naming it, and GET /scenario unchanged', async () => {
  const post = (body: unknown) =>
    fetch(`${echo.url}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const kept = [{ path: '/kept', order: 'random', times: 2, responses: [{ status: 201, weight: 3 }] }];
  assert.equal((await post(kept)).status, 200);
  const stored = await (await fetch(`${echo.url}/scenario`)).text();
  await fc.assert(
    fc.asyncProperty(badWindowFieldArb, async (bad) => {
      const { set, at } = withBadWindowField(bad);
      const answer = await post(set);
      assert.equal(answer.status, 400, JSON.stringify(set));
      const { error } = (await answer.json()) as {
        error: { code: string; details: Array<{ field: string }> };
      };
      assert.equal(error.code, 'ECHO_ERR_INVALID_SCENARIOS');
      assert.deepEqual(
        error.details.map((d) => d.field),
        [at],
      );
      assert.equal(await (await fetch(`${echo.url}/scenario`)).text(), stored);
    }),
    fuzzParameters(FILE, 'bad window field', 60),
  );
  await healthy();
});
