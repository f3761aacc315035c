/**
 * The log worker (log-thread.ts): a thread that builds, masks and writes the service's log lines,
 * so the request that logged them does not. It receives one batch per event-loop turn of the main
 * thread, in order, and writes each batch's lines to stdout with one `write` ({@link DirectStdout}:
 * what stdout does not take at once waits in a bounded queue and is retried).
 *
 * What it tells the main thread, in the shared counters ({@link COUNTERS}): the characters it has
 * taken off the main thread's bound, the lines it has handed to stdout, the lines stdout dropped,
 * and how many flushes it has finished.
 */
import { readlinkSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { maskLogLine } from '@echo-chaos/obs/internal';
import { formatBatch, initialBatchState } from './log-batch.ts';
import { DirectStdout } from './log-destination.ts';
import { COUNTERS, type FlushRequest, type LogWorkerData } from './log-thread.ts';

const data = workerData as LogWorkerData;
const counters = new Int32Array(data.counters);
const mask = data.mask ? maskLogLine : undefined;
const state = initialBatchState();
const stdout = new DirectStdout(data.fd, {
  maxQueuedBytes: data.maxQueuedBytes,
  onDrop: (lines) => {
    Atomics.add(counters, COUNTERS.dropped, lines);
  },
});

try {
  // `<pid>/task/<tid>`: the bench reads this thread's CPU time apart from the main thread's
  const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (Number.isInteger(tid)) Atomics.store(counters, COUNTERS.tid, tid);
} catch {
  // not Linux: nobody reads it
}

parentPort?.on('message', (message: unknown[] | FlushRequest) => {
  if (Array.isArray(message)) {
    const { text, lines } = formatBatch(message, state, mask);
    if (text.length > 0) stdout.write(text);
    Atomics.add(counters, COUNTERS.written, lines);
    Atomics.sub(counters, COUNTERS.waiting, message[0] as number);
    return;
  }
  // a flush: at exit, synchronously, for as long as the main thread waits; else once stdout took it all
  const done = (): void => {
    Atomics.add(counters, COUNTERS.flushed, 1);
    Atomics.notify(counters, COUNTERS.flushed);
  };
  if (message.sync) {
    stdout.flushSync(message.ms);
    done();
  } else {
    stdout.flush(done);
  }
});
