import assert from 'node:assert/strict';
import { once } from 'node:events';
import http2 from 'node:http2';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { type EchoProcess, startEchoProcess } from '../helpers/liveness.ts';
import { until } from '../helpers/runtime.ts';

// The HTTP/2 limits as docs/service/protocols.md states them (issue #30, item 8): a header list over 64 KiB
// (RFC 9113's count: name + value + 32 bytes a field) is refused with RST_STREAM
// ENHANCE_YOUR_CALM whenever it is sent, the session goes on; streams past
// ECHO_H2_MAX_CONCURRENT_STREAMS are refused one by one (REFUSED_STREAM) while the client has not
// acknowledged the SETTINGS that say so, and cost the session (GOAWAY PROTOCOL_ERROR) once it has.
// Raw frames, so that what is sent before and after the acknowledgement is exact.

let echo: EchoProcess;
before(async () => {
  echo = await startEchoProcess();
});
after(() => echo.stop());

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const HEADERS = 0x1;
const RST_STREAM = 0x3;
const SETTINGS = 0x4;
const GOAWAY = 0x7;
const CONTINUATION = 0x9;
const { NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_REFUSED_STREAM, NGHTTP2_PROTOCOL_ERROR } = http2.constants;

function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(streamId, 5);
  return Buffer.concat([header, payload]);
}

/** An HPACK string length (7-bit prefix, no Huffman). */
function hpackLength(value: number): Buffer {
  if (value < 0x7f) return Buffer.of(value);
  const bytes = [0x7f];
  let rest = value - 0x7f;
  while (rest >= 0x80) {
    bytes.push((rest & 0x7f) | 0x80);
    rest >>>= 7;
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

/** A GET on `streamId` with `fields` after its pseudo-headers, as HEADERS and CONTINUATION frames. */
function request(streamId: number, fields: ReadonlyArray<readonly [string, string]> = []): Buffer {
  const all = [
    [':method', 'GET'],
    [':scheme', 'http'],
    [':path', '/h2-limits'],
    [':authority', 'a'],
    ...fields,
  ];
  const block = Buffer.concat(
    all.map(([name, value]) => {
      const n = Buffer.from(name!, 'latin1');
      const v = Buffer.from(value!, 'latin1');
      return Buffer.concat([Buffer.of(0), hpackLength(n.length), n, hpackLength(v.length), v]);
    }),
  );
  const frames: Buffer[] = [];
  for (let offset = 0; offset < block.length; offset += 16_384) {
    const first = offset === 0;
    const last = offset + 16_384 >= block.length;
    frames.push(
      frame(
        first ? HEADERS : CONTINUATION,
        (first ? 0x1 : 0) | (last ? 0x4 : 0),
        streamId,
        block.subarray(offset, offset + 16_384),
      ),
    );
  }
  return Buffer.concat(frames);
}

/** The pseudo-headers of `request` as RFC 9113 counts them: 42 + 43 + 47 + 43. */
const PSEUDO_BYTES = 175;

/** Header fields that bring a request's header list to exactly `bytes`. */
function fieldsOf(bytes: number): Array<readonly [string, string]> {
  const fields: Array<readonly [string, string]> = [];
  let left = bytes - PSEUDO_BYTES;
  for (let i = 0; left > 0; i++) {
    const name = `x-pad-${String(i).padStart(2, '0')}`;
    const value = Math.min(8_000, left - name.length - 32);
    fields.push([name, 'v'.repeat(value)]);
    left -= name.length + value + 32;
  }
  assert.equal(left, 0);
  return fields;
}

interface Seen {
  /** Frames received: type, stream, and the error code of RST_STREAM and GOAWAY. */
  readonly frames: Array<{ type: number; streamId: number; code?: number }>;
  closed: boolean;
}

/**
 * Opens a connection, sends the preface and an empty SETTINGS, then `first` at once (before the
 * server's SETTINGS can have been acknowledged); with `afterAck`, waits for the server's SETTINGS,
 * acknowledges them and sends `afterAck`. Resolves with what came back once `done` holds of it
 * (`what` names that in the failure).
 */
async function converse(
  first: Buffer[],
  afterAck: Buffer[],
  what: string,
  done: (seen: Seen) => boolean,
): Promise<Seen> {
  const socket = net.connect(echo.port, '127.0.0.1');
  socket.on('error', () => {});
  const seen: Seen = { frames: [], closed: false };
  socket.on('close', () => {
    seen.closed = true;
  });
  let buffered = Buffer.alloc(0);
  let settingsSeen: () => void = () => {};
  const settings = new Promise<void>((resolve) => {
    settingsSeen = resolve;
  });
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 9) {
      const length = buffered.readUIntBE(0, 3);
      if (buffered.length < 9 + length) break;
      const type = buffered[3]!;
      const flags = buffered[4]!;
      const streamId = buffered.readUInt32BE(5) & 0x7fffffff;
      const payload = buffered.subarray(9, 9 + length);
      buffered = buffered.subarray(9 + length);
      if (type === RST_STREAM) seen.frames.push({ type, streamId, code: payload.readUInt32BE(0) });
      else if (type === GOAWAY) seen.frames.push({ type, streamId, code: payload.readUInt32BE(4) });
      else seen.frames.push({ type, streamId });
      if (type === SETTINGS && (flags & 0x1) === 0) settingsSeen();
    }
  });
  await once(socket, 'connect');
  socket.write(Buffer.concat([PREFACE, frame(SETTINGS, 0, 0, Buffer.alloc(0)), ...first]));
  if (afterAck.length > 0) {
    await settings;
    socket.write(Buffer.concat([frame(SETTINGS, 0x1, 0, Buffer.alloc(0)), ...afterAck]));
  }
  await until(what, () => done(seen), 30_000);
  socket.destroy();
  return seen;
}

