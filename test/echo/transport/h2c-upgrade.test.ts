import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { http2SettingsProblem, isH2cUpgrade } from '../../../src/echo/transport/h2c-upgrade.ts';
import { headersFramesForStream1 } from '../../../src/echo/transport/hpack.ts';

// The pure parts of `Upgrade: h2c` (docs/adr/0003-one-port-for-h1-h2c.md): which requests are
// upgraded, the HTTP2-Settings check, and the request turned into stream 1's frames. The upgrade
// over real sockets is in transport.integration.test.ts.

/** An HTTP/1.1 request as node's parser hands it over: lower-cased `headers`, `rawHeaders` as sent. */
function requestOf(method: string, url: string, raw: readonly string[]): IncomingMessage {
  const headers: Record<string, string> = {};
  for (let i = 0; i < raw.length; i += 2) headers[raw[i]!.toLowerCase()] = raw[i + 1]!;
  return { method, url, httpVersion: '1.1', headers, rawHeaders: [...raw] } as unknown as IncomingMessage;
}

interface Frame {
  readonly type: number;
  readonly flags: number;
  readonly stream: number;
  readonly payload: Buffer;
}

function framesOf(bytes: Buffer): Frame[] {
  const frames: Frame[] = [];
  for (let offset = 0; offset < bytes.length; ) {
    const length = bytes.readUIntBE(offset, 3);
    frames.push({
      type: bytes[offset + 3]!,
      flags: bytes[offset + 4]!,
      stream: bytes.readUInt32BE(offset + 5),
      payload: bytes.subarray(offset + 9, offset + 9 + length),
    });
    offset += 9 + length;
  }
  return frames;
}

/** Decodes a header block made only of literals without indexing, new name, no Huffman (RFC 7541). */
function fieldsOf(block: Buffer): Array<[string, string]> {
  let offset = 0;
  const integer = () => {
    let value = block[offset++]! & 0x7f;
    if (value < 0x7f) return value;
    for (let shift = 0; ; shift += 7) {
      const byte = block[offset++]!;
      value += (byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return value;
    }
  };
  const string = () => {
    assert.equal(block[offset]! & 0x80, 0, 'no Huffman coding');
    const length = integer();
    const text = block.toString('latin1', offset, offset + length);
    offset += length;
    return text;
  };
  const fields: Array<[string, string]> = [];
  while (offset < block.length) {
    assert.equal(block[offset++], 0x00, 'a literal without indexing, new name');
    const name = string();
    fields.push([name, string()]);
  }
  return fields;
}

test('h2c upgrade – the request becomes one HEADERS frame on stream 1, connection headers left out', () => {
  const request = requestOf('POST', '/path?q=1', [
    'Host',
    'example.test:8080',
    'Connection',
    'Upgrade, HTTP2-Settings, X-Hop',
    'Upgrade',
    'h2c',
    'HTTP2-Settings',
    'AAMAAABkAAQAAP__',
    'X-Hop',
    'dropped: named in Connection',
    'Keep-Alive',
    'timeout=5',
    'TE',
    'gzip',
    'X-Echo-Delay',
    '10ms',
    'Accept',
    '*/*',
  ]);
  const frames = framesOf(headersFramesForStream1(request));
  assert.equal(frames.length, 1);
  const [frame] = frames;
  assert.equal(frame!.type, 0x1, 'HEADERS');
  assert.equal(frame!.flags, 0x1 | 0x4, 'END_STREAM and END_HEADERS');
  assert.equal(frame!.stream, 1);
  assert.deepEqual(fieldsOf(frame!.payload), [
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', '/path?q=1'],
    [':authority', 'example.test:8080'],
    ['x-echo-delay', '10ms'],
    ['accept', '*/*'],
  ]);
});

test('h2c upgrade – TE: trailers is kept, as HTTP/2 allows', () => {
  const request = requestOf('GET', '/', ['Host', 'h', 'TE', 'Trailers']);
  const fields = fieldsOf(framesOf(headersFramesForStream1(request))[0]!.payload);
  assert.deepEqual(fields.at(-1), ['te', 'Trailers']);
});

test('h2c upgrade – a header block past 16 KiB goes on in CONTINUATION frames, END_HEADERS on the last', () => {
  const long = 'v'.repeat(20_000);
  const request = requestOf('GET', '/', ['Host', 'h', 'X-Long', long]);
  const frames = framesOf(headersFramesForStream1(request));
  assert.deepEqual(
    frames.map((f) => [f.type, f.flags, f.stream, f.payload.length > 0]),
    [
      [0x1, 0x1, 1, true],
      [0x9, 0x4, 1, true],
    ],
  );
  assert.equal(frames[0]!.payload.length, 16_384);
  const fields = fieldsOf(Buffer.concat(frames.map((f) => f.payload)));
  assert.deepEqual(fields.at(-1), ['x-long', long], 'a length past 127 is a multi-byte HPACK integer');
});

test('h2c upgrade – only an HTTP/1.1 request with HTTP2-Settings and no body is upgraded', () => {
  const settings = ['Host', 'h', 'Connection', 'Upgrade, HTTP2-Settings', 'HTTP2-Settings', 'AAMAAABk'];
  assert.equal(isH2cUpgrade(requestOf('GET', '/', [...settings, 'Upgrade', 'h2c'])), true);
  assert.equal(isH2cUpgrade(requestOf('GET', '/', [...settings, 'Upgrade', 'websocket, H2C'])), true);
  assert.equal(isH2cUpgrade(requestOf('GET', '/', [...settings, 'Upgrade', 'websocket'])), false);
  assert.equal(
    isH2cUpgrade(requestOf('GET', '/', ['Host', 'h', 'Upgrade', 'h2c'])),
    false,
    'no HTTP2-Settings',
  );
  assert.equal(
    isH2cUpgrade(requestOf('POST', '/', [...settings, 'Upgrade', 'h2c', 'Content-Length', '3'])),
    false,
    'a body: served over HTTP/1.1',
  );
  assert.equal(
    isH2cUpgrade(requestOf('POST', '/', [...settings, 'Upgrade', 'h2c', 'Transfer-Encoding', 'chunked'])),
    false,
  );
  assert.equal(
    isH2cUpgrade(requestOf('POST', '/', [...settings, 'Upgrade', 'h2c', 'Content-Length', '0'])),
    true,
  );
});

test('h2c upgrade – HTTP2-Settings must be one field of base64url, 6 bytes a setting', () => {
  assert.equal(http2SettingsProblem('AAMAAABkAAQAAP__'), undefined);
  assert.equal(http2SettingsProblem(''), undefined, 'no settings at all is a valid payload');
  assert.match(http2SettingsProblem(['AAMAAABk', 'AAMAAABk']) ?? '', /one header field/);
  assert.match(http2SettingsProblem(undefined) ?? '', /one header field/);
  assert.match(http2SettingsProblem('AAMAAA') ?? '', /6 bytes a parameter/);
  assert.match(http2SettingsProblem('AAMAAABk+/') ?? '', /base64url/);
});
