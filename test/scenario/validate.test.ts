import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRandom } from '../../src/echo/random.ts';
import {
  MAX_BODY_LENGTH,
  MAX_HEADERS,
  MAX_PATH_LENGTH,
  MAX_PROBLEMS,
  MAX_RESPONSES,
  MAX_SCENARIOS,
  MAX_SET_PATTERNS,
  type Scenario,
  type ScenarioProblem,
  validateScenarios,
} from '../../src/scenario/index.ts';

function problemsOf(input: unknown, options?: { maxDelayMs?: number }): ScenarioProblem[] {
  const result = validateScenarios(input, options);
  assert.equal(result.ok, false, 'expected the input to be rejected');
  return result.ok ? [] : result.problems;
}

/** The single problem of an input built around one response. */
function responseProblem(response: unknown, options?: { maxDelayMs?: number }): ScenarioProblem {
  const problems = problemsOf([{ path: '/r', responses: [response] }], options);
  assert.equal(problems.length, 1, JSON.stringify(problems));
  return problems[0]!;
}

const DELAY_FORM =
  'a duration such as 100ms, 2s, 5m or 1h (a bare number is milliseconds), a range min-max (100-500ms), ' +
  'a weighted list of them (100ms:90,2s:10: percent weights summing to at most 100, the rest no delay; ' +
  'at most 32 entries), or lognormal:<median>,<sigma> (sigma above 0, at most 5)';
const PATH_FORM =
  'a string starting with "/" of visible ASCII characters (percent-encode others), without "?" or "#", at most 2048 characters long';
const HEADER_VALUE_FORM =
  'a string of printable ASCII or Latin-1 text (no CR, LF, NUL or other control characters)';

test('validateScenarios – accepts a valid list with fixed delays, ranges, bodies and headers', () => {
  const input: Scenario[] = [
    {
      path: '/api/orders',
      responses: [
        { status: 200, body: '{"ok":true}', headers: { 'Content-Type': 'application/json' } },
        { status: 503, delay: '100-500ms' },
        { status: 429, delay: '1s-2s', headers: { 'Retry-After': '1' } },
        { status: 204, delay: '250' },
      ],
    },
    { path: '/', responses: [{ status: 100 }, { status: 599, delay: '1.5s', body: '' }] },
  ];
  const result = validateScenarios(input);
  assert.equal(result.ok, true);
  assert.deepEqual(result.ok && result.scenarios, input);
  // A copy: the caller's objects are not handed back.
  assert.notEqual(result.ok && result.scenarios[0], input[0]);
  assert.notEqual(result.ok && result.scenarios[0]?.responses[0]?.headers, input[0]?.responses[0]?.headers);
});

test('validateScenarios – accepts an empty list', () => {
  assert.deepEqual(validateScenarios([]), { ok: true, scenarios: [] });
});

test('validateScenarios – rejects anything but an array, saying what it got', () => {
  const cases: Array<[unknown, string]> = [
    [{ path: '/a', responses: [] }, 'object'],
    [null, 'null'],
    [undefined, 'nothing'],
    ['[]', '"[]"'],
    [42, '42'],
    [true, 'true'],
  ];
  for (const [input, found] of cases) {
    assert.deepEqual(problemsOf(input), [
      { path: '', message: `input must be an array of scenarios, got ${found}` },
    ]);
  }
});

