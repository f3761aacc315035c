/**
 * Where the service's log lines go: stdout, with the lines of one event-loop turn handed over as
 * one string, written in the calling thread when stdout takes them at once.
 *
 * Why not sonic-boom alone: its `write` measures the UTF-8 length of the string it is appending to
 * (up to 16 KiB) on every line, so under load each line costs time in proportion to the backlog
 * (≈5 µs a request at 20,000 lines a second, bench/README.md). Here a line is pushed onto an array;
 * once per turn (setImmediate) the array is joined and written.
 *
 * Why not sonic-boom's asynchronous writes for every turn: each is an `fs.write` on libuv's thread
 * pool, so every turn paid a hand-over to another thread and back (a futex wake, a thread switch, a
 * completion callback): ≈11% of a default GET's server CPU (bench/README.md, sixth step). A
 * descriptor that takes the bytes at once (a file, a terminal, a pipe or socket with room) is
 * written with `fs.writeSync` instead; only what it does not take (a full pipe: EAGAIN, or a
 * partial write) goes to sonic-boom, and every turn after that too until sonic-boom has written
 * it all, so lines stay in order. A pipe or socket is made non-blocking first (libuv does that when
 * `process.stdout` is opened on one), so a stopped reader never blocks the event loop.
 *
 * Bounded: when stdout does not keep up (a stopped pipe reader), lines beyond `maxPendingChars` in
 * this buffer or `maxBufferedBytes` in sonic-boom's are dropped and counted, instead of the
 * process growing without end.
 */
import { fstatSync, writeSync } from 'node:fs';
import pino from 'pino';

/** What the destination hands lines to: sonic-boom, or a stand-in in tests. */
export interface LineSink {
  write(chunk: string): boolean;
  /** Writes what the sink holds, synchronously (sonic-boom's `flushSync`). */
  flushSync?(): void;
  /** Writes what the sink holds, then calls back (sonic-boom's `flush`). */
  flush?(cb?: (error?: Error) => void): void;
}

/** Default bound of the lines waiting for the next turn (characters). */
export const MAX_PENDING_CHARS = 8 * 1024 * 1024;
/** Default bound of what sonic-boom holds while stdout is slow (bytes). */
export const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

export class TurnBatchedDestination {
  readonly #sink: LineSink;
  readonly #maxPendingChars: number;
  readonly #schedule: (flush: () => void) => void;
  #pending: string[] = [];
  #pendingChars = 0;
  #scheduled = false;
  /** Lines dropped because stdout did not keep up (here or in sonic-boom). */
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

/** `fs.writeSync` of all of `text` to `fd`, retrying a non-blocking descriptor that is full (bounded). */
function writeAllSync(fd: number, text: string): void {
  let rest = Buffer.from(text);
  for (let attempts = 0; rest.length > 0 && attempts < 1000; attempts++) {
    try {
      rest = rest.subarray(writeSync(fd, rest));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
    }
  }
}

/** What {@link DirectSink} hands over what the descriptor did not take to (sonic-boom, or a test's stand-in). */
export interface BacklogStream {
  write(chunk: Buffer): boolean;
  flushSync(): void;
  flush(cb?: (error?: Error) => void): void;
  on(event: 'write', listener: (bytes: number) => void): unknown;
  on(event: 'drop', listener: () => void): unknown;
}

/**
 * A {@link LineSink} that writes in the calling thread (`fs.writeSync`) what the descriptor takes
 * at once, and hands the rest to an asynchronous backlog (sonic-boom), through which every later
 * chunk goes too until the backlog has written all it was given (the order of lines is kept).
 * A descriptor that reports EPIPE (its reader has gone) is written no more, as pino does.
 */
export class DirectSink implements LineSink {
  readonly #fd: number;
  readonly #backlog: BacklogStream;
  readonly #writeSync: (fd: number, text: string) => number;
  /** Bytes the backlog accepted and has not written yet; while above 0 every chunk goes there. */
  #backlogBytes = 0;
  #dropSeen = false;
  #closed = false;

  constructor(
    fd: number,
    backlog: BacklogStream,
    options: { writeSync?: (fd: number, text: string) => number } = {},
  ) {
    this.#fd = fd;
    this.#backlog = backlog;
    this.#writeSync = options.writeSync ?? ((target, text) => writeSync(target, text));
    backlog.on('write', (bytes) => {
      this.#backlogBytes = Math.max(0, this.#backlogBytes - bytes);
    });
    backlog.on('drop', () => {
      this.#dropSeen = true;
    });
  }

