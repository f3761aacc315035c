/**
 * Where the service's log lines go: stdout, with the lines of one event-loop turn handed over as
 * one string, written in the calling thread when stdout takes them at once.
 *
 * Why not sonic-boom alone: its `write` measures the UTF-8 length of the string it is appending to
 * (up to 16 KiB) on every line, so under load each line costs time in proportion to the backlog
 * (≈5 µs a request at 20,000 lines a second, bench/README.md). Here a line is pushed onto an array;
 * once per turn (setImmediate) the array is joined and written.
 *
 * Why not sonic-boom's asynchronous writes, as before: each turn's write was an `fs.write` on
 * libuv's thread pool, so every turn paid a hand-over to another thread and back (a futex wake, a
 * thread switch, a completion callback): about a tenth of a default GET's server CPU
 * (bench/README.md, sixth step). And on a full pipe sonic-boom waits 100 ms before it tries again,
 * which would cap a reader that is only a little behind at a pipe's worth (64 KiB) per 100 ms.
 * Here ({@link DirectStdout}) what stdout takes at once (a file, a terminal, a pipe or socket with
 * room) is written with `fs.writeSync`; the rest waits in a bounded queue, retried within 1 to
 * 64 ms. A pipe or socket is made non-blocking first (libuv does that when `process.stdout` is
 * opened on one), so a stopped reader never blocks the event loop.
 *
 * Bounded: when stdout does not keep up (a stopped pipe reader), lines beyond `maxPendingChars` in
 * this buffer or {@link MAX_BUFFERED_BYTES} waiting for stdout are dropped and counted, instead of
 * the process growing without end; at exit, a stopped reader holds the process back
 * {@link EXIT_FLUSH_MS} at most.
 */
import { fstatSync, writeSync } from 'node:fs';
import { isoNow } from './iso-time.ts';

/** What the destination hands lines to: {@link DirectStdout}, or a stand-in in tests. */
export interface LineSink {
  write(chunk: string): boolean;
  /** Writes what the sink holds, synchronously (at exit). */
  flushSync?(): void;
  /** Calls back once the sink holds nothing (pino's `flush`). */
  flush?(cb?: (error?: Error) => void): void;
}

/** Default bound of the lines waiting for the next turn (characters). */
export const MAX_PENDING_CHARS = 8 * 1024 * 1024;
/** Default bound of what waits for stdout while it is slow (bytes). */
export const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

export class TurnBatchedDestination {
  readonly #sink: LineSink;
  readonly #maxPendingChars: number;
  readonly #schedule: (flush: () => void) => void;
  #pending: string[] = [];
  #pendingChars = 0;
  #scheduled = false;
  /** Lines dropped because stdout did not keep up (here or in the sink). */
  dropped = 0;

  readonly #writeSync: (text: string) => void;

  constructor(
    sink: LineSink,
    options: {
      maxPendingChars?: number;
      schedule?: (flush: () => void) => void;
      /** Writes text synchronously where the sink writes (at exit); default: the sink's `write`. */
      writeSync?: (text: string) => void;
    } = {},
  ) {
    this.#sink = sink;
    this.#writeSync = options.writeSync ?? ((text) => sink.write(text));
    this.#maxPendingChars = options.maxPendingChars ?? MAX_PENDING_CHARS;
    this.#schedule = options.schedule ?? ((flush) => setImmediate(flush));
  }

  /** Queues one line (pino's stream contract); false when it was dropped. */
  write(line: string): boolean {
    if (this.#pendingChars + line.length > this.#maxPendingChars) {
      this.dropped++;
      return false;
    }
    this.#pending.push(line);
    this.#pendingChars += line.length;
    if (!this.#scheduled) {
      this.#scheduled = true;
      this.#schedule(this.#flush);
    }
    return true;
  }

  /** The queued lines as one string, and the queue emptied. */
  #take(): string | undefined {
    if (this.#pending.length === 0) return undefined;
    const text = this.#pending.length === 1 ? this.#pending[0]! : this.#pending.join('');
    this.#pending = [];
    this.#pendingChars = 0;
    return text;
  }

