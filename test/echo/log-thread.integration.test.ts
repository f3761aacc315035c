import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { FastifyRequest } from 'fastify';
import pino, { type Logger } from 'pino';
import { accessLog } from '../../src/echo/access-log.ts';
import { BATCH_MS, OffThreadDestination, type WorkerExit } from '../../src/echo/log-thread.ts';
import { ECHO_OBS_DEFAULTS } from '../../src/echo/metrics.ts';
import { seededRandom } from '../../src/echo/random.ts';
import { runInRequestContext } from '../../src/obs/features/request-context/request-context.ts';
import { loadObsConfig, obsLoggerOptions } from '../../src/obs/index.ts';
import { startEchoProcess } from '../helpers/liveness.ts';
import { until } from '../helpers/runtime.ts';

const dir = mkdtempSync(join(tmpdir(), 'log-thread-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** A file to write to: its descriptor, and its lines once the writer is done. */
function logFile(): { fd: number; lines(): string[]; close(): void } {
  const path = join(dir, `log-${files++}.txt`);
  const fd = openSync(path, 'w');
  return {
    fd,
    lines: () => readFileSync(path, 'utf8').split('\n').filter(Boolean),
    close: () => closeSync(fd),
  };
}

/** obs's logger options as app.ts uses them, with a time that does not move. */
function loggerOptions(time: () => string) {
  const obs = loadObsConfig({ env: {}, defaults: ECHO_OBS_DEFAULTS });
  return obsLoggerOptions({ config: obs.config, base: { level: 'info', timestamp: time } });
}

function requestOf(logger: Logger, id: string): FastifyRequest {
  return { id, log: logger.child({ reqId: id }) } as unknown as FastifyRequest;
}

const STORE = {
  requestId: 'r',
  state: {},
  propagation: {},
  retryDepth: 2,
  priority: 'critical',
  tenant: 'acme',
};

const FRAGMENTS = [
  'GET /plain',
  '?password=hunter2',
  'jane.doe@example.com',
  '4111 1111 1111 1111',
  '123-45-6789',
  '-34-',
  'Bearer abc.def',
  'tok',
  'en',
  '"',
  '\\',
  ' ',
  '\u00e9',
];

describe('the log worker', () => {
  it('writes access lines byte for byte as request.log.info does, masking included, in order with pino lines', async () => {
    const file = logFile();
    let time = ',"time":"2026-11-28T20:00:00.000Z"';
    const destination = new OffThreadDestination({ fd: file.fd, mask: true });
    const logger = pino(
      loggerOptions(() => time),
      destination,
    );
    const expected: string[] = [];
    const reference = pino(
      loggerOptions(() => time),
      { write: (line: string) => expected.push(line) },
    );
    const access = accessLog(logger);
    const random = seededRandom(39);
    const pick = () => {
      let out = '';
      for (let n = Math.floor(random() * 4); n >= 0; n--)
        out += FRAGMENTS[Math.floor(random() * FRAGMENTS.length)];
      return out;
    };
    for (let i = 0; i < 600; i++) {
      if (i % 100 === 50) time = `,"time":"2026-11-28T20:00:0${i % 10}.000Z"`;
      const id = random() < 0.5 ? `req-${i}-a` : pick();
      const msg = pick();
      const store = { ...STORE, tenant: random() < 0.7 ? 'acme' : pick(), retryDepth: i % 3 };
      runInRequestContext(store as never, () => {
        access.info(requestOf(logger, id), msg);
        requestOf(reference, id).log.info(msg);
      });
      if (i % 7 === 0) {
        // a line of pino's own between access lines keeps its place
        logger.warn({ n: i }, 'between');
        reference.warn({ n: i }, 'between');
      }
      // some lines a turn apart, some in one batch
      if (i % 50 === 0) await new Promise((resolve) => setTimeout(resolve, BATCH_MS + 5));
    }
    assert.ok(destination.offThread, 'the worker wrote them');
    destination.flushSync();
    const written = file.lines();
    file.close();
    destination.close();
    assert.equal(written.length, expected.length);
    written.forEach((line, i) => {
      assert.equal(`${line}\n`, expected[i], `line ${i}`);
    });
    assert.ok(
      written.some((line) => line.includes('[MASKED')),
      'the lines held secrets the worker masked',
    );
    assert.equal(destination.dropped, 0);
  });

  it('drops and counts what passes its bound, and writes the rest', () => {
    const file = logFile();
    const destination = new OffThreadDestination({ fd: file.fd, mask: false, maxPendingChars: 10_000 });
    const line = `${'x'.repeat(99)}\n`;
    for (let i = 0; i < 500; i++) destination.write(line);
    destination.flushSync();
    const written = file.lines().length;
    file.close();
    destination.close();
    assert.equal(written, 100, 'what fits the bound (100 lines of 100 characters)');
    assert.equal(destination.dropped, 400);
  });

  it('a worker that dies is reported with the lines it lost, and this thread writes from then on', async () => {
    const file = logFile();
    const exits: WorkerExit[] = [];
    const destination = new OffThreadDestination({
      fd: file.fd,
      mask: false,
      // a heap far too small for the batch below: the worker runs out of memory and ends
      workerHeapMb: 4,
      maxPendingChars: 256 * 1024 * 1024,
      onWorkerExit: (exit) => exits.push(exit),
    });
    const big = `${'y'.repeat(1023)}\n`;
    for (let i = 0; i < 40_000; i++) destination.write(big);
    await until('the worker has gone', () => !destination.offThread, 60_000);
    assert.equal(exits.length, 1);
    const exit = exits[0]!;
    assert.equal((exit.error as NodeJS.ErrnoException | undefined)?.code, 'ERR_WORKER_OUT_OF_MEMORY');
    assert.ok(exit.lost > 0, `lines lost: ${exit.lost}`);
    assert.ok(destination.dropped >= exit.lost);
    destination.write('after\n');
    destination.flushSync();
    const lines = file.lines();
    file.close();
    assert.equal(lines.at(-1), 'after', 'the main thread wrote the line after');
  });

  it('the lines logged just before process.exit reach stdout', () => {
    const script = `
      import pino from 'pino';
      import { offThreadStdout } from './src/echo/log-thread.ts';
      const d = offThreadStdout({ mask: false });
      const logger = pino({ base: undefined, timestamp: false }, d);
      for (let i = 0; i < 20000; i++) logger.info('line ' + i);
      process.exit(0);
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: new URL('../..', import.meta.url),
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    assert.equal(run.status, 0, run.stderr);
    const lines = run.stdout.split('\n').filter(Boolean);
    assert.equal(lines.length, 20_000);
    lines.forEach((line, i) => {
      assert.equal(JSON.parse(line).msg, `line ${i}`);
    });
  });
});

describe('the service with its log worker (npm start)', () => {
  it('writes both access lines of every request, in order, and its last lines at SIGTERM', async () => {
    const echo = await startEchoProcess({ LOG_REQUESTS: 'true', ECHO_DRAIN_DELAY: '0ms' });
    try {
      for (let i = 0; i < 50; i++) {
        const res = await fetch(`${echo.url}/worker/${i}?password=hunter2`);
        assert.equal(res.status, 200);
        await res.arrayBuffer();
      }
      echo.child.kill('SIGTERM');
      const [code] = (await once(echo.child, 'exit')) as [number | null];
      assert.equal(code, 0, echo.stderr());
      const lines = echo
        .stdout()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const access = lines.filter((l) => String(l['msg']).includes(' GET /worker/'));
      assert.equal(access.length, 100);
      for (let i = 0; i < 50; i++) {
        const [arrived, done] = [access[2 * i]!, access[2 * i + 1]!];
        assert.equal(arrived['msg'], `127.0.0.1 GET /worker/${i}?password=[MASKED]`);
        assert.match(
          String(done['msg']),
          new RegExp(`^127\\.0\\.0\\.1 GET /worker/${i}\\?password=\\[MASKED\\] - 200 `),
        );
        assert.equal(arrived['reqId'], done['reqId']);
      }
      assert.ok(!echo.stdout().includes('hunter2'));
      // the drain's lines after the last request are there too
      assert.match(String(lines.at(-1)?.['msg']), /stopped|closed|drain/i, JSON.stringify(lines.at(-1)));
    } finally {
      await echo.stop();
    }
  });
});
