import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyRequest } from 'fastify';
import pino, { type Logger, type LoggerOptions } from 'pino';
import { accessLog, lazyChildLoggerFactory } from '../../src/echo/access-log.ts';
import { ECHO_OBS_DEFAULTS } from '../../src/echo/metrics.ts';
import { seededRandom } from '../../src/echo/random.ts';
import { runInRequestContext } from '../../src/obs/features/request-context/request-context.ts';
import { loadObsConfig, obsLoggerOptions } from '../../src/obs/index.ts';

/** A logger as app.ts builds it (obs's mixin and masking), writing to an array, with a fixed clock. */
function capturingLogger(base: LoggerOptions = {}): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const obs = loadObsConfig({ env: {}, defaults: ECHO_OBS_DEFAULTS });
  const logger = pino(
    obsLoggerOptions({
      config: obs.config,
      base: { level: 'info', timestamp: () => ',"time":"2026-11-24T20:00:00.000Z"', ...base },
    }),
    { write: (line: string) => lines.push(line) },
  );
  return { logger, lines };
}

function requestOf(logger: Logger, id: string): FastifyRequest {
  return { id, log: logger.child({ reqId: id }) } as unknown as FastifyRequest;
}

/** A request context with every field obs's mixin writes that does not move with the clock. */
const STORE = {
  requestId: 'r',
  state: {},
  propagation: {},
  retryDepth: 2,
  priority: 'critical',
  tenant: 'acme',
};

const MESSAGES = [
  '127.0.0.1 GET /bench/path?x=1',
  '127.0.0.1 GET /bench/path?x=1 - 200 0.532ms',
  '::1 POST /say "hello" \\ back',
  `10.0.0.1 GET /${'long/'.repeat(40)}`,
  '127.0.0.1 GET /tab\there',
  '127.0.0.1 GET /latin\u00e9\u00ff',
  '127.0.0.1 GET /login?password=hunter2&token=abc - 200 1ms',
  '127.0.0.1 GET /mail?to=jane.doe@example.com',
];

test('an access line is byte for byte the line request.log.info writes, masking included', () => {
  const { logger, lines } = capturingLogger();
  const access = accessLog(logger);
  for (const id of ['87b9832f-80ee-405b-9411-5c8f5d41e2b5', 'client "id"']) {
    for (const msg of MESSAGES) {
      runInRequestContext(STORE as never, () => {
        const request = requestOf(logger, id);
        access.info(request, msg);
        request.log.info(msg);
      });
      const [fast, viaPino] = lines.splice(0);
      assert.equal(fast, viaPino);
    }
  }
  // The context's fields are on the line, and the masking ran.
  runInRequestContext(STORE as never, () => access.info(requestOf(logger, 'x'), MESSAGES[6]!));
  const line = JSON.parse(lines.pop()!) as Record<string, unknown>;
  assert.equal(line.retry_depth, 2);
  assert.equal(line.tenant, 'acme');
  assert.equal(line.reqId, 'x');
  assert.ok(!String(line.msg).includes('hunter2'), String(line.msg));
});

/** Pieces that may or may not be (or complete) a secret, for lines built at random. */
const FRAGMENTS = [
  'GET /plain',
  '?password=hunter2',
  'jane.doe@example.com',
  '4111 1111 1111 1111',
  '4111-1111-1111-1112',
  '123-45-6789',
  '12',
  '-34-',
  'Bearer abc.def',
  'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig',
  'TOKEN',
  'tok',
  'en',
  'session_id=9',
  '2026-11-24',
  '0',
  '"',
  '\\',
  ' ',
];

