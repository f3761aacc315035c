import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { describe, it } from 'node:test';
import {
  type BacklogStream,
  boundExitFlush,
  DirectSink,
  isoTimestamp,
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

/** A descriptor that takes what `room` allows (EAGAIN when none), and a backlog that holds what it is given. */
function directHarness(options: { maxBacklogBytes?: number } = {}) {
  const fdWrites: string[] = [];
  const state = { room: Number.POSITIVE_INFINITY, error: undefined as string | undefined };
  const events = new EventEmitter();
  const backlog = Object.assign(events, {
    held: [] as Buffer[],
    syncFlushed: 0,
    write(chunk: Buffer) {
      const bytes = this.held.reduce((n, b) => n + b.length, 0);
      if (bytes + chunk.length > (options.maxBacklogBytes ?? Number.POSITIVE_INFINITY)) {
        events.emit('drop', chunk);
        return false;
      }
      this.held.push(chunk);
      return true;
    },
    /** sonic-boom's 'write' event once it has written the first `n` bytes it holds. */
    written(n: number) {
      let rest = n;
      while (rest > 0 && this.held.length > 0) {
        const first = this.held[0]!;
        if (first.length <= rest) {
          rest -= first.length;
          this.held.shift();
        } else {
          this.held[0] = first.subarray(rest);
          rest = 0;
        }
      }
      events.emit('write', n);
    },
    flushSync() {
      this.syncFlushed++;
    },
    flush(cb?: () => void) {
      cb?.();
    },
  });
  const sink = new DirectSink(7, backlog as unknown as BacklogStream, {
    writeSync(fd, text) {
      assert.equal(fd, 7);
      if (state.error !== undefined) throw Object.assign(new Error(state.error), { code: state.error });
      const bytes = Buffer.from(text);
      if (state.room <= 0) throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
      const n = Math.min(bytes.length, state.room);
      fdWrites.push(bytes.subarray(0, n).toString('latin1'));
      if (Number.isFinite(state.room)) state.room -= n;
      return n;
    },
  });
  return { sink, backlog, state, fdWrites };
}

describe('DirectSink', () => {
  it('writes in the calling thread what the descriptor takes, and leaves the backlog alone', () => {
    const h = directHarness();
    assert.equal(h.sink.write('a\n'), true);
    assert.equal(h.sink.write('é\n'), true, 'a chunk whose UTF-8 is longer than its length');
    assert.deepEqual(h.fdWrites, ['a\n', Buffer.from('é\n').toString('latin1')]);
    assert.deepEqual(h.backlog.held, []);
    assert.equal(h.sink.backlogged, false);
  });

  it('hands a chunk a full descriptor refused to the backlog, and the next ones behind it', () => {
    const h = directHarness();
    h.state.room = 0;
    assert.equal(h.sink.write('first\n'), true);
    h.state.room = Number.POSITIVE_INFINITY;
    assert.equal(h.sink.write('second\n'), true);
    assert.deepEqual(h.fdWrites, [], 'nothing overtakes the backlog');
    assert.deepEqual(
      h.backlog.held.map((b) => b.toString()),
      ['first\n', 'second\n'],
    );
    assert.equal(h.sink.backlogged, true);
    h.backlog.written(6);
    assert.equal(h.sink.write('third\n'), true);
    assert.equal(h.backlog.held.length, 2, 'still behind what the backlog holds');
    h.backlog.written(14);
    assert.equal(h.sink.backlogged, false);
    assert.equal(h.sink.write('fourth\n'), true);
    assert.deepEqual(h.fdWrites, ['fourth\n'], 'written at once again when the backlog is empty');
  });

  it('after a partial write, the backlog gets exactly the bytes not written, a split character whole', () => {
    const h = directHarness();
    const chunk = 'ab€cd\n'; // € is 3 bytes in UTF-8
    h.state.room = 3; // 'ab' and the first byte of '€'
    assert.equal(h.sink.write(chunk), true);
    const all = Buffer.concat([Buffer.from(h.fdWrites[0]!, 'latin1'), ...h.backlog.held]);
    assert.equal(all.toString(), chunk);
    assert.equal(h.backlog.held[0]!.length, Buffer.byteLength(chunk) - 3);
  });

  it('stops writing once the reader has gone (EPIPE), as pino does', () => {
    const h = directHarness();
    h.state.error = 'EPIPE';
    assert.equal(h.sink.write('lost\n'), false);
    h.state.error = undefined;
    assert.equal(h.sink.write('also lost\n'), false);
    assert.deepEqual(h.fdWrites, []);
    assert.deepEqual(h.backlog.held, []);
  });

  it('other errors reach the caller (the destination counts the lines as dropped)', () => {
    const h = directHarness();
    h.state.error = 'EBADF';
    assert.throws(() => h.sink.write('x\n'), /EBADF/);
    const destination = new TurnBatchedDestination(h.sink, { schedule: (flush) => flush() });
    destination.write('y\n');
    assert.equal(destination.dropped, 1);
  });

  it('a chunk the bounded backlog drops is not waited for', () => {
    const h = directHarness({ maxBacklogBytes: 8 });
    h.state.room = 0;
    assert.equal(h.sink.write('0123456789\n'), false, 'over the bound: dropped');
    assert.equal(h.sink.backlogged, false);
    h.state.room = Number.POSITIVE_INFINITY;
    assert.equal(h.sink.write('next\n'), true);
    assert.deepEqual(h.fdWrites, ['next\n']);
  });

  it('flushSync writes the backlog only when it holds something', () => {
    const h = directHarness();
    h.sink.flushSync();
    assert.equal(h.backlog.syncFlushed, 0);
    h.state.room = 0;
    h.sink.write('held\n');
    h.sink.flushSync();
    assert.equal(h.backlog.syncFlushed, 1);
  });
});

describe('boundExitFlush', () => {
  /** sonic-boom's flushSync on a full pipe: retry while retryEAGAIN says so (without its sleep). */
  function fullPipe(ok = () => false) {
    const sonic = {
      calls: 0,
      retryEAGAIN: (_error: Error, _length: number, _remaining: number) => true,
      flushSync() {
        sonic.calls++;
        for (;;) {
          if (ok()) return;
          const error = Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
          if (!sonic.retryEAGAIN(error, 1, 0)) throw error;
        }
      },
    };
    return sonic;
  }

  it('gives up on a stdout that takes nothing after its time, once, and does nothing after', () => {
    const sonic = fullPipe();
    const original = sonic.retryEAGAIN;
    let gaveUp = 0;
    boundExitFlush(sonic, () => gaveUp++, 20);
    assert.doesNotThrow(() => sonic.flushSync());
    assert.equal(gaveUp, 1);
    assert.equal(sonic.retryEAGAIN, original, 'the retry policy is put back');
    sonic.flushSync();
    assert.equal(sonic.calls, 1, 'a second flush does not wait again');
    assert.equal(gaveUp, 1);
  });

  it('a flush that succeeds gives nothing up; another error still reaches the caller', () => {
    let polls = 0;
    const sonic = fullPipe(() => ++polls > 3);
    let gaveUp = 0;
    boundExitFlush(sonic, () => gaveUp++, 60_000);
    sonic.flushSync();
    assert.equal(gaveUp, 0);
    const broken = {
      retryEAGAIN: () => true,
      flushSync() {
        throw Object.assign(new Error('EBADF'), { code: 'EBADF' });
      },
    };
    boundExitFlush(broken, () => gaveUp++, 20);
    assert.throws(() => broken.flushSync(), /EBADF/);
    assert.equal(gaveUp, 0);
  });
});

describe('stdoutDestination on a pipe', () => {
  it('lets the process exit while its reader has stopped (what is left is lost, not waited for)', async () => {
    // 600 KiB written to a pipe nobody reads, then exit: the exit's flush must give up, not wait for
    // a reader that never comes back. The test's reader stays stopped until the process has ended.
    const script = `
      import { stdoutDestination } from './src/echo/log-destination.ts';
      const d = stdoutDestination();
      const pad = 'x'.repeat(1000);
      let i = 0;
      const next = () => {
        if (i === 600) { process.stderr.write('exiting\\n'); process.exit(0); }
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
    // 600 lines of 1 KiB, one a turn: far more than a pipe holds (64 KiB) while nobody reads it.
    // A write that blocked would stop the loop, and 'written' would never reach stderr.
    const script = `
      import { stdoutDestination } from './src/echo/log-destination.ts';
      const d = stdoutDestination();
      const pad = 'x'.repeat(1000);
      let i = 0;
      const next = () => {
        if (i === 600) { process.stderr.write('written\\n'); return; }
        d.write(String(i++).padStart(4, '0') + ' ' + pad + '\\n');
        setImmediate(next);
      };
      next();
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: new URL('../..', import.meta.url),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = once(child, 'exit');
    child.stdout.pause();
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
