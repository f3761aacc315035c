/**
 * Which scenario would answer a request, and why each other would not, worked out without moving
 * anything: the console's dry run (issue #37). {@link ScenarioStore.peek} hands it the store's
 * entries and a way to read a cursor that makes none; nothing here writes.
 */
import { type Cursor, type Entry, LazyRequest, type Mismatch, type ScenarioRequest } from './entry.ts';

/** Most scenarios a peek describes one by one; the rest are counted. */
export const MAX_PEEKED_SCENARIOS = 500;

/** What a peek says of one scenario. */
export interface PeekedScenario {
  /** Its place in the set, 0-based. */
  readonly index: number;
  /** Its name, else its `path`, else its `pathPattern`. */
  readonly label: string;
  /**
   * - `answers`: the first live match in set order: it would answer;
   * - `shadowed`: it matches too, but an earlier scenario answers first;
   * - `expired`: it matches, but its `activeFor` is over or its `times` answered (for the session);
   * - `no-match`: a condition fails (`reason`).
   */
  readonly outcome: 'answers' | 'shadowed' | 'expired' | 'no-match';
  /** Why it does not answer: the condition that fails, or what expired it. */
  readonly reason?: Mismatch | { readonly field: 'activeFor' | 'times'; readonly message: string };
  /**
   * For the one that answers: the response it would serve now, 0-based; `null` under `order: random`
   * when the answer is drawn as the request comes.
   */
  readonly response?: number | null;
  /** The status of that response, when it sets one. */
  readonly status?: number;
}

/** The outcome of {@link ScenarioStore.peek}. */
export interface ScenarioPeek {
  /** The index of the scenario that would answer; `undefined` when none would. */
  readonly answer: number | undefined;
  /** The scenarios in set order, the first {@link MAX_PEEKED_SCENARIOS}. */
  readonly scenarios: PeekedScenario[];
  /** Scenarios past that bound, not described. */
  readonly omitted: number;
}

/** What a peek reads of the store, without changing it. */
export interface PeekContext {
  readonly now: number;
  /** The cursor of `entry` for the session, or `undefined` when it has none yet: never made here. */
  readonly cursorOf: (entry: Entry) => Cursor | undefined;
  /** Cursors kept in a shared home: `times` is counted by the fleet, not here (as `match` does). */
  readonly sharing: boolean;
}

export function peekEntries(
  entries: readonly Entry[],
  request: ScenarioRequest,
  context: PeekContext,
): ScenarioPeek {
  const lazy = new LazyRequest(request);
  const scenarios: PeekedScenario[] = [];
  let answer: number | undefined;
  for (const entry of entries) {
    const described = scenarios.length < MAX_PEEKED_SCENARIOS;
    // Past the bound only the answer is looked for.
    if (!described && answer !== undefined) break;
    const base = { index: entry.index, label: entry.label };
    const mismatch = entry.mismatch(request, lazy);
    let peeked: PeekedScenario;
    if (mismatch !== undefined) peeked = { ...base, outcome: 'no-match', reason: mismatch };
    else {
      const cursor = context.cursorOf(entry);
      const ended = entry.activeForMs !== undefined && entry.ended(context.now);
      const timesOver =
        !context.sharing && entry.times !== undefined && cursor !== undefined && cursor.total >= entry.times;
      if (ended) {
        peeked = {
          ...base,
          outcome: 'expired',
          reason: {
            field: 'activeFor',
            message: `activeFor ${entry.scenario.activeFor} ended at ${new Date(entry.activeUntil).toISOString()}`,
          },
        };
      } else if (timesOver) {
        peeked = {
          ...base,
          outcome: 'expired',
          reason: { field: 'times', message: `times: ${entry.times}, all answered` },
        };
      } else if (answer !== undefined) peeked = { ...base, outcome: 'shadowed' };
      else {
        answer = entry.index;
        const position = cursor?.position ?? 0;
        const drawn = entry.random !== undefined && (cursor?.positionServed ?? 0) === 0;
        const status = drawn ? undefined : entry.steps[position]?.status;
        peeked = {
          ...base,
          outcome: 'answers',
          response: drawn ? null : position,
          ...(status === undefined ? {} : { status }),
        };
      }
    }
    if (described) scenarios.push(peeked);
  }
  return { answer, scenarios, omitted: entries.length - scenarios.length };
}
