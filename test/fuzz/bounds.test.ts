/**
 * The document bounds (`src/scenario/bounds.ts`): `measureTree` agrees with a plain recursive count
 * on random JSON, measures YAML alias bombs without expanding them, refuses cycles and deep input
 * without recursion; `jsonDepthWithin` agrees with the parsed depth, and `JsonDepthScanner` with it
 * however the text is cut into pieces.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import fc from 'fast-check';
import {
  JsonDepthScanner,
  jsonDepthWithin,
  MAX_SET_DEPTH,
  MAX_SET_NODES,
  MAX_SET_SIZE,
  measureTree,
  parseScenarioDocument,
  ScenarioInvalidError,
  ScenarioSyntaxError,
  validateScenarios,
} from '../../src/scenario/index.ts';
import { fuzzParameters } from './fuzz.ts';

const FILE = 'bounds';

/** The obvious recursive measure, for small values only. */
function naive(value: unknown): { depth: number; nodes: number; chars: number } {
  if (typeof value !== 'object' || value === null) {
    return { depth: 0, nodes: 1, chars: 1 + (typeof value === 'string' ? value.length : 0) };
  }
  let depth = 1;
  let nodes = 1;
  let chars = 1;
  const entries = Array.isArray(value) ? value.map((v) => ['', v] as const) : Object.entries(value);
  for (const [key, child] of entries) {
    const m = naive(child);
    depth = Math.max(depth, m.depth + 1);
    nodes += m.nodes;
    chars += key.length + m.chars;
  }
  return { depth, nodes, chars };
}

test('measureTree – equals the recursive measure on random JSON, and refuses exactly above each limit', () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
      const expected = naive(value);
      const measured = measureTree(value, { maxDepth: 100, maxNodes: 1e9, maxChars: 1e9 });
      assert.deepEqual(measured, { ok: true, ...expected });
      if (expected.depth > 0) {
        assert.deepEqual(measureTree(value, { maxDepth: expected.depth - 1, maxNodes: 1e9 }), {
          ok: false,
          bound: 'depth',
          limit: expected.depth - 1,
        });
      }
      assert.deepEqual(measureTree(value, { maxDepth: 100, maxNodes: expected.nodes - 1 }), {
        ok: false,
        bound: 'nodes',
        limit: expected.nodes - 1,
      });
      assert.equal(
        measureTree(value, { maxDepth: expected.depth, maxNodes: expected.nodes, maxChars: expected.chars })
          .ok,
        true,
      );
      // The text scan agrees with the parsed depth.
      assert.equal(jsonDepthWithin(JSON.stringify(value), 100), expected.depth);
      if (expected.depth > 0)
        assert.equal(jsonDepthWithin(JSON.stringify(value), expected.depth - 1), undefined);
    }),
    fuzzParameters(FILE, 'measureTree', 1000),
  );
});

/** `text` cut at the given offsets (taken modulo its length), in order. */
function cut(text: string, offsets: readonly number[]): string[] {
  const at = [...new Set(offsets.map((o) => (text.length === 0 ? 0 : o % (text.length + 1))))].sort(
    (a, b) => a - b,
  );
  const pieces: string[] = [];
  let from = 0;
  for (const to of at) {
    pieces.push(text.slice(from, to));
    from = to;
  }
  pieces.push(text.slice(from));
  return pieces;
}

test('JsonDepthScanner – fed in pieces cut anywhere (inside strings, between a backslash and what it escapes), it reads the depth the whole text has and counts the values measureTree counts', () => {
  // Strings full of quotes, backslashes and brackets, so that cuts fall inside escapes.
  const tricky = fc.string({ unit: fc.constantFrom('"', '\\', '[', ']', '{', '}', 'a', 'é', '\u{1F600}') });
  fc.assert(
    fc.property(
      fc.jsonValue({ maxDepth: 6, stringUnit: 'grapheme' }),
      fc.array(tricky, { maxLength: 4 }),
      fc.array(fc.nat(), { maxLength: 12 }),
      fc.integer({ min: 0, max: 8 }),
      (value, strings, offsets, bound) => {
        const text = JSON.stringify([value, ...strings]);
        const whole = jsonDepthWithin(text, 100);
        assert.equal(whole, naive([value, ...strings]).depth);
        for (const limit of [100, bound]) {
          const scanner = new JsonDepthScanner(limit);
          for (const piece of cut(text, offsets)) scanner.write(piece);
          assert.equal(
            scanner.deepest,
            jsonDepthWithin(text, limit),
            `${JSON.stringify(text)} at ${offsets}`,
          );
          // Within the bound, it counts the values measureTree counts in the parsed text.
          if (scanner.deepest !== undefined) assert.equal(scanner.values, naive(JSON.parse(text)).nodes);
        }
        // Whitespace between tokens changes no count.
        const spaced = new JsonDepthScanner(100);
        spaced.write(JSON.stringify([value, ...strings], null, '\t').replaceAll('\n', '\r\n '));
        assert.equal(spaced.values, naive([value, ...strings]).nodes);
      },
    ),
    fuzzParameters(FILE, 'depth-scanner', 1000),
  );
});

