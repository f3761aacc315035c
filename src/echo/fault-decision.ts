/**
 * Which faults a request gets, decided in one place for every way a request reaches the service:
 * the echo pipeline (every HTTP request) and a WebSocket handshake the reverse proxy tunnels
 * (`proxy-upgrade.ts`). From its parsed `X-Echo-*` headers, the chaos percentage, the scenario it
 * matches and the environment's defaults (ADR 0033): the drawn controls, the scenario step and the
 * delay, each fault admitted through the caller's ledger. The caller then acts: waits, answers,
 * forwards. Draws happen in one fixed order, so a seeded request replays.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { drawDelayMs } from '../scenario/duration.ts';
import { FAULT_FIELDS, type FaultField } from '../scenario/faults.ts';
import type { ScenarioHandle, ScenarioRequest, ScenarioStep } from '../scenario/index.ts';
import type { EchoConfig } from './config.ts';
import type { Controls, Fallback, ParseResult } from './controls.ts';
import { withFallbacks } from './controls.ts';
import { CHAOS_STATUSES } from './faults.ts';
import { pick, type RandomSource } from './random.ts';
import type { ApplyFault } from './slow-bodies.ts';

/** The scenario set as a request's decision reads it. */
export interface ScenarioMatcher {
  readonly size: number;
  /** Whether a scenario of the set names an `upstream` (matched then even when faults are off). */
  readonly routes: boolean;
  /** With the request's `X-Echo-Session` and its (seeded) randomness, for `order: random`. */
  match(
    request: ScenarioRequest,
    session: string | undefined,
    random: RandomSource,
  ): ScenarioHandle | undefined;
  take(handle: ScenarioHandle): ScenarioStep;
  /** Whether steps are taken in a home shared with other processes (`ECHO_STATE_URL`, up). */
  readonly sharing?: boolean;
  /** `take` in that home: `undefined` when the scenario's `times` ran out on the fleet. */
  takeShared?(handle: ScenarioHandle): Promise<ScenarioStep | undefined>;
}

/** What was decided for one request. */
export interface FaultDecision {
  /** The headers' controls with the scenario's and the environment's for the fields they leave unset. */
  readonly controls: Controls;
  /** The scenario response the request takes (its position moved), if any. */
  readonly step: ScenarioStep | undefined;
  /** Whether the step counted as a `scenario` fault (a pass-through forwarded step does not). */
  readonly scenarioApplied: boolean;
  /**
   * The `upstream` of the scenario the request matched when its faults were not admitted (the
   * master switch is off, the safety valve full): routing is not a fault, so it still goes there.
   */
  readonly route: string | undefined;
  /** `scenario <label>`: the control that names the step's scenario. */
  readonly scenario: string | undefined;
  /** The chaos status drawn (not yet admitted: chaos is admitted where it answers), if any. */
  readonly chaosStatus: number | undefined;
  /** Whether the chaos percentage came from `X-Echo-Chaos` (else `ECHO_CHAOS`). */
  readonly chaosFromHeader: boolean;
  /** The delay admitted (header or environment, plus the scenario's), at most `ECHO_MAX_DELAY`. */
  readonly delayMs: number;
}

/** The parts of a request a decision reads. */
export interface DecisionInput {
  readonly parsed: ParseResult;
  readonly random: RandomSource;
  /** The request as scenarios match it; called only when a scenario may match. */
  readonly scenarioRequest: () => ScenarioRequest;
  /** Admits one fault through the request's ledger (safety valve, master switch). */
  readonly fault: ApplyFault;
  /** Whether the request may still get faults (its ledger is not `plain`). */
  readonly allowed: () => boolean;
}

const ENV_NAMES = Object.fromEntries(FAULT_FIELDS.map((f) => [f.field, f.env])) as Record<FaultField, string>;

