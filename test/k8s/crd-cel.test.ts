/**
 * The schema explains itself (issue #38): the generated CRD's `x-kubernetes-validations` CEL rules,
 * read from the checked-in `crds/` file (what users apply), evaluated by a CEL implementation from npm
 * (`@bufbuild/cel`, through test/helpers/crd-structural.ts) against valid and invalid EchoScenarios:
 * each rule refuses what it should with its message, the valid ones pass, and the operator's own
 * checks agree; compound durations (`1h30m`) pass the CRD and the operator reads them; unknown fields
 * (under `abortWhen` too) are pruned as a real API server prunes them, and the API double does so.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { Ajv } from 'ajv';
import { CRD_PATHS } from '../../scripts/gen-crd.ts';
import type { EchoScenario } from '../../src/operator/echo-scenario.ts';
import { lifecycleOf } from '../../src/operator/lifecycle.ts';
import { specProblems } from '../../src/operator/scenario-spec.ts';
import {
  celViolations,
  evaluateRule,
  pruneUnknownFields,
  type StructuralSchema,
  toCel,
} from '../helpers/crd-structural.ts';
import { startKubeApi } from '../helpers/kube-api.ts';
import { readYamlDocuments } from './crd-schema.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const crd = readYamlDocuments(join(ROOT, CRD_PATHS[0]!))[0] as {
  spec: { versions: Array<{ schema: { openAPIV3Schema: StructuralSchema } }> };
};
const schema = crd.spec.versions[0]!.schema.openAPIV3Schema;
const openApi = new Ajv({ strict: false, validateFormats: false, allErrors: true }).compile(schema);

/** Every rule of the schema, with the path of its node. */
function rulesOf(s: StructuralSchema, path = ''): Array<{ path: string; rule: string; message?: string }> {
  const found = (s['x-kubernetes-validations'] ?? []).map((r) => ({ path, ...r }));
  for (const [key, child] of Object.entries(s.properties ?? {}))
    found.push(...rulesOf(child, path === '' ? key : `${path}.${key}`));
  if (s.items !== undefined) found.push(...rulesOf(s.items, `${path}[]`));
  return found;
}
const RULES = rulesOf(schema);

function resource(spec: Record<string, unknown>): EchoScenario & Record<string, unknown> {
  return {
    apiVersion: 'echo-chaos.dev/v1alpha1',
    kind: 'EchoScenario',
    metadata: { name: 's', namespace: 'default', uid: 'u', generation: 1 },
    spec: {
      target: { service: 'echo', port: 'http' },
      path: '/x',
      responses: [{ status: 503 }],
      ...spec,
    },
  } as EchoScenario & Record<string, unknown>;
}