test('validateScenarios – lists every problem with its path, in input order', () => {
  const problems = problemsOf(
    [
      { path: 'no-slash', responses: [], extra: 1 },
      'not a scenario',
      {
        responses: [
          { status: 700, delay: 500, foo: 'bar' },
          { status: '200', delay: '500-100ms', headers: { 'Bad Name': 'x', 'X-A': 'a\r\nb' } },
          {},
        ],
      },
      { path: '/dup', responses: [{ status: 200 }] },
      { path: '/dup', responses: [{ status: 200, body: 5, headers: [] }] },
    ],
    { maxDelayMs: 1000 },
  );
  assert.deepEqual(problems, [
    {
      path: '/0/extra',
      message:
        'unknown property "extra" in scenario; expected only name, path, pathPattern, method, headers, query, body, upstream, cycle, order, activeFor, times, responses',
    },
    { path: '/0/path', message: `path must be ${PATH_FORM}, got "no-slash"` },
    { path: '/0/responses', message: 'responses must be an array of 1-1000 responses, got 0 responses' },
    {
      path: '/1',
      message: 'scenario must be an object with path or pathPattern, and responses, got "not a scenario"',
    },
    { path: '/2/path', message: 'path or pathPattern is required: a scenario gives exactly one of them' },
    {
      path: '/2/responses/0/foo',
      message:
        'unknown property "foo" in response; expected only status, delay, body, repeat, weight, error, size, compress, contentType, throttle, chunkDelay, chunkSize, bodyDelay, retryAfter, headers, grpcStatus, grpcMessage, grpcMetadata, grpcTrailers',
    },
    { path: '/2/responses/0/status', message: 'status must be an integer 100-599, got 700' },
    {
      path: '/2/responses/0/delay',
      message: `delay must be a string holding ${DELAY_FORM}, got 500 (write it as a string, e.g. "500ms")`,
    },
    { path: '/2/responses/1/status', message: 'status must be an integer 100-599, got "200"' },
    {
      path: '/2/responses/1/headers/X-A',
      message: `header "X-A" value must be ${HEADER_VALUE_FORM}, got "a\\r\\nb"`,
    },
    {
      path: '/2/responses/1/delay',
      message: 'delay range must go from low to high, got "500-100ms" (500ms > 100ms)',
    },
    {
      path: '/2/responses/1/headers/Bad Name',
      message: `header name must be an HTTP token (letters, digits and !#$%&'*+-.^_\`|~), got "Bad Name"`,
    },
    {
      path: '/4/path',
      message:
        'path "/dup" without other conditions is already used by scenario 3; such paths must be unique',
    },
    { path: '/4/responses/0/body', message: 'body must be a string of at most 1048576 characters, got 5' },
    {
      path: '/4/responses/0/headers',
      message: 'headers must be an object of header names to string values, at most 100 entries, got array',
    },
  ]);
});

test('validateScenarios – path: required, a string, a leading slash, visible ASCII, no query, bounded', () => {
  const cases: Array<[unknown, string]> = [
    [42, `path must be ${PATH_FORM}, got 42`],
    ['', `path must be ${PATH_FORM}, got ""`],
    ['/a b', `path must be ${PATH_FORM}, got "/a b"`],
    ['/search?q=1', `path must be ${PATH_FORM}, got "/search?q=1"`],
    [`/${'a'.repeat(MAX_PATH_LENGTH)}`, 'path must be at most 2048 characters long, got 2049 characters'],
  ];
  for (const [path, message] of cases) {
    assert.deepEqual(problemsOf([{ path, responses: [{ status: 200 }] }]), [{ path: '/0/path', message }]);
  }
  assert.equal(
    validateScenarios([{ path: `/${'a'.repeat(MAX_PATH_LENGTH - 1)}`, responses: [{ status: 200 }] }]).ok,
    true,
  );
});

test('validateScenarios – responses: required, an array of 1 to 1000 objects', () => {
  assert.deepEqual(problemsOf([{ path: '/a' }]), [
    { path: '/0/responses', message: 'responses is required: an array of 1-1000 responses' },
  ]);
  assert.deepEqual(problemsOf([{ path: '/a', responses: { status: 200 } }]), [
    { path: '/0/responses', message: 'responses must be an array of 1-1000 responses, got object' },
  ]);
  assert.deepEqual(problemsOf([{ path: '/a', responses: [null, [], 3] }]), [
    {
      path: '/0/responses/0',
      message:
        'response must be an object with status and optionally delay, body, repeat, weight, error, size, compress, contentType, throttle, chunkDelay, chunkSize, bodyDelay, retryAfter, headers, grpcStatus, grpcMessage, grpcMetadata, grpcTrailers, got null',
    },
    {
      path: '/0/responses/1',
      message:
        'response must be an object with status and optionally delay, body, repeat, weight, error, size, compress, contentType, throttle, chunkDelay, chunkSize, bodyDelay, retryAfter, headers, grpcStatus, grpcMessage, grpcMetadata, grpcTrailers, got array',
    },
    {
      path: '/0/responses/2',
      message:
        'response must be an object with status and optionally delay, body, repeat, weight, error, size, compress, contentType, throttle, chunkDelay, chunkSize, bodyDelay, retryAfter, headers, grpcStatus, grpcMessage, grpcMetadata, grpcTrailers, got 3',
    },
  ]);
});