/** A decider for one app: the environment's defaults are prepared once. */
export function createFaultDecider(config: EchoConfig, scenarios: ScenarioMatcher) {
  // The environment's fault defaults; under a scenario, without the status (its response has its own).
  const envFaults = config.faultDefaults;
  const envFallback = (statusToo: boolean): Fallback | undefined => {
    if (envFaults === undefined) return undefined;
    const { statuses: _statuses, ...rest } = envFaults;
    const spec = statusToo ? envFaults : rest;
    return { spec, origin: (field) => ({ control: ENV_NAMES[field], source: 'env' }) };
  };
  const envAlone = envFallback(true);
  const envUnderScenario = envFallback(false);

  /**
   * The rest of a decision once the step is known: the fallbacks to the scenario's and the
   * environment's fields, and the delay.
   */
  const finish = (
    input: DecisionInput,
    headerControls: Controls,
    matched: Matched,
    chaosStatus: number | undefined,
    chaosFromHeader: boolean,
  ): FaultDecision => {
    const { parsed, random, fault } = input;
    const { step, scenario } = matched;
    let controls = headerControls;
    // The fields the headers leave unset: the scenario response's, then the environment's (ADR 0033).
    // Drawn even when faults are refused, so a seeded request's later draws do not move.
    const stepFaults = step?.faults;
    if (stepFaults !== undefined || envAlone !== undefined) {
      const fallbacks: Fallback[] = [];
      if (stepFaults !== undefined) {
        const origin = { control: scenario!, source: 'scenario' } as const;
        fallbacks.push({ spec: stepFaults, origin: () => origin });
      }
      // A scenario response without a status leaves it to the environment too.
      const env = step?.status === undefined ? envAlone : envUnderScenario;
      if (env !== undefined) fallbacks.push(env);
      controls = withFallbacks(controls, parsed.spec, fallbacks, random);
    }

    let delayMs = 0;
    if (controls.delayMs !== undefined && controls.delayMs > 0) {
      const from = controls.origins?.delay ?? {
        control: controls.delayControl ?? 'X-Echo-Delay',
        source: 'header' as const,
      };
      if (fault('delay', from.control, from.source, controls.delayMs)) delayMs = controls.delayMs;
    }
    if (step?.delay !== undefined) {
      const drawn = drawDelayMs(step.delay, random, config.maxDelayMs);
      if (drawn > 0 && fault('delay', scenario!, 'scenario', drawn)) delayMs += drawn;
    }
    if (delayMs > config.maxDelayMs) delayMs = config.maxDelayMs;
    return { controls, ...matched, chaosStatus, chaosFromHeader, delayMs };
  };

  /**
   * Whether a step is forwarded and only adds faults drawn one by one (a delay, an error, a throttle,
   * each with its percentage), or nothing at all: taken without a `scenario` fault, so the meters,
   * X-Echo-Fault and history name only the faults that were drawn, and a forwarded request that got
   * none is no fault. A step with a status or headers changes every answer it gives: a fault.
   */
  const addsOnlyFaults = (step: ScenarioStep) =>
    step.status === undefined &&
    Object.keys(step.headers).length === 0 &&
    (step.upstream !== undefined ||
      (config.upstream !== undefined && forwardTo({ step, route: undefined }) === 'default'));

  /**
   * Decides a request's faults. A promise only when its step is taken in a shared home
   * (`ECHO_STATE_URL`): every other request is decided at once.
   */
  return function decide(input: DecisionInput): FaultDecision | Promise<FaultDecision> {
    const { random, fault } = input;
    const controls = input.parsed.controls;
    // Chaos and an error answer instead of everything else, so they are decided first: a request
    // they answer takes no scenario response (its position stays) and waits no scenario delay.
    const headerChaos = controls.chaosPercent;
    const chaosPercent = headerChaos ?? config.chaosPercent;
    const chaosStatus =
      chaosPercent > 0 && random() * 100 < chaosPercent ? pick(CHAOS_STATUSES, random) : undefined;
    const chaosFromHeader = headerChaos !== undefined;
    const allowed = input.allowed();
    // A chaos or an error that cannot be admitted does not keep the request from its scenario.
    const failing = allowed && (chaosStatus !== undefined || controls.error !== undefined);

    // The scenario's position moves only once its fault is admitted (safety valve, master switch).
    // Matched even when faults are refused, for its `upstream` alone: routing is not a fault.
    const handle =
      !failing && scenarios.size > 0 && (allowed || scenarios.routes)
        ? scenarios.match(input.scenarioRequest(), controls.session, random)
        : undefined;
    const scenario = handle === undefined ? undefined : `scenario ${handle.label}`;
    if (handle === undefined || !allowed) {
      const matched = { step: undefined, scenarioApplied: false, route: handle?.upstream, scenario };
      return finish(input, controls, matched, chaosStatus, chaosFromHeader);
    }
    // Shared across processes: the step is taken there first (one atomic step), then admitted.
    if (scenarios.sharing === true && scenarios.takeShared !== undefined) {
      const position = handle.position;
      return scenarios.takeShared(handle).then((step) => {
        const applied =
          step !== undefined && !addsOnlyFaults(step) && fault('scenario', scenario!, 'scenario', position);
        const matched = { step, scenarioApplied: applied, route: undefined, scenario };
        return finish(input, controls, matched, chaosStatus, chaosFromHeader);
      });
    }
    // A forwarded step that only adds faults is no fault itself: its faults are admitted one by one
    // (finish), so the meters, X-Echo-Fault and history tell a request that drew none from an
    // injected answer.
    let step: ScenarioStep | undefined;
    let scenarioApplied = false;
    let route: string | undefined;
    const next = handle.next;
    if (next !== undefined && addsOnlyFaults(next)) {
      step = scenarios.take(handle);
    } else if (fault('scenario', scenario!, 'scenario', handle.position)) {
      step = scenarios.take(handle);
      scenarioApplied = true;
    } else route = handle.upstream;
    return finish(input, controls, { step, scenarioApplied, route, scenario }, chaosStatus, chaosFromHeader);
  };
}

/** What the scenario part of a decision found. */
interface Matched {
  readonly step: ScenarioStep | undefined;
  readonly scenarioApplied: boolean;
  readonly route: string | undefined;
  readonly scenario: string | undefined;
}

/** A request as scenarios match it: method, path, query, headers and (the head of) its body. */
export function scenarioRequestOf(
  method: string | undefined,
  url: string,
  headers: IncomingHttpHeaders,
  body: Buffer | undefined,
): ScenarioRequest {
  const q = url.indexOf('?');
  return {
    method: method ?? 'GET',
    path: q === -1 ? url : url.slice(0, q),
    query: q === -1 ? '' : url.slice(q + 1),
    headers,
    body,
  };
}

/**
 * Where a decided request is forwarded: a URL (its scenario's `upstream`), `default` (to
 * `ECHO_UPSTREAM` when there is one: no scenario took it, or its response only adds faults, with
 * no status, body or size of its own), or `undefined` (its scenario answers it).
 */
export function forwardTo(decision: Pick<FaultDecision, 'step' | 'route'>): string | 'default' | undefined {
  const { step, route } = decision;
  if (step === undefined) return route ?? 'default';
  if (step.upstream !== undefined) return step.upstream;
  if (step.status !== undefined || step.body !== undefined || step.faults?.sizes !== undefined)
    return undefined;
  return 'default';
}
