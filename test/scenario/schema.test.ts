import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ACTIVE_FOR_PATTERN,
  DELAY_SPEC_PATTERN,
  GRPC_METADATA_VALUE_PATTERN,
  GRPC_STATUS_NAMES,
  GRPC_STATUS_PATTERN,
  HEADER_VALUE_PATTERN,
  type JsonSchemaObject,
  MAX_BODY_LENGTH,
  MAX_CONDITIONS,
  MAX_GRPC_MESSAGE_LENGTH,
  MAX_GRPC_METADATA,
  MAX_GRPC_METADATA_VALUE_LENGTH,
  MAX_HEADERS,
  MAX_NAME_LENGTH,
  MAX_PATH_LENGTH,
  MAX_PATTERN_LENGTH,
  MAX_REPEAT,
  MAX_RESPONSES,
  MAX_SCENARIOS,
  MAX_TIMES,
  MAX_WEIGHT,
  PATH_PATTERN,
  parseDelayBounds,
  parseGrpcStatus,
  ScenarioListSchema,
  toOpenApiV3Schema,
} from '../../src/scenario/index.ts';

const json = JSON.parse(JSON.stringify(ScenarioListSchema)) as JsonSchemaObject;

/** Every schema node with its JSON pointer. */
function nodes(node: JsonSchemaObject, at = ''): Array<[string, JsonSchemaObject]> {
  const found: Array<[string, JsonSchemaObject]> = [[at, node]];
  const properties = node['properties'] as Record<string, JsonSchemaObject> | undefined;
  for (const [name, sub] of Object.entries(properties ?? {}))
    found.push(...nodes(sub, `${at}/properties/${name}`));
  if (typeof node['items'] === 'object')
    found.push(...nodes(node['items'] as JsonSchemaObject, `${at}/items`));
  if (typeof node['additionalProperties'] === 'object') {
    found.push(...nodes(node['additionalProperties'] as JsonSchemaObject, `${at}/additionalProperties`));
  }
  return found;
}

/** Whether a node is Kubernetes' integer-or-string: an integer and a string, in that order. */
function intOrString(node: JsonSchemaObject): boolean {
  const branches = node['anyOf'] as JsonSchemaObject[] | undefined;
  return (
    node['x-kubernetes-int-or-string'] === true &&
    branches?.map((branch) => branch['type']).join() === 'integer,string'
  );
}

test('ScenarioListSchema – is structural: no $ref, no unions but int-or-string, a type on every node', () => {
  const text = JSON.stringify(json);
  for (const keyword of ['$ref', 'oneOf', 'allOf', 'not', 'patternProperties', '$id', 'format']) {
    assert.equal(text.includes(`"${keyword}"`), false, `schema uses ${keyword}`);
  }
  const unions = nodes(json).filter(([, node]) => node['anyOf'] !== undefined);
  assert.deepEqual(
    unions.map(([at]) => at),
    ['/items/properties/responses/items/properties/grpcStatus'],
  );
  for (const [at, node] of nodes(json)) {
    if (intOrString(node)) {
      assert.equal(node['type'], undefined, at);
      continue;
    }
    assert.ok(
      ['array', 'object', 'string', 'integer', 'boolean'].includes(node['type'] as string),
      `${at} has type ${node['type']}`,
    );
  }
});

test('ScenarioListSchema – every node has a description and every value a bound', () => {
  const all = nodes(json).flatMap(
    ([at, node]): Array<[string, JsonSchemaObject]> =>
      intOrString(node)
        ? [
            [at, node],
            ...(node['anyOf'] as JsonSchemaObject[]).map((b, i): [string, JsonSchemaObject] => [
              `${at}/anyOf/${i}`,
              b,
            ]),
          ]
        : [[at, node]],
  );
  for (const [at, node] of all) {
    assert.equal(typeof node['description'], 'string', `${at} has no description`);
    assert.ok((node['description'] as string).length > 10, `${at} description is too short`);
    switch (node['type']) {
      case 'string':
        assert.equal(typeof node['maxLength'], 'number', `${at} has no maxLength`);
        break;
      case 'array':
        assert.equal(typeof node['maxItems'], 'number', `${at} has no maxItems`);
        break;
      case 'integer':
        assert.equal(typeof node['minimum'], 'number', `${at} has no minimum`);
        assert.equal(typeof node['maximum'], 'number', `${at} has no maximum`);
        break;
    }
  }
});

