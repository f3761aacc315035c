/**
 * The live scenario set of one echo process. `next` sits on the hot path of every echo request, so
 * all the work (validation, delay parsing, header normalisation) happens once, in `replace`.
 */
import { type DelaySpec, parseDelaySpec } from './duration.ts';
import { ScenarioInvalidError } from './errors.ts';
import type { Scenario, ScenarioResponse } from './schema.ts';
import { copyScenario, validateScenarios } from './validate.ts';

/** The response a scenario supplies for one request: ready to send, nothing left to parse. */
export interface ScenarioStep {
  /** HTTP status, 100-599. */
  readonly status: number;
  /** Response body; `undefined` when the scenario response has none. */
  readonly body: string | undefined;
  /** Response headers, names lowercased (HTTP names are case-insensitive); frozen, may be empty. */
  readonly headers: Readonly<Record<string, string>>;
  /** Delay before responding, pre-parsed; `undefined` when there is none. */
  readonly delay: DelaySpec | undefined;
  /** Position of this response in its scenario's cycle, 0-based. */
  readonly index: number;
}

interface Cycle {
  readonly steps: readonly ScenarioStep[];
  next: number;
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * In-memory scenarios, one cycle per path. Replacing is atomic: a request sees the old set or the
 * new one, never a mix, and every cycle starts again at its first response.
 */
export class ScenarioStore {
  #scenarios: readonly Scenario[] = [];
  #cycles: ReadonlyMap<string, Cycle> = new Map();

  /** Number of scenarios (paths) in the current set. */
  get size(): number {
    return this.#scenarios.length;
  }

  /**
   * Swaps in a whole new set and restarts every cycle. The set is validated first (schema, delays,
   * unique paths, header names); when it is invalid nothing changes.
   * @throws {ScenarioInvalidError} `SCENARIO_ERR_INVALID` listing every problem.
   */
  replace(scenarios: readonly Scenario[]): void {
    const result = validateScenarios(scenarios);
    if (!result.ok) throw new ScenarioInvalidError(result.problems, 'scenario store');
    const cycles = new Map<string, Cycle>();
    for (const scenario of result.scenarios) {
      cycles.set(scenario.path, { steps: scenario.responses.map(toStep), next: 0 });
    }
    this.#scenarios = result.scenarios;
    this.#cycles = cycles;
  }

  /** The current scenarios, as deep copies: changing them does not change the store. */
  list(): Scenario[] {
    return this.#scenarios.map(copyScenario);
  }

  /**
   * The response for a request to `path` (exact match, case-sensitive), advancing that path's cycle
   * and wrapping after its last response. Allocates nothing.
   * @returns the step, or `undefined` when no scenario matches.
   */
  next(path: string): ScenarioStep | undefined {
    const cycle = this.#cycles.get(path);
    if (cycle === undefined) return undefined;
    const step = cycle.steps[cycle.next]!;
    cycle.next = cycle.next + 1 === cycle.steps.length ? 0 : cycle.next + 1;
    return step;
  }
}

function toStep(response: ScenarioResponse, index: number): ScenarioStep {
  return Object.freeze({
    status: response.status,
    body: response.body,
    headers: response.headers === undefined ? NO_HEADERS : lowercaseNames(response.headers),
    // Validated in `replace`, so it parses.
    delay: response.delay === undefined ? undefined : Object.freeze(parseDelaySpec(response.delay)),
    index,
  });
}

function lowercaseNames(headers: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  return Object.freeze(
    Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value])),
  );
}
