/**
 * Resilience instrumentation (`obs.resilience`), for the opossum breakers and cockatiel policies
 * handed to obs:
 *
 * - {@link instrumentBreaker} (opossum) listens to a breaker's events; {@link instrumentPolicy}
 *   (cockatiel) to a circuit breaker policy's. Both feed the same meters:
 *   `obs_circuit_state{breaker,state}` (1 for the current state, 0 for the others: `closed`, `open`,
 *   `half_open`), `obs_circuit_transitions_total{breaker,from,to}` and
 *   `obs_circuit_calls_total{breaker,outcome}` (`success`, `failure`, `timeout`, `rejected`,
 *   `fallback`). Each transition is a log line (a warning when the circuit opens, info otherwise)
 *   and an `obs.circuit.transition` event on the active span, if any.
 * - A cockatiel retry policy counts its retries in `obs_retries_total{policy}` and runs attempt n
 *   (n ≥ 1) with the retry depth raised by n, in the request context and the baggage, like
 *   `obs.retry`: the outbound calls an attempt makes carry `Obs-Retry-Depth` + n. Its `execute` is
 *   wrapped in place; the policy is otherwise the same object and behaves the same.
 * - A cockatiel bulkhead policy counts its rejections in `obs_bulkhead_rejections_total{policy}`.
 *
 * Neither package is a dependency of obs: the part of each used here is typed by its shape. With
 * `obs.resilience.enabled=false` both functions hand back what they were given, untouched. The
 * instrumentation never fails a call: a failure of its own is logged and the call goes on.
 */
import { trace } from '@opentelemetry/api';
import { Counter, Gauge } from 'prom-client';
import type { JsonValue } from '../core/config/config-hash.ts';
import type { ObsCore } from '../core/obs.ts';
import { MAX_RETRY_DEPTH } from '../features/retry/retry-depth.ts';
import { atDepth, currentDepth } from '../features/retry/retry-helper.ts';

const FEATURE = 'resilience';

/** Names of the resilience meters. */
export const RESILIENCE_METRICS = {
  circuitState: 'obs_circuit_state',
  circuitTransitions: 'obs_circuit_transitions_total',
  circuitCalls: 'obs_circuit_calls_total',
  retries: 'obs_retries_total',
  bulkheadRejections: 'obs_bulkhead_rejections_total',
} as const;

/** The span event of a circuit transition. */
export const CIRCUIT_TRANSITION_EVENT = 'obs.circuit.transition';

/** Breakers (and, apart, retry policies and bulkheads) obs instruments at most, per obs instance. */
export const MAX_INSTRUMENTED_RESILIENCE = 1000;
/** A longer breaker or policy name is cut to this many characters. */
export const MAX_RESILIENCE_NAME_LENGTH = 128;
/** The name of a breaker or policy given none. */
const UNNAMED = 'unnamed';
/** Breakers and policies listed in the snapshot section. */
const SNAPSHOT_LIMIT = 100;

/** A circuit's state, as the `state`, `from` and `to` labels say it. */
export type CircuitStateName = 'closed' | 'open' | 'half_open';
/** A call's outcome through a breaker, as the `outcome` label says it. */
export type CircuitOutcome = 'success' | 'failure' | 'timeout' | 'rejected' | 'fallback';

const STATES: readonly CircuitStateName[] = ['closed', 'open', 'half_open'];
const OUTCOMES: readonly CircuitOutcome[] = ['success', 'failure', 'timeout', 'rejected', 'fallback'];

// ---------------------------------------------------------------------------------------------
// Shapes

/** The part of an opossum `CircuitBreaker` obs uses (opossum is not a dependency of obs). */
export interface OpossumBreakerLike {
  readonly name?: string;
  readonly opened?: boolean;
  readonly halfOpen?: boolean;
  on(event: string, listener: (...args: never[]) => void): unknown;
}

/** A cockatiel event: subscribing hands back something to dispose. */
export type CockatielEventLike<T> = (listener: (data: T) => void) => unknown;

/** The part of any cockatiel policy obs uses (cockatiel is not a dependency of obs). */
export interface CockatielPolicyLike {
  execute(...args: never[]): unknown;
}

/** Options of {@link instrumentBreaker}. */
export interface InstrumentBreakerOptions {
  /** The `breaker` label; default the breaker's own `name`. */
  readonly name?: string;
}

