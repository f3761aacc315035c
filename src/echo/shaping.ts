/**
 * Slow bodies: a response body shaped on its way to the client. `X-Echo-Throttle` caps its
 * bandwidth (a token bucket per response), `X-Echo-Chunk-Delay` waits between chunks of
 * `X-Echo-Chunk-Size` bytes, and `X-Echo-Body-Delay` waits once, after the headers, before the
 * first byte of the body. The shaping stream sits last, after compression, so a throttle limits the
 * bytes on the wire. It holds one chunk of its source at a time (the pieces it sends are views of
 * that chunk), pulls the next only when the client has taken the last, and leaves no timer behind
 * when the client goes away.
 */
import { Duplex } from 'node:stream';

/** The time a shaping stream reads and waits with, injected so the logic is testable. */
export interface ShapingClock {
  /** Milliseconds on a monotonic clock. */
  now(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(timer: unknown): void;
}

export const REAL_CLOCK: ShapingClock = {
  now: () => performance.now(),
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

/** How one response body is shaped. Absent fields shape nothing. */
export interface ShapingPlan {
  /** Bandwidth cap in bytes per second (`X-Echo-Throttle`). */
  readonly bytesPerSecond?: number;
  /** Wait between two pieces (`X-Echo-Chunk-Delay`). */
  readonly chunkDelayMs?: number;
  /** Size of a piece (`X-Echo-Chunk-Size`); see {@link pieceBytes} for the default. */
  readonly chunkBytes?: number;
  /** Wait after the headers, before the body's first byte (`X-Echo-Body-Delay`). */
  readonly bodyDelayMs?: number;
  /**
   * Longest the throttle and the chunk delays may stretch the body, after the body delay
   * (`ECHO_MAX_DELAY`): past it, the rest goes at full speed.
   */
  readonly maxShapingMs: number;
}

/** Piece size of a chunk delay without `X-Echo-Chunk-Size`, and the most a throttle's piece gets. */
export const DEFAULT_CHUNK_BYTES = 16 * 1024;
export { MAX_CHUNK_BYTES, MIN_BYTES_PER_SECOND, parseRate, RATE_FORM } from '../scenario/faults.ts';

/** A throttled body goes out in pieces of about a tenth of a second's bytes, so the rate is smooth. */
const THROTTLE_PIECES_PER_SECOND = 10;

/** The size of the pieces a plan sends. */
export function pieceBytes(plan: ShapingPlan): number {
  if (plan.chunkBytes !== undefined) return plan.chunkBytes;
  if (plan.bytesPerSecond !== undefined) {
    const tenth = Math.floor(plan.bytesPerSecond / THROTTLE_PIECES_PER_SECOND);
    return Math.min(DEFAULT_CHUNK_BYTES, Math.max(1, tenth));
  }
  return DEFAULT_CHUNK_BYTES;
}

/**
 * A token bucket: `bytesPerSecond` tokens a second, at most `capacity` kept. It starts empty, so
 * no more than `rate × t` bytes go in the first `t` (a 1 MB body at 200 KB/s takes 5 s, not less).
 */
export class TokenBucket {
  readonly bytesPerSecond: number;
  readonly capacity: number;
  #tokens = 0;
  #at: number;

  constructor(bytesPerSecond: number, capacity: number, now: number) {
    this.bytesPerSecond = bytesPerSecond;
    this.capacity = capacity;
    this.#at = now;
  }

  #refill(now: number): void {
    if (now > this.#at) {
      this.#tokens = Math.min(this.capacity, this.#tokens + ((now - this.#at) * this.bytesPerSecond) / 1000);
      this.#at = now;
    }
  }

  /** Milliseconds until `n` tokens are there (0: now); `n` must not exceed the capacity. */
  waitMs(n: number, now: number): number {
    this.#refill(now);
    const missing = n - this.#tokens;
    // A hair of tolerance: float sums of refills must not cost an extra 1 ms timer per piece.
    return missing <= 1e-6 ? 0 : Math.ceil((missing * 1000) / this.bytesPerSecond);
  }

  take(n: number, now: number): void {
    this.#refill(now);
    this.#tokens -= n;
  }
}

type Callback = (error?: Error | null) => void;

/**
 * The shaping stream: bytes written in come out in pieces, each when the plan allows. Write side
 * and read side both hold at most one chunk (a write waits until the previous chunk is out; a
 * piece is pushed only when the reader has taken the last one). `signal` (the drain deadline)
 * ends the waiting: the rest goes at once.
 */
export class ShapingStream extends Duplex {
  readonly plan: ShapingPlan;
  readonly #clock: ShapingClock;
  readonly #piece: number;
  #bucket: TokenBucket | undefined;
  #chunk: Buffer | undefined;
  #offset = 0;
  #written: Callback | undefined;
  #final: Callback | undefined;
  #demand = false;
  #pumping = false;
  #timer: unknown;
  #startedAt: number | undefined;
  #lastPieceAt: number | undefined;
  #hurried = false;

