import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders } from 'node:http';
import type { AppliedFault } from './applied.ts';
import type { UpstreamOutcome } from './proxy.ts';

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
  /** A forwarded request's upstream (`ECHO_UPSTREAM`): where, its status and its own time. */
  upstream?: UpstreamOutcome;
  /** A gRPC call's end (`ECHO_GRPC_PORT`): its status code and name (`status` is the HTTP/2 one, 200). */
  grpc?: GrpcOutcome;
}

/** How a gRPC call ended: the status the client got (`DEADLINE_EXCEEDED`, `CANCELLED` when it left). */
export interface GrpcOutcome {
  readonly code: number;
  readonly status: string;
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
  upstream: UpstreamOutcome | undefined = undefined;
  grpc: GrpcOutcome | undefined = undefined;
  readonly #timeMs: number;
  readonly #bytes: Buffer;
  readonly #cut: boolean;
  /** Its place in the order of every entry ever recorded (History's index and cursors use it). */
  readonly seq: number;
  /**
   * What the entry holds against `ECHO_HISTORY_MAX_BYTES`: its body bytes, an estimate of its
   * request line and headers, and its JSON (room as large as the body until it is prepared, then
   * the JSON's length when it is larger).
   */
  costBytes: number;
  /** The entry as `GET /history` shows it (masked or not), prepared once it is complete. */
  json: Buffer | undefined;
  /** Its path as `GET /history` shows it, once a filter has asked (see `History.shownPath`). */
  shownPath: string | undefined;
  // Only the encoding and the length of the text are remembered: the body's text form would double
  // what the entry holds (a 10 MiB body is a 10 to 20 MiB string), and it is rarely asked for again.
  #decoded: { encoding: 'utf8' | 'base64'; keptBytes: number } | undefined;
  /** The history that recorded it, told when it completes ({@link completeEntry}); none for a copy read back. */
  readonly owner: History | undefined;

  constructor(
    id: string,
    input: RecordInput,
    bytes: Buffer,
    cut: boolean,
    seq: number,
    costBytes: number,
    owner: History | undefined,
    timeMs: number = Date.now(),
  ) {
    this.id = id;
    this.seq = seq;
    this.request_id = input.requestId;
    this.method = input.method;
    this.url = input.url;
    this.headers = input.headers;
    this.body_size = input.bodySize ?? input.body?.length ?? 0;
    this.remote_addr = input.remoteAddr;
    this.protocol = input.protocol;
    this.#timeMs = timeMs;
    this.#bytes = bytes;
    this.#cut = cut;
    this.costBytes = costBytes;
    this.json = undefined;
    this.shownPath = undefined;
    this.owner = owner;
  }

  /** The body bytes kept, as received (a replica's shared history stores them as they are). */
  get keptBody(): Buffer {
    return this.#bytes;
  }

  /** Whether the body was cut (at ECHO_HISTORY_MAX_BODY, or a streamed body's head). */
  get cut(): boolean {
    return this.#cut;
  }

  /** Bytes of the body kept (at most ECHO_HISTORY_MAX_BODY). */
  get keptBodyBytes(): number {
    return this.#bytes.byteLength;
  }

  /** When the request was recorded, in epoch milliseconds (`timestamp` is its text). */
  get timeMs(): number {
    return this.#timeMs;
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
    const { encoding, keptBytes } = this.#decode();
    return this.#bytes.toString(encoding, 0, keptBytes);
  }

  get body_encoding(): 'utf8' | 'base64' {
    return this.#decode().encoding;
  }

  get body_truncated(): boolean {
    return this.#decode().keptBytes < this.body_size;
  }