/** Options of {@link instrumentPolicy}. */
export interface InstrumentPolicyOptions {
  /** The `breaker` or `policy` label. */
  readonly name: string;
}

// ---------------------------------------------------------------------------------------------
// Instrumentation state, one per obs instance

interface BreakerRecord {
  readonly name: string;
  readonly library: 'opossum' | 'cockatiel';
  state: CircuitStateName;
  transitions: number;
  readonly calls: Record<CircuitOutcome, number>;
}

interface PolicyRecord {
  readonly name: string;
  readonly kind: 'retry' | 'bulkhead';
  retries: number;
  gaveUp: number;
  rejected: number;
}

interface ResilienceKit {
  readonly obs: ObsCore;
  readonly breakers: Map<string, BreakerRecord>;
  readonly policies: Map<string, PolicyRecord>;
  readonly instrumented: WeakSet<object>;
  refused: number;
  meters?: Meters;
  failed(where: string, error: unknown): void;
}

interface Meters {
  readonly state: Gauge<'breaker' | 'state'>;
  readonly transitions: Counter<'breaker' | 'from' | 'to'>;
  readonly calls: Counter<'breaker' | 'outcome'>;
  readonly retries: Counter<'policy'>;
  readonly bulkheadRejections: Counter<'policy'>;
}

const kits = new WeakMap<ObsCore, ResilienceKit>();

function enabled(obs: ObsCore): boolean {
  return obs.config.resilience?.enabled === true;
}

/** The resilience state of `obs`, with its snapshot section, made once per obs. */
function kitOf(obs: ObsCore): ResilienceKit {
  const known = kits.get(obs);
  if (known !== undefined) return known;
  const kit: ResilienceKit = {
    obs,
    breakers: new Map(),
    policies: new Map(),
    instrumented: new WeakSet(),
    refused: 0,
    failed(where, error) {
      try {
        obs.logger.warn(
          { obs: FEATURE, where, err: String(error) },
          `obs could not instrument a ${where}; it goes on without it`,
        );
      } catch {
        // nothing more to do
      }
    },
  };
  obs.addSnapshotSection(FEATURE, () => resilienceSection(kit));
  kits.set(obs, kit);
  return kit;
}

function resilienceSection(kit: ResilienceKit): JsonValue {
  const breakers = [...kit.breakers.values()].slice(0, SNAPSHOT_LIMIT).map((b) => ({
    name: b.name,
    library: b.library,
    state: b.state,
    transitions: b.transitions,
    calls: { ...b.calls },
  }));
  const policies = [...kit.policies.values()];
  const retryPolicies = policies
    .filter((p) => p.kind === 'retry')
    .slice(0, SNAPSHOT_LIMIT)
    .map((p) => ({ name: p.name, retries: p.retries, gave_up: p.gaveUp }));
  const bulkheads = policies
    .filter((p) => p.kind === 'bulkhead')
    .slice(0, SNAPSHOT_LIMIT)
    .map((p) => ({ name: p.name, rejected: p.rejected }));
  return {
    enabled: enabled(kit.obs),
    config: kit.obs.resolved.effective[FEATURE] ?? null,
    metrics: Object.values(RESILIENCE_METRICS),
    breakers_total: kit.breakers.size,
    breakers,
    retry_policies: retryPolicies,
    bulkheads,
    refused_over_limit: kit.refused,
  };
}

/** The meters, made on the first instrumented breaker or policy (none while nothing is handed over). */
function metersOf(kit: ResilienceKit): Meters {
  if (kit.meters !== undefined) return kit.meters;
  const registers = [kit.obs.registry];
  kit.meters = {
    state: new Gauge({
      name: RESILIENCE_METRICS.circuitState,
      help: 'Circuit breaker state: 1 for the current state (closed, open, half_open), 0 for the others',
      labelNames: ['breaker', 'state'],
      registers,
    }),
    transitions: new Counter({
      name: RESILIENCE_METRICS.circuitTransitions,
      help: 'Circuit breaker state transitions, by breaker, from and to state',
      labelNames: ['breaker', 'from', 'to'],
      registers,
    }),
    calls: new Counter({
      name: RESILIENCE_METRICS.circuitCalls,
      help: 'Calls through a circuit breaker, by outcome (success, failure, timeout, rejected, fallback)',
      labelNames: ['breaker', 'outcome'],
      registers,
    }),
    retries: new Counter({
      name: RESILIENCE_METRICS.retries,
      help: 'Retries made by a resilience retry policy (first attempts not counted), by policy',
      labelNames: ['policy'],
      registers,
    }),
    bulkheadRejections: new Counter({
      name: RESILIENCE_METRICS.bulkheadRejections,
      help: 'Calls a bulkhead policy refused (no execution or queue slot left), by policy',
      labelNames: ['policy'],
      registers,
    }),
  };
  return kit.meters;
}