  constructor(plan: ShapingPlan, clock: ShapingClock = REAL_CLOCK, signal?: AbortSignal) {
    super({ writableHighWaterMark: 1, readableHighWaterMark: 1 });
    this.plan = plan;
    this.#clock = clock;
    this.#piece = pieceBytes(plan);
    if (signal !== undefined) {
      if (signal.aborted) this.#hurried = true;
      else {
        const onAbort = () => this.hurry();
        signal.addEventListener('abort', onAbort, { once: true });
        this.once('close', () => signal.removeEventListener('abort', onAbort));
      }
    }
  }

  /** The size of the pieces this stream sends. */
  get pieceBytes(): number {
    return this.#piece;
  }

  /** Stops every wait: the rest of the body goes as fast as the client takes it. */
  hurry(): void {
    this.#hurried = true;
    if (this.#timer !== undefined) {
      this.#clock.clearTimer(this.#timer);
      this.#timer = undefined;
      this.#pump();
    }
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: Callback): void {
    this.#chunk = chunk;
    this.#offset = 0;
    this.#written = callback;
    this.#pump();
  }

  override _final(callback: Callback): void {
    this.#final = callback;
    this.#pump();
  }

  override _read(): void {
    this.#demand = true;
    this.#pump();
  }

  override _destroy(error: Error | null, callback: Callback): void {
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#chunk = undefined;
    this.#written = undefined;
    this.#final = undefined;
    callback(error);
  }

  /** Sends every piece that may go now; schedules itself for the next one that must wait. */
  #pump(): void {
    if (this.#pumping || this.#timer !== undefined || this.destroyed) return;
    this.#pumping = true;
    try {
      while (this.#demand && !this.destroyed) {
        const now = this.#clock.now();
        this.#startedAt ??= now;
        const chunk = this.#chunk;
        if (chunk === undefined && this.#final === undefined) return; // waiting for the writer
        const n = chunk === undefined ? 0 : Math.min(this.#piece, chunk.length - this.#offset);
        const wait = this.#waitMs(n, now);
        if (wait > 0) {
          this.#timer = this.#clock.setTimer(() => {
            this.#timer = undefined;
            this.#pump();
          }, wait);
          return;
        }
        if (chunk === undefined) {
          const final = this.#final;
          this.#final = undefined;
          this.push(null);
          final?.();
          return;
        }
        this.#bucket?.take(n, now);
        this.#lastPieceAt = now;
        const piece = chunk.subarray(this.#offset, this.#offset + n);
        this.#offset += n;
        // Only when the reader took it (flowing) do we go on; a buffered piece waits for _read.
        this.#demand = this.push(piece) && this.readableLength === 0;
        if (this.#offset >= chunk.length) {
          this.#chunk = undefined;
          const written = this.#written;
          this.#written = undefined;
          written?.(); // may write the next chunk at once: the loop picks it up
        }
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** How long the next piece of `n` bytes (0: the end) must wait. */
  #waitMs(n: number, now: number): number {
    if (this.#hurried) return 0;
    const plan = this.plan;
    const started = this.#startedAt ?? now;
    const bodyAt = started + (plan.bodyDelayMs ?? 0);
    if (now < bodyAt) return Math.ceil(bodyAt - now);
    if (n === 0) return 0;
    const deadline = bodyAt + plan.maxShapingMs;
    if (now >= deadline) return 0;
    let wait = 0;
    if (plan.chunkDelayMs !== undefined && this.#lastPieceAt !== undefined) {
      wait = this.#lastPieceAt + plan.chunkDelayMs - now;
    }
    if (plan.bytesPerSecond !== undefined) {
      this.#bucket ??= new TokenBucket(plan.bytesPerSecond, this.#piece, bodyAt);
      wait = Math.max(wait, this.#bucket.waitMs(n, now));
    }
    return wait <= 0 ? 0 : Math.ceil(Math.min(wait, deadline - now));
  }
}
