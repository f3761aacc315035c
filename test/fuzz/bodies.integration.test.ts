/**
 * Properties of the body parsers: the scenario schema (JSON values through `validateScenarios`,
 * YAML text through `parseScenarioDocument`) and the replay body. They never throw anything but
 * their coded errors; what they accept respects the schema's ceilings; an accepted set read back
 * (as JSON or YAML) is the same set.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import fc from 'fast-check';
import { dump } from 'js-yaml';
import { isEchoError } from '../../src/echo/errors.ts';
import { TOKEN } from '../../src/echo/http-grammar.ts';
import { parseReplayRequest, parseTarget } from '../../src/echo/replay.ts';
import {
  isScenarioError,
  MAX_ACTIVE_FOR_MS,
  MAX_TIMER_DELAY_MS,
  MAX_TIMES,
  MAX_WEIGHT,
  parseDelayBounds,
  parseScenarioDocument,
  readActiveFor,
  type Scenario,
  ScenarioInvalidError,
  ScenarioStore,
  UNSETTABLE_HEADERS,
  validateScenarios,
} from '../../src/scenario/index.ts';
import { fuzzParameters, GRAMMAR_PIECES, headerValue } from './fuzz.ts';
import { activeForArb, badWindowFieldArb, withBadWindowField } from './scenario-windows.ts';

const FILE = 'bodies';

const pick = <T>(...items: T[]) => fc.constantFrom(...items);
const headerNameArb = fc.oneof(
  pick(
    ...UNSETTABLE_HEADERS,
    'Content-Type',
    'X-A',
    'x-a',
    '__proto__',
    'constructor',
    'toString',
    '',
    'bad name',
    'é',
  ),
  fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,10}$/),
);
const headersArb = fc.dictionary(headerNameArb, fc.oneof(headerValue, fc.anything()), { maxKeys: 4 });
const delayArb = fc.oneof(
  fc.array(pick(...GRAMMAR_PIECES), { maxLength: 6 }).map((p) => p.join('')),
  pick('100ms', '1-2s', '100ms:90,2s:10', 'lognormal:100ms,1', '3000000000', '24d', '25d', '2-1s'),
);
const responseArb = fc.record(
  {
    status: fc.oneof(fc.integer({ min: 0, max: 700 }), pick<unknown>(101, 200, 503, '200', 200.5, null)),
    delay: fc.oneof(delayArb, fc.anything()),
    body: fc.oneof(fc.string({ maxLength: 30 }), fc.anything()),
    repeat: fc.oneof(fc.integer({ min: -1, max: 1_000_001 }), fc.anything()),
    weight: fc.oneof(fc.integer({ min: -1, max: MAX_WEIGHT + 1 }), pick<unknown>(0, 0.5, '1'), fc.anything()),
    headers: fc.oneof(headersArb, fc.anything()),
    extra: fc.anything(),
  },
  { requiredKeys: ['status'] },
);
const pathArb = fc.oneof(
  pick('/a', '/b', '/a b', 'a', '/?x', '/é', '/**', '/*/x', 're:^/a$', 're:(a+)+', 're:[', ''),
  fc.string({ maxLength: 12 }),
);
const scenarioArb = fc.record(
  {
    name: fc.oneof(pick('a', 'b', 'a', '-x', 'constructor', '__proto__'), fc.string({ maxLength: 8 })),
    path: pathArb,
    pathPattern: pathArb,
    method: fc.oneof(
      pick('GET', 'get', 'G3T'),
      fc.array(pick('GET', 'POST', '', 'x'), { maxLength: 3 }),
      fc.anything(),
    ),
    headers: fc.oneof(headersArb, fc.anything()),
    query: fc.oneof(
      fc.dictionary(fc.string({ maxLength: 6 }), fc.oneof(headerValue, pick('re:.*', 're:('))),
      fc.anything(),
    ),
    body: fc.oneof(
      fc.record(
        {
          contains: fc.string(),
          equals: fc.string(),
          jsonPointer: pick('', '/a', '/a~2', 'a', '/0'),
          value: pick('1', 're:x', 're:('),
        },
        { requiredKeys: [] },
      ),
      fc.anything(),
    ),
    cycle: fc.oneof(fc.boolean(), fc.anything()),
    order: fc.oneof(pick('cycle', 'random', 'Random', 'shuffle', ''), fc.anything()),
    activeFor: fc.oneof(activeForArb, fc.anything()),
    times: fc.oneof(fc.integer({ min: -1, max: MAX_TIMES + 1 }), pick<unknown>(1.5, '2'), fc.anything()),
    responses: fc.oneof(fc.array(responseArb, { maxLength: 3 }), fc.anything()),
    extra: fc.anything(),
  },
  { requiredKeys: [] },
);
/** Scenarios the schema accepts (names and exact paths may still clash in a set). */
const visibleText = fc.string({
  unit: fc
    .integer({ min: 0x20, max: 0xff })
    .filter((c) => c < 0x7f || c > 0x9f)
    .map((c) => String.fromCharCode(c)),
  maxLength: 20,
});
const validResponseArb = fc.record(
  {
    status: fc.integer({ min: 100, max: 599 }).filter((s) => s !== 101),
    delay: pick('0', '100ms', '1-2s', '100ms:90,2s:10', '5:50', 'lognormal:100ms,1', '250'),
    body: fc.string({ maxLength: 30 }),
    repeat: fc.integer({ min: 1, max: 10 }),
    headers: fc.dictionary(
      fc
        .stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,10}$/)
        .filter((n) => !UNSETTABLE_HEADERS.has(n.toLowerCase())),
      visibleText,
      { maxKeys: 3 },
    ),
  },
  { requiredKeys: ['status'] },
);
const validScenarioArb = fc
  .record(
    {
      name: fc.stringMatching(/^[a-z][a-z0-9.-]{0,6}$/),
      where: fc.oneof(
        pick('/a', '/b', '/c/d', '/e%20f').map((path) => ({ path })),
        pick('/x/*', '/y/**', 're:^/z/[0-9]+$').map((pathPattern) => ({ pathPattern })),
      ),
      method: fc.array(pick('GET', 'post', 'Put'), { minLength: 1, maxLength: 3 }),
      headers: fc.dictionary(pick('x-a', 'Accept', 'constructor'), pick('v', 're:.*', 're:^a'), {
        maxKeys: 2,
      }),
      query: fc.dictionary(pick('q', 'page', 'toString'), pick('1', 're:\\d+'), { maxKeys: 2 }),
      cycle: fc.boolean(),
      activeFor: pick('1ms', '250', '30s', '1.5h', '366d'),
      times: fc.oneof(fc.integer({ min: 1, max: 5 }), fc.constant(MAX_TIMES)),
      responses: fc.array(validResponseArb, { minLength: 1, maxLength: 3 }),
      // order: cycle (written or not), or random with weights (one above 0) and no cycle: false.
      random: fc.option(fc.array(fc.integer({ min: 0, max: MAX_WEIGHT }), { minLength: 3, maxLength: 3 })),
      cycleWritten: fc.boolean(),
    },
    { requiredKeys: ['where', 'responses', 'random', 'cycleWritten'] },
  )
  .map(({ where, random, cycleWritten, ...rest }) => {
    if (random === null) return { ...rest, ...(cycleWritten ? { order: 'cycle' } : {}), ...where };
    const { cycle: _cycle, ...noCycle } = rest;
    const responses = rest.responses.map((r, i) => ({
      ...r,
      weight: i === 0 ? Math.max(1, random[0]!) : random[i]!,
    }));
    return { ...noCycle, order: 'random', responses, ...where };
  });