test('measureTree – shared nodes count as expanded, measured once: 10^9 values cost microseconds', () => {
  let node: unknown = Array.from({ length: 10 }, () => 1);
  for (let i = 0; i < 9; i++) node = Array.from({ length: 10 }, () => node);
  assert.deepEqual(measureTree(node, { maxDepth: 32, maxNodes: Number.MAX_SAFE_INTEGER }), {
    ok: true,
    depth: 10,
    nodes: naiveSharedNodes(10, 10),
    chars: naiveSharedNodes(10, 10),
  });
  assert.deepEqual(measureTree(node, { maxDepth: 32, maxNodes: MAX_SET_NODES }), {
    ok: false,
    bound: 'nodes',
    limit: MAX_SET_NODES,
  });
});

/** Nodes of a full tree of `levels` levels of `width` arrays over `width` scalars. */
function naiveSharedNodes(width: number, levels: number): number {
  let nodes = 0;
  for (let level = 0; level <= levels; level++) nodes += width ** level;
  return nodes;
}

test('measureTree – a cycle is refused as too deep; a 1,000,000-deep array is refused without recursion', () => {
  const cycle: unknown[] = [];
  cycle.push(cycle);
  assert.deepEqual(measureTree(cycle, { maxDepth: 32, maxNodes: 1e6 }), {
    ok: false,
    bound: 'depth',
    limit: 32,
  });
  let deep: unknown = 1;
  for (let i = 0; i < 1_000_000; i++) deep = [deep];
  assert.deepEqual(measureTree(deep, { maxDepth: 32, maxNodes: 1e9 }), {
    ok: false,
    bound: 'depth',
    limit: 32,
  });
  const text = `${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`;
  assert.equal(jsonDepthWithin(text, 32), undefined);
  assert.equal(jsonDepthWithin('["[[[[", {"a": "\\"]]]"}]', 32), 2);
  const result = validateScenarios(deep);
  assert.equal(result.ok, false);
});

/** A YAML bomb: `levels` anchors, each a list of `width` aliases of the one before. */
function yamlBomb(levels: number, width: number, leaf: string): string {
  let text = `    x0: &a0 [${Array.from({ length: width }, () => leaf).join(', ')}]\n`;
  for (let i = 1; i <= levels; i++) {
    text += `    x${i}: &a${i} [${Array.from({ length: width }, () => `*a${i - 1}`).join(', ')}]\n`;
  }
  return `- path: /bomb\n  responses:\n  - status: 200\n  extra:\n${text}`;
}

test('scenario YAML – an alias bomb (90 aliases, 10^9 values) is refused in milliseconds, naming the bound', () => {
  for (const [levels, width, leaf, message] of [
    [9, 10, '1', new RegExp(`more than ${MAX_SET_NODES} values`)],
    // 5^6 leaves of 2,000 characters: 31 MB of text in under MAX_SET_NODES values.
    [6, 5, `"${'a'.repeat(2000)}"`, new RegExp(`more than ${MAX_SET_SIZE} characters`)],
  ] as const) {
    const started = performance.now();
    assert.throws(
      () => parseScenarioDocument(yamlBomb(levels, width, leaf), 'bomb'),
      (error: unknown) => error instanceof ScenarioInvalidError && message.test(error.message),
    );
    // Generous: the walk is per unique node (about a hundred); expanding would take minutes.
    assert.ok(performance.now() - started < 2000, `took ${performance.now() - started} ms`);
  }
});

test('scenario YAML and JSON – nesting deeper than MAX_SET_DEPTH is refused, naming the bound', () => {
  const deepYaml = `${'['.repeat(MAX_SET_DEPTH + 1)}${']'.repeat(MAX_SET_DEPTH + 1)}`;
  assert.throws(
    () => parseScenarioDocument(deepYaml, 'deep'),
    (error: unknown) => error instanceof ScenarioSyntaxError && /maxDepth \(32\)/.test(error.message),
  );
  const input = JSON.parse(
    `[{"path":"/a","responses":[{"status":200}],"x":${'['.repeat(MAX_SET_DEPTH)}${']'.repeat(MAX_SET_DEPTH)}}]`,
  );
  const result = validateScenarios(input);
  assert.equal(result.ok, false);
  assert.deepEqual(!result.ok && result.problems, [
    {
      path: '',
      message: `the scenarios nest deeper than ${MAX_SET_DEPTH} levels of arrays and objects (a valid set nests 5 deep)`,
    },
  ]);
  // Just within: refused for its content, not its depth.
  const within = JSON.parse(
    `[{"path":"/a","responses":[{"status":200}],"x":${'['.repeat(MAX_SET_DEPTH - 2)}${']'.repeat(MAX_SET_DEPTH - 2)}}]`,
  );
  const ok = validateScenarios(within);
  assert.equal(ok.ok, false);
  assert.doesNotMatch(JSON.stringify(!ok.ok && ok.problems), /nest deeper/);
});
