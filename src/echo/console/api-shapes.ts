/**
 * What the console's API answers, shared by the service and the page: like live-row.ts it imports
 * nothing of node's (the page is type-checked against the DOM alone, page/tsconfig.json).
 */

/** One environment default in effect: its variable and its value as the service reads it. */
export interface FaultDefaultShown {
  readonly variable: string;
  readonly value: string;
}

/** `GET /console/api/faults`. */
export interface FaultSummary {
  /** The master switch (`PUT /control/faults`): `false` serves every echo request plainly. */
  readonly enabled: boolean;
  /** Requests with a fault in progress now, and the most there may be (`ECHO_MAX_ACTIVE_FAULTS`). */
  readonly active: number;
  readonly maxActive: number;
  /** The environment's fault defaults (`ECHO_STATUS`, `ECHO_DELAY`, `ECHO_CHAOS`, ...). */
  readonly defaults: readonly FaultDefaultShown[];
  /** Scenarios in the set. */
  readonly scenarios: number;
  /** Whether requests that ask for nothing get faults now: the switch on, and a default or a scenario. */
  readonly injecting: boolean;
}
