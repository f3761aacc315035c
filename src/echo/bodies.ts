import { randomFillSync } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Readable, type Transform } from 'node:stream';
import { createBrotliCompress, createDeflate, createGzip, constants as zlib } from 'node:zlib';
import type { Compression } from './controls.ts';
import { isoNow } from './iso-time.ts';
import type { ByteSource } from './random.ts';

const CHUNK_BYTES = 64 * 1024;

const cryptoBytes: ByteSource = (target) => randomFillSync(target);

/**
 * `size` random bytes, produced chunk by chunk as the client reads: never buffered whole. The bytes
 * come from `bytes`: the operating system's generator by default (fastest), a seeded one
 * (`seededBytes`) for a seeded request, so that its body replays.
 *
 * At most `CHUNKS_PER_TURN` chunks are made in one turn of the event loop, for all bodies
 * together; a body that asks for more waits for the next turn (`setImmediate`, after the loop has
 * polled for I/O). A client reading as fast as loopback allows takes every chunk as soon as it is
 * written, and writing one asks for the next in the same turn (node's stream callbacks are
 * `process.nextTick`s): without the budget, a 100 MB body was made in one go, and 20 of them held a
 * `/health` probe for seconds. The budget is shared, so a turn's work does not grow with the number
 * of downloads either; a small body is still made at once.
 */
export class RandomBody extends Readable {
  #remaining: number;
  readonly #bytes: ByteSource;
  /** Whether everything written downstream has left the process; set by {@link recycleWhen}. */
  #flushed: (() => boolean) | undefined;
  /** Chunks pushed since the consumer was last seen with nothing left to write. */
  readonly #inFlight: Buffer[] = [];
  /** Chunks whose bytes have left the process, to be filled again. */
  readonly #free: Buffer[] = [];

  constructor(size: number, bytes: ByteSource = cryptoBytes) {
    super({ highWaterMark: CHUNK_BYTES });
    this.#remaining = size;
    this.#bytes = bytes;
  }

  /**
   * Reuses chunks once `flushed()` says the consumer holds none of them any more (an HTTP/1.1
   * response on a plain socket with nothing buffered: node hands a chunk to the kernel, or keeps it
   * counted in `writableLength` until it has). A download then cycles through two or three chunks
   * instead of making a new 64 KiB buffer for each: 8 downloads at loopback speed made about 6,400 a
   * second, freed only when V8 next collected, and the allocator kept the high-water mark (RSS
   * +65 MB that stayed).
   */
  recycleWhen(flushed: () => boolean): void {
    this.#flushed = flushed;
  }

  override _read(): void {
    if (chunksThisTurn < CHUNKS_PER_TURN && turnHead === waitingBodies.length) {
      chunksThisTurn++;
      scheduleTurn();
      this.produce();
    } else {
      waitingBodies.push(this);
      scheduleTurn();
    }
  }