/** What the API server says of an object: OpenAPI value validation, then CEL. */
function admission(obj: unknown): string[] {
  const problems = openApi(obj) ? [] : (openApi.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
  return [...problems, ...celViolations(obj, schema).map((v) => `${v.field}: ${v.message}`)];
}

const target = (fields: object) => ({ target: { service: 'echo', port: 'http', ...fields } });
const abortWhen = (fields: object) => ({ abortWhen: { query: 'sum(up)', threshold: 1, ...fields } });

const VALID: Array<Record<string, unknown>> = [
  {},
  target({ mode: 'one' }),
  target({ mode: 'fixed', value: 3 }),
  target({ mode: 'fixed-percent', value: 10 }),
  target({ mode: 'fixed-percent', value: 100, minPods: 2, maxPods: 2 }),
  target({ maxPods: 1 }),
  target({ mode: 'all', maxPods: 1 }),
  { duration: '90s' },
  { duration: '10m' },
  { duration: '1h30m' },
  { duration: '1h30m15s' },
  { duration: '2d12h' },
  { duration: '1.5h' },
  { duration: '250' },
  abortWhen({}),
  abortWhen({ comparison: '<=', for: '1m30s', onError: 'Continue', failureThreshold: 5 }),
  abortWhen({ for: '0s' }),
];

/** Invalid specs, each with the message of the CEL rule that refuses it (and the operator does too). */
const INVALID: Array<[Record<string, unknown>, RegExp]> = [
  [target({ mode: 'fixed' }), /spec\.target: mode fixed needs value, a pod count/],
  [target({ mode: 'fixed-percent' }), /spec\.target: .*mode fixed-percent needs value, a percentage/],
  [
    target({ mode: 'one', value: 1 }),
    /spec\.target: value is only for mode fixed \(a pod count\) or fixed-percent/,
  ],
  [target({ value: 2 }), /spec\.target: value is only for mode fixed/],
  [
    target({ mode: 'fixed-percent', value: 150 }),
    /spec\.target: with mode fixed-percent, value is a percentage from 1 to 100/,
  ],
  [target({ minPods: 1 }), /spec\.target: minPods is only for mode fixed-percent/],
  [target({ mode: 'fixed', value: 2, minPods: 1 }), /spec\.target: minPods is only for mode fixed-percent/],
  [
    target({ mode: 'one', maxPods: 1 }),
    /spec\.target: maxPods is only for mode all \(the default\) or fixed-percent/,
  ],
  [
    target({ mode: 'fixed-percent', value: 10, minPods: 3, maxPods: 2 }),
    /spec\.target: minPods must not be above maxPods/,
  ],
  [{ duration: '0s' }, /spec\.duration: duration must be above 0, e\.g\. 90s or 1h30m/],
  [{ duration: '0h0m' }, /spec\.duration: duration must be above 0/],
  [
    { duration: '1h 30m' },
    /spec\.duration: duration must be a duration such as 90s, 10m, 2h, 1h30m or 1h30m15s \(units ms, s, m, h, d\)/,
  ],
  [{ duration: '1h30' }, /spec\.duration: duration must be a duration such as .*1h30m/],
  [{ duration: 'PT1H' }, /spec\.duration: duration must be a duration such as/],
  [
    { abortWhen: { threshold: 1 } },
    /spec\.abortWhen: abortWhen needs query \(a PromQL instant query\) and threshold \(a number\); it may also have comparison, for, onError and failureThreshold/,
  ],
  [{ abortWhen: { query: 'sum(up)' } }, /spec\.abortWhen: abortWhen needs query .* and threshold/],
  [abortWhen({ query: '   ' }), /spec\.abortWhen: abortWhen\.query must not be blank/],
  [abortWhen({ for: '1m30' }), /spec\.abortWhen\.for: for must be a duration such as 90s, 10m, 2h, 1h30m/],
];

describe('EchoScenario CRD CEL rules', () => {
  test('crd cel – the implementation really evaluates self.x rules: ints, doubles, has(), in, RE2 matches', () => {
    assert.equal(
      evaluateRule('self.x == 1', toCel({ x: 1 }, { properties: { x: { type: 'integer' } } })),
      true,
    );
    assert.equal(
      evaluateRule('self.x == 1', toCel({ x: 2 }, { properties: { x: { type: 'integer' } } })),
      false,
    );
    assert.equal(
      evaluateRule('self.x <= 1.5', toCel({ x: 1 }, { properties: { x: { type: 'number' } } })),
      true,
    );
    assert.equal(evaluateRule('has(self.y)', { x: 1n }), false);
    assert.equal(evaluateRule("self.m in ['a', 'b']", { m: 'b' }), true);
    assert.equal(evaluateRule("self.s.matches(r'^(?:\\d+[a-z])+$')", { s: '1h30m' }), true);
    // A field that is not there is an error, not false: what the rules guard with has().
    assert.ok(evaluateRule('self.nothing == 1', { x: 1n }) instanceof Error);
  });

  test('crd cel – every rule has a message, and writes a backslash only in a raw string (cel-go refuses other escapes)', () => {
    assert.ok(RULES.length >= 10, `${RULES.length} rules`);
    for (const { path, rule, message } of RULES) {
      assert.ok((message ?? '').length > 10, `${path}: ${rule} has a message`);
      for (const literal of rule.match(/(?<!r)'[^']*\\[^']*'/g) ?? [])
        assert.fail(`${path}: ${rule}: ${literal} is not a raw string`);
    }
    assert.deepEqual([...new Set(RULES.map((r) => r.path))].sort(), [
      'spec.abortWhen',
      'spec.abortWhen.for',
      'spec.duration',
      'spec.target',
    ]);
  });

  test('crd cel – valid EchoScenarios pass the CRD and the operator', () => {
    for (const spec of VALID) {
      const obj = resource(spec);
      assert.deepEqual(admission(obj), [], JSON.stringify(spec));
      assert.equal(specProblems(obj), undefined, JSON.stringify(spec));
    }
  });

  test('crd cel – invalid ones are refused with the rule’s message, the operator refuses them too, and every rule is tried', () => {
    const fired = new Set<string>();
    for (const [spec, message] of INVALID) {
      const obj = resource(spec);
      const said = admission(obj);
      assert.ok(
        said.some((m) => message.test(m)),
        `${JSON.stringify(spec)}: wanted ${message}, got ${said.join(' | ')}`,
      );
      assert.notEqual(specProblems(obj), undefined, `the operator refuses ${JSON.stringify(spec)} too`);
      for (const v of celViolations(obj, schema)) fired.add(v.rule);
    }
    assert.deepEqual(
      RULES.map((r) => r.rule).filter((rule) => !fired.has(rule)),
      [],
      'a rule no invalid case refuses',
    );
  });

  test('crd cel – the operator reads compound durations: 1h30m runs for 90 minutes', () => {
    const start = new Date('2026-11-24T12:00:00Z');
    const run = lifecycleOf(resource({ duration: '1h30m15s' }), start);
    assert.equal(run.expiresAt, '2026-11-24T13:30:15Z');
    assert.equal(run.expiresInMs, 5_415_000);
    assert.match(
      specProblems(resource({ duration: '1h30' })) ?? '',
      /spec\.duration: must be a duration such as 90s, 10m or 1h30m/,
    );
  });
});

describe('EchoScenario CRD pruning', () => {
  test('crd pruning – unknown keys under abortWhen, spec and status are dropped and named; maps and the root’s own fields stay', () => {
    const obj = {
      ...resource({
        target: { service: 'echo', port: 'http', mode: 'one', typo: 1 },
        abortWhen: { query: 'sum(up)', threshold: 1, onErorr: 'Continue', extra: { deep: true } },
        method: ['GET'],
        colour: 'red',
      }),
      status: { observedGeneration: 1, made: 'up', conditions: [{ type: 'Ready', status: 'True', why: 1 }] },
    };
    (obj.spec as Record<string, unknown>)['headers'] = { 'x-any-name': 'v' };
    const { value, pruned } = pruneUnknownFields(obj, schema, { root: true });
    assert.deepEqual(pruned.sort(), [
      'spec.abortWhen.extra',
      'spec.abortWhen.onErorr',
      'spec.colour',
      'spec.target.typo',
      'status.conditions[0].why',
      'status.made',
    ]);
    const spec = (value as { spec: Record<string, unknown> }).spec;
    assert.deepEqual(spec['abortWhen'], { query: 'sum(up)', threshold: 1 });
    assert.deepEqual(spec['target'], { service: 'echo', port: 'http', mode: 'one' });
    assert.deepEqual((value as { metadata: unknown }).metadata, obj.metadata);
    assert.equal((value as { apiVersion: string }).apiVersion, 'echo-chaos.dev/v1alpha1');
    assert.deepEqual(
      obj.spec?.abortWhen,
      {
        query: 'sum(up)',
        threshold: 1,
        onErorr: 'Continue',
        extra: { deep: true },
      },
      'the input is left alone',
    );
  });

  test('crd pruning – x-kubernetes-preserve-unknown-fields keeps a node’s unknown fields, known ones are still pruned inside', () => {
    const s: StructuralSchema = {
      type: 'object',
      properties: {
        open: {
          type: 'object',
          'x-kubernetes-preserve-unknown-fields': true,
          properties: { known: { type: 'object', properties: { a: { type: 'string' } } } },
        },
        closed: { type: 'object', properties: { a: { type: 'string' } } },
      },
    };
    const { value, pruned } = pruneUnknownFields(
      { open: { anything: { x: 1 }, known: { a: 'a', b: 'b' } }, closed: { a: 'a', b: 'b' }, top: 1 },
      s,
    );
    assert.deepEqual(value, { open: { anything: { x: 1 }, known: { a: 'a' } }, closed: { a: 'a' } });
    assert.deepEqual(pruned.sort(), ['closed.b', 'open.known.b', 'top']);
  });

  test('crd pruning – the API double prunes an unknown abortWhen key, warns about it, and a patch of only such a key changes nothing', async (t) => {
    const api = await startKubeApi();
    t.after(() => api.close());
    const base = `${api.url}/apis/echo-chaos.dev/v1alpha1/namespaces/default/echoscenarios`;
    const body = resource({ abortWhen: { query: 'sum(up)', threshold: 1, onErorr: 'Continue' } });
    const created = await fetch(base, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, metadata: { name: 's' } }),
    });
    assert.equal(created.status, 201);
    assert.equal(created.headers.get('warning'), '299 - "unknown field \\"spec.abortWhen.onErorr\\""');
    const stored = (await created.json()) as {
      spec: { abortWhen: object };
      metadata: { generation: number };
    };
    assert.deepEqual(stored.spec.abortWhen, { query: 'sum(up)', threshold: 1 });

    const patched = await fetch(`${base}/s`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ spec: { abortWhen: { fooBar: 1 } } }),
    });
    assert.equal(patched.status, 200);
    assert.match(patched.headers.get('warning') ?? '', /unknown field \\"spec\.abortWhen\.fooBar\\"/);
    const after = (await patched.json()) as { spec: { abortWhen: object }; metadata: { generation: number } };
    assert.deepEqual(after.spec.abortWhen, { query: 'sum(up)', threshold: 1 });
    assert.equal(after.metadata.generation, stored.metadata.generation, 'a pruned field is no spec change');

    // The CEL rules apply there too.
    const refused = await fetch(base, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...resource({ duration: '0s' }), metadata: { name: 'zero' } }),
    });
    assert.equal(refused.status, 422);
    assert.match(
      ((await refused.json()) as { message: string }).message,
      /spec\.duration: duration must be above 0/,
    );
  });
});
