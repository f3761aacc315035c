/**
 * An open-loop load at a fixed rate, for the proxy scenario's "p99 at half of the minimal proxy's
 * throughput" (bench/run.ts `proxy`, issue #32): wrk cannot pace (its connections send the next
 * request when the last is answered), Debian has no wrk2, and h2load's `--rate` paces connections,
 * not requests. So bench/paced-client.ts sends request i at `i / rate` seconds from the start,
 * whether or not the earlier ones were answered (to several targets in turns, a slice each), and
 * this module is its schedule and bookkeeping, with the clock, the sleeping and the sending injected
 * (test/bench/pace.test.ts runs it on a fake clock), and its HTTP/1.1 reader.
 *
 * A request's latency runs from the moment it is handed to the client (which queues it when every
 * connection is busy, so a slow server's backlog is counted) to the end of its answer. How late the
 * client itself handed requests over against their schedule (its own timers and event loop) is
 * measured apart, so that a busy client shows instead of hiding in the server's numbers.
 */

export interface PaceOptions {
  /** Requests a second, in all. */
  readonly rate: number;
  /** How long requests are sent for; `floor(durationMs × rate / 1000)` are sent in all. */
  readonly durationMs: number;
  /** How long to wait, after the last was sent, for those still unanswered (then left unfinished). */
  readonly graceMs: number;
  /**
   * Several targets measured in turns: request i goes to target `floor(scheduledAt(i) / sliceMs) %
   * targets`, so each gets the rate in slices of `sliceMs`, one after another. Default: 1 target.
   */
  readonly targets?: number;
  readonly sliceMs?: number;
}

export interface PaceDeps {
  /** Milliseconds, monotonic. */
  now(): number;
  /** Resolves after about `ms` milliseconds. */
  sleep(ms: number): Promise<void>;
  /** Sends request `i` to target `target`; resolves true once a successful answer was read whole. */
  send(i: number, target: number): Promise<boolean>;
}

/** What one target got. */
export interface PaceTargetResult {
  readonly sent: number;
  readonly ok: number;
  readonly failed: number;
  /** Still unanswered when the grace ran out. */
  readonly unfinished: number;
  /** Of the successful requests, from hand-over to the end of the answer, in the order they ended. */
  readonly latenciesMs: number[];
  /** Per request sent: how much later than its schedule it was handed over. */
  readonly lateMs: number[];
}

export interface PaceResult {
  readonly scheduled: number;
  readonly targets: PaceTargetResult[];
  /** From the first send to the end (the last answer or the end of the grace). */
  readonly elapsedMs: number;
}

/** When request `i` is due, in ms from the start. */
export function scheduledAt(i: number, rate: number): number {
  return (i * 1000) / rate;
}

/** How many of `total` requests are due `elapsedMs` after the start (request 0 is due at 0). */
export function dueCount(elapsedMs: number, rate: number, total: number): number {
  if (elapsedMs < 0) return 0;
  return Math.min(total, Math.floor((elapsedMs * rate) / 1000 + 1e-9) + 1);
}

/** The target of request `i` when `targets` take turns in slices of `sliceMs`. */
export function targetOf(i: number, rate: number, targets: number, sliceMs: number): number {
  if (targets <= 1) return 0;
  return Math.floor(scheduledAt(i, rate) / sliceMs + 1e-9) % targets;
}

/**
 * Sends `floor(durationMs × rate / 1000)` requests, request i at `i / rate` s after the start
 * (those due while the loop slept go together when it wakes, each with how late it was), whatever
 * became of the earlier ones; then waits up to `graceMs` for the last answers.
 */
export async function runPaced(options: PaceOptions, deps: PaceDeps): Promise<PaceResult> {
  const { rate, durationMs, graceMs } = options;
  const targets = Math.max(1, options.targets ?? 1);
  const sliceMs = options.sliceMs ?? durationMs;
  if (!(rate > 0)) throw new Error(`rate must be positive, not ${rate}`);
  const total = Math.floor((durationMs * rate) / 1000);
  const per = Array.from({ length: targets }, () => ({
    sent: 0,
    ok: 0,
    failed: 0,
    pending: 0,
    latenciesMs: [] as number[],
    lateMs: [] as number[],
  }));
  const pending = new Set<Promise<void>>();
  let next = 0;
  const t0 = deps.now();
  while (next < total) {
    const elapsed = deps.now() - t0;
    const due = dueCount(elapsed, rate, total);
    while (next < due) {
      const t = per[targetOf(next, rate, targets, sliceMs)] as (typeof per)[number];
      t.sent++;
      t.pending++;
      t.lateMs.push(elapsed - scheduledAt(next, rate));
      const start = deps.now();
      const done: Promise<void> = deps
        .send(next, targetOf(next, rate, targets, sliceMs))
        .then(
          (success) => {
            if (success) {
              t.ok++;
              t.latenciesMs.push(deps.now() - start);
            } else t.failed++;
          },
          () => {
            t.failed++;
          },
        )
        .finally(() => {
          t.pending--;
          pending.delete(done);
        });
      pending.add(done);
      next++;
    }
    if (next < total) await deps.sleep(Math.max(0, scheduledAt(next, rate) - (deps.now() - t0)));
  }
  if (pending.size > 0) await Promise.race([Promise.allSettled([...pending]), deps.sleep(graceMs)]);
  return {
    scheduled: total,
    targets: per.map((t) => ({
      sent: t.sent,
      ok: t.ok,
      failed: t.failed,
      unfinished: t.pending,
      latenciesMs: t.latenciesMs,
      lateMs: t.lateMs,
    })),
    elapsedMs: deps.now() - t0,
  };
}

