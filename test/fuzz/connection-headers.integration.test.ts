/**
 * The crash of #14 and its relatives: a response header HTTP/2 forbids (connection-specific, RFC
 * 9113 8.2.2) made Node's HTTP/2 layer throw and the process exit. Every such header, from each of
 * the three sources (`X-Echo-Set-Header-*`, a scenario's `headers`, `ECHO_HEADER_*`), over HTTP/2
 * with prior knowledge and after an h2c upgrade: refused at the door (a 400, a 400, a startup
 * error), and the server keeps serving. (HTTP/1.1 for `X-Echo-Set-Header-*` is in
 * test/echo/control-headers.integration.test.ts.)
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { ClientHttp2Session } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../src/echo/config.ts';
import { isEchoError } from '../../src/echo/errors.ts';
import { UNSETTABLE_HEADERS } from '../../src/scenario/index.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { curl, h2Request, needCurl, openH2 } from '../helpers/protocol-clients.ts';

/** The connection-specific headers (RFC 9113 8.2.2), as written in the wild, with a value each. */
const CONNECTION_SPECIFIC: ReadonlyArray<readonly [string, string]> = [
  ['Connection', 'close'],
  ['Keep-Alive', 'timeout=5'],
  ['Proxy-Connection', 'keep-alive'],
  ['Transfer-Encoding', 'chunked'],
  ['Upgrade', 'h2c'],
  ['HTTP2-Settings', 'AAMAAABkAAQAAP__'],
  ['TE', 'gzip'],
  // HTTP/2 allows `te: trailers` in a request only; a response may not carry it either.
  ['TE', 'trailers'],
];

let echo: RunningEcho;
let session: ClientHttp2Session;
before(async () => {
  echo = await startEcho();
  session = await openH2(echo.url);
});
after(async () => {
  session.close();
  await echo.close();
});

test('the list covers every connection-specific header the shared rule refuses', () => {
  for (const [name] of CONNECTION_SPECIFIC) assert.ok(UNSETTABLE_HEADERS.has(name.toLowerCase()), name);
});

async function h2(headers: Record<string, string>, body?: string) {
  if (session.closed || session.destroyed) session = await openH2(echo.url);
  const r = await h2Request(session, headers, body === undefined ? undefined : Buffer.from(body));
  const isJson = String(r.headers['content-type'] ?? '').startsWith('application/json');
  return {
    status: r.status,
    json: (isJson ? JSON.parse(r.body.toString()) : {}) as { error?: { code: string } },
  };
}

async function stillServing(): Promise<void> {
  assert.equal((await h2({ ':path': '/health' })).status, 200);
  assert.equal((await fetch(`${echo.url}/health`)).status, 200);
}

test('X-Echo-Set-Header-* naming a connection-specific header over h2c prior knowledge: a 400, the server keeps serving', async () => {
  for (const [name, value] of CONNECTION_SPECIFIC) {
    const r = await h2({ ':path': '/set', [`x-echo-set-header-${name.toLowerCase()}`]: value });
    assert.equal(r.status, 400, name);
    assert.equal(r.json.error?.code, 'ECHO_ERR_INVALID_HEADER', name);
    // On a scenario's response, an error and the service's own routes as well.
    for (const [path, more] of [
      ['/health', {}],
      ['/set', { 'x-echo-status': '503' }],
      ['/set', { 'x-echo-error': 'unavailable' }],
    ] as const) {
      const again = await h2({ ':path': path, [`x-echo-set-header-${name.toLowerCase()}`]: value, ...more });
      assert.ok(again.status === 400 || path === '/health', `${name} on ${path}: ${again.status}`);
    }
  }
  await stillServing();
});

test('X-Echo-Set-Header-* naming a connection-specific header after an h2c upgrade (curl --http2): a 400, the server keeps serving', async (t) => {
  if (!needCurl(t)) return;
  for (const [name, value] of CONNECTION_SPECIFIC) {
    // Two requests on one upgraded connection: the first is the upgrade itself, the second stream 3.
    const result = await curl([
      '--http2',
      '-o',
      '/dev/null',
      '-o',
      '/dev/null',
      '-w',
      'status=%{http_code} version=%{http_version}\n',
      '-H',
      `X-Echo-Set-Header-${name}: ${value}`,
      `${echo.url}/first`,
      `${echo.url}/second`,
    ]);
    assert.equal(result.code, 0, `${name}: ${result.stderr}`);
    assert.deepEqual(
      result.stdout.trim().split('\n'),
      ['status=400 version=2', 'status=400 version=2'],
      name,
    );
  }
  await stillServing();
});

