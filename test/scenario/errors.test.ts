import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  isScenarioError,
  SCENARIO_ERRORS,
  ScenarioError,
  ScenarioInvalidError,
  ScenarioSyntaxError,
} from '../../src/scenario/index.ts';

test('SCENARIO_ERRORS – every code builds a ScenarioError with its status and its template, and says when', () => {
  for (const [code, entry] of Object.entries(SCENARIO_ERRORS)) {
    const error = new ScenarioError(code as keyof typeof SCENARIO_ERRORS, ['a', 'b', 'c', 'd']);
    assert.equal(error.code, code);
    assert.equal(error.statusCode, entry.status);
    assert.equal(error.message.includes('%'), false, `${code}: ${error.message}`);
    assert.ok(isScenarioError(error));
    assert.ok(entry.when.length > 20, `${code} needs a "when"`);
  }
  assert.equal(isScenarioError({ code: 'ENOENT' }), false);
  assert.equal(isScenarioError({ code: 'toString' }), false);
});

test('ScenarioInvalidError – carries every problem and the source; the message shows the first 20', () => {
  const problems = Array.from({ length: 25 }, (_, i) => ({ path: `/${i}/path`, message: `problem ${i}` }));
  const error = new ScenarioInvalidError(
    [{ path: '', message: 'input must be an array' }, ...problems],
    'request body',
  );
  assert.equal(error.code, 'SCENARIO_ERR_INVALID');
  assert.equal(error.statusCode, 400);
  assert.equal(error.name, 'ScenarioInvalidError');
  assert.equal(error.source, 'request body');
  assert.equal(error.problems.length, 26);
  assert.equal(
    error.message,
    `request body: invalid scenarios: 26 problems: input must be an array; ${problems
      .slice(0, 19)
      .map((p) => `${p.path}: ${p.message}`)
      .join('; ')}; and 6 more`,
  );
  assert.equal(
    new ScenarioInvalidError([{ path: '/0', message: 'x' }]).message,
    'scenarios: invalid scenarios: 1 problem: /0: x',
  );
});

test('ScenarioSyntaxError – carries the position, the reason and the cause', () => {
  const cause = new Error('parser');
  const error = new ScenarioSyntaxError('s.yaml', 4, 7, 'bad indentation', { cause });
  assert.equal(error.message, 's.yaml:4:7: invalid YAML: bad indentation');
  assert.deepEqual(
    [error.code, error.statusCode, error.source, error.line, error.column, error.reason],
    ['SCENARIO_ERR_FILE_SYNTAX', 400, 's.yaml', 4, 7, 'bad indentation'],
  );
  assert.equal(error.cause, cause);
  assert.equal(error.name, 'ScenarioSyntaxError');
});

test('scenario index – explicit named exports only, each documented where it is declared', () => {
  const index = readFileSync(new URL('../../src/scenario/index.ts', import.meta.url), 'utf8');
  assert.equal(/export\s+\*/.test(index), false, 'index.ts uses export *');
  const names = [...index.matchAll(/^\s+(?:type\s+)?([A-Za-z_][A-Za-z0-9_]*),?$/gm)].map((m) => m[1]!);
  assert.ok(names.length > 40, `found only ${names.length} exports`);
  const dir = new URL('../../src/scenario/', import.meta.url);
  const sources = readdirSync(dir)
    .filter((file) => file.endsWith('.ts'))
    .map((file) => readFileSync(new URL(file, dir), 'utf8'));
  for (const name of names) {
    const declaration = new RegExp(
      String.raw`/\*\*(?:(?!\*/)[\s\S])*\*/\s*export\s+(?:async\s+)?(?:const|function|class|interface|type)\s+${name}\b`,
    );
    assert.ok(
      sources.some((source) => declaration.test(source)),
      `${name} has no TSDoc comment on its declaration`,
    );
  }
});