  /** Pushes the next chunk, or the end. */
  produce(): void {
    if (this.destroyed) return;
    if (this.#remaining <= 0) {
      this.#inFlight.length = 0;
      this.#free.length = 0;
      this.push(null);
      return;
    }
    const n = Math.min(CHUNK_BYTES, this.#remaining);
    this.#remaining -= n;
    this.push(this.#bytes(this.#chunk(n)));
  }

  /** A chunk of `n` bytes (at most {@link CHUNK_BYTES}) to fill: a new one, or one that has left. */
  #chunk(n: number): Buffer {
    if (this.#flushed === undefined) return Buffer.allocUnsafe(n);
    if (this.readableLength === 0 && this.#flushed()) {
      for (const done of this.#inFlight) this.#free.push(done);
      this.#inFlight.length = 0;
    }
    // The last chunk (or the only one, of a small body) gets a buffer of its own size when none is
    // free: reused by nothing after it.
    if (n < CHUNK_BYTES && this.#free.length === 0) return Buffer.allocUnsafe(n);
    const chunk = this.#free.pop() ?? Buffer.allocUnsafeSlow(CHUNK_BYTES);
    this.#inFlight.push(chunk);
    return n === CHUNK_BYTES ? chunk : chunk.subarray(0, n);
  }
}

/** Chunks of generated bodies made in one turn of the event loop, for all bodies together: 1 MiB. */
export const CHUNKS_PER_TURN = 16;
let chunksThisTurn = 0;
/** Bodies waiting for a turn, oldest from `turnHead` on; a body waits at most once at a time. */
const waitingBodies: Array<RandomBody | undefined> = [];
let turnHead = 0;
let turnScheduled = false;

function scheduleTurn(): void {
  if (turnScheduled) return;
  turnScheduled = true;
  setImmediate(nextTurn);
}

/** A new turn: the budget is whole again, and the bodies waiting take it first, oldest first. */
function nextTurn(): void {
  turnScheduled = false;
  chunksThisTurn = 0;
  // Bodies asking again during this turn wait behind the others.
  while (chunksThisTurn < CHUNKS_PER_TURN && turnHead < waitingBodies.length) {
    const body = waitingBodies[turnHead]!;
    waitingBodies[turnHead++] = undefined;
    chunksThisTurn++;
    body.produce();
  }
  if (turnHead === waitingBodies.length) {
    waitingBodies.length = 0;
    turnHead = 0;
  } else if (turnHead >= 1024) {
    waitingBodies.splice(0, turnHead);
    turnHead = 0;
  }
  // The next turn resets the budget, and serves whoever still waits.
  if (chunksThisTurn > 0) scheduleTurn();
}

/** Brotli's quality for `X-Echo-Compress: br`: near wire speed (see `compressor`). */
export const BROTLI_QUALITY = 4;

/**
 * Bounds the compression work running at once (`ECHO_MAX_CONCURRENT_COMPRESSION`): each chunk a
 * compressor takes holds a slot while zlib works on it; a chunk that finds none waits its turn, in
 * arrival order, so compressed responses share the slots chunk by chunk and the rest of the server
 * (and the thread pool zlib shares with file and DNS work) is left room. The queue holds at most
 * one chunk per compressed response (a stream writes its next chunk only when the last is done).
 */
export class CompressionSlots {
  readonly max: number;
  #busy = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(max: number) {
    this.max = max;
  }

  /** Chunks being compressed now. */
  get busy(): number {
    return this.#busy;
  }

  /** Chunks waiting for a slot. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Calls `work` once a slot is free; `work` calls the function it is given when it is done. */
  run(work: (release: () => void) => void): void {
    if (this.#busy < this.max) {
      this.#busy++;
      work(this.#releaser());
    } else this.#waiting.push(() => work(this.#releaser()));
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      // The slot passes straight to the next in line.
      if (next !== undefined) next();
      else this.#busy--;
    };
  }
}

/** The largest piece of input compressed in one slot: a large buffer is compressed in turns too. */
const SLOT_CHUNK_BYTES = CHUNK_BYTES;

/**
 * A streaming compressor for an `X-Echo-Compress` value; with `slots`, its work is bounded by them
 * (see `CompressionSlots`).
 */
export function compressor(kind: Compression, slots?: CompressionSlots) {
  const zip = zlibStream(kind);
  if (slots !== undefined) bound(zip, slots);
  return zip;
}

function zlibStream(kind: Compression) {
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

type TransformCallback = (error?: Error | null, data?: unknown) => void;
interface Transformer {
  _transform(chunk: Buffer, encoding: BufferEncoding, callback: TransformCallback): void;
}

/**
 * Makes each piece of input (at most `SLOT_CHUNK_BYTES`) wait for a slot before zlib takes it. The
 * stream's flush at the end goes through `_transform` too (zlib's own `_flush` calls it), so the
 * last block waits its turn like the others.
 */
function bound(zip: Transformer & Transform, slots: CompressionSlots): void {
  const transform = zip._transform.bind(zip);
  let held: (() => void) | undefined;
  // A stream destroyed mid-chunk gives its slot back (releasing twice is harmless).
  zip.once('close', () => held?.());
  zip._transform = (chunk, encoding, callback) => {
    const step = (offset: number) => {
      // A chunk within the bound goes whole: a flush marker is an empty chunk with a property.
      const end =
        chunk.length <= SLOT_CHUNK_BYTES ? chunk.length : Math.min(chunk.length, offset + SLOT_CHUNK_BYTES);
      const piece = offset === 0 && end === chunk.length ? chunk : chunk.subarray(offset, end);
      slots.run((release) => {
        held = release;
        transform(piece, encoding, (error, data) => {
          release();
          held = undefined;
          if (error || end >= chunk.length) return callback(error, data);
          step(end);
        });
      });
    };
    step(0);
  };
}

/**
 * The plain-text summary a GET without a body answers with: the request line, every header as
 * received, the client IP and a timestamp, one item a line. HTTP/2's `:authority` is shown as the
 * `host` it stands for (RFC 9113 8.3.1), where it was received, unless the request also sent `host`.
 */
export function requestSummary(raw: IncomingMessage, clientIp: string, protocol: string): string {
  let out = `${raw.method} ${raw.url} ${protocol}\n`;
  const headers = raw.rawHeaders;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    if (name.charCodeAt(0) === 58 /* ':' pseudo-header */) {
      if (name === ':authority' && !hasHostHeader(headers)) out += `host: ${headers[i + 1]}\n`;
      continue;
    }
    out += `${name}: ${headers[i + 1]}\n`;
  }
  out += `\nClient IP: ${clientIp}\nTimestamp: ${isoNow()}\n`;
  return out;
}

function hasHostHeader(rawHeaders: readonly string[]): boolean {
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.toLowerCase() === 'host') return true;
  return false;
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