  /** Hands the queued lines to the sink (once per turn). */
  readonly #flush = (): void => {
    this.#scheduled = false;
    const text = this.#take();
    if (text === undefined) return;
    try {
      this.#sink.write(text);
    } catch {
      // a destroyed stdout loses the lines, never the request that logged them
      this.dropped++;
    }
  };

  /** Hands the queued lines on now, then lets the sink write what it holds (pino's `flush`). */
  flush(cb?: (error?: Error) => void): void {
    this.#flush();
    if (this.#sink.flush !== undefined) this.#sink.flush(cb);
    else cb?.();
  }

  /**
   * Writes everything synchronously, in order: what the sink holds, then the queued lines (at
   * exit, when no turn is left to hand them over).
   */
  flushSync(): void {
    this.#sink.flushSync?.();
    const text = this.#take();
    if (text !== undefined) this.#writeSync(text);
  }
}

/** Writes bytes to a descriptor and says how many it took (`fs.writeSync`); throws EAGAIN when none. */
export type WriteFd = (fd: number, data: string | Uint8Array) => number;

/** The first retry of what stdout did not take, and the longest wait between retries (ms). */
export const RETRY_MIN_MS = 1;
export const RETRY_MAX_MS = 64;

function newlines(bytes: Uint8Array): number {
  let lines = 0;
  for (let at = bytes.indexOf(10); at !== -1; at = bytes.indexOf(10, at + 1)) lines++;
  return Math.max(1, lines);
}

/**
 * A {@link LineSink} that writes stdout in the calling thread (`fs.writeSync`). What the descriptor
 * does not take at once (EAGAIN from a full pipe, or a partial write) waits in a bounded queue,
 * every later chunk behind it (lines keep their order), and is retried on a timer: after 1 ms, then
 * twice as long each time nothing goes through, up to 64 ms, and after 1 ms again once something
 * did. So a reader that falls a little behind is kept up with at its own speed, and a stopped one
 * costs a failed write now and then. A descriptor that reports EPIPE (its reader has gone) is
 * written no more, as pino does; so is one that fails otherwise while the queue drains.
 */
export class DirectStdout implements LineSink {
  readonly #fd: number;
  readonly #write: WriteFd;
  readonly #maxQueuedBytes: number;
  readonly #onDrop: (lines: number) => void;
  readonly #schedule: (retry: () => void, ms: number) => void;
  #queue: Uint8Array[] = [];
  #queuedBytes = 0;
  #armed = false;
  #delay = RETRY_MIN_MS;
  #closed = false;
  #gaveUp = false;
  #waiters: Array<(error?: Error) => void> = [];

  constructor(
    fd: number,
    options: {
      write?: WriteFd;
      maxQueuedBytes?: number;
      /** Told how many lines were dropped (the queue was full, or stdout is gone). */
      onDrop?: (lines: number) => void;
      /** Runs `retry` after `ms` (default: an unref'd setTimeout, so a backlog never holds the process). */
      schedule?: (retry: () => void, ms: number) => void;
    } = {},
  ) {
    this.#fd = fd;
    // writeSync takes a string or bytes; its typings split the two into overloads
    this.#write = options.write ?? ((target, data) => writeSync(target, data as Uint8Array));
    this.#maxQueuedBytes = options.maxQueuedBytes ?? MAX_BUFFERED_BYTES;
    this.#onDrop = options.onDrop ?? (() => {});
    this.#schedule = options.schedule ?? ((retry, ms) => setTimeout(retry, ms).unref());
  }

  /** Bytes waiting for stdout. */
  get queuedBytes(): number {
    return this.#queuedBytes;
  }

  write(chunk: string): boolean {
    if (this.#closed) return false;
    if (this.#queue.length > 0) return this.#enqueue(Buffer.from(chunk));
    let written = 0;
    try {
      written = this.#write(this.#fd, chunk);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EPIPE') {
        this.#close(newlines(Buffer.from(chunk)));
        return false;
      }
      if (code !== 'EAGAIN') throw error;
    }
    // Most chunks are ASCII, whose UTF-8 length is their length; measure only when that is unsure.
    if (written === chunk.length && written === Buffer.byteLength(chunk)) return true;
    const bytes = Buffer.from(chunk);
    if (written >= bytes.length) return true;
    return this.#enqueue(written === 0 ? bytes : bytes.subarray(written));
  }

  #enqueue(bytes: Uint8Array): boolean {
    if (this.#queuedBytes + bytes.length > this.#maxQueuedBytes) {
      this.#onDrop(newlines(bytes));
      return false;
    }
    this.#queue.push(bytes);
    this.#queuedBytes += bytes.length;
    this.#arm();
    return true;
  }

  #arm(): void {
    if (this.#armed || this.#closed) return;
    this.#armed = true;
    this.#schedule(this.#retry, this.#delay);
  }

