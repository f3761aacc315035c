import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { after, before, test } from 'node:test';
import { arrivedWhole, asText, sentAsIs } from '../../src/echo/pipeline.ts';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';

// Short text answers go to fastify as strings (node writes them with the head in one write), and
// everything else as bytes: what the client receives must not change either way.

test('asText – a string as it is, a short ASCII buffer as its characters, anything else not', () => {
  assert.equal(asText('héllo'), 'héllo');
  assert.equal(asText(Buffer.from('plain ascii\n')), 'plain ascii\n');
  assert.equal(asText(Buffer.alloc(16 * 1024, 0x61)), 'a'.repeat(16 * 1024));
  // Past 16 KiB, or a byte above 0x7f (a latin1 character would be written as two UTF-8 bytes).
  assert.equal(asText(Buffer.alloc(16 * 1024 + 1, 0x61)), undefined);
  assert.equal(asText(Buffer.from([0x61, 0xe9])), undefined);
  assert.equal(asText(Buffer.from('é')), undefined);
  assert.equal(asText(undefined), undefined);
});

test('sentAsIs – a string only under a type fastify parses and leaves alone (not JSON-like, not one it cannot read)', () => {
  for (const type of [
    'text/plain; charset=utf-8',
    'application/octet-stream',
    'Text/Plain',
    ' text/html ; q=1',
  ]) {
    assert.equal(sentAsIs(type), true, type);
    assert.equal(sentAsIs(type), true, `${type}, asked again`);
  }
  for (const type of [
    'application/json',
    'Application/JSON',
    'application/problem+json',
    'application/json; charset=utf-8',
    'weird',
    'text /plain',
    '',
  ]) {
    assert.equal(sentAsIs(type), false, type);
    assert.equal(sentAsIs(type), false, `${type}, asked again`);
  }
  assert.equal(sentAsIs(undefined), false);
  assert.equal(sentAsIs(['text/plain']), false);
});

test('arrivedWhole – an upstream body taken whole only when its announced length has all arrived', () => {
  const answer = (length: string | undefined, ...chunks: string[]) => {
    const body = new PassThrough();
    for (const chunk of chunks) body.write(chunk);
    const headers: Record<string, string> = length === undefined ? {} : { 'content-length': length };
    return { headers, body };
  };
  const whole = answer('11', 'hello ', 'world');
  assert.deepEqual(whole.body.readableLength, 11);
  assert.equal(arrivedWhole(whole)?.toString(), 'hello world');
  assert.equal(whole.body.readableLength, 0);
  // Not yet all there, no length, too long: the stream keeps every byte it had.
  for (const partial of [answer('12', 'hello ', 'world'), answer(undefined, 'hello'), answer('0')]) {
    const before = partial.body.readableLength;
    assert.equal(arrivedWhole(partial), undefined);
    assert.equal(partial.body.readableLength, before);
  }
  const long = 'x'.repeat(16 * 1024 + 1);
  const large = answer(String(long.length), long);
  assert.equal(arrivedWhole(large), undefined);
  assert.equal(large.body.readableLength, long.length);
});

let echo: RunningEcho;
before(async () => {
  echo = await startEcho();
});
after(() => echo.close());

async function post(type: string, body: Buffer, headers: Record<string, string> = {}) {
  const res = await fetch(`${echo.url}/text-bodies`, {
    method: 'POST',
    headers: { 'content-type': type, ...headers },
    body,
  });
  return { res, bytes: Buffer.from(await res.arrayBuffer()) };
}

test('text bodies – ASCII, UTF-8 and binary bodies come back byte for byte, with their length and type', async () => {
  const ascii = Buffer.from('a'.repeat(1024));
  const utf8 = Buffer.from('naïve café ✓\n');
  const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const large = Buffer.alloc(64 * 1024, 0x62);
  for (const [type, body] of [
    ['application/octet-stream', ascii],
    ['text/plain; charset=utf-8', utf8],
    ['application/octet-stream', binary],
    ['application/octet-stream', large],
  ] as const) {
    const { res, bytes } = await post(type, body);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), type);
    assert.equal(res.headers.get('content-length'), String(body.length));
    assert.deepEqual(bytes, body, `${type}, ${body.length} bytes`);
  }
});

test('text bodies – a JSON type without a charset reaches the client exactly as sent', async () => {
  const body = Buffer.from('{"ok":true}');
  const { res, bytes } = await post('application/json', body);
  assert.equal(res.headers.get('content-type'), 'application/json');
  assert.deepEqual(bytes, body);
  const asked = await fetch(`${echo.url}/typed`, { headers: { 'x-echo-content-type': 'application/json' } });
  assert.equal(asked.headers.get('content-type'), 'application/json');
  assert.match(await asked.text(), /^GET \/typed HTTP\/1\.1/);
});

test('text bodies – the default GET answer is text with its length', async () => {
  const res = await fetch(`${echo.url}/plain?x=1`);
  const text = await res.text();
  assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
  assert.equal(res.headers.get('content-length'), String(Buffer.byteLength(text)));
  assert.match(text, /^GET \/plain\?x=1 HTTP\/1\.1\n/);
});