test('validateScenarios – status: an integer 100-599', () => {
  for (const [status, found] of [
    [99, '99'],
    [600, '600'],
    [200.5, '200.5'],
    ['200', '"200"'],
    [null, 'null'],
    [Number.POSITIVE_INFINITY, 'Infinity'],
  ] as const) {
    assert.deepEqual(responseProblem({ status }), {
      path: '/0/responses/0/status',
      message: `status must be an integer 100-599, got ${found}`,
    });
  }
  for (const status of [100, 103, 200, 418, 599])
    assert.equal(validateScenarios([{ path: '/a', responses: [{ status }] }]).ok, true);
  assert.deepEqual(responseProblem({ status: 101 }), {
    path: '/0/responses/0/status',
    message: 'status 101 (Switching Protocols) cannot be scripted: it would break the connection',
  });
});

test('validateScenarios – delay: the duration grammar, ordered ranges, and the ceilings', () => {
  const at = '/0/responses/0/delay';
  assert.deepEqual(responseProblem({ status: 200, delay: 'soon' }), {
    path: at,
    message: `delay must be a string holding ${DELAY_FORM}, got "soon"`,
  });
  assert.deepEqual(responseProblem({ status: 200, delay: '5w' }), {
    path: at,
    message: `delay must be a string holding ${DELAY_FORM}, got "5w"`,
  });
  assert.deepEqual(responseProblem({ status: 200, delay: '2s-1s' }), {
    path: at,
    message: 'delay range must go from low to high, got "2s-1s" (2000ms > 1000ms)',
  });
  // A unit written once, after the upper bound, applies to both bounds.
  assert.deepEqual(responseProblem({ status: 200, delay: '100-2s' }), {
    path: at,
    message: 'delay range must go from low to high, got "100-2s" (100000ms > 2000ms)',
  });
  assert.deepEqual(responseProblem({ status: 200, delay: '100ms-2s' }, { maxDelayMs: 1000 }), {
    path: at,
    message: 'delay must be at most 1000ms (the maximum delay), got "100ms-2s" (2000ms)',
  });
  // Without a caller's ceiling, Node's longest timer still applies.
  assert.deepEqual(responseProblem({ status: 200, delay: '40000m' }), {
    path: at,
    message: 'delay must be at most 2147483647ms (the longest timer), got "40000m" (2400000000ms)',
  });
  assert.equal(
    validateScenarios([{ path: '/a', responses: [{ status: 200, delay: '1s' }] }], { maxDelayMs: 1000 }).ok,
    true,
  );
  assert.equal(
    validateScenarios([{ path: '/a', responses: [{ status: 200, delay: '0' }] }], { maxDelayMs: 0 }).ok,
    true,
  );
  assert.throws(() => validateScenarios([], { maxDelayMs: -1 }), RangeError);
  assert.throws(() => validateScenarios([], { maxDelayMs: Number.NaN }), RangeError);
});

test('validateScenarios – body: a string of at most 1 MiB', () => {
  assert.equal(
    validateScenarios([{ path: '/a', responses: [{ status: 200, body: 'x'.repeat(MAX_BODY_LENGTH) }] }]).ok,
    true,
  );
  assert.deepEqual(responseProblem({ status: 200, body: 'x'.repeat(MAX_BODY_LENGTH + 1) }), {
    path: '/0/responses/0/body',
    message: 'body must be at most 1048576 characters long, got 1048577 characters',
  });
  assert.deepEqual(responseProblem({ status: 200, body: { text: 'hi' } }), {
    path: '/0/responses/0/body',
    message: 'body must be a string of at most 1048576 characters, got object',
  });
});

