/**
 * What the console's faults panel shows (`GET /console/api/faults`): what makes this service inject
 * faults right now without a client asking (the environment's defaults, the scenario set), the
 * master switch (`PUT /control/faults`) and the safety valve's use (`ECHO_MAX_ACTIVE_FAULTS`).
 */
import { FAULT_FIELDS, type FaultSpec } from '../../scenario/faults.ts';
import type { WeightedList } from '../../scenario/weighted.ts';
import type { EchoState } from '../state.ts';
import type { FaultDefaultShown, FaultSummary } from './api-shapes.ts';

const ENV_OF = new Map(FAULT_FIELDS.map((f) => [f.field, f.env]));

function weighted<T>(list: WeightedList<T>): string {
  // Weights are in millionths of all draws; one entry that takes them all is shown bare.
  const only = list.entries.length === 1 && list.total === 1_000_000;
  return list.entries
    .map((entry) => (only ? String(entry.value) : `${entry.value}:${entry.weight / 10_000}`))
    .join(',');
}

/** The defaults of a parsed spec (`config.faultDefaults`) and `ECHO_CHAOS`, in the variables' order. */
export function describeFaultDefaults(
  spec: FaultSpec | undefined,
  chaosPercent: number,
): FaultDefaultShown[] {
  const shown: FaultDefaultShown[] = [];
  const add = (variable: string | undefined, value: string) => {
    if (variable !== undefined) shown.push({ variable, value });
  };
  if (spec?.delay !== undefined) add(ENV_OF.get(spec.delay.field), `up to ${spec.delay.worstMs} ms`);
  if (spec?.statuses !== undefined) add('ECHO_STATUS', weighted(spec.statuses));
  if (spec?.errors !== undefined) add('ECHO_ERROR', weighted(spec.errors));
  const chaos = spec?.chaosPercent ?? chaosPercent;
  if (chaos > 0) add('ECHO_CHAOS', `${chaos}%`);
  if (spec?.sizes !== undefined) add('ECHO_RESPONSE_SIZE', weighted(spec.sizes));
  if (spec?.compress !== undefined) add('ECHO_COMPRESS', spec.compress);
  if (spec?.contentType !== undefined) add('ECHO_CONTENT_TYPE', spec.contentType);
  if (spec?.throttle !== undefined) add('ECHO_THROTTLE', spec.throttle.text);
  if (spec?.chunkDelayMs !== undefined) add('ECHO_CHUNK_DELAY', `${spec.chunkDelayMs} ms`);
  if (spec?.chunkBytes !== undefined) add('ECHO_CHUNK_SIZE', `${spec.chunkBytes} bytes`);
  if (spec?.bodyDelayMs !== undefined) add('ECHO_BODY_DELAY', `${spec.bodyDelayMs} ms`);
  if (spec?.retryAfter !== undefined) add('ECHO_RETRY_AFTER', spec.retryAfter);
  return shown;
}

/** The panel's facts, read from the live state (nothing is kept: each call reads it again). */
export function faultSummary(state: EchoState): FaultSummary {
  const defaults = describeFaultDefaults(state.config.faultDefaults, state.config.chaosPercent);
  const scenarios = state.scenarios.size;
  return {
    enabled: state.faults.enabled,
    active: state.faults.active,
    maxActive: state.faults.maxActive,
    defaults,
    scenarios,
    injecting: state.faults.enabled && (defaults.length > 0 || scenarios > 0),
  };
}