const answered = (seen: Seen, streamId: number) =>
  seen.frames.some((f) => f.type === HEADERS && f.streamId === streamId);
const resetWith = (seen: Seen, streamId: number) =>
  seen.frames.find((f) => f.type === RST_STREAM && f.streamId === streamId)?.code;
/** Every stream of `ids` answered or reset, or the connection closed: what came back is complete. */
const settled =
  (...ids: number[]) =>
  (seen: Seen) =>
    seen.closed || ids.every((id) => answered(seen, id) || resetWith(seen, id) !== undefined);
/** The odd stream ids 1, 3, ... of `count` requests. */
const streams = (count: number) => Array.from({ length: count }, (_, i) => 2 * i + 1);

test('HTTP/2 limits – a header list of 64 KiB is served, one byte more is refused with ENHANCE_YOUR_CALM, before and after the SETTINGS are acknowledged; the session goes on', async () => {
  const seen = await converse(
    [request(1, fieldsOf(65_536)), request(3, fieldsOf(65_537)), request(5, fieldsOf(70_000))],
    [request(7, fieldsOf(65_536)), request(9, fieldsOf(65_537)), request(11)],
    'streams 1 to 11 answered or reset',
    settled(...streams(6)),
  );
  assert.ok(answered(seen, 1), 'a 64 KiB header list (first flight) was not served');
  assert.equal(resetWith(seen, 3), NGHTTP2_ENHANCE_YOUR_CALM, 'a header list of 64 KiB + 1 (first flight)');
  assert.equal(resetWith(seen, 5), NGHTTP2_ENHANCE_YOUR_CALM, 'a 70 KB header list (first flight)');
  assert.ok(answered(seen, 7), 'a 64 KiB header list (acknowledged) was not served');
  assert.equal(resetWith(seen, 9), NGHTTP2_ENHANCE_YOUR_CALM, 'a header list of 64 KiB + 1 (acknowledged)');
  assert.ok(answered(seen, 11), 'the session did not go on');
  assert.equal(seen.closed, false);
  assert.ok(!seen.frames.some((f) => f.type === GOAWAY));
});

test('HTTP/2 limits – node:http2 as a client: a 70 KB header list is refused, the next request on the session is served', async () => {
  // Node's own bound on what it sends (64 KB by default) would refuse the request before it left.
  const session = http2.connect(echo.url, { maxSendHeaderBlockLength: 1_000_000 });
  session.on('error', () => {});
  const big = session.request({ ':path': '/h2-limits', 'x-big': 'v'.repeat(70_000) });
  big.on('response', () => assert.fail('a 70 KB header list was answered'));
  big.resume();
  const [error] = (await once(big, 'error')) as [Error];
  big.on('error', () => {});
  assert.match(String(error.message), /NGHTTP2_ENHANCE_YOUR_CALM/);
  const next = session.request({ ':path': '/h2-limits' });
  const [headers] = (await once(next, 'response')) as [http2.IncomingHttpHeaders];
  next.resume();
  assert.equal(headers[':status'], 200);
  session.close();
  await once(session, 'close');
});

test('HTTP/2 limits – streams past ECHO_H2_MAX_CONCURRENT_STREAMS: refused one by one before the SETTINGS are acknowledged, the session ended after', async () => {
  const delayed = (streamId: number) => request(streamId, [['x-echo-delay', '1s']]);
  const early = await converse(
    streams(102).map(delayed),
    [],
    'the 102 streams answered (after their delay) or refused',
    settled(...streams(102)),
  );
  assert.equal(resetWith(early, 201), NGHTTP2_REFUSED_STREAM);
  assert.equal(resetWith(early, 203), NGHTTP2_REFUSED_STREAM);
  for (let id = 1; id <= 199; id += 2) assert.ok(answered(early, id), `stream ${id} was not answered`);
  assert.equal(early.closed, false, 'the session ended');

  const late = await converse(
    [],
    streams(102).map(delayed),
    'the session ended, or every stream answered',
    settled(...streams(102)),
  );
  const goaway = late.frames.find((f) => f.type === GOAWAY);
  assert.equal(goaway?.code, NGHTTP2_PROTOCOL_ERROR, 'no GOAWAY PROTOCOL_ERROR');
  assert.ok(late.closed, 'the session went on');
});
