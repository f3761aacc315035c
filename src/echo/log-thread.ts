/**
 * The service's log lines, built, masked and written in a worker thread (`LOG_WORKER`, default on;
 * issue #39): a request hands over the few values its access lines are made of (log-batch.ts), and
 * the lines of one event-loop turn go to the worker (log-worker.ts) in one message, in the order they
 * were logged; pino's own lines (warnings, errors, `LOG_HEADERS` and the like) travel in the same
 * batches, so every line keeps its place.
 *
 * Bounded as before: what waits (queued in this thread, or sent and not yet taken by the worker) is
 * at most `maxPendingChars`; past it lines are dropped and counted, and so are the lines the worker's
 * stdout does not keep up with (log-destination.ts's bound, in the worker).
 *
 * The worker gone (it crashed, or ran out of memory) is noticed at once: the lines it was sent and did
 * not write are counted as dropped, `onWorkerExit` is told (app.ts logs it as an error), and from then
 * on this thread builds and writes the lines itself, as `LOG_WORKER=false` does.
 *
 * At exit the main thread waits (synchronously, `Atomics.wait`) until the worker has written what it
 * was sent, for up to {@link EXIT_FLUSH_MS}, so an exit loses no line stdout would take.
 */
import { Worker } from 'node:worker_threads';
import { maskLogLine } from '@echo-chaos/obs/internal';
import {
  type AccessFormat,
  type BatchState,
  formatBatch,
  initialBatchState,
  TAG_BINDINGS,
  TAG_FORMAT,
  TAG_RECORD,
} from './log-batch.ts';
import {
  DirectStdout,
  EXIT_FLUSH_MS,
  isPipeOrSocket,
  MAX_BUFFERED_BYTES,
  MAX_PENDING_CHARS,
} from './log-destination.ts';
import { WORKER_BOOTSTRAP, workerSources } from './worker-source.ts';

/** The slots of the counters the worker and this thread share (an `Int32Array` on a `SharedArrayBuffer`). */
export const COUNTERS = {
  /** Characters sent to the worker that it has not taken yet. */
  waiting: 0,
  /** Lines the worker has handed to stdout (or to its bounded queue). */
  written: 1,
  /** Lines the worker's stdout dropped. */
  dropped: 2,
  /** Flushes the worker has finished. */
  flushed: 3,
  /** The worker's thread id (Linux), for the bench. */
  tid: 4,
} as const;
const SLOTS = 5;

/**
 * A batch goes to the worker once it holds this many lines, or at the end of the turn when the last
 * one went at least this long ago (else when it is that old): each message wakes the worker (a
 * system call), so under load a message per event-loop turn would cost a request more than the
 * lines it carries, while a quiet log's lines go out at once.
 */
export const BATCH_LINES = 512;
export const BATCH_MS = 10;

/**
 * The worker's heap bound (MiB): what it holds at most is a batch, its lines and what stdout has not
 * taken yet ({@link MAX_PENDING_CHARS} and {@link MAX_BUFFERED_BYTES}, 8 Mi characters and 16 MiB).
 */
export const WORKER_HEAP_MB = 96;

/** What the worker is started with. */
export interface LogWorkerData {
  readonly fd: number;
  /** Mask access lines with obs's `maskLogLine`. */
  readonly mask: boolean;
  readonly maxQueuedBytes: number;
  readonly counters: SharedArrayBuffer;
}

/** A flush request to the worker: `sync` at exit (it writes for up to `ms`), else once stdout took it. */
export interface FlushRequest {
  readonly sync: boolean;
  readonly ms: number;
}

/** How the worker ended, for {@link OffThreadOptions.onWorkerExit}. */
export interface WorkerExit {
  readonly code: number;
  readonly error: Error | undefined;
  /** Lines it was sent and had not written: counted as dropped. */
  readonly lost: number;
}

