import { randomFillSync } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { createBrotliCompress, createDeflate, createGzip, constants as zlib } from 'node:zlib';
import type { Compression } from './controls.ts';
import type { ByteSource } from './random.ts';

const CHUNK_BYTES = 64 * 1024;

const cryptoBytes: ByteSource = (target) => randomFillSync(target);

/**
 * `size` random bytes, produced chunk by chunk as the client reads: never buffered whole. The bytes
 * come from `bytes`: the operating system's generator by default (fastest), a seeded one
 * (`seededBytes`) for a seeded request, so that its body replays.
 */
export class RandomBody extends Readable {
  #remaining: number;
  readonly #bytes: ByteSource;

  constructor(size: number, bytes: ByteSource = cryptoBytes) {
    super({ highWaterMark: CHUNK_BYTES });
    this.#remaining = size;
    this.#bytes = bytes;
  }

  override _read(): void {
    if (this.#remaining <= 0) {
      this.push(null);
      return;
    }
    const n = Math.min(CHUNK_BYTES, this.#remaining);
    this.#remaining -= n;
    this.push(this.#bytes(Buffer.allocUnsafe(n)));
  }
}

/** Brotli's quality for `X-Echo-Compress: br`: near wire speed (see `compressor`). */
export const BROTLI_QUALITY = 4;

/** A streaming compressor for an `X-Echo-Compress` value. */
export function compressor(kind: Compression) {
  switch (kind) {
    case 'gzip':
      return createGzip();
    case 'deflate':
      return createDeflate();
    case 'br':
      // Quality 4, not brotli's default 11: that compresses at about 2 MB/s of CPU (six large
      // requests pin two cores), quality 4 at about 150 MB/s on random bytes, still well on text.
      return createBrotliCompress({ params: { [zlib.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY } });
  }
}

/**
 * The plain-text summary a GET without a body answers with: the request line, every header as
 * received, the client IP and a timestamp, one item a line.
 */
export function requestSummary(raw: IncomingMessage, clientIp: string, protocol: string): string {
  let out = `${raw.method} ${raw.url} ${protocol}\n`;
  const headers = raw.rawHeaders;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    if (name.charCodeAt(0) === 58 /* ':' pseudo-header */) continue;
    out += `${name}: ${headers[i + 1]}\n`;
  }
  out += `\nClient IP: ${clientIp}\nTimestamp: ${new Date().toISOString()}\n`;
  return out;
}

/** Whether a request announces a body (so a GET with one is echoed, not summarised). */
export function hasBody(raw: IncomingMessage): boolean {
  const length = raw.headers['content-length'];
  if (length !== undefined) return length !== '0';
  if (raw.headers['transfer-encoding'] !== undefined) return true;
  // HTTP/2 frames a body with DATA frames and needs no length: a request whose HEADERS frame did
  // not end the stream has one coming.
  const stream = (raw as IncomingMessage & { stream?: { endAfterHeaders?: boolean } }).stream;
  return raw.httpVersionMajor === 2 && stream !== undefined && stream.endAfterHeaders === false;
}

/**
 * Reads a body fastify did not parse (a GET or HEAD with a body, an HTTP/2 body without a
 * length or type), up to `limit` bytes.
 * Resolves `undefined` when the body is over the limit.
 */
export async function readRawBody(raw: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of raw) {
    total += (chunk as Buffer).length;
    if (total > limit) {
      raw.resume();
      return undefined;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks, total);
}