test('ScenarioListSchema – objects are closed except the maps of strings (headers, query, gRPC metadata)', () => {
  const objects = nodes(json).filter(([, node]) => node['type'] === 'object');
  assert.deepEqual(
    objects.map(([at]) => at),
    [
      '/items',
      '/items/properties/headers',
      '/items/properties/query',
      '/items/properties/body',
      '/items/properties/responses/items',
      '/items/properties/responses/items/properties/headers',
      '/items/properties/responses/items/properties/grpcMetadata',
      '/items/properties/responses/items/properties/grpcTrailers',
    ],
  );
  for (const [at, node] of objects) {
    if (at.endsWith('/grpcMetadata') || at.endsWith('/grpcTrailers')) {
      assert.equal(node['maxProperties'], MAX_GRPC_METADATA);
      const values = node['additionalProperties'] as JsonSchemaObject;
      assert.equal(values['type'], 'string');
      assert.equal(values['maxLength'], MAX_GRPC_METADATA_VALUE_LENGTH);
      assert.equal(values['pattern'], GRPC_METADATA_VALUE_PATTERN);
    } else if (at.endsWith('/headers') || at.endsWith('/query')) {
      assert.equal(node['maxProperties'], at.includes('responses') ? MAX_HEADERS : MAX_CONDITIONS);
      const values = node['additionalProperties'] as JsonSchemaObject;
      assert.equal(values['type'], 'string');
      assert.equal(values['pattern'], HEADER_VALUE_PATTERN);
    } else {
      assert.equal(node['additionalProperties'], false, `${at} is open`);
    }
  }
});

test('ScenarioListSchema – carries the documented limits and required fields', () => {
  const scenario = json['items'] as JsonSchemaObject;
  const properties = scenario['properties'] as Record<string, JsonSchemaObject>;
  const response = (properties['responses'] as JsonSchemaObject)['items'] as JsonSchemaObject;
  const responseProperties = response['properties'] as Record<string, JsonSchemaObject>;
  assert.equal(json['maxItems'], MAX_SCENARIOS);
  // Exactly one of path and pathPattern: validateScenarios checks it (the CRD with a oneOf).
  assert.deepEqual(scenario['required'], ['responses']);
  assert.deepEqual(Object.keys(properties), [
    'name',
    'path',
    'pathPattern',
    'method',
    'headers',
    'query',
    'body',
    'upstream',
    'cycle',
    'order',
    'activeFor',
    'times',
    'responses',
  ]);
  assert.equal(properties['pathPattern']?.['maxLength'], MAX_PATTERN_LENGTH);
  assert.equal(properties['name']?.['maxLength'], MAX_NAME_LENGTH);
  assert.equal(properties['method']?.['type'], 'array');
  assert.equal(properties['cycle']?.['type'], 'boolean');
  assert.equal(properties['path']?.['maxLength'], MAX_PATH_LENGTH);
  assert.equal(properties['path']?.['pattern'], PATH_PATTERN);
  assert.equal(properties['responses']?.['minItems'], 1);
  assert.equal(properties['responses']?.['maxItems'], MAX_RESPONSES);
  // Every field of a response is optional: a status-less response answers 200 (or the upstream's).
  assert.equal(response['required'], undefined);
  assert.equal(responseProperties['status']?.['minimum'], 100);
  assert.equal(responseProperties['status']?.['maximum'], 599);
  assert.equal(responseProperties['body']?.['maxLength'], MAX_BODY_LENGTH);
  assert.equal(responseProperties['delay']?.['pattern'], DELAY_SPEC_PATTERN);
  assert.deepEqual(Object.keys(responseProperties), [
    'status',
    'delay',
    'body',
    'repeat',
    'weight',
    'error',
    'size',
    'compress',
    'contentType',
    'throttle',
    'chunkDelay',
    'chunkSize',
    'bodyDelay',
    'retryAfter',
    'headers',
    'grpcStatus',
    'grpcMessage',
    'grpcMetadata',
    'grpcTrailers',
  ]);
  assert.equal(responseProperties['grpcMessage']?.['maxLength'], MAX_GRPC_MESSAGE_LENGTH);
  assert.equal(
    [MAX_GRPC_MESSAGE_LENGTH, MAX_GRPC_METADATA, MAX_GRPC_METADATA_VALUE_LENGTH].join(),
    '1024,64,8192',
  );
  assert.equal(responseProperties['repeat']?.['minimum'], 1);
  assert.equal(responseProperties['repeat']?.['maximum'], MAX_REPEAT);
  assert.deepEqual(
    [responseProperties['weight']?.['minimum'], responseProperties['weight']?.['maximum']],
    [0, MAX_WEIGHT],
  );
  assert.equal(properties['order']?.['pattern'], '^(?:cycle|random)$');
  assert.deepEqual(properties['order']?.['enum'], ['cycle', 'random']);
  assert.equal(properties['activeFor']?.['pattern'], ACTIVE_FOR_PATTERN);
  assert.deepEqual([properties['times']?.['minimum'], properties['times']?.['maximum']], [1, MAX_TIMES]);
  assert.equal([MAX_SCENARIOS, MAX_RESPONSES, MAX_HEADERS, MAX_BODY_LENGTH].join(), '1000,1000,100,1048576');
});

