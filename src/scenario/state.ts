/**
 * The shape of a scenario's state as `GET /scenario/state` lists it. Kept apart from entry.ts and
 * importing nothing of node's, so that the console page (type-checked against the DOM alone) reads
 * the same type the service writes.
 */
import type { ScenarioOrder } from './order.ts';

/**
 * Where one scenario stands, for requests without a session or for one session: what
 * `GET /scenario/state` lists.
 */
export interface ScenarioState {
  /** Position of the scenario in the set, 0-based (the order that decides which matches first). */
  readonly index: number;
  readonly name?: string;
  readonly path?: string;
  readonly pathPattern?: string;
  /** Whether the scenario starts again after its last response. */
  readonly cycle: boolean;
  /** How responses are served: in turn, or drawn by weight. */
  readonly order: ScenarioOrder;
  /**
   * The response the next matching request gets, 0-based; under `order: random`, the response
   * drawn last (the next request draws again once it has been served `repeat` times).
   */
  readonly position: number;
  /** How often the response at `position` was served in its current run (below its `repeat`). */
  readonly positionServed: number;
  /**
   * How often each response was served since the set was loaded or reset, to requests without a
   * session; absent from a session's state (a session keeps a few numbers per scenario, no more).
   */
  readonly served?: number[];
  /** All responses served (to this session, or to requests without one) since the set was loaded or reset. */
  readonly total: number;
  /** Whether the scenario no longer matches (for this session): its `activeFor` or `times` is over. */
  readonly expired: boolean;
  /** With `activeFor`: when it ends, RFC 3339 UTC. */
  readonly activeUntil?: string;
  /** With `times`: how many more requests it answers (for this session). */
  readonly remaining?: number;
}