test('lines built at random from secrets and near-secrets mask exactly as request.log.info does', () => {
  // The access lines skip obs's scan of a whole line when none of its changing pieces (request id,
  // message, the mixin's values) may hold a secret: pieces that are one only together, and
  // secrets in any piece, must still be masked as pino's own path masks them.
  const random = seededRandom(13);
  const pick = () => {
    let out = '';
    for (let n = Math.floor(random() * 4); n >= 0; n--)
      out += FRAGMENTS[Math.floor(random() * FRAGMENTS.length)];
    return out;
  };
  let masked = 0;
  const fixed = [',"time":"2026-11-24T20:00:00.000Z"'];
  // a time function whose text may itself look like a secret, changing from line pair to line pair
  const odd = [...fixed, ',"time":"123-45-6789"', ',"time":4111111111111111'];
  for (const [hostname, times] of [
    ['vm', fixed],
    ['jane.doe@example.com', fixed],
    ['vm', odd],
  ] as const) {
    let time: string = times[0]!;
    const { logger, lines } = capturingLogger({ base: { pid: 1, hostname }, timestamp: () => time });
    const access = accessLog(logger);
    for (let i = 0; i < 400; i++) {
      time = times[i % times.length]!;
      const id = random() < 0.5 ? '87b9832f-80ee-405b-9411-5c8f5d41e2b5' : pick();
      const msg = pick();
      const store = {
        ...STORE,
        tenant: random() < 0.7 ? 'acme' : pick(),
        retryDepth: Math.floor(random() * 3),
      };
      runInRequestContext(store as never, () => {
        const request = requestOf(logger, id);
        access.info(request, msg);
        request.log.info(msg);
      });
      const [fast, viaPino] = lines.splice(0);
      assert.equal(fast, viaPino, `id ${JSON.stringify(id)}, msg ${JSON.stringify(msg)}`);
      if (fast?.includes('[MASKED]') || fast?.includes('"[')) masked++;
    }
  }
  assert.ok(masked > 50, `only ${masked} of the lines had anything masked: the fragments test too little`);
});

test('outside a request context, and below the level, the lines still match (and are not written)', () => {
  const { logger, lines } = capturingLogger();
  const access = accessLog(logger);
  const request = requestOf(logger, 'abc');
  access.info(request, MESSAGES[0]!);
  request.log.info(MESSAGES[0]!);
  assert.equal(lines.length, 2);
  assert.equal(lines[0], lines[1]);
  logger.level = 'warn';
  access.info(request, MESSAGES[0]!);
  assert.equal(lines.length, 2);
});

test('a logger whose options change the line gets the request logger instead (same line)', () => {
  const { logger, lines } = capturingLogger({ formatters: { log: (o) => ({ ...o, extra: true }) } });
  const access = accessLog(logger);
  runInRequestContext(STORE as never, () => {
    const request = requestOf(logger, 'abc');
    access.info(request, MESSAGES[1]!);
    request.log.info(MESSAGES[1]!);
  });
  assert.equal(lines.length, 2);
  assert.equal(lines[0], lines[1]);
  assert.match(lines[0]!, /"extra":true/);
});

test('the lazy request logger makes its child on first use, with the bindings and level given', () => {
  const { logger, lines } = capturingLogger();
  let children = 0;
  const counting = Object.create(logger) as Logger;
  counting.child = ((bindings, options) => {
    children++;
    return logger.child(bindings, options);
  }) as Logger['child'];
  const lazy = lazyChildLoggerFactory(counting, { reqId: 'lazy-1' }, { level: 'debug' });
  assert.equal(children, 0);
  assert.equal(lazy.level, 'debug');
  lazy.debug('first');
  lazy.info({ a: 1 }, 'second');
  assert.equal(children, 1);
  assert.equal(lines.length, 2);
  const first = JSON.parse(lines[0]!) as Record<string, unknown>;
  assert.equal(first.reqId, 'lazy-1');
  assert.equal(first.msg, 'first');
  assert.equal((JSON.parse(lines[1]!) as Record<string, unknown>).a, 1);
  const grandchild = lazy.child({ extra: 'x' });
  grandchild.warn('third');
  assert.equal((JSON.parse(lines[2]!) as Record<string, unknown>).extra, 'x');
});
