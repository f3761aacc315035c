import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRandom } from '../../src/echo/random.ts';
import {
  compilePathPattern,
  compileTextMatcher,
  type Scenario,
  type ScenarioRequest,
  ScenarioStore,
  textMatches,
} from '../../src/scenario/index.ts';
import { MAX_INDEXED_PREFIX, PathIndex } from '../../src/scenario/path-index.ts';

/**
 * The store tries only the scenarios whose exact path or literal prefix fits a request (issue #30,
 * item 8). These hold it to a naive scan of the whole set in list order, the documented rule.
 */

const SEGMENTS = ['api', 'v1', 'v2', 'orders', 'users', 'a', 'b', '42', 'x.y', 'files'];

/** A scenario set of every kind (plain, exact with conditions, globs, re: with and without prefix). */
function randomSet(random: () => number, size: number): Scenario[] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const path = (depth: number) =>
    `/${Array.from({ length: 1 + Math.floor(random() * depth) }, () => pick(SEGMENTS)).join('/')}`;
  const plainPaths = new Set<string>();
  const scenarios: Scenario[] = [];
  for (let i = 0; i < size; i++) {
    const name = `s${i}`;
    const responses = [{ status: 200 + (i % 300) }];
    const method = random() < 0.3 ? { method: [pick(['GET', 'POST'])] } : {};
    const kind = Math.floor(random() * 7);
    if (kind === 0) {
      const p = path(3);
      if (plainPaths.has(p)) continue;
      plainPaths.add(p);
      scenarios.push({ name, path: p, responses });
    } else if (kind === 1) scenarios.push({ name, path: path(3), method: ['POST'], responses });
    else if (kind === 2) {
      const glob = path(3)
        .split('/')
        .map((s, i) => (i > 0 && random() < 0.3 ? pick(['*', '**', `${s}*`, `*${s}`]) : s))
        .join('/');
      scenarios.push({ name, pathPattern: glob, ...method, responses });
    } else if (kind === 3)
      scenarios.push({ name, pathPattern: `re:${path(2).replaceAll('.', '\\.')}/.*`, ...method, responses });
    else if (kind === 4)
      scenarios.push({ name, pathPattern: `re:${path(2)}/[0-9]+(/.*)?`, ...method, responses });
    else if (kind === 5)
      scenarios.push({
        name,
        pathPattern: pick(['re:.*', 're:/(api|files)/.*', 're:/a|/b', '/**']),
        ...method,
        responses,
      });
    else scenarios.push({ name, path: path(2), headers: { 'x-t': 're:[ab]' }, responses });
  }
  return scenarios;
}

/** The documented rule, tried on every scenario in list order: the first that matches. */
function naiveMatch(scenarios: readonly Scenario[], request: ScenarioRequest): string | undefined {
  for (const scenario of scenarios) {
    if (scenario.path !== undefined && scenario.path !== request.path) continue;
    if (scenario.pathPattern !== undefined) {
      const compiled = compilePathPattern(scenario.pathPattern);
      assert.ok(compiled.ok);
      if (!compiled.value.test(request.path)) continue;
    }
    if (scenario.method !== undefined && !scenario.method.includes(request.method)) continue;
    if (scenario.headers !== undefined) {
      const matcher = compileTextMatcher(scenario.headers['x-t']!);
      assert.ok(matcher.ok);
      const value = request.headers['x-t'];
      if (typeof value !== 'string' || !textMatches(matcher.value, value)) continue;
    }
    return scenario.name;
  }
  return undefined;
}

test('ScenarioStore index – picks the same scenario as a naive scan in list order (seeded, 2,000 sets of up to 400 scenarios)', () => {
  const random = seededRandom(30);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  let matched = 0;
  let requests = 0;
  for (let round = 0; round < 2_000; round++) {
    const scenarios = randomSet(random, 1 + Math.floor(random() * (round % 10 === 0 ? 400 : 30)));
    const store = new ScenarioStore();
    store.replace(scenarios);
    for (let r = 0; r < 20; r++) {
      const segments = Array.from({ length: 1 + Math.floor(random() * 5) }, () => pick(SEGMENTS));
      const request: ScenarioRequest = {
        method: pick(['GET', 'POST']),
        path: `/${segments.join('/')}${random() < 0.1 ? '/' : ''}`,
        query: '',
        headers: random() < 0.5 ? { 'x-t': pick(['a', 'b', 'c']) } : {},
        body: undefined,
      };
      const expected = naiveMatch(scenarios, request);
      assert.equal(
        store.match(request)?.label,
        expected,
        `round ${round}: ${request.method} ${request.path}`,
      );
      requests++;
      if (expected !== undefined) matched++;
    }
  }
  // The sets must exercise both outcomes, or the comparison proves little.
  assert.ok(matched > requests / 5 && matched < requests, `${matched} of ${requests} matched`);
});

test('PathIndex – a prefix longer than the indexed length is indexed by its start; lists keep their order', () => {
  const long = `/${'p'.repeat(MAX_INDEXED_PREFIX + 20)}`;
  const index = new PathIndex<string>([
    { item: 'root', prefix: '' },
    { item: 'long', prefix: long },
    { item: 'exact', exact: '/api' },
    { item: 'api1', prefix: '/api' },
    { item: 'api2', prefix: '/api' },
    { item: 'apiv', prefix: '/api/v' },
  ]);
  const names = (path: string) => index.candidates(path).map((list) => list.join(','));
  assert.deepEqual(names('/api'), ['exact', 'root', 'api1,api2']);
  assert.deepEqual(names('/api/v1'), ['root', 'api1,api2', 'apiv']);
  assert.deepEqual(names('/ap'), ['root']);
  assert.deepEqual(names(`${long}/more`), ['root', 'long']);
  // Cut at the indexed length: a path that shares only those characters is a candidate too (the
  // pattern itself then decides), never one that the pattern could match and the index would miss.
  assert.deepEqual(names(`/${'p'.repeat(MAX_INDEXED_PREFIX)}`), ['root', 'long']);
});