/** A label value from a name: a string, trimmed and cut; `unnamed` when empty. */
export function resilienceName(value: unknown): string {
  const text = typeof value === 'string' ? value.trim() : '';
  if (text === '') return UNNAMED;
  return text.length > MAX_RESILIENCE_NAME_LENGTH ? text.slice(0, MAX_RESILIENCE_NAME_LENGTH) : text;
}

/** Warns that the limit is reached, once per obs instance. */
function refuse(kit: ResilienceKit, what: string, name: string): void {
  kit.refused += 1;
  if (kit.refused > 1) return;
  try {
    kit.obs.logger.warn(
      { obs: FEATURE, name, limit: MAX_INSTRUMENTED_RESILIENCE },
      `obs instruments at most ${MAX_INSTRUMENTED_RESILIENCE} ${what}s; ${name} and the next ones go uninstrumented`,
    );
  } catch {
    // nothing more to do
  }
}

/** The record of breaker `name` (breakers of the same name share it); undefined past the limit. */
function breakerRecord(
  kit: ResilienceKit,
  name: string,
  library: BreakerRecord['library'],
  state: CircuitStateName,
): BreakerRecord | undefined {
  const known = kit.breakers.get(name);
  if (known !== undefined) return known;
  if (kit.breakers.size >= MAX_INSTRUMENTED_RESILIENCE) {
    refuse(kit, 'breaker', name);
    return undefined;
  }
  const calls = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<CircuitOutcome, number>;
  const record: BreakerRecord = { name, library, state, transitions: 0, calls };
  kit.breakers.set(name, record);
  setStateGauge(kit, record);
  return record;
}

function policyRecord(
  kit: ResilienceKit,
  name: string,
  kind: PolicyRecord['kind'],
): PolicyRecord | undefined {
  const key = `${kind}\u0000${name}`;
  const known = kit.policies.get(key);
  if (known !== undefined) return known;
  if (kit.policies.size >= MAX_INSTRUMENTED_RESILIENCE) {
    refuse(kit, `${kind} policy`, name);
    return undefined;
  }
  const record: PolicyRecord = { name, kind, retries: 0, gaveUp: 0, rejected: 0 };
  kit.policies.set(key, record);
  return record;
}

function setStateGauge(kit: ResilienceKit, record: BreakerRecord): void {
  const { state } = metersOf(kit);
  for (const s of STATES) state.set({ breaker: record.name, state: s }, s === record.state ? 1 : 0);
}

function countCall(kit: ResilienceKit, record: BreakerRecord, outcome: CircuitOutcome): void {
  try {
    record.calls[outcome] += 1;
    metersOf(kit).calls.inc({ breaker: record.name, outcome });
  } catch (error) {
    kit.failed('circuit breaker call', error);
  }
}

function transition(kit: ResilienceKit, record: BreakerRecord, to: CircuitStateName): void {
  try {
    const from = record.state;
    if (from === to) return;
    record.state = to;
    record.transitions += 1;
    setStateGauge(kit, record);
    metersOf(kit).transitions.inc({ breaker: record.name, from, to });
    const fields = { obs: FEATURE, breaker: record.name, library: record.library, from, to };
    const message = `circuit breaker ${record.name} went from ${from} to ${to}`;
    if (to === 'open') kit.obs.logger.warn(fields, message);
    else kit.obs.logger.info(fields, message);
    trace.getActiveSpan()?.addEvent(CIRCUIT_TRANSITION_EVENT, {
      'obs.circuit.breaker': record.name,
      'obs.circuit.from': from,
      'obs.circuit.to': to,
    });
  } catch (error) {
    kit.failed('circuit breaker transition', error);
  }
}