/** Valid sets, sets with a broken scenario among valid ones, and anything at all. */
const setArb = fc.oneof(
  { weight: 4, arbitrary: fc.array(validScenarioArb, { maxLength: 3 }) },
  { weight: 2, arbitrary: fc.array(fc.oneof(validScenarioArb, scenarioArb), { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.anything() },
);

function checkAccepted(scenarios: Scenario[], maxDelayMs: number): void {
  for (const s of scenarios) {
    assert.ok((s.path === undefined) !== (s.pathPattern === undefined));
    assert.ok(s.order === undefined || s.order === 'cycle' || s.order === 'random', s.order);
    if (s.activeFor !== undefined) {
      const read = readActiveFor(s.activeFor);
      assert.ok(read.ok && read.ms > 0 && read.ms <= MAX_ACTIVE_FOR_MS, s.activeFor);
    }
    if (s.times !== undefined) assert.ok(Number.isInteger(s.times) && s.times >= 1 && s.times <= MAX_TIMES);
    if (s.order === 'random') {
      assert.notEqual(s.cycle, false);
      assert.ok(s.responses.some((r) => r.weight !== 0));
    }
    for (const r of s.responses) {
      if (r.weight !== undefined) {
        assert.equal(s.order, 'random');
        assert.ok(Number.isInteger(r.weight) && r.weight >= 0 && r.weight <= MAX_WEIGHT);
      }
      if (r.status !== undefined)
        assert.ok(Number.isInteger(r.status) && r.status >= 100 && r.status <= 599 && r.status !== 101);
      if (r.delay !== undefined) {
        const bounds = parseDelayBounds(r.delay);
        assert.ok(
          bounds !== undefined && bounds.minMs <= bounds.maxMs && bounds.maxMs <= maxDelayMs,
          r.delay,
        );
      }
      for (const name of Object.keys(r.headers ?? {})) {
        assert.ok(TOKEN.test(name) && !UNSETTABLE_HEADERS.has(name.toLowerCase()), name);
      }
    }
  }
}

test('validateScenarios – never throws; an accepted set respects the schema and reads back the same from JSON and YAML', () => {
  fc.assert(
    fc.property(setArb, fc.constantFrom(0, 1000, 300_000, MAX_TIMER_DELAY_MS), (input, maxDelayMs) => {
      const result = validateScenarios(input, { maxDelayMs });
      if (!result.ok) {
        assert.ok(result.problems.length > 0);
        for (const p of result.problems) assert.ok(typeof p.path === 'string' && p.message.length > 0);
        return;
      }
      checkAccepted(result.scenarios, maxDelayMs);
      const again = validateScenarios(JSON.parse(JSON.stringify(result.scenarios)), { maxDelayMs });
      assert.ok(again.ok);
      assert.deepEqual(again.scenarios, result.scenarios);
      const yaml = parseScenarioDocument(dump(result.scenarios), 'round trip', { maxDelayMs });
      assert.deepEqual(yaml, result.scenarios);
    }),
    fuzzParameters(FILE, 'validateScenarios', 800),
  );
});

test('ScenarioStore – a bad order, weight, activeFor or times is refused naming its place alone; the stored set and its state stay', () => {
  const store = new ScenarioStore();
  const stored: Scenario[] = [
    { name: 'kept', path: '/kept', order: 'random', times: 3, responses: [{ status: 201 }] },
  ];
  store.replace(stored);
  store.next('/kept');
  fc.assert(
    fc.property(badWindowFieldArb, (bad) => {
      const { set, at } = withBadWindowField(bad);
      assert.throws(
        () => store.replace(set as Scenario[]),
        (error: unknown) => {
          assert.ok(error instanceof ScenarioInvalidError, String(error));
          assert.deepEqual(
            error.problems.map((p) => p.path),
            [at],
            JSON.stringify(error.problems),
          );
          return true;
        },
      );
      assert.deepEqual(store.list(), stored);
      assert.equal(store.states()[0]?.total, 1);
    }),
    fuzzParameters(FILE, 'bad window field', 500),
  );
});

const YAML_PIECES = [
  '- ',
  '  ',
  '\n',
  'path: /a',
  'pathPattern: "re:.*"',
  'responses:',
  '[{status: 200}]',
  'status: 200',
  'headers: ',
  '{a: 1}',
  '&a ',
  '*a',
  '*b',
  '<<: *a',
  '!!binary AA==',
  '!!js/function "x"',
  '!!timestamp 2001-12-14',
  '!!set {a}',
  '!custom x',
  '---',
  '...',
  '%YAML 1.2',
  '? ',
  ': ',
  '"\\u0000"',
  "'x'",
  '|',
  '>-',
  '#',
  '[',
  ']',
  '{',
  '}',
  ',',
  '__proto__: {status: 500}',
  'constructor: x',
  '\t',
  '\u0000',
  '\uFEFF',
] as const;

test('parseScenarioDocument – any text gives scenarios or a scenario error (syntax or invalid), nothing else', () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.array(fc.constantFrom(...YAML_PIECES), { maxLength: 25 }).map((p) => p.join('')),
        fc.string({ maxLength: 200 }),
        setArb.map((v) => {
          try {
            return dump(v, { skipInvalid: true } as Parameters<typeof dump>[1]);
          } catch {
            return JSON.stringify(v) ?? '';
          }
        }),
      ),
      (text) => {
        try {
          checkAccepted(parseScenarioDocument(text, 'fuzz', { maxDelayMs: 300_000 }), 300_000);
        } catch (error) {
          if (error instanceof assert.AssertionError) throw error;
          assert.ok(isScenarioError(error), `not a scenario error: ${String(error)}`);
          assert.ok(
            (error as { code: string }).code === 'SCENARIO_ERR_FILE_SYNTAX' ||
              (error as { code: string }).code === 'SCENARIO_ERR_INVALID',
            (error as { code: string }).code,
          );
        }
      },
    ),
    fuzzParameters(FILE, 'parseScenarioDocument', 2000),
  );
});

