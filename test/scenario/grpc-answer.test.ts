/**
 * A scenario response's gRPC answer (issue #36 item 4): `grpcStatus`, `grpcMessage`, `grpcMetadata`
 * and `grpcTrailers`, as `validateScenarios` takes and refuses them, as the step a gRPC call gets,
 * and in the set's content hash.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from 'js-yaml';
import {
  GRPC_RESERVED_METADATA_KEYS,
  GRPC_STATUS_NAMES,
  type ScenarioProblem,
  ScenarioStore,
  scenarioSetHash,
  UNSETTABLE_HEADERS,
  validateScenarios,
} from '../../src/scenario/index.ts';

const ECHO = '/echochaos.v1.EchoService/Echo';

/** Every problem of a set holding one scenario on the Echo method with these responses. */
function problemsOf(...responses: unknown[]): ScenarioProblem[] {
  const result = validateScenarios([{ path: ECHO, responses }]);
  assert.equal(result.ok, false, `expected a refusal of ${JSON.stringify(responses)}`);
  return result.ok ? [] : result.problems;
}

/** The one problem of a response. */
function problemOf(response: unknown): ScenarioProblem {
  const problems = problemsOf(response);
  assert.equal(problems.length, 1, JSON.stringify(problems));
  return problems[0]!;
}

test('grpc answer – accepts a status as a code, its decimal text or its name in any case, with message, metadata and trailers', () => {
  const responses = [
    { grpcStatus: 14, grpcMessage: 'backend warming up', repeat: 2 },
    { grpcStatus: 'UNAVAILABLE' },
    { grpcStatus: 'unavailable' },
    { grpcStatus: 'Resource_Exhausted', grpcMessage: '' },
    { grpcStatus: '14' },
    { grpcStatus: 0 },
    { grpcStatus: 'OK', grpcMetadata: { 'x-served-by': 'echo-chaos' } },
    {
      grpcStatus: 16,
      grpcMessage: 'token expired: ünïcode is fine',
      grpcMetadata: { 'x-a': 'b', 'trace.id_1': ' printable ~ ASCII ', 'empty-bin': '', 'x-bin': 'AAEC/w==' },
      grpcTrailers: { 'retry-after-ms': '100', 'unpadded-bin': 'AAEC/w' },
    },
    // HTTP and gRPC fields side by side: HTTP requests use the first, gRPC calls the second.
    { status: 503, body: 'down', headers: { 'Retry-After': '1' }, grpcStatus: 'UNAVAILABLE', delay: '5ms' },
    // Metadata alone: an OK answer with something added.
    { grpcTrailers: { 'x-done': 'yes' } },
  ];
  const input = [{ name: 'echo', path: ECHO, responses }];
  const result = validateScenarios(input);
  assert.ok(result.ok, result.ok ? '' : JSON.stringify(result.problems));
  // Stored as written (a name stays a name), every field kept, in copies.
  assert.deepEqual(result.scenarios, input);
  assert.notEqual(result.scenarios[0]?.responses[7]?.grpcMetadata, responses[7]?.grpcMetadata);
  assert.notEqual(result.scenarios[0]?.responses[7]?.grpcTrailers, responses[7]?.grpcTrailers);
  // Every name, and every code 0-16.
  const all = [...GRPC_STATUS_NAMES, ...GRPC_STATUS_NAMES.map((_, code) => code)].map((grpcStatus) => ({
    grpcStatus,
  }));
  assert.equal(validateScenarios([{ path: ECHO, responses: all }]).ok, true);
});

test('grpc answer – YAML gives the status as a number or a name; both validate', () => {
  const set = load(
    [
      `- path: ${ECHO}`,
      '  responses:',
      '    - grpcStatus: 14',
      '    - grpcStatus: unavailable',
      "    - grpcStatus: '3'",
      '      grpcMessage: bad request',
      '      grpcTrailers: { x-reason: quota }',
    ].join('\n'),
  );
  const result = validateScenarios(set);
  assert.ok(result.ok, result.ok ? '' : JSON.stringify(result.problems));
  assert.deepEqual(
    result.scenarios[0]?.responses.map((r) => r.grpcStatus),
    [14, 'unavailable', '3'],
  );
});