  #decode(): { encoding: 'utf8' | 'base64'; keptBytes: number } {
    if (this.#decoded !== undefined) return this.#decoded;
    const kept = this.#bytes;
    // A cut may split a multi-byte character: keep the whole characters, so the text holds no
    // U+FFFD that was never sent. An uncut body is text only when every byte of it is.
    const textual = isUtf8Text(this.#cut ? kept.subarray(0, kept.length - partialCharBytes(kept)) : kept);
    this.#decoded =
      textual !== undefined
        ? { encoding: 'utf8', keptBytes: textual.length }
        : { encoding: 'base64', keptBytes: kept.length };
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
      ...(this.upstream === undefined ? {} : { upstream: { ...this.upstream } }),
      ...(this.grpc === undefined ? {} : { grpc: { ...this.grpc } }),
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
  /**
   * The whole body's size when `body` is only its head (a body the reverse proxy streams: its
   * `Content-Length`); `body.length` when not given.
   */
  readonly bodySize?: number | undefined;
  readonly remoteAddr: string;
  readonly protocol: string;
  /**
   * Whether `requestId` may repeat one already stored: true (the default) for an id the client
   * sent; false for one the server generated unique (a random UUID), which skips the look-up.
   */
  readonly idMayRepeat?: boolean;
}

/** Options of a {@link History}. */
export interface HistoryOptions {
  /**
   * What the stored entries may hold in all (`ECHO_HISTORY_MAX_BYTES`): bodies, an estimate of
   * request lines and headers, and the JSON prepared for `GET /history`. Unbounded when not given.
   */
  readonly maxBytes?: number;
  /** The entry as `GET /history` shows it (`maskedEntry` when secrets are masked); as stored if not given. */
  readonly view?: (entry: HistoryEntry) => HistoryEntry;
  /** The `path` of an entry as `view` shows it (`maskedPath`), for filters; as stored if not given. */
  readonly pathView?: (path: string) => string;
}

/** Which entries one read of `GET /history` covers: sequence numbers, both ends included. */
export interface HistoryPage {
  readonly firstSeq: number;
  readonly lastSeq: number;
  /** The cursor of the page after this one; undefined when no entry was stored after it. */
  readonly nextCursor: number | undefined;
  /**
   * A filtered page's entries: only those numbered in `seqs`, each shown if it still passes `test`
   * when its turn comes (history-filter.ts). Without it, every stored entry of the range.
   */
  readonly matched?: {
    readonly seqs: readonly number[];
    readonly test: (entry: HistoryEntry) => boolean;
  };
}

/**
 * What a read of history needs of where the entries are: this process's {@link History}, or a
 * {@link HistoryCopy} of entries read back from the fleet's shared history (shared-history.ts).
 */
export interface HistoryReader {
  /** Entries it holds. */
  readonly size: number;
  /** One past the highest sequence number handed out: a cursor at or above it was never given. */
  readonly nextSeq: number;
  page(cursor: number | undefined, limit: number): HistoryPage | undefined;
  atOrAfter(seq: number): HistoryEntry | undefined;
  get(id: string): HistoryEntry | undefined;
  json(entry: HistoryEntry): Buffer;
  shownPath(entry: HistoryEntry): string | undefined;
}

/**
 * Sets a request's end on its entry (its answered status and duration) and tells the history that
 * recorded it ({@link History.onComplete}: a replica's shared history writes it then).
 */
export function completeEntry(entry: HistoryEntry, status: number, durationMs: number): void {
  entry.status = status;
  entry.duration_ms = Math.round(durationMs);
  const owner = (entry as Recorded).owner;
  if (owner === undefined) return;
  owner.onComplete?.(entry);
  // Nobody watching (the usual case) costs one size check.
  if (owner.completionWatchers.size > 0) for (const watch of owner.completionWatchers) watch(entry);
}

/** An entry as the shared history stores it beside its body bytes (shared-history.ts). */
export interface StoredEntry {
  readonly id: string;
  readonly request_id: string;
  /** When it was recorded, epoch milliseconds. */
  readonly time_ms: number;
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body_size: number;
  readonly body_cut: boolean;
  readonly remote_addr: string;
  readonly protocol: string;
  readonly status: number | null;
  readonly duration_ms: number | null;
  readonly faults: readonly AppliedFault[];
  readonly upstream?: UpstreamOutcome;
  readonly grpc?: GrpcOutcome;
}

/** `entry` (recorded by a History) in the form the shared history stores, its body bytes apart. */
export function storedForm(entry: HistoryEntry): { stored: StoredEntry; body: Buffer } {
  const recorded = entry as Recorded;
  return {
    stored: {
      id: recorded.id,
      request_id: recorded.request_id,
      time_ms: recorded.timeMs,
      method: recorded.method,
      url: recorded.url,
      headers: recorded.headers,
      body_size: recorded.body_size,
      body_cut: recorded.cut,
      remote_addr: recorded.remote_addr,
      protocol: recorded.protocol,
      status: recorded.status,
      duration_ms: recorded.duration_ms,
      faults: recorded.faults,
      ...(recorded.upstream === undefined ? {} : { upstream: recorded.upstream }),
      ...(recorded.grpc === undefined ? {} : { grpc: recorded.grpc }),
    },
    body: recorded.keptBody,
  };
}

/** An entry read back from the shared history, numbered `seq` there. */
export function restoredEntry(stored: StoredEntry, body: Buffer, seq: number): HistoryEntry {
  const input: RecordInput = {
    requestId: stored.request_id,
    method: stored.method,
    url: stored.url,
    headers: stored.headers,
    body: undefined,
    bodySize: stored.body_size,
    remoteAddr: stored.remote_addr,
    protocol: stored.protocol,
  };
  const entry = new Recorded(stored.id, input, body, stored.body_cut, seq, 0, undefined, stored.time_ms);
  entry.status = stored.status;
  entry.duration_ms = stored.duration_ms;
  entry.faults = stored.faults.length === 0 ? NO_FAULTS : stored.faults;
  if (stored.upstream !== undefined) entry.upstream = stored.upstream;
  if (stored.grpc !== undefined) entry.grpc = stored.grpc;
  return entry;
}

/**
 * Entries read back from the fleet's shared history for one read (a page, the entries a filter
 * kept, the one a replay names), in the order of their sequence numbers, shown as this process's
 * History shows its own (the same view and path view). It lives as long as the read.
 */
export class HistoryCopy implements HistoryReader {
  readonly nextSeq: number;
  readonly #view: ((entry: HistoryEntry) => HistoryEntry) | undefined;
  readonly #pathView: ((path: string) => string) | undefined;
  readonly #entries: Recorded[] = [];

  /** `nextSeq`: one past the fleet's newest entry when the read began. */
  constructor(nextSeq: number, options: Pick<HistoryOptions, 'view' | 'pathView'> = {}) {
    this.nextSeq = nextSeq;
    this.#view = options.view;
    this.#pathView = options.pathView;
  }

  get size(): number {
    return this.#entries.length;
  }

  /** Adds an entry read back ({@link restoredEntry}), numbered after those already added. */
  add(entry: HistoryEntry): void {
    const recorded = entry as Recorded;
    const last = this.#entries.at(-1);
    if (last !== undefined && recorded.seq <= last.seq) throw new RangeError('entries are added in order');
    this.#entries.push(recorded);
  }

  /** Of the entries held, the first `limit` after `cursor` (the next cursor is the caller's to set). */
  page(cursor: number | undefined, limit: number): HistoryPage | undefined {
    const from = cursor === undefined ? 0 : this.#indexAtOrAfter(cursor + 1);
    if (from >= this.#entries.length) return undefined;
    const last = this.#entries[Math.min(from + limit, this.#entries.length) - 1]!;
    return { firstSeq: this.#entries[from]!.seq, lastSeq: last.seq, nextCursor: undefined };
  }

  atOrAfter(seq: number): HistoryEntry | undefined {
    return this.#entries[this.#indexAtOrAfter(seq)];
  }

  /** The index of the first entry numbered `seq` or later (binary search: not every number is held). */
  #indexAtOrAfter(seq: number): number {
    let lo = 0;
    let hi = this.#entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#entries[mid]!.seq < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  get(id: string): HistoryEntry | undefined {
    return this.#entries.find((entry) => entry.id === id);
  }

  json(entry: HistoryEntry): Buffer {
    return Buffer.from(JSON.stringify(this.#view === undefined ? entry : this.#view(entry)));
  }

  shownPath(entry: HistoryEntry): string | undefined {
    if (this.#pathView === undefined) return undefined;
    const recorded = entry as Recorded;
    recorded.shownPath ??= this.#pathView(recorded.path);
    return recorded.shownPath;
  }
}

/**
 * What an entry is counted for beyond its body: the objects around it, and per header the
 * strings and the property holding them (an estimate: V8 does not say what an object takes).
 */
const ENTRY_OVERHEAD_BYTES = 512;
const HEADER_OVERHEAD_BYTES = 32;

/**
 * The bounded in-memory history: at most `capacity` entries, at most `maxBodyBytes` of each body
 * and at most `maxBytes` in all (the oldest entries go first), so memory stays bounded whatever
 * the traffic.
 */
export class History implements HistoryReader {
  readonly capacity: number;
  /**
   * Told of each entry's end ({@link completeEntry}): a replica's shared history (ECHO_STATE_URL)
   * queues the entry for the fleet's stream then.
   */
  onComplete: ((entry: HistoryEntry) => void) | undefined = undefined;
  /**
   * Also told of each entry's end, while they are here: the console's live log (console/live-feed.ts)
   * adds its one watcher while a console is open and takes it out when the last one closes. A
   * watcher never throws.
   */
  readonly completionWatchers = new Set<(entry: HistoryEntry) => void>();
  /** The view and path view entries are shown with (a {@link HistoryCopy} shows its own the same). */
  readonly viewOptions: Pick<HistoryOptions, 'view' | 'pathView'>;
  readonly maxBodyBytes: number;
  readonly maxBytes: number;
  readonly #view: ((entry: HistoryEntry) => HistoryEntry) | undefined;
  readonly #pathView: ((path: string) => string) | undefined;
  readonly #ring: Array<Recorded | undefined>;
  #start = 0;
  #size = 0;
  #collisions = 0;
  /** Entries recorded so far; the next one's `seq`. The stored ones are the newest `#size` of them. */
  #recorded = 0;
  /** What the stored entries hold (their `costBytes`), against `maxBytes`. */
  #storedBytes = 0;
  // The index by id is brought up to date only when it is needed: a look-up by id (rare) or an id
  // the client sent (which may repeat a stored one). A request with a generated id changes only the
  // ring, so most requests touch no map: a map that gains and loses an entry on every request costs
  // three hashed operations and the rehashing its deletions cause.
  readonly #byId = new Map<string, Recorded>();
  /** Entries with `seq` below this are in `#byId`, unless they have left the ring. */
  #indexedUpTo = 0;

  constructor(capacity: number, maxBodyBytes: number, options: HistoryOptions = {}) {
    this.capacity = capacity;
    this.maxBodyBytes = maxBodyBytes;
    this.maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    this.#view = options.view;
    this.#pathView = options.pathView;
    this.viewOptions = {
      ...(options.view === undefined ? {} : { view: options.view }),
      ...(options.pathView === undefined ? {} : { pathView: options.pathView }),
    };
    this.#ring = new Array(capacity);
  }

  get size(): number {
    return this.#size;
  }

  /** What the stored entries hold now, counted as `maxBytes` counts it. */
  get storedBytes(): number {
    return this.#storedBytes;
  }

  /** Stores a request, evicting the oldest entries to make room. Returns the entry (status pending). */
  record(input: RecordInput): HistoryEntry | undefined {
    if (this.capacity === 0) return undefined;
    const body = input.body ?? EMPTY;
    const cut = body.length > this.maxBodyBytes || (input.bodySize ?? 0) > body.length;
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
    // Room for the entry's JSON is set aside now, as many bytes as its body (what a text body
    // takes once escaped, give or take), so that preparing it at the first read rarely finds the
    // budget full: a read never evicts, and JSON it cannot keep is prepared again at every read.
    const costBytes = 2 * bytes.byteLength + headBytes(input);
    if (this.#size === this.capacity) this.#evictOldest();
    // An entry larger than the whole budget is still kept, alone (the settings make that rare:
    // ECHO_HISTORY_MAX_BYTES holds at least one full body and head).
    while (this.#size > 0 && this.#storedBytes + costBytes > this.maxBytes) this.#evictOldest();
    const entry = new Recorded(id, input, bytes, cut, this.#recorded++, costBytes, this);
    this.#ring[(this.#start + this.#size) % this.capacity] = entry;
    this.#size++;
    this.#storedBytes += costBytes;
    return entry;
  }

  #evictOldest(): void {
    const oldest = this.#ring[this.#start]!;
    if (oldest.seq < this.#indexedUpTo) this.#byId.delete(oldest.id);
    this.#ring[this.#start] = undefined;
    this.#start = (this.#start + 1) % this.capacity;
    this.#size--;
    this.#storedBytes -= oldest.costBytes;
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

  /** The sequence number the next recorded entry gets: a cursor at or above it was never handed out. */
  get nextSeq(): number {
    return this.#recorded;
  }

  /**
   * The page of at most `limit` stored entries that follow `cursor` (the `seq` of the last entry a
   * client has seen; entries evicted since are skipped), or the oldest ones without a cursor.
   * Undefined when no stored entry follows.
   */
  page(cursor: number | undefined, limit: number): HistoryPage | undefined {
    const oldestSeq = this.#recorded - this.#size;
    const firstSeq = cursor === undefined ? oldestSeq : Math.max(cursor + 1, oldestSeq);
    if (firstSeq >= this.#recorded) return undefined;
    const lastSeq = Math.min(firstSeq + limit, this.#recorded) - 1;
    return { firstSeq, lastSeq, nextCursor: lastSeq < this.#recorded - 1 ? lastSeq : undefined };
  }

  /** The stored entry with sequence number `seq`, or the first stored after it; undefined past the newest. */
  atOrAfter(seq: number): HistoryEntry | undefined {
    const oldestSeq = this.#recorded - this.#size;
    const at = Math.max(seq, oldestSeq);
    if (at >= this.#recorded) return undefined;
    return this.#ring[(this.#start + (at - oldestSeq)) % this.capacity];
  }

  /**
   * `entry` as `GET /history` shows it, as JSON. A complete entry (its status set) no longer
   * changes: its JSON is prepared once and kept while it is stored and `maxBytes` has room for it
   * (a read never evicts an entry to make room).
   */
  json(entry: HistoryEntry): Buffer {
    const recorded = entry as Recorded;
    if (recorded.json !== undefined) return recorded.json;
    const json = Buffer.from(JSON.stringify(this.#view === undefined ? entry : this.#view(entry)));
    const stored = recorded.seq >= this.#recorded - this.#size;
    // Beyond the room set aside when it was stored (its body's length).
    const extraBytes = json.byteLength - recorded.keptBodyBytes;
    if (entry.status !== null && stored && this.#storedBytes + extraBytes <= this.maxBytes) {
      recorded.json = json;
      recorded.costBytes += extraBytes;
      this.#storedBytes += extraBytes;
    }
    return json;
  }

  /**
   * Lets every stored entry go (`DELETE /history`) and answers how many there were. Sequence
   * numbers go on from where they were, so a cursor handed out before stays valid and a page after
   * it holds what arrives next. An entry still in flight completes as usual but is no longer stored.
   */
  clear(): number {
    const cleared = this.#size;
    for (let i = 0; i < this.#size; i++) this.#ring[(this.#start + i) % this.capacity] = undefined;
    this.#start = 0;
    this.#size = 0;
    this.#storedBytes = 0;
    this.#byId.clear();
    this.#indexedUpTo = this.#recorded;
    return cleared;
  }

  /**
   * `entry`'s path as `GET /history` shows it, worked out at the first ask and kept with the entry
   * (a pointer to the path itself when there is nothing to mask); `undefined` when paths are shown
   * as stored, so that a filter reads the stored URL in place.
   */
  shownPath(entry: HistoryEntry): string | undefined {
    if (this.#pathView === undefined) return undefined;
    const recorded = entry as Recorded;
    recorded.shownPath ??= this.#pathView(recorded.path);
    return recorded.shownPath;
  }

  /** An entry's sequence number (its place among every entry ever recorded), for cursors. */
  static seqOf(entry: HistoryEntry): number {
    return (entry as Recorded).seq;
  }

  /** When an entry was recorded, in epoch milliseconds (filters compare it without making text). */
  static timeMsOf(entry: HistoryEntry): number {
    return (entry as Recorded).timeMs;
  }
}

/** What a request's line and headers hold, estimated from their lengths. */
function headBytes(input: RecordInput): number {
  let bytes = ENTRY_OVERHEAD_BYTES + input.url.length + input.requestId.length + input.remoteAddr.length;
  const headers = input.headers;
  for (const name in headers) {
    const value = headers[name];
    bytes += HEADER_OVERHEAD_BYTES + name.length;
    if (typeof value === 'string') bytes += value.length;
    else if (value !== undefined) for (const item of value) bytes += HEADER_OVERHEAD_BYTES + item.length;
  }
  return bytes;
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
