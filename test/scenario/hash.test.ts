import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import {
  canonicalJson,
  ScenarioStore,
  scenarioSetHash,
  validateScenarios,
} from '../../src/scenario/index.ts';

test('scenario hash – canonical JSON sorts object keys at every depth, keeps array order, drops undefined', () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [2, 1], c: 'x' }, u: undefined }),
    '{"a":{"c":"x","d":[2,1]},"b":1}',
  );
  assert.equal(canonicalJson([undefined, null, 'é"']), '[null,null,"é\\""]');
});

test('scenario hash – the same set with its keys in another order has the same hash; another order of scenarios does not', () => {
  const a = { path: '/a', responses: [{ status: 503, body: 'x' }] };
  const b = { path: '/b', responses: [{ status: 200 }] };
  const shuffled = { responses: [{ body: 'x', status: 503 }], path: '/a' };
  assert.match(scenarioSetHash([a, b]), /^sha256-[0-9a-f]{64}$/);
  assert.equal(scenarioSetHash([a, b]), scenarioSetHash([shuffled, b]));
  assert.notEqual(scenarioSetHash([a, b]), scenarioSetHash([b, a]));
  assert.notEqual(scenarioSetHash([a]), scenarioSetHash([{ ...a, responses: [{ status: 502, body: 'x' }] }]));
  assert.notEqual(scenarioSetHash([]), scenarioSetHash([a]));
});

test('scenario hash – what a store holds after replace hashes like the validated array that was given', () => {
  const input = [
    {
      name: 'orders',
      method: ['get', 'POST'],
      headers: { 'X-Tenant': 'a' },
      pathPattern: '/orders/*',
      cycle: true,
      responses: [
        { status: 500, delay: '10-20ms', repeat: 2, headers: { 'Retry-After': '1' } },
        { status: 200 },
      ],
    },
  ];
  const result = validateScenarios(input);
  assert.ok(result.ok);
  const store = new ScenarioStore();
  store.replace(JSON.parse(JSON.stringify(result.scenarios)));
  assert.equal(scenarioSetHash(store.list()), scenarioSetHash(result.scenarios));
});

test('scenario hash – hashed as it is made, it is the SHA-256 of the whole canonical text, large bodies and many small pieces alike', () => {
  const sha = (text: string) => `sha256-${createHash('sha256').update(text).digest('hex')}`;
  const big = 'é'.repeat(200_000);
  const sets: unknown[][] = [
    [],
    [
      {
        path: '/a',
        responses: [
          { status: 200, body: big },
          { status: 201, body: `${big}x` },
        ],
      },
    ],
    Array.from({ length: 3000 }, (_, i) => ({
      path: `/p${i}`,
      headers: { 'x-a': `re:${i}` },
      responses: [{ status: 200 }],
    })),
    [{ b: [1, undefined, { z: 'é"\\', a: null }], a: 'x'.repeat(65_536) }],
  ];
  for (const set of sets) assert.equal(scenarioSetHash(set), sha(canonicalJson(set)));
});
