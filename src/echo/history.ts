import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders } from 'node:http';

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
  readonly headers: Readonly<Record<string, string | string[]>>;
  readonly body: string;
  readonly body_encoding: 'utf8' | 'base64';
  readonly body_size: number;
  readonly body_truncated: boolean;
  readonly remote_addr: string;
  readonly protocol: string;
  /** The answered status; `null` while the request is still in flight, 499 if the client left. */
  status: number | null;
  duration_ms: number | null;
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
}

/**
 * The bounded in-memory history: at most `capacity` entries (the oldest goes first) and at most
 * `maxBodyBytes` of each body, so memory stays bounded whatever the traffic.
 */
export class History {
  readonly capacity: number;
  readonly maxBodyBytes: number;
  readonly #ring: Array<HistoryEntry | undefined>;
  readonly #byId = new Map<string, HistoryEntry>();
  #start = 0;
  #size = 0;
  #collisions = 0;

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
    const q = input.url.indexOf('?');
    const body = input.body ?? EMPTY;
    const cut = body.length > this.maxBodyBytes;
    let kept = cut ? body.subarray(0, this.maxBodyBytes) : body;
    let text: string | undefined;
    // A cut may split a multi-byte character: keep the whole characters, so the text holds no
    // U+FFFD that was never sent. An uncut body is text only when every byte of it is.
    const textual = isUtf8Text(cut ? kept.subarray(0, kept.length - partialCharBytes(kept)) : kept);
    if (textual !== undefined) {
      kept = textual;
      text = kept.toString('utf8');
    }
    // A sent id may itself look like `<id>-<n>`: look for a suffix no stored entry has.
    let id = input.requestId;
    while (this.#byId.has(id)) id = `${input.requestId}-${++this.#collisions}`;
    const entry: HistoryEntry = {
      id,
      request_id: input.requestId,
      timestamp: new Date().toISOString(),
      method: input.method,
      url: input.url,
      path: q === -1 ? input.url : input.url.slice(0, q),
      query: q === -1 ? '' : input.url.slice(q + 1),
      headers: copyHeaders(input.headers),
      body: text ?? kept.toString('base64'),
      body_encoding: text === undefined ? 'base64' : 'utf8',
      body_size: body.length,
      body_truncated: kept.length < body.length,
      remote_addr: input.remoteAddr,
      protocol: input.protocol,
      status: null,
      duration_ms: null,
    };
    if (this.#size === this.capacity) {
      const oldest = this.#ring[this.#start];
      if (oldest !== undefined) this.#byId.delete(oldest.id);
      this.#ring[this.#start] = entry;
      this.#start = (this.#start + 1) % this.capacity;
    } else {
      this.#ring[(this.#start + this.#size) % this.capacity] = entry;
      this.#size++;
    }
    this.#byId.set(id, entry);
    return entry;
  }

  get(id: string): HistoryEntry | undefined {
    return this.#byId.get(id);
  }

  /** Every stored entry, oldest first. */
  list(): HistoryEntry[] {
    const out: HistoryEntry[] = [];
    for (let i = 0; i < this.#size; i++) out.push(this.#ring[(this.#start + i) % this.capacity]!);
    return out;
  }
}

const EMPTY = Buffer.alloc(0);

function copyHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

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