  readonly #retry = (): void => {
    this.#armed = false;
    const progressed = this.#writeQueued();
    if (this.#queue.length === 0) {
      this.#delay = RETRY_MIN_MS;
      this.#settle();
      return;
    }
    this.#delay = progressed ? RETRY_MIN_MS : Math.min(this.#delay * 2, RETRY_MAX_MS);
    this.#arm();
  };

  /** Writes from the queue until it is empty or stdout takes no more; whether anything went. */
  #writeQueued(): boolean {
    let progressed = false;
    while (this.#queue.length > 0 && !this.#closed) {
      const head = this.#queue[0]!;
      let written: number;
      try {
        written = this.#write(this.#fd, head);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return progressed;
        // EPIPE (the reader has gone) or a descriptor that fails otherwise: nothing more will go.
        this.#close(0);
        return progressed;
      }
      if (written > 0) progressed = true;
      this.#queuedBytes -= written;
      if (written >= head.length) this.#queue.shift();
      else this.#queue[0] = head.subarray(written);
    }
    return progressed;
  }

  #close(alsoDropped: number): void {
    this.#closed = true;
    const lines = alsoDropped + this.#dropQueue();
    if (lines > 0) this.#onDrop(lines);
    this.#settle();
  }

  /** Empties the queue; the lines it held. */
  #dropQueue(): number {
    let lines = 0;
    for (const bytes of this.#queue) lines += newlines(bytes);
    this.#queue = [];
    this.#queuedBytes = 0;
    return lines;
  }

  #settle(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  /**
   * Writes what waits, synchronously (at exit, when no timer will run again), for up to `ms`
   * altogether: a reader that stays stopped holds the exit back that long, then what is left is
   * dropped. Once it has given up, later calls wait no more.
   */
  flushSync(ms = EXIT_FLUSH_MS): void {
    const deadline = Date.now() + (this.#gaveUp ? 0 : ms);
    const pause = new Int32Array(new SharedArrayBuffer(4));
    for (;;) {
      this.#writeQueued();
      if (this.#queue.length === 0) return;
      if (Date.now() >= deadline) break;
      Atomics.wait(pause, 0, 0, 5);
    }
    this.#gaveUp = true;
    this.#onDrop(this.#dropQueue());
  }

  /** Calls back once nothing waits for stdout (pino's `flush`). */
  flush(cb?: (error?: Error) => void): void {
    if (this.#queue.length === 0) cb?.();
    else if (cb !== undefined) this.#waiters.push(cb);
  }
}

/** How long the exit may wait for a stdout that takes nothing (a stopped log reader). */
export const EXIT_FLUSH_MS = 2000;

/** Whether `fd` is a pipe or a socket (false when it is closed). */
export function isPipeOrSocket(fd: number): boolean {
  try {
    const stat = fstatSync(fd);
    return stat.isFIFO() || stat.isSocket();
  } catch {
    return false; // a closed stdout: its writes fail and are counted as dropped
  }
}

/**
 * stdout as the service's default log destination: a {@link DirectStdout} behind a
 * {@link TurnBatchedDestination}; what waits at exit is written before the process ends, for up
 * to {@link EXIT_FLUSH_MS}.
 */
export function stdoutDestination(): TurnBatchedDestination {
  // libuv makes a pipe or socket non-blocking when process.stdout is opened on it: a full pipe then
  // answers EAGAIN instead of stopping the event loop until its reader catches up.
  if (isPipeOrSocket(1)) void process.stdout.fd;
  let destination: TurnBatchedDestination | undefined;
  const stdout = new DirectStdout(1, {
    onDrop: (lines) => {
      if (destination !== undefined) destination.dropped += lines;
    },
  });
  destination = new TurnBatchedDestination(stdout, {
    // at exit: the lines of the last turn join what waits, then all of it is written
    writeSync: (text) => {
      stdout.write(text);
      stdout.flushSync();
    },
  });
  process.once('exit', () => {
    try {
      destination.flushSync();
    } catch {
      // stdout is gone: nothing left to write to
    }
  });
  return destination;
}

let lastIso = '';
let lastTime = '';

/**
 * pino's `isoTime` (`,"time":"2026-11-24T11:00:00.000Z"`), made once per millisecond rather than
 * once per line: under load many lines share a millisecond.
 */
export function isoTimestamp(): string {
  const iso = isoNow();
  if (iso !== lastIso) {
    lastIso = iso;
    lastTime = `,"time":"${iso}"`;
  }
  return lastTime;
}