test('validateScenarios – headers: tokens to safe text, at most 100, no repeats, no framing headers', () => {
  const at = (name: string) => `/0/responses/0/headers/${name}`;
  const cases: Array<[Record<string, unknown>, ScenarioProblem]> = [
    [
      { 'X-Num': 5 },
      { path: at('X-Num'), message: `header "X-Num" value must be ${HEADER_VALUE_FORM}, got 5` },
    ],
    [
      { 'X-Nul': 'a\u0000b' },
      { path: at('X-Nul'), message: `header "X-Nul" value must be ${HEADER_VALUE_FORM}, got "a\\u0000b"` },
    ],
    [
      { 'X-Lf': 'a\nb' },
      { path: at('X-Lf'), message: `header "X-Lf" value must be ${HEADER_VALUE_FORM}, got "a\\nb"` },
    ],
    [
      { 'X-Euro': '€' },
      { path: at('X-Euro'), message: `header "X-Euro" value must be ${HEADER_VALUE_FORM}, got "€"` },
    ],
    [
      { 'X-Long': 'v'.repeat(8193) },
      {
        path: at('X-Long'),
        message: 'header "X-Long" value must be at most 8192 characters long, got 8193 characters',
      },
    ],
    [
      { 'x(y)': 'v' },
      {
        path: at('x(y)'),
        message: `header name must be an HTTP token (letters, digits and !#$%&'*+-.^_\`|~), got "x(y)"`,
      },
    ],
    [
      { ['N'.repeat(257)]: 'v' },
      {
        path: at('N'.repeat(257)),
        message: 'header name must be at most 256 characters, got 257 characters',
      },
    ],
    [
      { 'Transfer-Encoding': 'chunked' },
      {
        path: at('Transfer-Encoding'),
        message:
          'header "Transfer-Encoding" cannot be set by a scenario: the server manages the connection and message framing',
      },
    ],
    [
      { 'HTTP2-Settings': 'AAMAAABkAAQAoAAAAAIAAAAA' },
      {
        path: at('HTTP2-Settings'),
        message:
          'header "HTTP2-Settings" cannot be set by a scenario: the server manages the connection and message framing',
      },
    ],
    [
      { 'X-Trace': '1', 'x-trace': '2' },
      {
        path: at('x-trace'),
        message: 'header "x-trace" repeats "X-Trace": header names are case-insensitive',
      },
    ],
    // A JSON pointer escapes `/` and `~` in a key.
    [
      { 'a/b~c': 'v' },
      {
        path: at('a~1b~0c'),
        message: `header name must be an HTTP token (letters, digits and !#$%&'*+-.^_\`|~), got "a/b~c"`,
      },
    ],
  ];
  for (const [headers, problem] of cases)
    assert.deepEqual(responseProblem({ status: 200, headers }), problem);

  const full = Object.fromEntries(Array.from({ length: MAX_HEADERS }, (_, i) => [`X-H${i}`, `${i}`]));
  assert.equal(validateScenarios([{ path: '/a', responses: [{ status: 200, headers: full }] }]).ok, true);
  assert.deepEqual(responseProblem({ status: 200, headers: { ...full, 'X-One-More': '1' } }), {
    path: '/0/responses/0/headers',
    message:
      'headers must be an object of header names to string values, at most 100 entries, got 101 entries',
  });
  // Tab and Latin-1 are what Node's HTTP stack accepts.
  assert.equal(
    validateScenarios([{ path: '/a', responses: [{ status: 200, headers: { 'X-A': 'a\tb é' } }] }]).ok,
    true,
  );
});

test('validateScenarios – a header named __proto__ stays an own header in the copy', () => {
  const input = JSON.parse('[{"path":"/a","responses":[{"status":200,"headers":{"__proto__":"x"}}]}]');
  const result = validateScenarios(input);
  assert.equal(result.ok, true);
  const headers = result.ok ? result.scenarios[0]?.responses[0]?.headers : undefined;
  assert.deepEqual(Object.entries(headers ?? {}), [['__proto__', 'x']]);
  assert.equal(Object.getPrototypeOf(headers), Object.prototype);
});

