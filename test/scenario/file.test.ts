import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  loadScenarioFile,
  MAX_YAML_ALIASES,
  parseScenarioDocument,
  type Scenario,
  type ScenarioInvalidError,
  type ScenarioSyntaxError,
} from '../../src/scenario/index.ts';
import { tempDir } from './helpers.ts';

const YAML = `# scenarios for the orders API
- path: /orders
  responses:
    - status: 200
      body: '{"ok":true}'
      headers:
        Content-Type: application/json
    - status: 503
      delay: 100-500ms
- path: /flaky
  responses: [{ status: 500 }, { status: 200, delay: 1s }]
`;
const EXPECTED: Scenario[] = [
  {
    path: '/orders',
    responses: [
      { status: 200, body: '{"ok":true}', headers: { 'Content-Type': 'application/json' } },
      { status: 503, delay: '100-500ms' },
    ],
  },
  { path: '/flaky', responses: [{ status: 500 }, { status: 200, delay: '1s' }] },
];

function syntaxErrorOf(fn: () => unknown): ScenarioSyntaxError {
  try {
    fn();
  } catch (error) {
    assert.equal((error as ScenarioSyntaxError).code, 'SCENARIO_ERR_FILE_SYNTAX', String(error));
    return error as ScenarioSyntaxError;
  }
  assert.fail('expected a syntax error');
}

test('parseScenarioDocument – reads YAML and JSON to the same scenarios', () => {
  assert.deepEqual(parseScenarioDocument(YAML, 'scenarios.yaml'), EXPECTED);
  assert.deepEqual(parseScenarioDocument(JSON.stringify(EXPECTED, null, 2), 'scenarios.json'), EXPECTED);
  assert.deepEqual(parseScenarioDocument(`\uFEFF${JSON.stringify(EXPECTED)}`, 'bom.json'), EXPECTED);
});

test('parseScenarioDocument – an empty document is an empty list', () => {
  for (const text of ['', '   \n', '# only a comment\n', '---\n', '---\n...\n', 'null', '~', '[]']) {
    assert.deepEqual(parseScenarioDocument(text, 'empty.yaml'), [], JSON.stringify(text));
  }
});

test('parseScenarioDocument – a syntax error names the source, line and column', () => {
  const error = syntaxErrorOf(() =>
    parseScenarioDocument('[\n  {"path": "/a",\n   "responses": [200,, 3]}\n]', 'bad.json'),
  );
  assert.equal(error.source, 'bad.json');
  assert.equal(error.statusCode, 400);
  assert.deepEqual([error.line, error.column], [3, 22]);
  assert.equal(error.reason, "expected the node content, but found ','");
  assert.equal(error.message, "bad.json:3:22: invalid YAML: expected the node content, but found ','");
  assert.ok(error.cause instanceof Error);

  const tab = syntaxErrorOf(() => parseScenarioDocument('- path: /a\n\tresponses: []\n', 'tab.yaml'));
  assert.equal(tab.line, 2);
});

test('parseScenarioDocument – refuses code tags, duplicate keys, many documents and alias floods', () => {
  const tags = syntaxErrorOf(() => parseScenarioDocument('- !!js/function "function () {}"', 'tags.yaml'));
  assert.match(tags.reason, /unknown .*tag/);
  const duplicate = syntaxErrorOf(() =>
    parseScenarioDocument('- path: /a\n  path: /b\n  responses: []', 'dup.yaml'),
  );
  assert.equal(duplicate.reason, 'duplicated mapping key');
  assert.equal(duplicate.line, 2);
  const many = syntaxErrorOf(() =>
    parseScenarioDocument('- path: /a\n  responses: [{status: 200}]\n---\n[]\n', 'many.yaml'),
  );
  assert.equal(many.reason, 'expected one YAML document, found 2');
  assert.equal(many.line, 3);

  const anchors = (aliases: number) =>
    `- path: /a\n  responses:\n    - &ok {status: 200}\n${'    - *ok\n'.repeat(aliases)}`;
  assert.equal(
    parseScenarioDocument(anchors(MAX_YAML_ALIASES), 'aliases.yaml')[0]?.responses.length,
    MAX_YAML_ALIASES + 1,
  );
  const flood = syntaxErrorOf(() => parseScenarioDocument(anchors(MAX_YAML_ALIASES + 1), 'flood.yaml'));
  assert.match(flood.reason, /maxAliases/);
});

