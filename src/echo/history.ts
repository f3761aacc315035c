import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders } from 'node:http';
import type { AppliedFault } from './applied.ts';

const NO_FAULTS: readonly AppliedFault[] = Object.freeze([]);

/** One recorded request, as `GET /history` shows it. */
export interface HistoryEntry {
  /** Unique per entry: the request id when no stored entry has it yet, else `<request id>-<n>`. */
  readonly id: string;
  readonly request_id: string;
  /** ISO 8601 with offset (UTC, `Z`). */
  readonly timestamp: string;
  readonly method: string;
  readonly url: string;
  readonly path: string;
  readonly query: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
  readonly body_encoding: 'utf8' | 'base64';
  readonly body_size: number;
  readonly body_truncated: boolean;
  readonly remote_addr: string;
  readonly protocol: string;
  /** The answered status; `null` while the request is still in flight, 499 if the client left. */
  status: number | null;
  duration_ms: number | null;
  /** The faults applied to the answer, in order (empty: none). */
  faults: readonly AppliedFault[];
}

/**
 * A stored request. Recording is on the hot path of every echo, so it only keeps references
 * (the request's own headers object, the bounded body bytes, a clock reading); the text forms
 * (`timestamp`, `body`, `path`, …) are worked out when history is read, which is rare.
 */
class Recorded implements HistoryEntry {
  readonly id: string;
  readonly request_id: string;
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body_size: number;
  readonly remote_addr: string;
  readonly protocol: string;
  status: number | null = null;
  duration_ms: number | null = null;
  faults: readonly AppliedFault[] = NO_FAULTS;
  readonly #timeMs: number;
  readonly #bytes: Buffer;
  readonly #cut: boolean;
  /** Its place in the order of every entry ever recorded (History's index uses it). */
  readonly seq: number;
  #decoded: { body: string; encoding: 'utf8' | 'base64'; keptBytes: number } | undefined;

  constructor(id: string, input: RecordInput, bytes: Buffer, cut: boolean, seq: number) {
    this.id = id;
    this.seq = seq;
    this.request_id = input.requestId;
    this.method = input.method;
    this.url = input.url;
    this.headers = input.headers;
    this.body_size = input.body?.length ?? 0;
    this.remote_addr = input.remoteAddr;
    this.protocol = input.protocol;
    this.#timeMs = Date.now();
    this.#bytes = bytes;
    this.#cut = cut;
  }