test('validateScenarios – a set holds at most MAX_SET_PATTERNS re: patterns in all, counted in every place one goes', () => {
  // 1,000 scenarios: a re: path pattern, then header, query and body conditions, up to `total`.
  const set = (total: number) =>
    Array.from({ length: 1000 }, (_, i) => {
      const at = (k: number) => i + k * 1000 < total;
      return {
        ...(at(0) ? { pathPattern: `re:/p${i}/[0-9]+` } : { path: `/p${i}` }),
        ...(at(1) ? { headers: { 'x-a': `re:a${i}[0-9]+`, ...(at(2) ? { 'x-b': `re:b${i}.*` } : {}) } } : {}),
        ...(at(3) ? { query: { q: `re:q${i}[a-z]*` } } : {}),
        ...(at(4) ? { body: { jsonPointer: '/v', value: `re:v${i}[0-9]?` } } : {}),
        responses: [{ status: 200 }],
      };
    });
  assert.equal(MAX_SET_PATTERNS, 4096);
  assert.equal(validateScenarios(set(MAX_SET_PATTERNS)).ok, true);
  const problems = problemsOf(set(MAX_SET_PATTERNS + 1));
  assert.deepEqual(problems, [
    {
      path: '',
      message: `the scenarios hold ${MAX_SET_PATTERNS + 1} re: patterns in all (path patterns and header, query and body conditions), more than ${MAX_SET_PATTERNS}; split the set, or match with exact values and globs`,
    },
  ]);
  // Exact values and globs are not patterns of this count.
  const globs = Array.from({ length: 1000 }, (_, i) => ({
    pathPattern: `/g${i}/*`,
    headers: Object.fromEntries(Array.from({ length: 8 }, (_, j) => [`x-${j}`, `v${j}`])),
    responses: [{ status: 200 }],
  }));
  assert.equal(validateScenarios(globs).ok, true);
});

test('validateScenarios – limits: 1000 scenarios and 1000 responses pass, one more does not', () => {
  const scenarios = (count: number) =>
    Array.from({ length: count }, (_, i) => ({ path: `/s${i}`, responses: [{ status: 200 }] }));
  const responses = (count: number) => [
    { path: '/a', responses: Array.from({ length: count }, () => ({ status: 200 })) },
  ];
  assert.equal(validateScenarios(scenarios(MAX_SCENARIOS)).ok, true);
  assert.equal(validateScenarios(responses(MAX_RESPONSES)).ok, true);
  assert.deepEqual(problemsOf(scenarios(MAX_SCENARIOS + 1)), [
    { path: '', message: 'input must hold at most 1000 scenarios, got 1001' },
  ]);
  assert.deepEqual(problemsOf(responses(MAX_RESPONSES + 1)), [
    { path: '/0/responses', message: 'responses must hold at most 1000 responses, got 1001' },
  ]);
});

test('validateScenarios – a huge array is refused by its length, without a walk through it', () => {
  let reads = 0;
  const item = {
    get path() {
      reads++;
      return '/a';
    },
    responses: [{ status: 200 }],
  };
  assert.deepEqual(problemsOf(new Array(5_000_000).fill(item)), [
    { path: '', message: 'input must hold at most 1000 scenarios, got 5000000' },
  ]);
  assert.equal(reads, 0);
  // Within MAX_SET_NODES (about 20,000 values), far over MAX_RESPONSES.
  const responses: unknown[] = new Array(10_000).fill({ status: 200 });
  responses[10] = { status: 'bad' };
  responses[9_999] = { status: 'bad' };
  // The excess is one problem; only the first 1000 responses are looked into.
  assert.deepEqual(problemsOf([{ path: '/a', responses }]), [
    { path: '/0/responses', message: 'responses must hold at most 1000 responses, got 10000' },
    { path: '/0/responses/10/status', message: 'status must be an integer 100-599, got "bad"' },
  ]);
});

test('validateScenarios – stops listing at MAX_PROBLEMS and says so', () => {
  const input = Array.from({ length: MAX_SCENARIOS }, () => ({
    path: 'x',
    responses: [{ status: 1 }, { status: 2 }],
  }));
  const problems = problemsOf(input);
  assert.equal(problems.length, MAX_PROBLEMS + 1);
  assert.deepEqual(problems.at(-1), { path: '', message: 'too many problems: stopped after the first 1000' });
  assert.equal(problems[0]?.path, '/0/path');
});

