import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { type RunningEcho, withEcho } from '../helpers/echo-server.ts';
import { orAfter } from '../helpers/runtime.ts';

/**
 * The bodies of the service routes: a `__proto__` key is refused as such (it is valid JSON), a
 * compressed body is a 415 naming its encoding, and `POST /scenario` has a limit of its own
 * (`ECHO_MAX_SCENARIO_BODY`) that takes the largest set; every refusal leaves the state as it was.
 */

interface ErrorAnswer {
  readonly status: number;
  readonly code: string;
  readonly message: string;
}

async function send(
  echo: RunningEcho,
  method: string,
  path: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
): Promise<ErrorAnswer & { text: string }> {
  const res = await fetch(`${echo.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await res.text();
  let error: { code?: string; message?: string } = {};
  try {
    error = (JSON.parse(text) as { error?: typeof error }).error ?? {};
  } catch {}
  return { status: res.status, code: error.code ?? '', message: error.message ?? '', text };
}

const SET = [{ name: 'kept', path: '/kept', responses: [{ status: 201, body: 'kept' }] }];

/** Posts a known set and answers a function reading the state the refusals must leave alone. */
async function knownState(echo: RunningEcho): Promise<() => Promise<unknown>> {
  assert.equal((await send(echo, 'POST', '/scenario', JSON.stringify(SET))).status, 200);
  return async () => ({
    scenarios: await (await fetch(`${echo.url}/scenario`)).json(),
    faults: await (await fetch(`${echo.url}/control/faults`)).json(),
    ready: await (await fetch(`${echo.url}/control/readiness`)).json(),
  });
}

test('control bodies – a __proto__ or constructor.prototype key is a 400 saying what is refused and why, on every service route', () =>
  withEcho(async (echo) => {
    const state = await knownState(echo);
    const before = await state();
    const bodies = [
      `[{"name":"x","path":"/x","responses":[{"status":200}],"__proto__":{"polluted":true}}]`,
      '{"id":"x","__proto__":{"polluted":true}}',
      '{"enabled":false,"constructor":{"prototype":{"polluted":true}}}',
    ];
    const routes: Array<[string, string]> = [
      ['POST', '/scenario'],
      ['POST', '/replay'],
      ['PUT', '/control/faults'],
      ['PUT', '/control/readiness'],
      ['POST', '/scenario/reset'],
      ['PUT', '/scenario/state'],
    ];
    for (const [method, path] of routes) {
      for (const body of bodies) {
        const answer = await send(echo, method, path, body);
        assert.equal(answer.status, 400, `${method} ${path}: ${answer.text}`);
        assert.equal(answer.code, 'ECHO_ERR_FORBIDDEN_JSON_KEY', answer.text);
        assert.match(answer.message, /__proto__/);
        assert.match(answer.message, /prototype pollution/);
      }
    }
    assert.deepEqual(await state(), before);
    // Text that is not JSON is still said to be so.
    assert.equal((await send(echo, 'POST', '/scenario', '{"__proto__":')).code, 'ECHO_ERR_INVALID_JSON');
  }));

test('control bodies – a gzip body is a 415 naming the encoding on every service route; echo paths mirror it', () =>
  withEcho(async (echo) => {
    const state = await knownState(echo);
    const before = await state();
    const routes: Array<[string, string, string]> = [
      ['POST', '/scenario', '[]'],
      ['POST', '/replay', '{"id":"x"}'],
      ['PUT', '/control/faults', '{"enabled":false}'],
      ['POST', '/scenario/reset', '{}'],
      ['PUT', '/scenario/state', '{"name":"kept","position":0}'],
    ];
    for (const [method, path, json] of routes) {
      for (const encoding of ['gzip', 'br', 'deflate, gzip']) {
        const answer = await send(echo, method, path, gzipSync(json), { 'content-encoding': encoding });
        assert.equal(answer.status, 415, `${method} ${path} ${encoding}: ${answer.text}`);
        assert.equal(answer.code, 'ECHO_ERR_UNSUPPORTED_CONTENT_ENCODING');
        assert.equal(
          answer.message,
          `unsupported content encoding ${JSON.stringify(encoding)}: the service routes take uncompressed bodies only`,
        );
      }
    }
    // The same bodies without compression (`identity` says so too) are taken.
    const plain = await send(echo, 'PUT', '/control/readiness', '{"ready":true}', {
      'content-encoding': 'identity',
    });
    assert.equal(plain.status, 200, plain.text);
    assert.deepEqual(await state(), before);
    // An echo path answers what it got, bytes as sent.
    const zipped = gzipSync('hello');
    const echoed = await fetch(`${echo.url}/anything`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip' },
      body: zipped,
    });
    assert.equal(echoed.status, 200);
    assert.deepEqual(Buffer.from(await echoed.arrayBuffer()), zipped);
  }));

/** A valid set of about `megabytes` MB: bodies of 1,000,000 characters. */
function largeSet(megabytes: number): string {
  return JSON.stringify(
    Array.from({ length: megabytes }, (_, i) => ({
      name: `big-${i}`,
      path: `/big/${i}`,
      responses: [{ status: 200, body: 'x'.repeat(1_000_000) }],
    })),
  );
}

test('control bodies – a scenario set larger than MAX_BODY_SIZE (12 MB, default settings) is taken', () =>
  withEcho(async (echo) => {
    const body = largeSet(12);
    assert.ok(body.length > 10_485_760);
    const answer = await send(echo, 'POST', '/scenario', body);
    assert.equal(answer.status, 200, answer.text.slice(0, 300));
    assert.deepEqual(JSON.parse(answer.text), { status: 'scenarios updated', count: 12 });
    // An echo body is still bounded by MAX_BODY_SIZE.
    const echoed = await send(echo, 'POST', '/echo', body, { 'content-type': 'text/plain' });
    assert.equal(echoed.status, 413);
    assert.equal(echoed.code, 'ECHO_ERR_BODY_TOO_LARGE');
  }));

test('control bodies – over ECHO_MAX_SCENARIO_BODY is a 413 naming the setting and the limit; the set stays', () =>
  withEcho(
    async (echo) => {
      const state = await knownState(echo);
      const before = await state();
      const answer = await send(echo, 'POST', '/scenario', largeSet(2));
      assert.equal(answer.status, 413, answer.text);
      assert.equal(answer.code, 'ECHO_ERR_SCENARIO_BODY_TOO_LARGE');
      assert.equal(answer.message, 'request body exceeds ECHO_MAX_SCENARIO_BODY (1048576 bytes)');
      // YAML is bounded the same way.
      const yaml = await send(
        echo,
        'POST',
        '/scenario',
        `- path: /y\n  responses: [{status: 200, body: ${'y'.repeat(1_100_000)}}]\n`,
        {
          'content-type': 'application/yaml',
        },
      );
      assert.equal(yaml.status, 413, yaml.text);
      assert.equal(yaml.code, 'ECHO_ERR_SCENARIO_BODY_TOO_LARGE');
      assert.deepEqual(await state(), before);
      // Under it, a set larger than MAX_BODY_SIZE (1 KiB here) is taken.
      const small = JSON.stringify([{ path: '/s', responses: [{ status: 200, body: 's'.repeat(4096) }] }]);
      assert.equal((await send(echo, 'POST', '/scenario', small)).status, 200);
    },
    { ECHO_MAX_SCENARIO_BODY: '1048576', MAX_BODY_SIZE: '1024' },
  ));

test('control bodies – a refusal before the body has arrived closes the connection: one answer, no 408 behind it', () =>
  withEcho(
    async (echo) => {
      for (const headers of [
        'Content-Type: text/plain',
        'Content-Type: application/json\r\nContent-Encoding: gzip',
      ]) {
        // 10 of the 100 bytes announced, then nothing: the route refuses on the head alone.
        const socket = connect(echo.port, '127.0.0.1');
        socket.write(
          `POST /scenario HTTP/1.1\r\nHost: x\r\n${headers}\r\nContent-Length: 100\r\n\r\n0123456789`,
        );
        let text = '';
        socket.setEncoding('latin1').on('data', (c: string) => {
          text += c;
        });
        // The server ends the connection; a timer stops the test if it never does (ECHO_REQUEST_TIMEOUT
        // is 4 s here: without the fix its 408 follows as a second answer).
        const ended = await orAfter(
          once(socket, 'close').then(() => true),
          15_000,
          false,
        );
        socket.destroy();
        assert.ok(ended, `${headers}: the connection stayed open: ${text}`);
        const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]);
        assert.deepEqual(statuses, ['415'], `${headers}: ${text}`);
        assert.match(text, /^connection: close$/im);
      }
    },
    { ECHO_REQUEST_TIMEOUT: '4s' },
  ));

/** Sends a chunked JSON body in the given pieces, each written apart, and reads the answer. */
async function sendInPieces(
  echo: RunningEcho,
  method: string,
  path: string,
  pieces: readonly (string | Buffer)[],
  framing: 'chunked' | 'content-length' = 'chunked',
): Promise<{ status: number; code: string; text: string }> {
  const socket = connect(echo.port, '127.0.0.1');
  await once(socket, 'connect');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  // Listened for now: with a Content-Length the answer (and the close) may come before the last pause ends.
  const closed = once(socket, 'close', { signal: AbortSignal.timeout(30_000) });
  const parts = pieces.map((piece) => (typeof piece === 'string' ? Buffer.from(piece) : piece));
  const length = parts.reduce((n, part) => n + part.length, 0);
  socket.write(
    `${method} ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${framing === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`}\r\nConnection: close\r\n\r\n`,
  );
  for (const bytes of parts) {
    if (framing === 'chunked') socket.write(`${bytes.length.toString(16)}\r\n`);
    socket.write(bytes);
    if (framing === 'chunked') socket.write('\r\n');
    // Apart, so that the server reads them as separate chunks (not asserted: a merged read is fine too).
    // The client's pace, not a wait on anything.
    await sleep(20);
  }
  if (framing === 'chunked') socket.write('0\r\n\r\n');
  await closed;
  const raw = Buffer.concat(chunks).toString('utf8');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);
  const text = raw.slice(raw.indexOf('\r\n\r\n') + 4);
  const code = /"code":"([A-Z_]+)"/.exec(text)?.[1] ?? '';
  return { status, code, text };
}

