import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ACTIVE_FOR_PATTERN,
  DELAY_SPEC_PATTERN,
  HEADER_VALUE_PATTERN,
  type JsonSchemaObject,
  MAX_BODY_LENGTH,
  MAX_CONDITIONS,
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

test('ScenarioListSchema – is structural: no $ref, no unions, a type on every node', () => {
  const text = JSON.stringify(json);
  for (const keyword of ['$ref', 'anyOf', 'oneOf', 'allOf', 'not', 'patternProperties', '$id', 'format']) {
    assert.equal(text.includes(`"${keyword}"`), false, `schema uses ${keyword}`);
  }
  for (const [at, node] of nodes(json)) {
    assert.ok(
      ['array', 'object', 'string', 'integer', 'boolean'].includes(node['type'] as string),
      `${at} has type ${node['type']}`,
    );
  }
});

test('ScenarioListSchema – every node has a description and every value a bound', () => {
  for (const [at, node] of nodes(json)) {
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

test('ScenarioListSchema – objects are closed except the maps of strings (headers, query)', () => {
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
    ],
  );
  for (const [at, node] of objects) {
    if (at.endsWith('/headers') || at.endsWith('/query')) {
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
  ]);
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