test('validateScenarios – never throws, whatever the input', () => {
  const random = seededRandom(42);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const leaves = [
    null,
    undefined,
    true,
    0,
    -1,
    200,
    1e308,
    Number.NaN,
    '',
    '/a',
    '10ms',
    'x\r\n',
    [],
    {},
    Symbol('s'),
    10n,
  ];
  const keys = ['path', 'responses', 'status', 'delay', 'body', 'headers', '__proto__', 'constructor', 'x'];
  const garbage = (depth: number): unknown => {
    if (depth === 0 || random() < 0.3) return pick(leaves);
    if (random() < 0.5) return Array.from({ length: Math.floor(random() * 4) }, () => garbage(depth - 1));
    const object: Record<string, unknown> = {};
    for (let i = Math.floor(random() * 4); i > 0; i--) object[pick(keys)] = garbage(depth - 1);
    return object;
  };
  for (let i = 0; i < 2000; i++) {
    const input = garbage(6);
    const result = validateScenarios(input);
    if (!result.ok)
      assert.ok(result.problems.length > 0 && result.problems.every((p) => typeof p.message === 'string'));
  }
  // Deep nesting, cycles and hostile objects.
  let deep: unknown = [];
  for (let i = 0; i < 100_000; i++) deep = [deep];
  assert.equal(validateScenarios([{ path: '/a', responses: deep }]).ok, false);
  const cyclic: Record<string, unknown> = { path: '/a' };
  cyclic['responses'] = [cyclic];
  assert.equal(validateScenarios([cyclic]).ok, false);
  const hostile = new Proxy(
    {},
    {
      get() {
        throw new Error('boom');
      },
      ownKeys() {
        throw new Error('boom');
      },
    },
  );
  assert.deepEqual(validateScenarios([hostile]), {
    ok: false,
    problems: [{ path: '', message: 'input could not be read: boom' }],
  });
});

test('validateScenarios – matching fields: accepted, copied, a single method becomes a list', () => {
  const input = [
    {
      name: 'orders-v2',
      pathPattern: '/api/*/orders/**',
      method: 'post',
      headers: { 'X-Tenant': 'acme', Accept: 're:application/(json|xml)' },
      query: { page: 're:[0-9]+' },
      body: { jsonPointer: '/order/id', value: 're:[A-Z]{2}-[0-9]+' },
      cycle: false,
      responses: [{ status: 503, repeat: 3 }, { status: 200 }],
    },
    { path: '/x', body: { contains: 'a' }, responses: [{ status: 200 }] },
    { path: '/x', body: { equals: '' }, responses: [{ status: 200 }] },
  ];
  const result = validateScenarios(input);
  assert.equal(result.ok, true, JSON.stringify(!result.ok && result.problems));
  assert.deepEqual(result.ok && result.scenarios[0], { ...input[0], method: ['post'] });
  assert.equal(typeof input[0]?.method, 'string', 'the input is left alone');
});

