/**
 * Every scenario set the README or a page of the docs site POSTs with curl (`curl -X POST
 * localhost:8080/scenario ... -d '[...]'`) is one the service accepts: a reader who copies an example
 * gets the behaviour shown, not a 400.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readerTexts } from '../scripts/docs-site.ts';
import { validateScenarios } from '../src/scenario/index.ts';

const TEXTS = readerTexts();

/** The JSON bodies of a page's `curl ... /scenario ... -d '<json>'` commands, with their line. */
function postedSets(markdown: string): Array<{ line: number; json: string }> {
  const sets: Array<{ line: number; json: string }> = [];
  for (const match of markdown.matchAll(/curl[^\n]*?\/scenario\b[^\n]*?-d '(\[[^']*\])'/g)) {
    const line = markdown.slice(0, match.index).split('\n').length;
    sets.push({ line, json: match[1]! });
  }
  return sets;
}

test('README and docs – every scenario set they POST is valid', () => {
  const sets = TEXTS.flatMap(({ file, text }) => postedSets(text).map((set) => ({ file, ...set })));
  // The README's tour posts one, the docs pages (scenarios, testing your service, ...) the others.
  assert.ok(sets.length >= 2, `found only ${sets.length} scenario sets in the README and the docs`);
  assert.ok(
    sets.some((set) => set.file === 'README.md'),
    'the README posts no scenario set',
  );
  for (const { file, line, json } of sets) {
    const parsed: unknown = JSON.parse(json);
    const result = validateScenarios(parsed);
    assert.ok(
      result.ok,
      `${file}:${line}: ${result.ok ? '' : result.problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
    );
  }
});

test('README scenarios – the check refuses a set the service refuses', () => {
  const bad = postedSets(
    `curl -X POST localhost:8080/scenario -d '[{"pathPattern":"re:/a(?=/)","responses":[{"status":503}]}]'`,
  );
  assert.equal(bad.length, 1);
  assert.equal(validateScenarios(JSON.parse(bad[0]!.json)).ok, false);
});