/** One answer read off an HTTP/1.1 connection. */
export interface Http1Answer {
  readonly status: number;
  /** The server said `Connection: close`: the connection ends after this answer. */
  readonly close: boolean;
  /** Body bytes (after chunked framing is taken off). */
  readonly bodyBytes: number;
}

const CRLFCRLF = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');

/**
 * Reads the answers of one HTTP/1.1 connection from its bytes, however they are split: heads,
 * bodies framed by `Content-Length` or `Transfer-Encoding: chunked` (trailers skipped). The paced
 * client's own parser (bench/paced-client.ts): a few string searches an answer, much cheaper than a
 * general client, so that on a 2-core machine the client takes little of the CPU the servers share.
 * An answer framed by neither (read to the end of the connection) is not supported: `feed` throws.
 */
export class Http1Reader {
  #buffer: Buffer = Buffer.alloc(0);
  #state: 'head' | 'length' | 'chunk-size' | 'chunk-data' | 'trailer' = 'head';
  #remaining = 0;
  #status = 0;
  #close = false;
  #bodyBytes = 0;

  /** The answers completed by these bytes, in order. */
  feed(chunk: Buffer): Http1Answer[] {
    const done: Http1Answer[] = [];
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    for (;;) {
      if (this.#state === 'head') {
        const end = this.#buffer.indexOf(CRLFCRLF);
        if (end === -1) return done;
        this.#head(this.#buffer.toString('latin1', 0, end));
        this.#buffer = this.#buffer.subarray(end + 4);
        if (this.#state === 'head') done.push(this.#finish());
      } else if (this.#state === 'length' || this.#state === 'chunk-data') {
        const n = Math.min(this.#remaining, this.#buffer.length);
        this.#remaining -= n;
        this.#buffer = this.#buffer.subarray(n);
        if (this.#remaining > 0) return done;
        if (this.#state === 'length') {
          this.#state = 'head';
          done.push(this.#finish());
        } else this.#state = 'chunk-size';
      } else {
        const end = this.#buffer.indexOf(CRLF);
        if (end === -1) return done;
        const line = this.#buffer.toString('latin1', 0, end);
        this.#buffer = this.#buffer.subarray(end + 2);
        if (this.#state === 'trailer') {
          if (line === '') {
            this.#state = 'head';
            done.push(this.#finish());
          }
        } else {
          const size = Number.parseInt(line, 16);
          if (!Number.isFinite(size) || size < 0) throw new Error(`bad chunk size ${JSON.stringify(line)}`);
          if (size === 0) this.#state = 'trailer';
          else {
            this.#bodyBytes += size;
            this.#remaining = size + 2; // the data and its CRLF
            this.#state = 'chunk-data';
          }
        }
      }
    }
  }

  #head(text: string): void {
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
    if (!m) throw new Error(`not an HTTP/1.1 answer: ${JSON.stringify(text.slice(0, 40))}`);
    this.#status = Number(m[1]);
    this.#close = /\r\nconnection:[ \t]*close/i.test(text);
    this.#bodyBytes = 0;
    const length = /\r\ncontent-length:[ \t]*(\d+)/i.exec(text);
    const noBody = this.#status === 204 || this.#status === 304 || this.#status < 200;
    if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(text)) this.#state = 'chunk-size';
    else if (length) {
      this.#remaining = Number(length[1]);
      this.#bodyBytes = this.#remaining;
      this.#state = this.#remaining > 0 ? 'length' : 'head';
    } else if (noBody) this.#state = 'head';
    else throw new Error(`an answer framed by neither Content-Length nor chunked (status ${this.#status})`);
  }

  #finish(): Http1Answer {
    return { status: this.#status, close: this.#close, bodyBytes: this.#bodyBytes };
  }
}