test('validateScenarios – matching fields: each bad form is named where it is', () => {
  const cases: Array<[Record<string, unknown>, string, RegExp]> = [
    [{ responses: [{ status: 200 }] }, '/0/path', /path or pathPattern is required/],
    [{ path: '/a', pathPattern: '/a', responses: [{ status: 200 }] }, '/0/pathPattern', /exactly one/],
    [{ pathPattern: 'a/*', responses: [{ status: 200 }] }, '/0/pathPattern', /a glob starting with/],
    [{ pathPattern: `/${'x'.repeat(512)}`, responses: [{ status: 200 }] }, '/0/pathPattern', /at most 512/],
    [{ pathPattern: 're:a)|(b', responses: [{ status: 200 }] }, '/0/pathPattern', /not a valid regular/],
    [{ pathPattern: 're:', responses: [{ status: 200 }] }, '/0/pathPattern', /a glob starting with/],
    [{ name: 'has space', path: '/a', responses: [{ status: 200 }] }, '/0/name', /letters, digits/],
    [{ path: '/a', method: [], responses: [{ status: 200 }] }, '/0/method', /1-16/],
    [{ path: '/a', method: ['GE T'], responses: [{ status: 200 }] }, '/0/method/0', /HTTP method/],
    [{ path: '/a', method: 7, responses: [{ status: 200 }] }, '/0/method', /HTTP method/],
    [
      { path: '/a', headers: { 'Bad Name': 'x' }, responses: [{ status: 200 }] },
      '/0/headers/Bad Name',
      /token/,
    ],
    [
      { path: '/a', headers: { 'x-a': '1', 'X-A': '2' }, responses: [{ status: 200 }] },
      '/0/headers/X-A',
      /repeats/,
    ],
    [
      { path: '/a', headers: { 'X-A': 5 }, responses: [{ status: 200 }] },
      '/0/headers/X-A',
      /header "X-A" condition/,
    ],
    [{ path: '/a', query: { '': 'x' }, responses: [{ status: 200 }] }, '/0/query/', /1-256 characters/],
    [
      { path: '/a', query: { q: `re:${'a'.repeat(600)}` }, responses: [{ status: 200 }] },
      '/0/query/q',
      /at most 512/,
    ],
    [{ path: '/a', body: {}, responses: [{ status: 200 }] }, '/0/body', /got none/],
    [
      { path: '/a', body: { equals: 'a', value: 'b' }, responses: [{ status: 200 }] },
      '/0/body/value',
      /only beside/,
    ],
    [
      { path: '/a', body: { jsonPointer: 'a', value: 'b' }, responses: [{ status: 200 }] },
      '/0/body/jsonPointer',
      /JSON Pointer/,
    ],
    [
      { path: '/a', body: { regex: 'a' }, responses: [{ status: 200 }] },
      '/0/body/regex',
      /unknown property "regex" in body condition/,
    ],
    [{ path: '/a', cycle: 'no', responses: [{ status: 200 }] }, '/0/cycle', /true or false/],
    [
      { path: '/a', responses: [{ status: 200, repeat: 0 }] },
      '/0/responses/0/repeat',
      /an integer 1-1000000/,
    ],
  ];
  for (const [scenario, at, message] of cases) {
    const problem = problemsOf([scenario]).find((p) => p.path === at);
    assert.ok(
      problem,
      `${JSON.stringify(scenario)}: no problem at ${at}: ${JSON.stringify(problemsOf([scenario]))}`,
    );
    assert.match(problem.message, message, JSON.stringify(scenario));
  }
});

test('validateScenarios – names are unique; the same exact path is allowed when conditions differ', () => {
  assert.deepEqual(
    problemsOf([
      { name: 'n', path: '/a', method: 'GET', responses: [{ status: 200 }] },
      { name: 'n', pathPattern: '/b', responses: [{ status: 200 }] },
    ]),
    [{ path: '/1/name', message: 'name "n" is already used by scenario 0; names must be unique' }],
  );
  const ok = validateScenarios([
    { path: '/a', method: 'GET', responses: [{ status: 200 }] },
    { path: '/a', method: 'GET', responses: [{ status: 201 }] },
    { path: '/a', responses: [{ status: 202 }] },
    { pathPattern: '/a', responses: [{ status: 203 }] },
  ]);
  assert.equal(ok.ok, true);
});

test('validateScenarios – order, weight, activeFor and times: accepted and copied', () => {
  const input: Scenario[] = [
    {
      path: '/w',
      order: 'random',
      activeFor: '30s',
      times: 5,
      responses: [{ status: 200, weight: 9 }, { status: 503, weight: 0, repeat: 2 }, { status: 500 }],
    },
    {
      path: '/c',
      order: 'cycle',
      cycle: false,
      activeFor: '1.5h',
      times: 1_000_000_000,
      responses: [{ status: 200 }],
    },
    { path: '/r', order: 'random', activeFor: '366d', responses: [{ status: 200, weight: 1_000_000 }] },
  ];
  const result = validateScenarios(JSON.parse(JSON.stringify(input)));
  assert.equal(result.ok, true, JSON.stringify(!result.ok && result.problems));
  assert.deepEqual(result.ok && result.scenarios, input);
});