test('parseScenarioDocument – invalid scenarios are refused with every problem and the source', () => {
  const text = '- path: orders\n  responses:\n    - status: 700\n      delay: 500\n';
  assert.throws(
    () => parseScenarioDocument(text, 'conf/scenarios.yaml', { maxDelayMs: 100 }),
    (error: ScenarioInvalidError) => {
      assert.equal(error.code, 'SCENARIO_ERR_INVALID');
      assert.equal(error.statusCode, 400);
      assert.equal(error.source, 'conf/scenarios.yaml');
      assert.deepEqual(
        error.problems.map((p) => p.path),
        ['/0/path', '/0/responses/0/status', '/0/responses/0/delay'],
      );
      assert.match(
        error.message,
        /^conf\/scenarios\.yaml: invalid scenarios: 3 problems: \/0\/path: path must be/,
      );
      return true;
    },
  );
  // Options reach the validation.
  assert.throws(
    () =>
      parseScenarioDocument('[{path: /a, responses: [{status: 200, delay: 1s}]}]', 'x.yaml', {
        maxDelayMs: 100,
      }),
    (error: ScenarioInvalidError) =>
      error.problems[0]?.message.startsWith('delay must be at most 100ms') === true,
  );
  assert.throws(
    () => parseScenarioDocument('{path: /a}', 'object.yaml'),
    (error: ScenarioInvalidError) =>
      error.problems[0]?.message === 'input must be an array of scenarios, got object',
  );
});

test('loadScenarioFile – loads a YAML file and a JSON file', (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'scenarios.yaml'), YAML);
  writeFileSync(join(dir, 'scenarios.json'), JSON.stringify(EXPECTED));
  assert.deepEqual(loadScenarioFile(join(dir, 'scenarios.yaml')), EXPECTED);
  assert.deepEqual(loadScenarioFile(join(dir, 'scenarios.json')), EXPECTED);
  writeFileSync(join(dir, 'empty.yaml'), '');
  assert.deepEqual(loadScenarioFile(join(dir, 'empty.yaml')), []);
});

test('loadScenarioFile – each failure has its own code and names the file', (t) => {
  const dir = tempDir(t);
  const expectCode = (path: string, code: string, options?: { maxFileBytes?: number }) => {
    assert.throws(
      () => loadScenarioFile(path, options),
      (error: Error & { code: string }) => {
        assert.equal(error.code, code);
        assert.ok(error.message.includes(path), error.message);
        return true;
      },
    );
  };
  expectCode(join(dir, 'missing.yaml'), 'SCENARIO_ERR_FILE_NOT_FOUND');
  expectCode(join(dir, 'no-dir', 'scenarios.yaml'), 'SCENARIO_ERR_FILE_NOT_FOUND');
  mkdirSync(join(dir, 'a-directory'));
  expectCode(join(dir, 'a-directory'), 'SCENARIO_ERR_FILE_UNREADABLE');
  writeFileSync(join(dir, 'latin1.yaml'), Buffer.from([0x2d, 0x20, 0xe9, 0xff]));
  expectCode(join(dir, 'latin1.yaml'), 'SCENARIO_ERR_FILE_UNREADABLE');
  writeFileSync(join(dir, 'big.yaml'), YAML);
  expectCode(join(dir, 'big.yaml'), 'SCENARIO_ERR_FILE_TOO_LARGE', { maxFileBytes: 10 });
  writeFileSync(join(dir, 'syntax.yaml'), '[');
  expectCode(join(dir, 'syntax.yaml'), 'SCENARIO_ERR_FILE_SYNTAX');
  writeFileSync(join(dir, 'invalid.yaml'), '- path: /a\n  responses: []\n');
  expectCode(join(dir, 'invalid.yaml'), 'SCENARIO_ERR_INVALID');
  if (process.getuid?.() !== 0) {
    writeFileSync(join(dir, 'secret.yaml'), YAML);
    chmodSync(join(dir, 'secret.yaml'), 0o000);
    expectCode(join(dir, 'secret.yaml'), 'SCENARIO_ERR_FILE_UNREADABLE');
  }
  assert.throws(() => loadScenarioFile(join(dir, 'big.yaml'), { maxFileBytes: -1 }), RangeError);
});