test('control bodies – read as they arrive: a forbidden key cut across chunks or escaped is still refused; a BOM, an empty body and a "constructor" value are as before', () =>
  withEcho(async (echo) => {
    const state = await knownState(echo);
    const before = await state();
    // `"__proto__"` cut in the middle of an escape, and `constructor` escaped throughout.
    const cut = await sendInPieces(echo, 'PUT', '/control/faults', [
      '{"enabled":false,"\\u005',
      'f_pro',
      'to__":{"polluted":true}}',
    ]);
    assert.equal(cut.status, 400, cut.text);
    assert.equal(cut.code, 'ECHO_ERR_FORBIDDEN_JSON_KEY');
    const escaped = await sendInPieces(echo, 'POST', '/scenario', [
      '[{"name":"x","path":"/x","responses":[{"status":200}],',
      '"\\u0063\\u006f\\u006e\\u0073\\u0074\\u0072\\u0075\\u0063\\u0074\\u006f\\u0072":{"prototype":{"polluted":true}}}]',
    ]);
    assert.equal(escaped.status, 400, escaped.text);
    assert.equal(escaped.code, 'ECHO_ERR_FORBIDDEN_JSON_KEY');
    assert.deepEqual(await state(), before);
    // A body cut anywhere else is the body it spells.
    const set = JSON.stringify([
      { name: 'pieces', path: '/pieces', responses: [{ status: 203, body: 'é"\\[' }] },
    ]);
    const taken = await sendInPieces(echo, 'POST', '/scenario', [
      set.slice(0, 37),
      set.slice(37, 61),
      set.slice(61),
    ]);
    assert.equal(taken.status, 200, taken.text);
    const served = await fetch(`${echo.url}/pieces`);
    assert.equal(served.status, 203);
    assert.equal(await served.text(), 'é"\\[');
    // "constructor" as a value, or a key without `prototype`, is plain JSON.
    const value = await send(echo, 'PUT', '/control/readiness', '{"ready":true}');
    assert.equal(value.status, 200, value.text);
    const reset = await send(echo, 'POST', '/scenario/reset', '{"name":"constructor"}');
    assert.notEqual(reset.code, 'ECHO_ERR_FORBIDDEN_JSON_KEY', reset.text);
    // A byte order mark is dropped; an empty body and a broken one are not JSON.
    assert.equal((await send(echo, 'PUT', '/control/faults', '\uFEFF{"enabled":true}')).status, 200);
    const empty = await send(echo, 'PUT', '/control/faults', '');
    assert.deepEqual([empty.status, empty.code], [400, 'ECHO_ERR_INVALID_JSON']);
    const broken = await sendInPieces(echo, 'PUT', '/control/faults', ['{"enabled":', 'tru']);
    assert.deepEqual([broken.status, broken.code], [400, 'ECHO_ERR_INVALID_JSON']);
  }));