test('validateScenarios – order, weight, activeFor and times: each bad value is named where it is', () => {
  const scenario = (fields: Record<string, unknown>, responses: unknown[] = [{ status: 200 }]) =>
    problemsOf([{ path: '/x', ...fields, responses }]);
  const one = (fields: Record<string, unknown>, responses?: unknown[]) => {
    const problems = scenario(fields, responses);
    assert.equal(problems.length, 1, JSON.stringify(problems));
    return problems[0]!;
  };
  const activeForForm =
    'a duration such as 100ms, 2s, 5m or 1h (a bare number is milliseconds), above 0 and at most 366d';
  assert.deepEqual(one({ order: 'shuffle' }), {
    path: '/0/order',
    message: 'order must be "cycle" or "random", got "shuffle"',
  });
  assert.deepEqual(one({ order: 1 }), {
    path: '/0/order',
    message: 'order must be "cycle" or "random", got 1',
  });
  for (const activeFor of ['soon', '-1s', '1w', '30 s', '']) {
    assert.deepEqual(one({ activeFor }), {
      path: '/0/activeFor',
      message: `activeFor must be a string holding ${activeForForm}, got ${JSON.stringify(activeFor)}`,
    });
  }
  for (const activeFor of ['0', '0s', '0.4ms', '367d', '9000h']) {
    assert.deepEqual(one({ activeFor }), {
      path: '/0/activeFor',
      message: `activeFor must be ${activeForForm}, got ${JSON.stringify(activeFor)}`,
    });
  }
  assert.deepEqual(one({ activeFor: 30 }), {
    path: '/0/activeFor',
    message: `activeFor must be a string holding ${activeForForm}, got 30 (write it as a string, e.g. "30ms")`,
  });
  for (const times of [0, -1, 1.5, 1_000_000_001, '2', null]) {
    assert.deepEqual(one({ times }), {
      path: '/0/times',
      message: `times must be an integer 1-1000000000, got ${JSON.stringify(times)}`,
    });
  }
  for (const weight of [-1, 0.5, 1_000_001, '1', true]) {
    assert.deepEqual(one({ order: 'random' }, [{ status: 200, weight }, { status: 200 }]), {
      path: '/0/responses/0/weight',
      message: `weight must be an integer 0-1000000, got ${JSON.stringify(weight)}`,
    });
  }
  assert.deepEqual(one({}, [{ status: 200 }, { status: 500, weight: 2 }]), {
    path: '/0/responses/1/weight',
    message: 'weight goes only with order: random on its scenario',
  });
  assert.deepEqual(one({ order: 'cycle' }, [{ status: 200, weight: 1 }]), {
    path: '/0/responses/0/weight',
    message: 'weight goes only with order: random on its scenario',
  });
  assert.deepEqual(
    one({ order: 'random' }, [
      { status: 200, weight: 0 },
      { status: 500, weight: 0 },
    ]),
    {
      path: '/0/responses',
      message: 'under order: random at least one response needs a weight above 0 (the default is 1)',
    },
  );
  assert.deepEqual(one({ order: 'random', cycle: false }), {
    path: '/0/cycle',
    message:
      'cycle: false goes only with order: cycle (a random draw has no last response to stay on; end it with times or activeFor)',
  });
});

test('validateScenarios – a fault field given as a number is named with the string form its header takes', () => {
  const result = validateScenarios([
    { path: '/a', responses: [{ status: 200, size: 1024, chunkSize: 512, retryAfter: 30, error: 503 }] },
  ]);
  assert.equal(result.ok, false);
  if (result.ok) return;
  assert.deepEqual(
    result.problems.map((p) => p.path),
    ['/0/responses/0/error', '/0/responses/0/size', '/0/responses/0/chunkSize', '/0/responses/0/retryAfter'],
  );
  assert.match(
    result.problems[1]?.message ?? '',
    /^size must be a string holding a number of bytes .* e\.g\. "1024", got 1024$/,
  );
  assert.match(
    result.problems[3]?.message ?? '',
    /retryAfter must be a string holding whole seconds 0-86400 \(e\.g\. "30"\)/,
  );
});