  get timestamp(): string {
    return new Date(this.#timeMs).toISOString();
  }

  get path(): string {
    const q = this.url.indexOf('?');
    return q === -1 ? this.url : this.url.slice(0, q);
  }

  get query(): string {
    const q = this.url.indexOf('?');
    return q === -1 ? '' : this.url.slice(q + 1);
  }

  get body(): string {
    return this.#decode().body;
  }

  get body_encoding(): 'utf8' | 'base64' {
    return this.#decode().encoding;
  }

  get body_truncated(): boolean {
    return this.#decode().keptBytes < this.body_size;
  }

  #decode(): { body: string; encoding: 'utf8' | 'base64'; keptBytes: number } {
    if (this.#decoded !== undefined) return this.#decoded;
    let kept = this.#bytes;
    // A cut may split a multi-byte character: keep the whole characters, so the text holds no
    // U+FFFD that was never sent. An uncut body is text only when every byte of it is.
    const textual = isUtf8Text(this.#cut ? kept.subarray(0, kept.length - partialCharBytes(kept)) : kept);
    if (textual !== undefined) kept = textual;
    this.#decoded =
      textual !== undefined
        ? { body: kept.toString('utf8'), encoding: 'utf8', keptBytes: kept.length }
        : { body: kept.toString('base64'), encoding: 'base64', keptBytes: kept.length };
    return this.#decoded;
  }

  toJSON(): HistoryEntry {
    return {
      id: this.id,
      request_id: this.request_id,
      timestamp: this.timestamp,
      method: this.method,
      url: this.url,
      path: this.path,
      query: this.query,
      headers: this.headers,
      body: this.body,
      body_encoding: this.body_encoding,
      body_size: this.body_size,
      body_truncated: this.body_truncated,
      remote_addr: this.remote_addr,
      protocol: this.protocol,
      status: this.status,
      duration_ms: this.duration_ms,
      faults: this.faults,
    };
  }
}

/** What `History.record` needs to know of a request. */
export interface RecordInput {
  readonly requestId: string;
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer | undefined;
  readonly remoteAddr: string;
  readonly protocol: string;
  /**
   * Whether `requestId` may repeat one already stored: true (the default) for an id the client
   * sent; false for one the server generated unique (a random UUID), which skips the look-up.
   */
  readonly idMayRepeat?: boolean;
}

/**
 * The bounded in-memory history: at most `capacity` entries (the oldest goes first) and at most
 * `maxBodyBytes` of each body, so memory stays bounded whatever the traffic.
 */
export class History {
  readonly capacity: number;
  readonly maxBodyBytes: number;
  readonly #ring: Array<Recorded | undefined>;
  #start = 0;
  #size = 0;
  #collisions = 0;
  /** Entries recorded so far; the next one's `seq`. */
  #recorded = 0;
  // The index by id is brought up to date only when it is needed: a look-up by id (rare) or an id
  // the client sent (which may repeat a stored one). A request with a generated id changes only the
  // ring, so most requests touch no map: a map that gains and loses an entry on every request costs
  // three hashed operations and the rehashing its deletions cause.
  readonly #byId = new Map<string, Recorded>();
  /** Entries with `seq` below this are in `#byId`, unless they have left the ring. */
  #indexedUpTo = 0;

  constructor(capacity: number, maxBodyBytes: number) {
    this.capacity = capacity;
    this.maxBodyBytes = maxBodyBytes;
    this.#ring = new Array(capacity);
  }

  get size(): number {
    return this.#size;
  }

  /** Stores a request, evicting the oldest entry when full. Returns the entry (status pending). */
  record(input: RecordInput): HistoryEntry | undefined {
    if (this.capacity === 0) return undefined;
    const body = input.body ?? EMPTY;
    const cut = body.length > this.maxBodyBytes;
    // Keep our own copy of a cut body, or of a view into a larger buffer, so that history never
    // holds more than maxBodyBytes of memory per entry.
    const kept = cut ? body.subarray(0, this.maxBodyBytes) : body;
    // (No body, most requests: reading `.buffer` of a small Buffer is not free.)
    const bytes =
      kept.byteLength === 0 ? EMPTY : kept.byteLength === kept.buffer.byteLength ? kept : Buffer.from(kept);
    // A sent id may itself look like `<id>-<n>`: look for a suffix no stored entry has.
    let id = input.requestId;
    if (input.idMayRepeat !== false) {
      const byId = this.#index();
      while (byId.has(id)) id = `${input.requestId}-${++this.#collisions}`;
    }
    const entry = new Recorded(id, input, bytes, cut, this.#recorded++);
    if (this.#size === this.capacity) {
      const oldest = this.#ring[this.#start];
      if (oldest !== undefined && oldest.seq < this.#indexedUpTo) this.#byId.delete(oldest.id);
      this.#ring[this.#start] = entry;
      this.#start = (this.#start + 1) % this.capacity;
    } else {
      this.#ring[(this.#start + this.#size) % this.capacity] = entry;
      this.#size++;
    }
    return entry;
  }

  get(id: string): HistoryEntry | undefined {
    return this.#index().get(id);
  }

  /** The index by id, with every stored entry in it. */
  #index(): Map<string, Recorded> {
    if (this.#indexedUpTo < this.#recorded) {
      // The entries recorded since the last update that are still stored (the oldest first).
      const missing = Math.min(this.#recorded - this.#indexedUpTo, this.#size);
      for (let i = this.#size - missing; i < this.#size; i++) {
        const entry = this.#ring[(this.#start + i) % this.capacity]!;
        this.#byId.set(entry.id, entry);
      }
      this.#indexedUpTo = this.#recorded;
    }
    return this.#byId;
  }

  /** Every stored entry, oldest first. */
  list(): HistoryEntry[] {
    const out: HistoryEntry[] = [];
    for (let i = 0; i < this.#size; i++) out.push(this.#ring[(this.#start + i) % this.capacity]!);
    return out;
  }
}

const EMPTY = Buffer.alloc(0);

/**
 * `buf` when it is valid UTF-8 without control characters other than whitespace (safe to show as
 * text), else `undefined`.
 */
function isUtf8Text(buf: Buffer): Buffer | undefined {
  return isUtf8(buf) && !hasBinaryControl(buf) ? buf : undefined;
}

/** Bytes at the end of `buf` that start a UTF-8 character without finishing it (0-3). */
function partialCharBytes(buf: Buffer): number {
  for (let back = 1; back <= 3 && back <= buf.length; back++) {
    const b = buf[buf.length - back]!;
    if (b >= 0x80 && b <= 0xbf) continue; // a continuation byte: look further back
    const needed = b >= 0xf5 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc2 ? 2 : 1;
    return needed > back ? back : 0;
  }
  return 0;
}

function hasBinaryControl(buf: Buffer): boolean {
  for (let i = 0; i < buf.length; i++) {
    const b = buf[i]!;
    if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) return true;
  }
  return false;
}
