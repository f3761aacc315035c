/** Scenario problems placed on their YAML line (issue #37): a JSON pointer to its line. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lineOfPointer, pointerLines } from '../../../src/echo/console/yaml-lines.ts';

const TEXT = `# two scenarios
- name: pay
  path: /pay
  responses:
    - status: 200
    - status: 999
      body: "x"
- name: "a/b"
  responses: []
  headers: { x-tenant: acme }
`;

test('yaml lines – a pointer is placed on the line of its key or item', () => {
  const lines = pointerLines(TEXT);
  assert.equal(lineOfPointer(lines, '/0'), 2);
  assert.equal(lineOfPointer(lines, '/0/path'), 3);
  assert.equal(lineOfPointer(lines, '/0/responses/1'), 6);
  assert.equal(lineOfPointer(lines, '/0/responses/1/status'), 6);
  assert.equal(lineOfPointer(lines, '/0/responses/1/body'), 7);
  assert.equal(lineOfPointer(lines, '/1/responses'), 9);
  assert.equal(lineOfPointer(lines, '/1/headers/x-tenant'), 10);
});

test('yaml lines – what the text lacks goes to its nearest ancestor; the whole set to where it starts', () => {
  const lines = pointerLines(TEXT);
  assert.equal(lineOfPointer(lines, '/1/path'), 8);
  assert.equal(lineOfPointer(lines, '/7/path'), 2);
  assert.equal(lineOfPointer(lines, ''), 2);
  assert.equal(lineOfPointer(pointerLines(''), '/0'), 1);
});
