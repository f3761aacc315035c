/**
 * Properties of the control-header parser (`parseControls`) and the grammars under it, over random
 * and near-grammar values: it never throws, every problem names its header and value, and what it
 * accepts respects every ceiling.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import fc from 'fast-check';
import { FAULT_KINDS } from '../../src/echo/applied.ts';
import { type ControlLimits, parseControls, SET_HEADER_PREFIX } from '../../src/echo/controls.ts';
import { parseErrorFault } from '../../src/echo/faults.ts';
import { TOKEN, UNSETTABLE_HEADERS } from '../../src/echo/http-grammar.ts';
import { parseSeed } from '../../src/echo/random.ts';
import { MAX_CHUNK_BYTES, parseRate } from '../../src/echo/shaping.ts';
import { fuzzParameters, GRAMMAR_PIECES, headerValue, randomValue } from './fuzz.ts';

const FILE = 'controls';

/** Every control header the parser knows, plus set-header names and unknown `X-Echo-*` names. */
const CONTROL_HEADERS = [
  'x-echo-delay',
  'x-echo-jitter',
  'x-echo-random-delay',
  'x-echo-exponential',
  'x-echo-latency',
  'x-echo-status',
  'x-echo-error',
  'x-echo-chaos',
  'x-echo-response-size',
  'x-echo-throttle',
  'x-echo-chunk-delay',
  'x-echo-chunk-size',
  'x-echo-body-delay',
  'x-echo-retry-after',
  'x-echo-compress',
  'x-echo-content-type',
  'x-echo-headers',
  'x-echo-server-info',
  'x-echo-seed',
  'x-echo-explain',
  'x-echo-history-enabled',
  'x-echo-session',
] as const;

const headerName: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...CONTROL_HEADERS) },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.constantFrom(
          ...UNSETTABLE_HEADERS,
          'cache-control',
          'x-a',
          '__proto__',
          'constructor',
          'tostring',
          '',
        ),
        fc.stringMatching(/^[a-z0-9!#$%&'*+.^_`|~-]{0,12}$/),
      )
      .map((n) => `${SET_HEADER_PREFIX}${n}`),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'x-echo-dealy',
      'x-echo-',
      'x-echo-__proto__',
      'x-echo-constructor',
      'x-echo-fault',
    ),
  },
);

/** Header maps as Node hands them on: lower-case names, a string (or, rarely, an array) each. */
const headerMap = fc.dictionary(
  headerName,
  fc.oneof(
    { weight: 9, arbitrary: headerValue },
    { weight: 1, arbitrary: fc.array(headerValue, { maxLength: 3 }) },
  ),
  {
    maxKeys: 6,
  },
);

const limits: fc.Arbitrary<ControlLimits> = fc.record({
  maxDelayMs: fc.oneof(fc.constantFrom(0, 1, 30_000, 300_000, 2_147_483_647), fc.nat()),
  maxResponseBytes: fc.oneof(fc.constantFrom(0, 1, 10 * 1024 * 1024), fc.nat()),
});

test('parseControls – never throws; problems name a header given and its value; accepted values respect every ceiling', () => {
  fc.assert(
    fc.property(
      headerMap,
      limits,
      fc.array(randomValue, { minLength: 1, maxLength: 6 }),
      (headers, lim, draws) => {
        let i = 0;
        const random = () => draws[i++ % draws.length] as number;
        const { controls: c, problems } = parseControls(headers, lim, random);
        for (const p of problems) {
          assert.ok(Object.hasOwn(headers, p.field), `problem for a header not given: ${p.field}`);
          assert.equal(typeof p.message, 'string');
          assert.ok(p.message.length > 0);
        }
        if (problems.length > 0) return;
        if (c.delayMs !== undefined) {
          assert.ok(Number.isInteger(c.delayMs) && c.delayMs >= 0, `delay ${c.delayMs}`);
          assert.ok(c.delayMs <= lim.maxDelayMs, `delay ${c.delayMs} above ${lim.maxDelayMs}`);
          assert.match(c.delayControl ?? '', /^X-Echo-/);
        }
        if (c.status !== undefined) {
          assert.ok(Number.isInteger(c.status) && c.status >= 100 && c.status <= 599 && c.status !== 101);
        }
        if (c.error !== undefined && c.error.kind === 'status') {
          assert.ok(c.error.status >= 400 && c.error.status <= 599, `error status ${c.error.status}`);
        }
        if (c.chaosPercent !== undefined) {
          assert.ok(Number.isInteger(c.chaosPercent) && c.chaosPercent >= 0 && c.chaosPercent <= 100);
        }
        if (c.responseSize !== undefined) {
          assert.ok(
            Number.isInteger(c.responseSize) && c.responseSize >= 0 && c.responseSize <= lim.maxResponseBytes,
          );
        }
        if (c.chunkBytes !== undefined) assert.ok(c.chunkBytes >= 1 && c.chunkBytes <= MAX_CHUNK_BYTES);
        for (const ms of [c.chunkDelayMs, c.bodyDelayMs]) {
          if (ms !== undefined) assert.ok(Number.isInteger(ms) && ms >= 0 && ms <= lim.maxDelayMs);
        }
        if (c.throttle !== undefined) {
          assert.ok(Number.isFinite(c.throttle.bytesPerSecond) && c.throttle.bytesPerSecond >= 1);
          assert.equal(parseRate(c.throttle.text), c.throttle.bytesPerSecond);
        }
        for (const [name, value] of c.setHeaders ?? []) {
          assert.ok(TOKEN.test(name), name);
          assert.ok(!UNSETTABLE_HEADERS.has(name.toLowerCase()), `${name} may not be set`);
          assert.equal(typeof value, 'string');
        }
        if (c.echoHeaders !== undefined) {
          assert.ok(c.echoHeaders.length >= 1 && c.echoHeaders.length <= 64);
          for (const name of c.echoHeaders) assert.ok(TOKEN.test(name));
        }
      },
    ),
    fuzzParameters(FILE, 'parseControls', 3000),
  );
});

