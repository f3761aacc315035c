import type { IncomingMessage } from 'node:http';

// The HTTP/2 frames an `Upgrade: h2c` request becomes (docs/adr/0003-one-port-for-h1-h2c.md): the
// request, as HEADERS and CONTINUATION frames on stream 1, HPACK-encoded without any state.

/** Frame header size and the frame types and flags used here (RFC 9113, section 4 and 6). */
export const FRAME_HEADER_BYTES = 9;
const FRAME_HEADERS = 0x1;
export const FRAME_SETTINGS = 0x4;
const FRAME_CONTINUATION = 0x9;
const FLAG_END_STREAM = 0x1;
const FLAG_END_HEADERS = 0x4;
/** SETTINGS_MAX_FRAME_SIZE's initial value: the largest frame the server accepts before it says more. */
const INITIAL_MAX_FRAME_BYTES = 16_384;

/** Headers that belong to the HTTP/1.1 connection and are malformed in HTTP/2 (RFC 9113, 8.2.2). */
const CONNECTION_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
  'host',
]);

/**
 * The upgraded request as HEADERS (and CONTINUATION) frames on stream 1 with END_STREAM: its
 * pseudo-headers and headers, lower-cased, connection-specific ones left out, each HPACK-encoded as
 * a literal without indexing and without Huffman coding, so no compression state changes.
 */
export function headersFramesForStream1(request: IncomingMessage): Buffer {
  const named = new Set(
    String(request.headers.connection ?? '')
      .split(',')
      .map((token) => token.trim().toLowerCase()),
  );
  const fields: Buffer[] = [
    literal(':method', request.method ?? 'GET'),
    literal(':scheme', 'http'),
    literal(':path', request.url ?? '/'),
  ];
  const authority = request.headers.host;
  if (authority !== undefined) fields.push(literal(':authority', authority));
  const raw = request.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const value = raw[i + 1]!;
    if (CONNECTION_HEADERS.has(name) || named.has(name)) continue;
    if (name === 'te' && value.trim().toLowerCase() !== 'trailers') continue;
    fields.push(literal(name, value));
  }
  const block = Buffer.concat(fields);

  const frames: Buffer[] = [];
  for (let offset = 0; offset < block.length || offset === 0; offset += INITIAL_MAX_FRAME_BYTES) {
    const payload = block.subarray(offset, offset + INITIAL_MAX_FRAME_BYTES);
    const first = offset === 0;
    const last = offset + INITIAL_MAX_FRAME_BYTES >= block.length;
    const header = Buffer.alloc(FRAME_HEADER_BYTES);
    header.writeUIntBE(payload.length, 0, 3);
    header[3] = first ? FRAME_HEADERS : FRAME_CONTINUATION;
    header[4] = (first ? FLAG_END_STREAM : 0) | (last ? FLAG_END_HEADERS : 0);
    header.writeUInt32BE(1, 5);
    frames.push(header, payload);
  }
  return Buffer.concat(frames);
}

/** HPACK "literal header field without indexing, new name" (RFC 7541, 6.2.2), no Huffman. */
function literal(name: string, value: string): Buffer {
  // Header bytes arrive as latin1 strings from the HTTP/1.1 parser: latin1 gives the same bytes back.
  const n = Buffer.from(name, 'latin1');
  const v = Buffer.from(value, 'latin1');
  return Buffer.concat([Buffer.of(0x00), hpackInteger(n.length), n, hpackInteger(v.length), v]);
}

/** An HPACK string length: a 7-bit prefix integer (RFC 7541, 5.1) with the Huffman bit clear. */
function hpackInteger(value: number): Buffer {
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
