/**
 * The service's JSON (and YAML) bodies, read as they arrive (issue #30): each JSON chunk is
 * decoded, measured and searched for a forbidden key on its own `data` event, so that a body of
 * megabytes (a scenario set may be 16 MiB) costs the event loop a few small turns and one
 * `JSON.parse`, not one turn that copies, decodes, scans and parses it all (45 to 75 ms and three
 * copies of a 12 MiB set). What is refused, and with which error, is what fastify's parser refuses.
 */
import { StringDecoder } from 'node:string_decoder';
import { errorCodes, type FastifyRequest } from 'fastify';
import { JsonDepthScanner } from '../scenario/index.ts';

/**
 * A key fastify's parser (secure-json-parse) looks twice at: `"__proto__"` or `"constructor"`,
 * each character as itself or as a `\u` escape. Its own patterns also ask for the `:` of a key;
 * these do not, so a value that reads the same sends the body the careful way too.
 */
const SUSPECT_KEY =
  /"(?:(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])|(?:c|\\u0063)(?:o|\\u006[Ff])(?:n|\\u006[Ee])(?:s|\\u0073)(?:t|\\u0074)(?:r|\\u0072)(?:u|\\u0075)(?:c|\\u0063)(?:t|\\u0074)(?:o|\\u006[Ff])(?:r|\\u0072))"/;

/** The longest text {@link SUSPECT_KEY} matches: two quotes and eleven six-character escapes. */
const SUSPECT_KEY_MAX_CHARS = 2 + 11 * 6;

/** What the text of a body read in pieces turned out to be. */
export type JsonText =
  | { readonly kind: 'text'; readonly text: string; readonly suspect: boolean }
  | { readonly kind: 'too-deep' }
  | { readonly kind: 'too-many' };

/** The bounds a body is read within: how deep it nests, how many values it holds. */
export interface JsonBounds {
  readonly maxDepth: number;
  readonly maxValues: number;
}

/**
 * A body announced at least this long (`Content-Length`) is gathered into one buffer of that length
 * as it arrives (64 KiB: a socket read); a shorter one, or one without a length, keeps its chunks.
 */
export const GATHER_INTO_ONE_BYTES = 64 * 1024;

/**
 * The text of a JSON body, gathered piece by piece: depth measured, values counted and forbidden
 * keys looked for as each piece arrives. Once the text nests deeper than `maxDepth` or holds more
 * than `maxValues` values, the rest is counted, not kept, and `JSON.parse` never sees it.
 *
 * What is kept is the body's bytes, not the text of each piece: the text of a piece is looked at
 * and dropped (young garbage), and the whole is decoded once at the end. Pieces of text kept until
 * the end outlive the young generation and are copied into the old one, which V8 then keeps: a
 * 12 MiB set grew the old space by 17 to 25 MB that way, on top of the text and the parsed set.
 * A body whose length is announced is copied into one buffer of that length as it comes.
 */
export class JsonTextReader {
  readonly #decoder = new StringDecoder('utf8');
  readonly #depth: JsonDepthScanner;
  readonly #maxValues: number;
  /** The announced body, filled as it comes; undefined for a short or unannounced one. */
  #whole: Buffer | undefined;
  #filled = 0;
  /** A short or unannounced body's chunks. */
  readonly #chunks: Buffer[] = [];
  #over: 'too-deep' | 'too-many' | undefined;
  #suspect = false;
  /** The end of the text read so far, where a suspect key cut in two begins. */
  #tail = '';

  /** `expectedBytes`: the body's `Content-Length`, when it has one (already checked against the limit). */
  constructor(bounds: JsonBounds, expectedBytes?: number) {
    this.#depth = new JsonDepthScanner(bounds.maxDepth);
    this.#maxValues = bounds.maxValues;
    if (expectedBytes !== undefined && expectedBytes >= GATHER_INTO_ONE_BYTES)
      this.#whole = Buffer.allocUnsafeSlow(expectedBytes);
  }