test('parseControls – each control header alone, near its grammar: at most one problem, for that header', () => {
  fc.assert(
    fc.property(fc.constantFrom(...CONTROL_HEADERS), headerValue, (name, value) => {
      const { problems } = parseControls(
        { [name]: value },
        { maxDelayMs: 300_000, maxResponseBytes: 1 << 20 },
        () => 0.5,
      );
      assert.ok(problems.length <= 1);
      if (problems.length === 1) assert.equal(problems[0]?.field, name);
    }),
    fuzzParameters(FILE, 'one header', 3000),
  );
});

test('X-Echo-Error – an accepted value is a status 400-599 or a kind counted under its own name, in any case and spacing', () => {
  fc.assert(
    fc.property(
      fc.oneof(
        headerValue,
        fc
          .array(fc.constantFrom(...GRAMMAR_PIECES.filter((p) => /^[a-z-]+$/.test(p))), {
            minLength: 1,
            maxLength: 3,
          })
          .map((p) => p.join('-')),
      ),
      randomValue,
      (text, r) => {
        const fault = parseErrorFault(text, () => r);
        if (fault === undefined) return;
        if (fault.kind === 'status') {
          assert.ok(fault.status >= 400 && fault.status <= 599, `${text} → ${fault.status}`);
        } else {
          // A kind is its own text; every one but `timeout` (an answer: counted as `error`) has its
          // own `kind` of echo_faults_injected_total, so the pipeline can count what it injects.
          assert.equal(fault.kind, text.trim().toLowerCase());
          if (fault.kind !== 'timeout') assert.ok((FAULT_KINDS as readonly string[]).includes(fault.kind));
        }
        assert.deepEqual(
          parseErrorFault(` ${text.trim().toUpperCase()}\t`, () => r),
          fault,
        );
      },
    ),
    fuzzParameters(FILE, 'error kinds', 2000),
  );
});

test('X-Echo-Seed – accepted seeds are 0-4294967295 and print back as they were read', () => {
  fc.assert(
    fc.property(
      fc.oneof(headerValue, fc.nat().map(String), fc.bigInt({ min: 0n, max: 2n ** 40n }).map(String)),
      (text) => {
        const seed = parseSeed(text);
        if (seed === undefined) return;
        assert.ok(Number.isInteger(seed) && seed >= 0 && seed <= 4_294_967_295);
        assert.equal(parseSeed(String(seed)), seed);
      },
    ),
    fuzzParameters(FILE, 'seed', 2000),
  );
});

test('X-Echo-Throttle – a rate is at least 1 B/s, finite, and the same rate written in bytes reads the same', () => {
  fc.assert(
    fc.property(
      fc.oneof(
        headerValue,
        fc
          .tuple(
            fc.array(fc.constantFrom(...GRAMMAR_PIECES.slice(0, 18)), { minLength: 1, maxLength: 2 }),
            fc.constantFrom('B/s', 'KB/s', 'kib/s', 'MiB/s', 'GB/s', 'gib/s'),
          )
          .map(([n, u]) => `${n.join('')}${u}`),
      ),
      (text) => {
        const rate = parseRate(text);
        if (rate === undefined) return;
        assert.ok(Number.isFinite(rate) && rate >= 1, `${text} → ${rate}`);
        if (Number.isInteger(rate) && rate < 1e12) assert.equal(parseRate(`${rate}B/s`), rate);
      },
    ),
    fuzzParameters(FILE, 'throttle', 2000),
  );
});