export interface OffThreadOptions {
  /** The descriptor written (default 1, stdout). */
  readonly fd?: number;
  /** Access lines are masked with obs's `maskLogLine` (the logger's `streamWrite` is that). */
  readonly mask: boolean;
  readonly maxPendingChars?: number;
  readonly maxQueuedBytes?: number;
  /** The worker's heap bound (MiB; default {@link WORKER_HEAP_MB}): past it the worker ends, and this thread takes over. */
  readonly workerHeapMb?: number;
  /** Told once the worker has gone; the lines are then written by this thread. */
  readonly onWorkerExit?: (exit: WorkerExit) => void;
}

/** Where access-log.ts hands an access line's parts instead of building the line. */
export interface AccessRecordSink {
  /** Whether access lines are masked there with obs's `maskLogLine`. */
  readonly masksAccessLines: boolean;
  /**
   * Queues one access line: its time piece, the logger's bindings, the request id, `fields` (pairs
   * of `,"key":` and the value's JSON, read now: the array may be reused) and the message. False
   * when it was dropped.
   */
  record(
    format: AccessFormat,
    time: string,
    bindings: string,
    id: unknown,
    fields: readonly string[],
    msg: string,
  ): boolean;
}

/** A package's specifier as this module would import it; undefined when it cannot be. */
function resolveHere(specifier: string): string | undefined {
  try {
    return import.meta.resolve(specifier);
  } catch {
    return undefined;
  }
}

/** Where the worker's code is: beside this module, as TypeScript from a clone, as JavaScript from the package. */
function workerUrl(): URL {
  const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  return new URL(`./log-worker${ext}`, import.meta.url);
}

/** pino's destination stream, and the {@link AccessRecordSink} of access-log.ts. See the module comment. */
export class OffThreadDestination implements AccessRecordSink {
  readonly masksAccessLines: boolean;
  readonly #counters: Int32Array;
  readonly #maxPendingChars: number;
  readonly #onWorkerExit: ((exit: WorkerExit) => void) | undefined;
  readonly #fd: number;
  #worker: Worker | undefined;
  #workerError: Error | undefined;
  /** This turn's batch; its first element is set to its characters when it is sent. */
  #pending: unknown[] = [0];
  #pendingChars = 0;
  #pendingLines = 0;
  #scheduled = false;
  #timer: NodeJS.Timeout | undefined;
  /** When the last batch went to the worker (ms). */
  #sentAt = 0;
  /** Lines sent to the worker. */
  #sent = 0;
  #droppedHere = 0;
  #flushRequests = 0;
  /** The format and bindings as the entries queued so far leave them. */
  #format: AccessFormat | undefined;
  #bindings: string | undefined;
  /** The same as the batches sent leave them: where this thread starts if the worker goes. */
  #sentState: BatchState = initialBatchState();
  /** This thread's own writer, once the worker has gone. */
  #inThread: { readonly stdout: DirectStdout; readonly state: BatchState } | undefined;