  /** Whether chunks are waiting in the backlog (so the next one must wait behind them). */
  get backlogged(): boolean {
    return this.#backlogBytes > 0;
  }

  write(chunk: string): boolean {
    if (this.#closed) return false;
    if (this.#backlogBytes > 0) return this.#later(Buffer.from(chunk));
    let written = 0;
    try {
      written = this.#writeSync(this.#fd, chunk);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EPIPE') {
        this.#closed = true;
        return false;
      }
      if (code !== 'EAGAIN') throw error;
    }
    // Most chunks are ASCII, whose UTF-8 length is their length; measure only when that is unsure.
    if (written === chunk.length && written === Buffer.byteLength(chunk)) return true;
    if (written === 0) return this.#later(Buffer.from(chunk));
    const bytes = Buffer.from(chunk);
    return written >= bytes.length ? true : this.#later(bytes.subarray(written));
  }

  #later(bytes: Buffer): boolean {
    this.#dropSeen = false;
    this.#backlog.write(bytes);
    if (this.#dropSeen) return false;
    this.#backlogBytes += bytes.length;
    return true;
  }

  flushSync(): void {
    if (this.#backlogBytes > 0) this.#backlog.flushSync();
  }

  flush(cb?: (error?: Error) => void): void {
    this.#backlog.flush(cb);
  }
}

/** How long the exit may wait for a stdout that takes nothing (a stopped log reader). */
export const EXIT_FLUSH_MS = 2000;

/** The part of sonic-boom {@link boundExitFlush} changes. */
interface SonicRetry {
  flushSync(): void;
  retryEAGAIN: (error: Error, writeLength: number, remainingLength: number) => boolean;
}

/**
 * sonic-boom's `flushSync` (what it holds, written synchronously; pino calls it at exit) retries
 * a full pipe every 100 ms for as long as the reader stays stopped, so the process could not end.
 * Here it gives up after `ms`: what is left is lost (`onGiveUp`), and later calls do nothing.
 */
export function boundExitFlush(sonic: SonicRetry, onGiveUp: () => void, ms = EXIT_FLUSH_MS): void {
  const flushSync = sonic.flushSync.bind(sonic);
  let gaveUp = false;
  sonic.flushSync = () => {
    if (gaveUp) return;
    const retry = sonic.retryEAGAIN;
    const deadline = Date.now() + ms;
    sonic.retryEAGAIN = () => Date.now() < deadline;
    try {
      flushSync();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EAGAIN' && code !== 'EBUSY') throw error;
      gaveUp = true;
      onGiveUp();
    } finally {
      sonic.retryEAGAIN = retry;
    }
  };
}

function isPipeOrSocket(fd: number): boolean {
  try {
    const stat = fstatSync(fd);
    return stat.isFIFO() || stat.isSocket();
  } catch {
    return false; // a closed stdout: its writes fail and are counted as dropped
  }
}

/**
 * stdout as the service's default log destination: a {@link DirectSink} (sonic-boom, asynchronous
 * and bounded, for what stdout does not take at once) behind a {@link TurnBatchedDestination}; what
 * is queued at exit is written before the process ends.
 */
export function stdoutDestination(): TurnBatchedDestination {
  // libuv makes a pipe or socket non-blocking when process.stdout is opened on it: a full pipe then
  // answers EAGAIN instead of stopping the event loop until its reader catches up.
  if (isPipeOrSocket(1)) void process.stdout.fd;
  const sonic = pino.destination({
    dest: 1,
    sync: false,
    maxLength: MAX_BUFFERED_BYTES,
    contentMode: 'buffer',
  }) as unknown as BacklogStream & NodeJS.EventEmitter & SonicRetry;
  const sink = new DirectSink(1, sonic);
  const destination = new TurnBatchedDestination(sink, { writeSync: (text) => writeAllSync(1, text) });
  sonic.on('drop', () => {
    destination.dropped++;
  });
  boundExitFlush(sonic, () => {
    destination.dropped++;
  });
  // pino flushes sonic-boom at exit; the lines still queued here must reach it first.
  process.once('exit', () => {
    try {
      destination.flushSync();
    } catch {
      // stdout is gone: nothing left to write to
    }
  });
  return destination;
}

let lastMs = Number.NaN;
let lastTime = '';

/**
 * pino's `isoTime` (`,"time":"2026-11-24T11:00:00.000Z"`), formatted once per millisecond rather
 * than once per line: under load many lines share a millisecond.
 */
export function isoTimestamp(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTime;
}
