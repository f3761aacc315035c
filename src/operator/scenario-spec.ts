/**
 * An EchoScenario's spec as planning reads it: its problems, the scenario it pushes, what that
 * scenario matches (two EchoScenarios of one target matching the same requests conflict) and where its
 * pods are. Pure functions of the spec.
 */
import assert from 'node:assert/strict';
import { type Scenario, validateScenarios } from '../scenario/index.ts';
import { blastRadiusProblems } from './blast-radius.ts';
import type { EchoScenario, EchoScenarioTarget } from './echo-scenario.ts';
import { lifecycleProblems } from './lifecycle.ts';

/** Problems of an EchoScenario's spec that make it unusable, or `undefined` when it is valid. */
export function specProblems(es: EchoScenario): string | undefined {
  const spec = es.spec;
  const problems: string[] = [];
  const target = spec?.target;
  if (target === undefined) problems.push('spec.target: required');
  else {
    if ((target.service === undefined) === (target.selector === undefined)) {
      problems.push('spec.target: exactly one of service or selector');
    }
    if (target.selector !== undefined && Object.keys(target.selector.matchLabels ?? {}).length === 0) {
      problems.push('spec.target.selector.matchLabels: must name at least one label');
    }
    if (target.port === undefined || target.port === '') problems.push('spec.target.port: required');
    problems.push(...blastRadiusProblems(target));
  }
  problems.push(...lifecycleProblems(spec as Record<string, unknown> | undefined));
  const result = validateScenarios([scenarioFields(spec)]);
  if (!result.ok) {
    for (const p of result.problems)
      problems.push(`spec${p.path.replace(/^\/0/, '').replaceAll('/', '.')}: ${p.message}`);
  }
  return problems.length === 0 ? undefined : problems.join('; ');
}

/** The scenario fields of a spec that are given, as they are (unvalidated). */
function scenarioFields(spec: EchoScenario['spec']): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const key of SCENARIO_SPEC_FIELDS) {
    if (spec?.[key] !== undefined) fields[key] = spec[key];
  }
  return fields;
}

const SCENARIO_SPEC_FIELDS = [
  'path',
  'pathPattern',
  'method',
  'headers',
  'query',
  'body',
  'cycle',
  'upstream',
  'order',
  'activeFor',
  'times',
  'responses',
] as const;

/**
 * The scenario a valid EchoScenario pushes: its spec's fields, named after the EchoScenario (unique
 * in the namespace, so the echo's state routes can address it by `name`).
 */
export function scenarioOf(es: EchoScenario): Scenario {
  const result = validateScenarios([{ name: es.metadata.name, ...scenarioFields(es.spec) }]);
  // Only EchoScenarios that validated reach here: anything else is a bug.
  assert.ok(result.ok, `scenarioOf: invalid EchoScenario ${es.metadata.name}`);
  return result.scenarios[0]!;
}

/**
 * What a scenario matches, as one text: two EchoScenarios of one target with the same key would
 * serve the same requests, so only the older is pushed (a newer one with other conditions on the
 * same path is fine: the echo tries them oldest first). Method and header names are case-insensitive.
 */
export function matchKey(scenario: Scenario): string {
  const sorted = (map: Record<string, string> | undefined, lower: boolean) =>
    map === undefined
      ? undefined
      : Object.entries(map)
          .map(([k, v]) => [lower ? k.toLowerCase() : k, v])
          .sort(([a], [b]) => (a! < b! ? -1 : a! > b! ? 1 : 0));
  return JSON.stringify([
    scenario.path ?? null,
    scenario.pathPattern ?? null,
    scenario.method === undefined ? null : [...new Set(scenario.method.map((m) => m.toUpperCase()))].sort(),
    sorted(scenario.headers, true) ?? null,
    sorted(scenario.query, false) ?? null,
    scenario.body ?? null,
  ]);
}

/** How a conflict names what is taken: the path or pattern, and "with conditions" when it has them. */
export function describeMatch(scenario: Scenario): string {
  const where = scenario.path !== undefined ? `path ${scenario.path}` : `pathPattern ${scenario.pathPattern}`;
  const conditions =
    scenario.method !== undefined ||
    scenario.headers !== undefined ||
    scenario.query !== undefined ||
    scenario.body !== undefined;
  return conditions ? `${where} with the same conditions` : where;
}

/** Where an EchoScenario's pods are: the Service or the selector, and the port (valid targets only). */
export function targetIdOf(target: EchoScenarioTarget): string {
  return target.service !== undefined
    ? `service\0${target.service}\0${target.port}`
    : `selector\0${JSON.stringify(Object.entries(target.selector!.matchLabels!).sort())}\0${target.port}`;
}

/** What planning needs of an EchoScenario's spec: its problems, else its scenario and match key. */
export interface DerivedSpec {
  readonly problems: string | undefined;
  readonly scenario?: Scenario;
  readonly matchKey?: string;
}

/** {@link DerivedSpec} of `es`, worked out now (planner.ts keeps them per spec). */
export function deriveSpec(es: EchoScenario): DerivedSpec {
  const problems = specProblems(es);
  if (problems !== undefined) return { problems };
  const scenario = scenarioOf(es);
  return { problems, scenario, matchKey: matchKey(scenario) };
}