/** Subscribes `listener` to a cockatiel event; false when `event` is not one. */
function subscribe<T>(event: unknown, listener: (data: T) => void): boolean {
  if (typeof event !== 'function') return false;
  (event as CockatielEventLike<T>)(listener);
  return true;
}

// ---------------------------------------------------------------------------------------------
// opossum

function opossumState(breaker: OpossumBreakerLike): CircuitStateName {
  if (breaker.halfOpen === true) return 'half_open';
  if (breaker.opened === true) return 'open';
  return 'closed';
}

/**
 * Instruments an opossum `CircuitBreaker` (it listens to its events) and hands it back. The
 * `breaker` label is `options.name`, else the breaker's `name`. Breakers of the same name share
 * their series. With `obs.resilience.enabled=false`, past {@link MAX_INSTRUMENTED_RESILIENCE}
 * breakers, or for a breaker already instrumented by this obs, nothing is done.
 */
export function instrumentBreaker<B extends OpossumBreakerLike>(
  breaker: B,
  obs: ObsCore,
  options: InstrumentBreakerOptions = {},
): B {
  if (!enabled(obs)) return breaker;
  const kit = kitOf(obs);
  try {
    if (breaker === null || typeof breaker !== 'object' || typeof breaker.on !== 'function') {
      throw new TypeError('not an opossum CircuitBreaker (no on method)');
    }
    if (kit.instrumented.has(breaker)) return breaker;
    const name = resilienceName(options?.name ?? breaker.name);
    const record = breakerRecord(kit, name, 'opossum', opossumState(breaker));
    if (record === undefined) return breaker;
    kit.instrumented.add(breaker);
    const on = (event: string, listener: () => void) =>
      breaker.on(event, () => {
        try {
          listener();
        } catch (error) {
          kit.failed('circuit breaker event', error);
        }
      });
    on('open', () => transition(kit, record, 'open'));
    on('halfOpen', () => transition(kit, record, 'half_open'));
    on('close', () => transition(kit, record, 'closed'));
    on('success', () => countCall(kit, record, 'success'));
    on('failure', () => countCall(kit, record, 'failure'));
    on('timeout', () => countCall(kit, record, 'timeout'));
    on('reject', () => countCall(kit, record, 'rejected'));
    on('fallback', () => countCall(kit, record, 'fallback'));
  } catch (error) {
    kit.failed('circuit breaker', error);
  }
  return breaker;
}

// ---------------------------------------------------------------------------------------------
// cockatiel

/** cockatiel's `CircuitState`: Closed 0, Open 1, HalfOpen 2, Isolated 3 (held open: `open`). */
function cockatielState(value: unknown): CircuitStateName {
  if (value === 2) return 'half_open';
  if (value === 1 || value === 3) return 'open';
  return 'closed';
}

function isBrokenCircuitError(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { isBrokenCircuitError?: unknown }).isBrokenCircuitError === true
  );
}

type Execute = (this: unknown, fn: unknown, signal?: AbortSignal) => PromiseLike<unknown>;

/** Replaces the policy's `execute` (an own property over the class method) by `make(original)`. */
function wrapExecute(policy: Record<string, unknown>, make: (original: Execute) => Execute): void {
  // cockatiel's `execute(fn, signal)`, which instrumentCockatiel checked to be a function.
  const original = policy.execute as Execute;
  Object.defineProperty(policy, 'execute', {
    value: make(original),
    writable: true,
    configurable: true,
    enumerable: false,
  });
}

function instrumentCockatielBreaker(kit: ResilienceKit, policy: Record<string, unknown>, name: string): void {
  const record = breakerRecord(kit, name, 'cockatiel', cockatielState(policy.state));
  if (record === undefined) return;
  const guarded =
    <T>(listener: (data: T) => void) =>
    (data: T) => {
      try {
        listener(data);
      } catch (error) {
        kit.failed('circuit breaker event', error);
      }
    };
  subscribe(
    policy.onStateChange,
    guarded((state: unknown) => transition(kit, record, cockatielState(state))),
  );
  subscribe(
    policy.onSuccess,
    guarded(() => countCall(kit, record, 'success')),
  );
  subscribe(
    policy.onFailure,
    guarded(() => countCall(kit, record, 'failure')),
  );
  // An open circuit refuses a call without an event: the refusal is seen as it comes out.
  wrapExecute(
    policy,
    (original) =>
      function (this: unknown, fn, signal) {
        return Promise.resolve(original.call(this, fn, signal)).then(undefined, (error: unknown) => {
          if (isBrokenCircuitError(error)) countCall(kit, record, 'rejected');
          throw error;
        });
      },
  );
}

