import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import {
  DirectStdout,
  isoTimestamp,
  RETRY_MAX_MS,
  RETRY_MIN_MS,
  TurnBatchedDestination,
} from '../../src/echo/log-destination.ts';

/** A sink that records what it was handed, and a schedule that runs only when told. */
function harness(options: { maxPendingChars?: number } = {}) {
  const written: string[] = [];
  const syncWritten: string[] = [];
  const turns: Array<() => void> = [];
  const sink = {
    held: [] as string[],
    write(chunk: string) {
      written.push(chunk);
      return true;
    },
    flushSync() {
      syncWritten.push(...this.held.splice(0));
    },
  };
  const destination = new TurnBatchedDestination(sink, {
    ...options,
    schedule: (flush) => turns.push(flush),
    writeSync: (text) => syncWritten.push(text),
  });
  const endTurn = () => {
    for (const flush of turns.splice(0)) flush();
  };
  return { destination, sink, written, syncWritten, turns, endTurn };
}

describe('TurnBatchedDestination', () => {
  it('hands the lines of one turn to the sink as one write, in order', () => {
    const h = harness();
    h.destination.write('a\n');
    h.destination.write('b\n');
    h.destination.write('c\n');
    assert.deepEqual(h.written, [], 'nothing is written before the turn ends');
    assert.equal(h.turns.length, 1, 'one flush is scheduled per turn, not one per line');
    h.endTurn();
    assert.deepEqual(h.written, ['a\nb\nc\n']);
    h.destination.write('d\n');
    h.endTurn();
    assert.deepEqual(h.written, ['a\nb\nc\n', 'd\n']);
  });

  it('drops and counts lines beyond its bound instead of growing', () => {
    const h = harness({ maxPendingChars: 10 });
    assert.equal(h.destination.write('12345\n'), true);
    assert.equal(h.destination.write('1234\n'), false, 'over the bound: dropped');
    assert.equal(h.destination.write('123\n'), true, 'a line that fits still goes');
    assert.equal(h.destination.dropped, 1);
    h.endTurn();
    assert.deepEqual(h.written, ['12345\n123\n']);
    assert.equal(h.destination.write('1234567\n'), true, 'the bound applies to what waits, not to the past');
  });

  it('flushSync writes what the sink holds first, then the queued lines', () => {
    const h = harness();
    h.sink.held.push('older\n');
    h.destination.write('newer\n');
    h.destination.flushSync();
    assert.deepEqual(h.syncWritten, ['older\n', 'newer\n']);
    h.endTurn();
    assert.deepEqual(h.written, [], 'a line written at flushSync is not written again');
  });

  it('a sink that throws loses the lines, never the caller', () => {
    const destination = new TurnBatchedDestination(
      {
        write() {
          throw new Error('stdout destroyed');
        },
      },
      { schedule: (flush) => flush() },
    );
    assert.doesNotThrow(() => destination.write('x\n'));
    assert.equal(destination.dropped, 1);
  });

  it('the lines still queued when the process exits reach stdout', () => {
    // A real process: log, then exit in the same turn (before the batch would be handed on).
    const script = `
      import { stdoutDestination } from './src/echo/log-destination.ts';
      const d = stdoutDestination();
      for (let i = 0; i < 1000; i++) d.write('line ' + i + '\\n');
      process.exit(0);
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: new URL('../..', import.meta.url),
      encoding: 'utf8',
    });
    assert.equal(run.status, 0, run.stderr);
    const lines = run.stdout.split('\n').filter(Boolean);
    assert.equal(lines.length, 1000);
    assert.equal(lines[0], 'line 0');
    assert.equal(lines[999], 'line 999');
  });
});

/**
 * A descriptor that takes what `room` allows (EAGAIN when none, or the error in `error`), and a
 * schedule that runs a retry only when told.
 */
function stdoutHarness(options: { maxQueuedBytes?: number } = {}) {
  const taken: Buffer[] = [];
  const state = { room: Number.POSITIVE_INFINITY, error: undefined as string | undefined };
  const retries: Array<{ retry: () => void; ms: number }> = [];
  const drops: number[] = [];
  const stdout = new DirectStdout(7, {
    ...options,
    write(fd, data) {
      assert.equal(fd, 7);
      if (state.error !== undefined) throw Object.assign(new Error(state.error), { code: state.error });
      if (state.room <= 0) throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
      const bytes = typeof data === 'string' ? Buffer.from(data) : Buffer.from(data);
      const n = Math.min(bytes.length, state.room);
      taken.push(bytes.subarray(0, n));
      if (Number.isFinite(state.room)) state.room -= n;
      return n;
    },
    onDrop: (lines) => drops.push(lines),
    schedule: (retry, ms) => retries.push({ retry, ms }),
  });
  const text = () => Buffer.concat(taken).toString();
  const runRetry = () => {
    const next = retries.shift();
    assert.ok(next, 'a retry was scheduled');
    next.retry();
    return next.ms;
  };
  return { stdout, state, retries, drops, text, runRetry };
}

describe('DirectStdout', () => {
  it('writes in the calling thread what the descriptor takes, and schedules nothing', () => {
    const h = stdoutHarness();
    assert.equal(h.stdout.write('a\n'), true);
    assert.equal(h.stdout.write('é\n'), true, 'a chunk whose UTF-8 is longer than its length');
    assert.equal(h.text(), 'a\né\n');
    assert.equal(h.retries.length, 0);
    assert.equal(h.stdout.queuedBytes, 0);
  });

  it('queues what a full descriptor refused, and the next chunks behind it, in order', () => {
    const h = stdoutHarness();
    h.state.room = 0;
    assert.equal(h.stdout.write('first\n'), true);
    h.state.room = Number.POSITIVE_INFINITY;
    assert.equal(h.stdout.write('second\n'), true);
    assert.equal(h.text(), '', 'nothing overtakes the queue');
    assert.equal(h.retries.length, 1, 'one retry armed, not one per chunk');
    assert.equal(h.runRetry(), RETRY_MIN_MS);
    assert.equal(h.text(), 'first\nsecond\n');
    assert.equal(h.stdout.queuedBytes, 0);
    assert.equal(h.stdout.write('third\n'), true);
    assert.equal(h.text(), 'first\nsecond\nthird\n', 'written at once again when nothing waits');
  });

  it('after a partial write, the rest is exactly the bytes not written, a split character whole', () => {
    const h = stdoutHarness();
    const chunk = 'ab€cd\n'; // € is 3 bytes in UTF-8
    h.state.room = 3; // 'ab' and the first byte of '€'
    assert.equal(h.stdout.write(chunk), true);
    assert.equal(h.stdout.queuedBytes, Buffer.byteLength(chunk) - 3);
    h.state.room = Number.POSITIVE_INFINITY;
    h.runRetry();
    assert.equal(h.text(), chunk);
  });

  it('retries a stopped reader less and less often, and soon again once something went', () => {
    const h = stdoutHarness();
    h.state.room = 0;
    h.stdout.write('x\n');
    const delays: number[] = [];
    for (let i = 0; i < 9; i++) delays.push(h.runRetry());
    assert.deepEqual(
      delays,
      [1, 2, 4, 8, 16, 32, 64, 64, 64].map((ms) => Math.min(ms, RETRY_MAX_MS)),
    );
    h.state.room = 1; // one byte goes
    h.runRetry();
    assert.equal(h.retries[0]?.ms, RETRY_MIN_MS, 'progress: the next retry comes soon');
    h.state.room = Number.POSITIVE_INFINITY;
    h.runRetry();
    assert.equal(h.text(), 'x\n');
    assert.equal(h.retries.length, 0, 'nothing left: no retry armed');
  });

  it('drops and counts the lines of a chunk that would pass its bound', () => {
    const h = stdoutHarness({ maxQueuedBytes: 8 });
    h.state.room = 0;
    assert.equal(h.stdout.write('0123\n'), true);
    assert.equal(h.stdout.write('a\nb\nc\n'), false, 'over the bound: dropped');
    assert.deepEqual(h.drops, [3]);
    h.state.room = Number.POSITIVE_INFINITY;
    h.runRetry();
    assert.equal(h.text(), '0123\n');
  });

  it('stops writing once the reader has gone (EPIPE), counting what waited', () => {
    const h = stdoutHarness();
    h.state.room = 0;
    h.stdout.write('waiting\n');
    h.state.error = 'EPIPE';
    h.runRetry();
    assert.deepEqual(h.drops, [1]);
    h.state.error = undefined;
    h.state.room = Number.POSITIVE_INFINITY;
    assert.equal(h.stdout.write('after\n'), false);
    assert.equal(h.text(), '');
    assert.equal(h.retries.length, 0);
  });

  it('other errors reach the caller (the destination counts the lines as dropped)', () => {
    const h = stdoutHarness();
    h.state.error = 'EBADF';
    assert.throws(() => h.stdout.write('x\n'), /EBADF/);
    const destination = new TurnBatchedDestination(h.stdout, { schedule: (flush) => flush() });
    destination.write('y\n');
    assert.equal(destination.dropped, 1);
  });

  it('flush calls back at once when nothing waits, else once the queue has gone', () => {
    const h = stdoutHarness();
    let calls = 0;
    h.stdout.flush(() => calls++);
    assert.equal(calls, 1);
    h.state.room = 0;
    h.stdout.write('x\n');
    h.stdout.flush(() => calls++);
    assert.equal(calls, 1);
    h.state.room = Number.POSITIVE_INFINITY;
    h.runRetry();
    assert.equal(calls, 2);
  });

  it('flushSync writes what waits, gives up on a stdout that takes nothing, and waits only once', () => {
    const h = stdoutHarness();
    h.state.room = 0;
    h.stdout.write('a\nb\n');
    h.stdout.flushSync(20);
    assert.deepEqual(h.drops, [2], 'given up: the lines are counted as dropped');
    assert.equal(h.stdout.queuedBytes, 0);
    h.stdout.write('c\n');
    h.stdout.flushSync(60_000); // would wait a minute if it waited again
    assert.deepEqual(h.drops, [2, 1]);
    const ok = stdoutHarness();
    ok.state.room = 0;
    ok.stdout.write('d\n');
    ok.state.room = Number.POSITIVE_INFINITY;
    ok.stdout.flushSync(60_000);
    assert.equal(ok.text(), 'd\n');
    assert.deepEqual(ok.drops, []);
  });
});

/**
 * A process that writes 600 lines of 1 KiB through stdoutDestination, one a turn (far more than a
 * pipe holds, 64 KiB), to a stdout pipe nobody reads yet; when done it writes `done` to stderr
 * and, with `exit`, exits at once.
 */
function pipeWriter(done: string, exit: boolean) {
  const script = `
    import { stdoutDestination } from './src/echo/log-destination.ts';
    const d = stdoutDestination();
    const pad = 'x'.repeat(1000);
    let i = 0;
    const next = () => {
      if (i === 600) { process.stderr.write('${done}\\n'); ${exit ? 'process.exit(0);' : 'return;'} }
      d.write(String(i++).padStart(4, '0') + ' ' + pad + '\\n');
      setImmediate(next);
    };
    next();
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    cwd: new URL('../..', import.meta.url),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.pause();
  return child;
}

describe('stdoutDestination on a pipe', () => {
  it('lets the process exit while its reader has stopped (what is left is lost, not waited for)', async () => {
    // 600 KiB written to a pipe nobody reads, then exit: the exit's flush must give up, not wait for
    // a reader that never comes back. The test's reader stays stopped until the process has ended.
    const child = pipeWriter('exiting', true);
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const exited = new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`still running with its reader stopped: ${stderr}`));
      }, 60_000);
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
    try {
      assert.equal(await exited, 0, stderr);
      assert.match(stderr, /exiting/);
    } finally {
      child.stdout.resume();
    }
  });

  it('keeps the event loop running while its reader has stopped, and loses no line', async () => {
    // A write that blocked would stop the loop, and 'written' would never reach stderr.
    const child = pipeWriter('written', false);
    const exited = once(child, 'exit');
    let stderr = '';
    const written = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the loop stopped: ${stderr}`)), 60_000);
      child.stderr.on('data', (c: Buffer) => {
        stderr += c.toString();
        if (stderr.includes('written')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    try {
      await written;
    } finally {
      // read everything now (as a reader that resumes would)
      const chunks: Buffer[] = [];
      child.stdout.on('data', (c: Buffer) => chunks.push(c));
      child.stdout.resume();
      const [code] = await exited;
      const lines = Buffer.concat(chunks).toString().split('\n').filter(Boolean);
      assert.equal(code, 0, stderr);
      assert.equal(lines.length, 600);
      lines.forEach((line, i) => {
        assert.equal(line.length, 1005, `line ${i} whole`);
        assert.equal(line.slice(0, 4), String(i).padStart(4, '0'), 'in order');
      });
    }
  });
});

describe('isoTimestamp', () => {
  it("is pino's isoTime: the time field of a line, as ISO 8601 UTC", () => {
    const before = Date.now();
    const field = isoTimestamp();
    const after = Date.now();
    const match = /^,"time":"(.+)"$/.exec(field);
    assert.ok(match, field);
    const ms = Date.parse(match[1]!);
    assert.ok(ms >= before && ms <= after, `${match[1]} lies between the readings before and after`);
    assert.equal(new Date(ms).toISOString(), match[1]);
  });
});