test('toOpenApiV3Schema – gives the structural form a CRD accepts', () => {
  const crd = toOpenApiV3Schema(ScenarioListSchema);
  const scenario = crd['items'] as JsonSchemaObject;
  const response = (
    (scenario['properties'] as Record<string, JsonSchemaObject>)['responses'] as JsonSchemaObject
  )['items'] as JsonSchemaObject;
  const headers = (response['properties'] as Record<string, JsonSchemaObject>)['headers'] as JsonSchemaObject;
  // Kubernetes rejects additionalProperties beside properties, even `false`.
  assert.equal('additionalProperties' in scenario, false);
  assert.equal('additionalProperties' in response, false);
  assert.deepEqual(Object.keys(headers).sort(), [
    'additionalProperties',
    'description',
    'maxProperties',
    'type',
  ]);
  assert.equal((headers['additionalProperties'] as JsonSchemaObject)['type'], 'string');
  assert.deepEqual(scenario['required'], ['responses']);
  // The input is left alone, and the output is plain JSON.
  assert.equal((ScenarioListSchema.items as unknown as JsonSchemaObject)['additionalProperties'], false);
  assert.deepEqual(JSON.parse(JSON.stringify(crd)), crd);
});

test('DELAY_SPEC_PATTERN – accepts exactly what parseDelayBounds parses (untrimmed)', () => {
  const pattern = new RegExp(DELAY_SPEC_PATTERN);
  const samples = [
    '0',
    '500',
    '500ms',
    '1.5s',
    '2m',
    '1h',
    '1d',
    '100-500ms',
    '1s-2s',
    '1-2',
    '500-100ms',
    '0.5s-1m',
    '1-2h',
  ];
  const rejects = [
    '',
    'ms',
    '-5ms',
    '5w',
    '1.s',
    '.5s',
    '100 - 500ms',
    ' 5ms',
    '1-2-3',
    '5msx',
    'abc',
    '1e3',
  ];
  for (const text of samples) {
    assert.equal(pattern.test(text), true, text);
    assert.notEqual(parseDelayBounds(text), undefined, text);
  }
  for (const text of rejects) {
    assert.equal(pattern.test(text), false, text);
    if (text.trim() === text) assert.equal(parseDelayBounds(text), undefined, text);
  }
});

test('PATH_PATTERN – a path starts with / and holds visible ASCII without query or fragment', () => {
  const pattern = new RegExp(PATH_PATTERN);
  for (const path of ['/', '/a', '/api/v1/items', '/%C3%BC', "/a;b=c,d!$&'()*+@:~_-.", '/"quoted"']) {
    assert.equal(pattern.test(path), true, path);
  }
  for (const path of [
    '',
    'a',
    ' /a',
    '/a b',
    '/a\tb',
    '/a?x=1',
    '/a#top',
    '/a\u0000',
    '/a\u007f',
    '/a\n',
    '/ü',
  ]) {
    assert.equal(pattern.test(path), false, JSON.stringify(path));
  }
});

test('toOpenApiV3Schema – writes grpcStatus as the int-or-string a CRD takes, the bounds beside it', () => {
  const crd = toOpenApiV3Schema(ScenarioListSchema);
  const response = (
    ((crd['items'] as JsonSchemaObject)['properties'] as Record<string, JsonSchemaObject>)[
      'responses'
    ] as JsonSchemaObject
  )['items'] as JsonSchemaObject;
  const status = (response['properties'] as Record<string, JsonSchemaObject>)['grpcStatus']!;
  assert.equal(status['x-kubernetes-int-or-string'], true);
  // Exactly this anyOf: Kubernetes allows no other union in a structural schema.
  assert.deepEqual(status['anyOf'], [{ type: 'integer' }, { type: 'string' }]);
  assert.equal(status['type'], undefined);
  assert.deepEqual(
    [status['minimum'], status['maximum'], status['minLength'], status['maxLength'], status['pattern']],
    [0, 16, 1, 19, GRPC_STATUS_PATTERN],
  );
  assert.match(String(status['description']), /UNAVAILABLE/);
});

test('GRPC_STATUS_PATTERN – accepts exactly the texts parseGrpcStatus reads (without spaces)', () => {
  const pattern = new RegExp(GRPC_STATUS_PATTERN);
  const accepted = [
    ...GRPC_STATUS_NAMES,
    ...GRPC_STATUS_NAMES.map((name) => name.toLowerCase()),
    'Unavailable',
    'data_LOSS',
    '0',
    '9',
    '05',
    '14',
    '16',
  ];
  for (const text of accepted) {
    assert.equal(pattern.test(text), true, text);
    assert.notEqual(parseGrpcStatus(text), undefined, text);
  }
  for (const text of [
    '',
    '17',
    '99',
    '100',
    '-1',
    '1.0',
    'OKAY',
    'UNAVAILABLE ',
    ' 14',
    'NOT-FOUND',
    'ok\n',
  ]) {
    assert.equal(pattern.test(text), false, JSON.stringify(text));
    if (text.trim() === text) assert.equal(parseGrpcStatus(text), undefined, JSON.stringify(text));
  }
  assert.equal(parseGrpcStatus('unavailable'), 14);
  assert.equal(parseGrpcStatus('05'), 5);
  assert.equal(parseGrpcStatus(16), 16);
  assert.equal(parseGrpcStatus(17), undefined);
  assert.equal(parseGrpcStatus(1.5), undefined);
});