const replayArb = fc.oneof(
  fc.anything(),
  fc.record(
    {
      id: fc.oneof(fc.string({ maxLength: 5 }), fc.anything()),
      modify_headers: fc.oneof(
        fc.dictionary(headerNameArb, fc.oneof(headerValue, fc.anything()), { maxKeys: 4 }),
        fc.anything(),
      ),
      modify_body: fc.oneof(fc.string(), fc.anything()),
      target: fc.oneof(
        pick(
          'http://127.0.0.1:1',
          'https://x',
          'ftp://x',
          'http://x/?q',
          'http://x#f',
          'http://[::1]:0',
          'x',
          '',
        ),
        fc.webUrl(),
        fc.string(),
        fc.anything(),
      ),
      extra: fc.anything(),
    },
    { requiredKeys: [] },
  ),
);

test('parseReplayRequest and parseTarget – give a request or throw ECHO_ERR_INVALID_REPLAY / ECHO_ERR_INVALID_TARGET, nothing else', () => {
  fc.assert(
    fc.property(replayArb, (body) => {
      let request: ReturnType<typeof parseReplayRequest>;
      try {
        request = parseReplayRequest(body);
      } catch (error) {
        assert.ok(isEchoError(error) && error.code === 'ECHO_ERR_INVALID_REPLAY', String(error));
        return;
      }
      assert.ok(typeof request.id === 'string' && request.id.length > 0);
      for (const [name, value] of Object.entries(request.modify_headers ?? {})) {
        assert.ok(TOKEN.test(name) && typeof value === 'string', name);
        assert.ok(
          !['host', 'connection', 'transfer-encoding', 'content-length'].includes(name.toLowerCase()),
        );
      }
      if (request.target !== undefined) {
        try {
          const url = new URL(parseTarget(request.target));
          assert.ok(url.protocol === 'http:' || url.protocol === 'https:');
        } catch (error) {
          if (error instanceof assert.AssertionError) throw error;
          assert.ok(isEchoError(error) && error.code === 'ECHO_ERR_INVALID_TARGET', String(error));
        }
      }
    }),
    fuzzParameters(FILE, 'replay', 2000),
  );
});
