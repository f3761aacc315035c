import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { isoTimestamp, TurnBatchedDestination } from '../../src/echo/log-destination.ts';

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