test("a scenario's headers naming a connection-specific header: POST /scenario over h2c prior knowledge is a 400, the set unchanged", async () => {
  const kept = [{ path: '/kept', responses: [{ status: 202, headers: { 'X-Kept': 'yes' } }] }];
  assert.equal(
    (
      await h2(
        { ':method': 'POST', ':path': '/scenario', 'content-type': 'application/json' },
        JSON.stringify(kept),
      )
    ).status,
    200,
  );
  for (const [name, value] of CONNECTION_SPECIFIC) {
    const set = [{ path: '/bad', responses: [{ status: 200, headers: { [name]: value } }] }];
    const json = await h2(
      { ':method': 'POST', ':path': '/scenario', 'content-type': 'application/json' },
      JSON.stringify(set),
    );
    assert.equal(json.status, 400, name);
    assert.equal(json.json.error?.code, 'ECHO_ERR_INVALID_SCENARIOS', name);
    const yaml = `- path: /bad\n  responses:\n  - status: 200\n    headers: {${name}: "${value}"}\n`;
    const fromYaml = await h2(
      { ':method': 'POST', ':path': '/scenario', 'content-type': 'application/yaml' },
      yaml,
    );
    assert.equal(fromYaml.status, 400, `${name} (YAML)`);
    assert.equal((await h2({ ':path': '/bad' })).status, 200, `${name}: /bad is echoed, not scripted`);
  }
  assert.equal((await h2({ ':path': '/kept' })).status, 202);
  await stillServing();
});

test("a scenario's headers naming a connection-specific header: POST /scenario after an h2c upgrade (curl --http2 --next) is a 400", async (t) => {
  if (!needCurl(t)) return;
  for (const [name, value] of CONNECTION_SPECIFIC) {
    const set = JSON.stringify([{ path: '/bad', responses: [{ status: 200, headers: { [name]: value } }] }]);
    const result = await curl([
      '--http2',
      '-o',
      '/dev/null',
      '-w',
      'status=%{http_code} version=%{http_version}\n',
      `${echo.url}/upgrade`,
      '--next',
      '--http2',
      '-o',
      '/dev/null',
      '-w',
      'status=%{http_code} version=%{http_version}\n',
      '-H',
      'content-type: application/json',
      '--data-binary',
      set,
      `${echo.url}/scenario`,
      '--next',
      '--http2',
      '-o',
      '/dev/null',
      '-w',
      'status=%{http_code} version=%{http_version}\n',
      `${echo.url}/bad`,
    ]);
    assert.equal(result.code, 0, `${name}: ${result.stderr}`);
    assert.deepEqual(
      result.stdout.trim().split('\n'),
      ['status=200 version=2', 'status=400 version=2', 'status=200 version=2'],
      name,
    );
  }
  await stillServing();
});

test('a scenario file naming a connection-specific header stops startup with the problem named', async () => {
  const directory = mkdtempSync(join(tmpdir(), 'connection-headers-'));
  try {
    for (const [name, value] of CONNECTION_SPECIFIC) {
      const file = join(directory, 'scenarios.yaml');
      writeFileSync(
        file,
        `- path: /bad\n  responses:\n  - status: 200\n    headers: {${name}: "${value}"}\n`,
      );
      await assert.rejects(
        startEcho({ ECHO_SCENARIO_FILE: file }),
        (error: unknown) =>
          new RegExp(`header "${name}" cannot be set by a scenario`).test(String((error as Error).message)),
        name,
      );
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test('ECHO_HEADER_* naming a connection-specific header is a startup error (ECHO_ERR_CONFIG) naming it', async () => {
  for (const [name, value] of CONNECTION_SPECIFIC) {
    const variable = `ECHO_HEADER_${name.replaceAll('-', '_')}`;
    assert.throws(
      () => loadConfig({ [variable]: value }),
      (error: unknown) =>
        isEchoError(error) &&
        error.code === 'ECHO_ERR_CONFIG' &&
        error.message.includes(`${variable}: "${name}" frames the message or is connection-specific`),
      variable,
    );
    await assert.rejects(startEcho({ [variable]: value }), (error: unknown) => isEchoError(error), variable);
  }
});
