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
    const kept = body.length > this.maxBodyBytes ? body.subarray(0, this.maxBodyBytes) : body;
    const text = isUtf8Text(kept) ? kept.toString('utf8') : undefined;
    let id = input.requestId;
    if (this.#byId.has(id)) id = `${input.requestId}-${++this.#collisions}`;
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

/** Valid UTF-8 without control characters other than whitespace: safe to show as text. */
function isUtf8Text(buf: Buffer): boolean {
  if (buf.length === 0) return true;
  // A cut may split a multi-byte character at the end; tolerate up to 3 trailing bytes.
  for (let trim = 0; trim <= 3 && trim < buf.length; trim++) {
    const slice = trim === 0 ? buf : buf.subarray(0, buf.length - trim);
    if (isUtf8(slice)) return !hasBinaryControl(slice);
  }
  return false;
}

import { isUtf8 } from 'node:buffer';

function hasBinaryControl(buf: Buffer): boolean {
  for (let i = 0; i < buf.length; i++) {
    const b = buf[i]!;
    if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) return true;
  }
  return false;
}