  write(chunk: Buffer): void {
    this.#read(this.#decoder.write(chunk));
    if (this.#over !== undefined) return;
    const whole = this.#whole;
    if (whole !== undefined && this.#filled + chunk.length <= whole.length) {
      this.#filled += chunk.copy(whole, this.#filled);
      return;
    }
    if (whole !== undefined) {
      // More than it announced (its reader refuses that at the end): kept as chunks from here on.
      this.#chunks.push(whole.subarray(0, this.#filled));
      this.#whole = undefined;
    }
    this.#chunks.push(chunk);
  }

  /** The whole text, or which bound it went over. */
  end(): JsonText {
    this.#read(this.#decoder.end());
    if (this.#over !== undefined) return { kind: this.#over };
    const whole = this.#whole;
    this.#whole = undefined;
    if (whole !== undefined) {
      const text = whole.toString('utf8', 0, this.#filled);
      // Its memory is given back now, not at a collection to come: while the text is parsed, the
      // bytes, the text and the parsed value would be three copies of a body of megabytes.
      (whole.buffer as ArrayBuffer).transfer(0);
      return { kind: 'text', text, suspect: this.#suspect };
    }
    const bytes = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks);
    this.#chunks.length = 0;
    return { kind: 'text', text: bytes.toString('utf8'), suspect: this.#suspect };
  }

  #read(piece: string): void {
    if (piece === '' || this.#over !== undefined) return;
    this.#depth.write(piece);
    if (this.#depth.deepest === undefined) this.#over = 'too-deep';
    else if (this.#depth.values > this.#maxValues) this.#over = 'too-many';
    if (this.#over !== undefined) {
      this.#whole = undefined;
      this.#chunks.length = 0;
      return;
    }
    if (!this.#suspect) {
      const seam = this.#tail + piece;
      this.#suspect = SUSPECT_KEY.test(seam);
      this.#tail = seam.slice(-SUSPECT_KEY_MAX_CHARS);
    }
  }
}

/** What {@link readJsonBody} hands on: the text, or the error fastify's raw-body reader would give. */
export type JsonBodyRead = (error: Error | null, text: JsonText | undefined) => void;

/**
 * Reads a request's body as fastify's raw-body reader does (its route's `bodyLimit` checked on the
 * `Content-Length` first and on every chunk, a short body refused), handing on what a
 * {@link JsonTextReader} made of it.
 */
export function readJsonBody(
  request: FastifyRequest,
  payload: BodyStream,
  bounds: JsonBounds,
  done: JsonBodyRead,
): void {
  const length = Number(request.headers['content-length']);
  const announced = Number.isSafeInteger(length) && length <= request.routeOptions.bodyLimit;
  const reader = new JsonTextReader(bounds, announced ? length : undefined);
  readBody(request, payload, request.routeOptions.bodyLimit, {
    chunk: (bytes) => {
      reader.write(bytes);
      return undefined;
    },
    end: () => done(null, reader.end()),
    fail: (error) => done(error, undefined),
  });
}

/**
 * Reads a request's body as text, as {@link readJsonBody} does, refusing one of more than
 * `maxBytes` (below the route's own limit) with `tooLarge()`, from its `Content-Length` before it is
 * read or as soon as it passes the bound.
 */
export function readTextBody(
  request: FastifyRequest,
  payload: BodyStream,
  maxBytes: number,
  tooLarge: () => Error,
  done: (error: Error | null, text: string | undefined) => void,
): void {
  const decoder = new StringDecoder('utf8');
  const pieces: string[] = [];
  const limit = request.routeOptions.bodyLimit;
  const fail = (error: Error) => done(error, undefined);
  if (maxBytes < limit && Number(request.headers['content-length']) > maxBytes) {
    fail(tooLarge());
    return;
  }
  let received = 0;
  readBody(request, payload, limit, {
    chunk: (bytes) => {
      received += bytes.length;
      if (received > maxBytes) return tooLarge();
      pieces.push(decoder.write(bytes));
      return undefined;
    },
    end: () => {
      pieces.push(decoder.end());
      done(null, pieces.join(''));
    },
    fail,
  });
}

/** The body stream a content-type parser is given. */
type BodyStream = NodeJS.ReadableStream & { receivedEncodedLength?: number };

interface BodySink {
  /** A chunk; an error returned stops the reading there and is handed to `fail`. */
  chunk(bytes: Buffer): Error | undefined;
  end(): void;
  fail(error: Error): void;
}

/** fastify's raw-body reader (lib/content-type-parser.js), handing each chunk on as it comes. */
function readBody(request: FastifyRequest, payload: BodyStream, limit: number, sink: BodySink): void {
  const contentLength = Number(request.headers['content-length']);
  if (contentLength > limit) {
    sink.fail(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
    return;
  }
  let received = 0;
  const stop = () => {
    payload.removeListener('data', onData);
    payload.removeListener('end', onEnd);
    payload.removeListener('error', onEnd);
  };
  function onData(chunk: Buffer | string): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    received += bytes.length;
    if (received > limit || (payload.receivedEncodedLength ?? 0) > limit) {
      stop();
      sink.fail(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
      return;
    }
    const refused = sink.chunk(bytes);
    if (refused) {
      stop();
      sink.fail(refused);
    }
  }
  function onEnd(error?: Error & { statusCode?: number }): void {
    stop();
    if (error != null) {
      if (!(typeof error.statusCode === 'number' && error.statusCode >= 400)) error.statusCode = 400;
      sink.fail(error);
      return;
    }
    if (!Number.isNaN(contentLength) && (payload.receivedEncodedLength || received) !== contentLength) {
      sink.fail(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
      return;
    }
    sink.end();
  }
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onEnd);
  payload.resume();
}