test('grpc answer – grpcStatus outside 0-16, an unknown name or another type is refused, naming the field and the value', () => {
  const cases: Array<[unknown, string]> = [
    [17, 'got 17'],
    [-1, 'got -1'],
    [1.5, 'got 1.5'],
    ['17', 'got "17"'],
    ['FOO', 'got "FOO"'],
    ['NOT-FOUND', 'got "NOT-FOUND"'],
    [' 14', 'got " 14"'],
    ['', 'got ""'],
    [true, 'got true'],
    [null, 'got null'],
    [[14], 'got array'],
  ];
  for (const [grpcStatus, got] of cases) {
    const problem = problemOf({ grpcStatus });
    assert.equal(problem.path, '/0/responses/0/grpcStatus', JSON.stringify(grpcStatus));
    assert.match(
      problem.message,
      /^grpcStatus must be a gRPC status code 0-16 or its name in any case \(OK, /,
    );
    assert.ok(problem.message.endsWith(got), `${problem.message} should end with ${got}`);
  }
});

test('grpc answer – grpcMessage: refused without grpcStatus, beside OK, past 1024 characters, not a string or not well-formed', () => {
  assert.deepEqual(problemOf({ grpcMessage: 'why' }), {
    path: '/0/responses/0/grpcMessage',
    message: 'grpcMessage goes only beside grpcStatus: the status it explains',
  });
  for (const [grpcStatus, shown] of [
    [0, '0'],
    ['OK', '"OK"'],
    ['ok', '"ok"'],
    ['0', '"0"'],
  ] as const) {
    assert.deepEqual(problemOf({ grpcStatus, grpcMessage: 'fine' }), {
      path: '/0/responses/0/grpcMessage',
      message: `grpcMessage cannot go beside grpcStatus ${shown} (OK): an OK answer carries no status message`,
    });
  }
  assert.deepEqual(problemOf({ grpcStatus: 13, grpcMessage: 'x'.repeat(1025) }), {
    path: '/0/responses/0/grpcMessage',
    message: 'grpcMessage must be at most 1024 characters long, got 1025 characters',
  });
  assert.equal(
    validateScenarios([{ path: ECHO, responses: [{ grpcStatus: 13, grpcMessage: 'x'.repeat(1024) }] }]).ok,
    true,
  );
  assert.deepEqual(problemOf({ grpcStatus: 13, grpcMessage: 42 }), {
    path: '/0/responses/0/grpcMessage',
    message: 'grpcMessage must be a string of at most 1024 characters, got 42',
  });
  // grpc-js percent-encodes the message with encodeURI, which throws on half a surrogate pair.
  assert.deepEqual(problemOf({ grpcStatus: 13, grpcMessage: 'half \ud83d of an emoji' }), {
    path: '/0/responses/0/grpcMessage',
    message: 'grpcMessage must be well-formed Unicode text, got a lone surrogate (a half of a UTF-16 pair)',
  });
  // A bad status is one problem, not two: the message is not also blamed for it.
  assert.deepEqual(
    problemsOf({ grpcStatus: 'NOPE', grpcMessage: 'x' }).map((p) => p.path),
    ['/0/responses/0/grpcStatus'],
  );
});

test('grpc answer – metadata and trailer keys: lower-case gRPC keys, not reserved, at most 256 characters', () => {
  const cases: Array<[string, string]> = [
    ['X-Trace', 'metadata key must be lower-case, got "X-Trace" (write "x-trace")'],
    ['a b', 'metadata key must be 1 or more of a-z, 0-9, "_", "." and "-", got "a b"'],
    ['', 'metadata key must be 1 or more of a-z, 0-9, "_", "." and "-", got ""'],
    [':path', 'metadata key must be 1 or more of a-z, 0-9, "_", "." and "-", got ":path"'],
    ['é', 'metadata key must be 1 or more of a-z, 0-9, "_", "." and "-", got "é"'],
    [
      'grpc-status',
      `metadata key "grpc-status" is reserved: keys starting with grpc- are gRPC's own (the status goes in grpcStatus and grpcMessage)`,
    ],
    [
      'grpc-status-details-bin',
      `metadata key "grpc-status-details-bin" is reserved: keys starting with grpc- are gRPC's own (the status goes in grpcStatus and grpcMessage)`,
    ],
    ['content-type', 'metadata key "content-type" is reserved: the server sets it (HTTP/2 and gRPC framing)'],
    ['te', 'metadata key "te" is reserved: the server sets it (HTTP/2 and gRPC framing)'],
    ['user-agent', 'metadata key "user-agent" is reserved: the server sets it (HTTP/2 and gRPC framing)'],
    ['connection', 'metadata key "connection" is reserved: the server sets it (HTTP/2 and gRPC framing)'],
    ['k'.repeat(257), 'metadata key must be at most 256 characters, got 257 characters'],
  ];
  for (const [key, message] of cases) {
    assert.deepEqual(problemOf({ grpcMetadata: { [key]: 'v' } }), {
      path: `/0/responses/0/grpcMetadata/${key}`,
      message,
    });
    // The same rules for trailers, named so.
    assert.deepEqual(problemOf({ grpcStatus: 14, grpcTrailers: { [key]: 'v' } }), {
      path: `/0/responses/0/grpcTrailers/${key}`,
      message: message.replace(/^metadata key/, 'trailer key'),
    });
  }
  assert.equal(
    validateScenarios([{ path: ECHO, responses: [{ grpcMetadata: { ['k'.repeat(256)]: 'v' } }] }]).ok,
    true,
  );
  // A key with / or ~ is named by its JSON pointer, escaped.
  assert.equal(problemOf({ grpcMetadata: { 'a/b~c': 'v' } }).path, '/0/responses/0/grpcMetadata/a~1b~0c');
});

test('grpc answer – the reserved keys hold every header an HTTP scenario may not set', () => {
  for (const name of UNSETTABLE_HEADERS) assert.ok(GRPC_RESERVED_METADATA_KEYS.has(name), name);
});

test('grpc answer – metadata values: printable ASCII strings of at most 8 KiB, base64 under a -bin key', () => {
  const form =
    'a string of printable ASCII (space to ~; base64 text under a key ending in -bin), at most 8192 characters';
  assert.deepEqual(problemOf({ grpcMetadata: { 'x-a': 'caf\u00e9' } }), {
    path: '/0/responses/0/grpcMetadata/x-a',
    message: `metadata "x-a" value must be ${form}, got "café"`,
  });
  assert.deepEqual(problemOf({ grpcTrailers: { 'x-a': 'line\nbreak' } }), {
    path: '/0/responses/0/grpcTrailers/x-a',
    message: `trailer "x-a" value must be ${form}, got "line\\nbreak"`,
  });
  assert.deepEqual(problemOf({ grpcMetadata: { 'x-count': 5 } }), {
    path: '/0/responses/0/grpcMetadata/x-count',
    message: `metadata "x-count" value must be ${form}, got 5`,
  });
  assert.deepEqual(problemOf({ grpcMetadata: { 'x-a': 'v'.repeat(8193) } }), {
    path: '/0/responses/0/grpcMetadata/x-a',
    message: 'metadata "x-a" value must be at most 8192 characters long, got 8193 characters',
  });
  for (const value of ['not base64!', 'AAECA', 'A', 'AA=', 'AA==AA==', 'AA-_', 'AAEC\n']) {
    const problem = problemOf({ grpcTrailers: { 'trace-bin': value } });
    assert.equal(problem.path, '/0/responses/0/grpcTrailers/trace-bin', value);
    // A value that is not printable ASCII is told that first.
    if (value.includes('\n')) continue;
    assert.equal(
      problem.message,
      `value of "trace-bin" must be base64 text (A-Z, a-z, 0-9, + and /, padded with = or not): a key ending in -bin carries binary data, got ${JSON.stringify(value)}`,
    );
  }
  // A bad key and a bad value at one key: both said, in one problem.
  const both = problemOf({ grpcMetadata: { 'Bad-Bin': '!!' } });
  assert.equal(both.path, '/0/responses/0/grpcMetadata/Bad-Bin');
  assert.match(both.message, /^metadata key must be lower-case/);
});

test('grpc answer – grpcMetadata and grpcTrailers: objects of at most 64 entries', () => {
  const map = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
  assert.equal(
    validateScenarios([{ path: ECHO, responses: [{ grpcMetadata: map(64), grpcTrailers: map(64) }] }]).ok,
    true,
  );
  assert.deepEqual(problemOf({ grpcMetadata: map(65) }), {
    path: '/0/responses/0/grpcMetadata',
    message:
      'grpcMetadata must be an object of metadata keys to string values, at most 64 entries, got 65 entries',
  });
  assert.deepEqual(problemOf({ grpcTrailers: 'x-a: b' }), {
    path: '/0/responses/0/grpcTrailers',
    message:
      'grpcTrailers must be an object of trailer keys to string values, at most 64 entries, got "x-a: b"',
  });
  assert.deepEqual(problemOf({ grpcStatus: 1, grpcMetadata: ['x-a'] }), {
    path: '/0/responses/0/grpcMetadata',
    message:
      'grpcMetadata must be an object of metadata keys to string values, at most 64 entries, got array',
  });
});

test('grpc answer – every problem of a set is listed in input order', () => {
  const problems = problemsOf(
    { grpcStatus: 99 },
    { grpcMessage: 'lonely' },
    { grpcStatus: 2, grpcMetadata: { 'grpc-x': 'v' }, grpcTrailers: { 'x-bin': '?' } },
  );
  assert.deepEqual(
    problems.map((p) => p.path),
    [
      '/0/responses/0/grpcStatus',
      '/0/responses/1/grpcMessage',
      '/0/responses/2/grpcMetadata/grpc-x',
      '/0/responses/2/grpcTrailers/x-bin',
    ],
  );
});

test('grpc answer – the step carries the status as its code, the message, and metadata ready for grpc-js', () => {
  const store = new ScenarioStore();
  store.replace([
    {
      path: ECHO,
      responses: [
        {
          grpcStatus: 'unavailable',
          grpcMessage: 'warming up',
          grpcMetadata: { 'x-served-by': 'echo-chaos', 'trace-bin': 'AAEC/w==' },
          grpcTrailers: { 'retry-after-ms': '100', 'raw-bin': 'AAEC/w' },
          repeat: 2,
        },
        { grpcStatus: 'OK' },
        { grpcStatus: '5' },
        { status: 503 },
      ],
    },
  ]);
  const first = store.next(ECHO);
  assert.equal(first?.grpcStatus, 14);
  assert.equal(first?.grpcMessage, 'warming up');
  assert.deepEqual(first?.grpcMetadata, {
    'x-served-by': 'echo-chaos',
    'trace-bin': Buffer.from([0, 1, 2, 255]),
  });
  assert.deepEqual(first?.grpcTrailers, { 'retry-after-ms': '100', 'raw-bin': Buffer.from([0, 1, 2, 255]) });
  assert.ok(Buffer.isBuffer(first?.grpcMetadata['trace-bin']));
  assert.equal(typeof first?.grpcMetadata['x-served-by'], 'string');
  assert.equal(Object.isFrozen(first?.grpcMetadata), true);
  assert.equal(Object.isFrozen(first?.grpcTrailers), true);
  // The HTTP side of the step is untouched by gRPC fields.
  assert.deepEqual([first?.status, first?.body, first?.headers], [undefined, undefined, {}]);
  assert.equal(store.next(ECHO), first, 'repeat: the same prepared step again');
  const ok = store.next(ECHO);
  assert.deepEqual(
    [ok?.grpcStatus, ok?.grpcMessage, ok?.grpcMetadata, ok?.grpcTrailers],
    [0, undefined, {}, {}],
  );
  assert.equal(store.next(ECHO)?.grpcStatus, 5);
  const http = store.next(ECHO);
  assert.deepEqual([http?.status, http?.grpcStatus], [503, undefined]);
});

test('grpc answer – the content hash of a set changes with every gRPC field', () => {
  const base = {
    grpcStatus: 14,
    grpcMessage: 'a',
    grpcMetadata: { 'x-a': '1' },
    grpcTrailers: { 'x-t': '1' },
  };
  const hashOf = (response: object) => {
    const result = validateScenarios([{ path: ECHO, responses: [response] }]);
    assert.ok(result.ok, JSON.stringify(response));
    return scenarioSetHash(result.scenarios);
  };
  const hash = hashOf(base);
  const variants = [
    { ...base, grpcStatus: 13 },
    { ...base, grpcStatus: 'UNAVAILABLE' },
    { ...base, grpcMessage: 'b' },
    { grpcStatus: 14, grpcMetadata: { 'x-a': '1' }, grpcTrailers: { 'x-t': '1' } },
    { ...base, grpcMetadata: { 'x-a': '2' } },
    { ...base, grpcMetadata: {} },
    { ...base, grpcTrailers: { 'x-u': '1' } },
    { grpcStatus: 14, grpcMessage: 'a', grpcMetadata: { 'x-a': '1' } },
  ];
  const hashes = variants.map(hashOf);
  for (const [i, other] of hashes.entries()) assert.notEqual(other, hash, JSON.stringify(variants[i]));
  assert.equal(new Set(hashes).size, hashes.length);
  // Key order does not matter; the fields do.
  assert.equal(
    hashOf({ grpcTrailers: { 'x-t': '1' }, grpcMetadata: { 'x-a': '1' }, grpcMessage: 'a', grpcStatus: 14 }),
    hash,
  );
});
