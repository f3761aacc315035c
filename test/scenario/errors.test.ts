import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import * as scenario from '../../src/scenario/index.ts';
import {
  invalidScenariosError,
  SCENARIO_ERR_FILE_NOT_FOUND,
  SCENARIO_ERR_FILE_SYNTAX,
  SCENARIO_ERR_FILE_TOO_LARGE,
  SCENARIO_ERR_FILE_UNREADABLE,
  SCENARIO_ERR_INVALID,
  SCENARIO_ERRORS,
  scenarioSyntaxError,
} from '../../src/scenario/index.ts';

test('SCENARIO_ERRORS – every code has a constructor with its status, and every constructor is listed', () => {
  const constructors = {
    SCENARIO_ERR_INVALID,
    SCENARIO_ERR_FILE_SYNTAX,
    SCENARIO_ERR_FILE_NOT_FOUND,
    SCENARIO_ERR_FILE_UNREADABLE,
    SCENARIO_ERR_FILE_TOO_LARGE,
  } as const;
  assert.deepEqual(Object.keys(SCENARIO_ERRORS).sort(), Object.keys(constructors).sort());
  const exported = Object.keys(scenario).filter((name) => /^SCENARIO_ERR_[A-Z_]+$/.test(name));
  assert.deepEqual(exported.sort(), Object.keys(SCENARIO_ERRORS).sort());
  for (const [code, entry] of Object.entries(SCENARIO_ERRORS)) {
    const error = new constructors[code as keyof typeof constructors](
      'a',
      'b' as never,
      'c' as never,
      'd' as never,
    );
    assert.equal(error.code, code);
    assert.equal(error.statusCode, entry.status);
    assert.ok(error instanceof Error);
    assert.ok(entry.when.length > 20, `${code} needs a "when"`);
  }
});

test('invalidScenariosError – carries every problem and the source; the message shows the first 20', () => {
  const problems = Array.from({ length: 25 }, (_, i) => ({ path: `/${i}/path`, message: `problem ${i}` }));
  const error = invalidScenariosError(
    [{ path: '', message: 'input must be an array' }, ...problems],
    'request body',
  );
  assert.equal(error.code, 'SCENARIO_ERR_INVALID');
  assert.equal(error.statusCode, 400);
  assert.equal(error.source, 'request body');
  assert.equal(error.problems.length, 26);
  assert.ok(error instanceof SCENARIO_ERR_INVALID);
  assert.equal(
    error.message,
    `request body: invalid scenarios: 26 problems: input must be an array; ${problems
      .slice(0, 19)
      .map((p) => `${p.path}: ${p.message}`)
      .join('; ')}; and 6 more`,
  );
  assert.equal(
    invalidScenariosError([{ path: '/0', message: 'x' }]).message,
    'scenarios: invalid scenarios: 1 problem: /0: x',
  );
});

test('scenarioSyntaxError – carries the position, the reason and the cause', () => {
  const cause = new Error('parser');
  const error = scenarioSyntaxError('s.yaml', 4, 7, 'bad indentation', cause);
  assert.equal(error.message, 's.yaml:4:7: invalid YAML: bad indentation');
  assert.deepEqual(
    [error.code, error.statusCode, error.source, error.line, error.column, error.reason],
    ['SCENARIO_ERR_FILE_SYNTAX', 400, 's.yaml', 4, 7, 'bad indentation'],
  );
  assert.equal(error.cause, cause);
  assert.ok(error instanceof SCENARIO_ERR_FILE_SYNTAX);
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