test('control bodies – a long body with its Content-Length is gathered as it comes: characters cut between reads, a key cut in two, escapes and the text are as sent', () =>
  withEcho(async (echo) => {
    const state = await knownState(echo);
    const before = await state();
    // Over 64 KiB announced: gathered into one buffer of that length (json-body.ts).
    const text = `é€😀"\\[${'ü'.repeat(50_000)}`;
    const set = JSON.stringify([
      { name: 'long', path: '/long', responses: [{ status: 203, body: text }] },
      { name: 'filler', path: '/filler', responses: [{ status: 200, body: 'f'.repeat(40_000) }] },
    ]);
    const bytes = Buffer.from(set);
    assert.ok(bytes.length > 64 * 1024);
    // Cut inside the two-, three- and four-byte characters at the start of the body, and in the ü's.
    const at = bytes.indexOf(Buffer.from('é€😀'));
    const cuts = [at + 1, at + 3, at + 7, at + 1001, 70_001, bytes.length - 5];
    const pieces = [0, ...cuts].map((from, i) => bytes.subarray(from, cuts[i] ?? bytes.length));
    const taken = await sendInPieces(echo, 'POST', '/scenario', pieces, 'content-length');
    assert.equal(taken.status, 200, taken.text);
    const served = await fetch(`${echo.url}/long`);
    assert.equal(served.status, 203);
    assert.equal(await served.text(), text);

    // A `__proto__` cut across two reads of a long body is still refused, and the set stays.
    const kept = await state();
    assert.notDeepEqual(kept, before);
    const poisoned = Buffer.from(
      `[{"name":"p","path":"/p","responses":[{"status":200,"body":"${'x'.repeat(80_000)}"}],"__pr` +
        'oto__":{"polluted":true}}]',
    );
    const cut = poisoned.indexOf('__pr') + 3;
    const refused = await sendInPieces(
      echo,
      'POST',
      '/scenario',
      [poisoned.subarray(0, cut), poisoned.subarray(cut)],
      'content-length',
    );
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.code, 'ECHO_ERR_FORBIDDEN_JSON_KEY');
    assert.deepEqual(await state(), kept);
  }));