  constructor(options: OffThreadOptions) {
    this.masksAccessLines = options.mask;
    this.#fd = options.fd ?? 1;
    this.#maxPendingChars = options.maxPendingChars ?? MAX_PENDING_CHARS;
    this.#onWorkerExit = options.onWorkerExit;
    const counters = new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT);
    this.#counters = new Int32Array(counters);
    const data: LogWorkerData = {
      fd: this.#fd,
      mask: options.mask,
      maxQueuedBytes: options.maxQueuedBytes ?? MAX_BUFFERED_BYTES,
      counters,
    };
    const url = workerUrl();
    // From the TypeScript sources, the worker's modules come stripped from this thread, so that it
    // does not load node's TypeScript stripper again (worker-source.ts).
    const prepared = workerSources(url, resolveHere);
    const worker = new Worker(prepared === undefined ? url : WORKER_BOOTSTRAP, {
      ...(prepared === undefined ? {} : { eval: true }),
      workerData: prepared === undefined ? data : { ...data, workerSources: prepared },
      stdout: false,
      stderr: false,
      // none of the main thread's node options: `--input-type`, `-e` or an `--import` hook are its own
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: options.workerHeapMb ?? WORKER_HEAP_MB },
    });
    worker.unref();
    worker.on('error', (error) => {
      this.#workerError = error;
    });
    worker.on('exit', (code) => this.#workerGone(code));
    this.#worker = worker;
  }

  /** Lines dropped: the bound reached here, stdout not keeping up, or sent to a worker that died. */
  get dropped(): number {
    return this.#droppedHere + Atomics.load(this.#counters, COUNTERS.dropped);
  }

  /** The worker's thread id, once it has started (Linux; 0 otherwise or after it has gone). */
  get workerThreadId(): number {
    return this.#worker === undefined ? 0 : Atomics.load(this.#counters, COUNTERS.tid);
  }

  /** Whether the worker writes the lines (false once it has gone). */
  get offThread(): boolean {
    return this.#worker !== undefined;
  }

  #fits(chars: number): boolean {
    if (
      this.#pendingChars + chars + Atomics.load(this.#counters, COUNTERS.waiting) <=
      this.#maxPendingChars
    ) {
      return true;
    }
    this.#droppedHere++;
    return false;
  }

  #queued(chars: number): void {
    this.#pendingChars += chars;
    if (++this.#pendingLines >= BATCH_LINES) {
      this.#flush();
      return;
    }
    if (!this.#scheduled) {
      this.#scheduled = true;
      // A quiet log goes out at the end of this turn; under load, a batch at most every BATCH_MS.
      const since = this.#worker === undefined ? BATCH_MS : Date.now() - this.#sentAt;
      if (since >= BATCH_MS) setImmediate(this.#flush);
      else this.#timer = setTimeout(this.#flush, BATCH_MS - since);
    }
  }

  /** Queues a finished line (pino's stream contract); false when it was dropped. */
  write(line: string): boolean {
    if (!this.#fits(line.length)) return false;
    this.#pending.push(line);
    this.#queued(line.length);
    return true;
  }

  record(
    format: AccessFormat,
    time: string,
    bindings: string,
    id: unknown,
    fields: readonly string[],
    msg: string,
  ): boolean {
    let chars = 48 + time.length + msg.length + (typeof id === 'string' ? id.length : 24);
    for (let k = 0; k < fields.length; k++) chars += fields[k]!.length;
    if (!this.#fits(chars)) return false;
    const pending = this.#pending;
    if (format !== this.#format) {
      this.#format = format;
      pending.push(TAG_FORMAT, format.label, format.msgLabel, format.end);
    }
    if (bindings !== this.#bindings) {
      this.#bindings = bindings;
      pending.push(TAG_BINDINGS, bindings);
    }
    pending.push(TAG_RECORD, time, id, fields.length / 2);
    for (let k = 0; k < fields.length; k++) pending.push(fields[k]);
    pending.push(msg);
    this.#queued(chars);
    return true;
  }

  /** Hands this turn's batch on (once per turn). */
  readonly #flush = (): void => {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    this.#scheduled = false;
    const batch = this.#pending;
    if (batch.length === 1) return;
    const chars = this.#pendingChars;
    const lines = this.#pendingLines;
    this.#pending = [0];
    this.#pendingChars = 0;
    this.#pendingLines = 0;
    const worker = this.#worker;
    if (worker !== undefined) {
      batch[0] = chars;
      this.#sentAt = Date.now();
      Atomics.add(this.#counters, COUNTERS.waiting, chars);
      this.#sent += lines;
      if (this.#format !== undefined) this.#sentState.format = this.#format;
      if (this.#bindings !== undefined) this.#sentState.bindings = this.#bindings;
      worker.postMessage(batch);
      return;
    }
    this.#writeInThread(batch);
  };

  #writeInThread(batch: readonly unknown[]): void {
    const own = this.#inThread;
    if (own === undefined) return;
    const { text } = formatBatch(batch, own.state, this.masksAccessLines ? maskLogLine : undefined);
    if (text.length === 0) return;
    try {
      own.stdout.write(text);
    } catch {
      // a destroyed stdout loses the lines, never the request that logged them
      this.#droppedHere++;
    }
  }

  #workerGone(code: number): void {
    if (this.#worker === undefined) return;
    const lost = this.#takeOver();
    this.#onWorkerExit?.({ code, error: this.#workerError, lost });
  }

  /** From now on this thread writes the lines; the lines the worker did not write, counted as dropped. */
  #takeOver(): number {
    this.#worker = undefined;
    const lost = Math.max(0, this.#sent - Atomics.load(this.#counters, COUNTERS.written));
    this.#droppedHere += lost;
    Atomics.store(this.#counters, COUNTERS.waiting, 0);
    this.#inThread = {
      stdout: new DirectStdout(this.#fd, {
        onDrop: (n) => {
          this.#droppedHere += n;
        },
      }),
      state: { ...this.#sentState },
    };
    return lost;
  }

  /**
   * Ends the worker once it has written what it was sent (the app's `onClose`); lines logged after
   * are written by this thread.
   */
  close(): void {
    const worker = this.#worker;
    if (worker === undefined) return;
    this.flushSync();
    this.#takeOver();
    void worker.terminate();
  }

  /** Hands the queued lines on now, and calls back once stdout has taken them (pino's `flush`). */
  flush(cb?: (error?: Error) => void): void {
    this.#flush();
    const worker = this.#worker;
    if (worker === undefined) {
      const own = this.#inThread;
      if (own === undefined) cb?.();
      else own.stdout.flush(cb);
      return;
    }
    const target = ++this.#flushRequests;
    worker.postMessage({ sync: false, ms: 0 } satisfies FlushRequest);
    if (cb === undefined) return;
    const counters = this.#counters;
    const wait = (): void => {
      const seen = Atomics.load(counters, COUNTERS.flushed);
      if (seen >= target || this.#worker === undefined) {
        cb();
        return;
      }
      const result = Atomics.waitAsync(counters, COUNTERS.flushed, seen, 1000);
      if (result.async) void result.value.then(wait);
      else wait();
    };
    wait();
  }

  /**
   * Writes everything, synchronously (at exit): the worker is sent what is queued and asked to write
   * it all, and this thread waits for it, for up to `ms` and a second more; lines still unwritten
   * then are counted as dropped.
   */
  flushSync(ms = EXIT_FLUSH_MS): void {
    this.#flush();
    if (this.#worker === undefined) {
      this.#inThread?.stdout.flushSync(ms);
      return;
    }
    const target = ++this.#flushRequests;
    this.#worker.postMessage({ sync: true, ms } satisfies FlushRequest);
    const counters = this.#counters;
    const deadline = Date.now() + ms + 1000;
    for (;;) {
      const seen = Atomics.load(counters, COUNTERS.flushed);
      if (seen >= target) return;
      const left = deadline - Date.now();
      if (left <= 0) break;
      Atomics.wait(counters, COUNTERS.flushed, seen, left);
    }
    this.#droppedHere += Math.max(0, this.#sent - Atomics.load(counters, COUNTERS.written));
    this.#sent = Atomics.load(counters, COUNTERS.written);
  }
}

/**
 * stdout as the service's log destination with the lines written by a worker thread; what waits at
 * exit is written before the process ends (for up to {@link EXIT_FLUSH_MS}).
 */
export function offThreadStdout(options: Omit<OffThreadOptions, 'fd'>): OffThreadDestination {
  // libuv makes a pipe or socket non-blocking when process.stdout is opened on it: a full pipe then
  // answers EAGAIN (in the worker too: the descriptor is the process's) instead of blocking.
  if (isPipeOrSocket(1)) void process.stdout.fd;
  const destination = new OffThreadDestination(options);
  process.once('exit', () => {
    try {
      destination.flushSync();
    } catch {
      // stdout is gone: nothing left to write to
    }
  });
  return destination;
}