function instrumentCockatielRetry(kit: ResilienceKit, policy: Record<string, unknown>, name: string): void {
  const record = policyRecord(kit, name, 'retry');
  if (record === undefined) return;
  subscribe(policy.onRetry, () => {
    try {
      record.retries += 1;
      metersOf(kit).retries.inc({ policy: name });
    } catch (error) {
      kit.failed('retry policy event', error);
    }
  });
  subscribe(policy.onGiveUp, () => {
    record.gaveUp += 1;
  });
  const obs = kit.obs;
  wrapExecute(
    policy,
    (original) =>
      function (this: unknown, fn, signal) {
        if (typeof fn !== 'function') return original.call(this, fn, signal);
        let base: number | undefined;
        try {
          base = obs.config.retry.enabled ? currentDepth() : undefined;
        } catch (error) {
          kit.failed('retry policy', error);
        }
        if (base === undefined) return original.call(this, fn, signal);
        const from = base;
        const attemptAtDepth = (context: { attempt?: unknown } | undefined) => {
          const attempt = context?.attempt;
          if (typeof attempt !== 'number' || !Number.isInteger(attempt) || attempt <= 0) return fn(context);
          return atDepth(Math.min(MAX_RETRY_DEPTH, from + attempt), () => fn(context));
        };
        return original.call(this, attemptAtDepth, signal);
      },
  );
}

function instrumentCockatielBulkhead(
  kit: ResilienceKit,
  policy: Record<string, unknown>,
  name: string,
): void {
  const record = policyRecord(kit, name, 'bulkhead');
  if (record === undefined) return;
  subscribe(policy.onReject, () => {
    try {
      record.rejected += 1;
      metersOf(kit).bulkheadRejections.inc({ policy: name });
    } catch (error) {
      kit.failed('bulkhead policy event', error);
    }
  });
}

function instrumentCockatiel(kit: ResilienceKit, policy: unknown, name: string, depth: number): void {
  if (policy === null || typeof policy !== 'object') throw new TypeError('not a cockatiel policy');
  if (kit.instrumented.has(policy)) return;
  const p = policy as Record<string, unknown>;
  // wrap(a, b, …): each policy it wraps is instrumented under the same name.
  if (Array.isArray(p.wrapped)) {
    kit.instrumented.add(policy);
    if (depth < 8) for (const inner of p.wrapped) instrumentCockatiel(kit, inner, name, depth + 1);
    return;
  }
  if (typeof p.execute !== 'function') throw new TypeError('not a cockatiel policy (no execute method)');
  if (typeof p.onStateChange === 'function' && typeof p.state === 'number') {
    instrumentCockatielBreaker(kit, p, name);
  } else if (typeof p.onRetry === 'function') {
    instrumentCockatielRetry(kit, p, name);
  } else if (typeof p.onReject === 'function') {
    instrumentCockatielBulkhead(kit, p, name);
  } else {
    return; // a timeout, fallback or no-op policy: nothing obs measures
  }
  kit.instrumented.add(policy);
}

/**
 * Instruments a cockatiel policy in place and hands it back: a circuit breaker policy feeds the
 * circuit meters (`breaker` label = `options.name`), a retry policy counts its retries and runs
 * each retry attempt with the retry depth raised by the attempt number (with `obs.retry.enabled`),
 * a bulkhead counts its rejections, and `wrap(…)` instruments each policy it wraps under the same
 * name. Other policies are handed back untouched. With `obs.resilience.enabled=false` nothing is
 * done.
 */
export function instrumentPolicy<P extends CockatielPolicyLike>(
  policy: P,
  obs: ObsCore,
  options: InstrumentPolicyOptions,
): P {
  if (!enabled(obs)) return policy;
  const kit = kitOf(obs);
  try {
    instrumentCockatiel(kit, policy, resilienceName(options?.name), 0);
  } catch (error) {
    kit.failed('cockatiel policy', error);
  }
  return policy;
}

/**
 * Registers the resilience snapshot section at startup, so `/actuator/obs` shows the feature before
 * anything is handed to obs.
 */
export function registerResilience(obs: ObsCore): void {
  kitOf(obs);
}
