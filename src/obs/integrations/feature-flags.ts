/**
 * Feature-flag evaluation correlation (`obs.feature-flags`, opt-in): {@link createFeatureFlagHook}
 * returns an OpenFeature hook; added to the OpenFeature API or a client
 * (`OpenFeature.addHooks(createFeatureFlagHook(app.obs))`), each evaluation (its `after` stage, or
 * its `error` stage) is recorded:
 *
 * - on the active span, as the OpenTelemetry semantic conventions' event `feature_flag.evaluation`
 *   with `feature_flag.key`, `feature_flag.provider.name`, `feature_flag.result.variant` (or
 *   `feature_flag.result.value` when the provider gave no variant), `feature_flag.result.reason`
 *   and, for a failed evaluation, `error.type`;
 * - as a wide event of the same name (`obs.event`: the span event above, `obs_events_total` and a
 *   log line), while `obs.wide-events.enabled`; otherwise the span event alone;
 * - in the request context: each request keeps the flags evaluated while serving it (at most
 *   {@link MAX_FLAGS_PER_REQUEST}, the last result of each), and obs's log lines written in it carry
 *   them as `feature_flags: { key: variant }`.
 *
 * Values are bounded: a variant or value is cut at {@link MAX_FLAG_VALUE_CHARS} characters (an
 * object value is shown as its JSON, cut likewise) and masked while `obs.logging.pii-masking-enabled`;
 * a key is cut at {@link MAX_FLAG_KEY_CHARS}. OpenFeature is not a dependency: the hook is typed by
 * its shape. It never throws into the evaluation.
 */
import { type AttributeValue, trace } from '@opentelemetry/api';
import type { ObsCore } from '../core/obs.ts';
import type { WideEventsApi } from '../features/events.ts';
import { maskText } from '../features/logging/masking.ts';
import { contextKit } from '../features/request-context/context-hook.ts';
import { currentRequestContext } from '../features/request-context/request-context.ts';

const FEATURE = 'feature-flags';

/** The span event and wide event of one evaluation (OpenTelemetry semantic conventions). */
export const FEATURE_FLAG_EVENT = 'feature_flag.evaluation';
/** The attributes of {@link FEATURE_FLAG_EVENT}. */
export const FEATURE_FLAG_ATTRIBUTES = {
  key: 'feature_flag.key',
  provider: 'feature_flag.provider.name',
  variant: 'feature_flag.result.variant',
  value: 'feature_flag.result.value',
  reason: 'feature_flag.result.reason',
  errorType: 'error.type',
} as const;

/** Flags one request keeps for its log lines; later ones are counted, not kept. */
export const MAX_FLAGS_PER_REQUEST = 20;
/** Characters of a variant or value kept. */
export const MAX_FLAG_VALUE_CHARS = 64;
/** Characters of a flag key kept. */
export const MAX_FLAG_KEY_CHARS = 128;
/** Flags whose evaluations the snapshot counts one by one. */
const MAX_TRACKED_FLAGS = 1000;
/** Flags listed in the snapshot. */
const TOP_FLAGS = 20;

/** The part of OpenFeature's `HookContext` the hook reads. */
export interface FlagHookContextLike {
  readonly flagKey: string;
  readonly providerMetadata?: { readonly name?: string };
}

/** The part of OpenFeature's `EvaluationDetails` the hook reads. */
export interface FlagEvaluationDetailsLike {
  readonly flagKey?: string;
  readonly value?: unknown;
  readonly variant?: string;
  readonly reason?: string;
  readonly errorCode?: string;
}

/** An OpenFeature hook (server and web SDKs), typed by its shape. */
export interface FeatureFlagHook {
  after(hookContext: FlagHookContextLike, details: FlagEvaluationDetailsLike): void;
  error(hookContext: FlagHookContextLike, error: unknown): void;
}

/** The flags evaluated while serving one request: the last result of each, bounded. */
export class RequestFlags {
  /** Made on the first evaluation: most requests evaluate no flag, and pay no map. */
  #flags: Map<string, string> | undefined;
  /** Evaluations of flags past {@link MAX_FLAGS_PER_REQUEST} distinct ones, not kept. */
  dropped = 0;

  /** Keeps the result of a flag (replacing an earlier one of the same flag). */
  record(key: string, result: string): void {
    this.#flags ??= new Map();
    const flags = this.#flags;
    if (!flags.has(key) && flags.size >= MAX_FLAGS_PER_REQUEST) {
      this.dropped += 1;
      return;
    }
    flags.set(key, result);
  }

  /** `{ key: variant }`, as the log lines show it. */
  toJSON(): Record<string, string> {
    return this.#flags === undefined ? {} : Object.fromEntries(this.#flags);
  }

  get size(): number {
    return this.#flags?.size ?? 0;
  }
}

/** The flags of the current request, for obs's log lines; undefined outside one or with none. */
export function requestFlagFields(): Record<string, string> | undefined {
  const flags = currentRequestContext()?.state?.[FEATURE];
  return flags instanceof RequestFlags && flags.size > 0 ? flags.toJSON() : undefined;
}

/** A variant or value as a short string: the variant when given, else the value's text, cut. */
export function flagResultText(details: FlagEvaluationDetailsLike | undefined): string | undefined {
  if (details === undefined) return undefined;
  let text: string;
  if (typeof details.variant === 'string' && details.variant !== '') text = details.variant;
  else {
    const value = details.value;
    if (value === undefined) return undefined;
    if (typeof value === 'string') text = value;
    else if (typeof value === 'number' || typeof value === 'boolean') text = String(value);
    else {
      try {
        text = JSON.stringify(value) ?? String(value);
      } catch {
        text = '[unserializable]';
      }
    }
  }
  return text.length > MAX_FLAG_VALUE_CHARS ? `${text.slice(0, MAX_FLAG_VALUE_CHARS)}…` : text;
}

interface FlagFigures {
  evaluations: number;
  errors: number;
  flagsDropped: number;
  flagsUntracked: number;
  readonly byFlag: Map<string, { evaluations: number; errors: number; last: string | null }>;
}

const figuresByObs = new WeakMap<ObsCore, FlagFigures>();

function figuresOf(obs: ObsCore): FlagFigures {
  let figures = figuresByObs.get(obs);
  if (figures === undefined) {
    figures = { evaluations: 0, errors: 0, flagsDropped: 0, flagsUntracked: 0, byFlag: new Map() };
    figuresByObs.set(obs, figures);
  }
  return figures;
}

/**
 * Adds the request context's part of feature flags (each request of an app with
 * `obs.feature-flags.enabled` gets its bounded list of evaluated flags) and the `feature-flags`
 * snapshot section. plugin.ts calls it.
 */
export function registerFeatureFlags(obs: ObsCore): void {
  const config = obs.config[FEATURE];
  const figures = figuresOf(obs);
  obs.addSnapshotSection(FEATURE, () => ({
    enabled: config.enabled,
    config: obs.resolved.effective[FEATURE] ?? null,
    event: FEATURE_FLAG_EVENT,
    max_flags_per_request: MAX_FLAGS_PER_REQUEST,
    evaluations: figures.evaluations,
    errors: figures.errors,
    flags_dropped_from_requests: figures.flagsDropped,
    flags_untracked: figures.flagsUntracked,
    flags: [...figures.byFlag.entries()]
      .map(([key, f]) => ({ key, evaluations: f.evaluations, errors: f.errors, last: f.last }))
      .sort((a, b) => b.evaluations - a.evaluations || a.key.localeCompare(b.key))
      .slice(0, TOP_FLAGS),
  }));
  if (!config.enabled) return;
  contextKit(obs).addContributor(FEATURE, ({ store }) => {
    store.state[FEATURE] = new RequestFlags();
  });
}

/**
 * An OpenFeature hook that records each flag evaluation on the active span, as a wide event and in
 * the request's log context (see the module comment). It records nothing while
 * `obs.feature-flags.enabled` is false.
 */
export function createFeatureFlagHook(obs: ObsCore & WideEventsApi): FeatureFlagHook {
  const enabled = obs.config[FEATURE].enabled;
  const mask = obs.config.logging['pii-masking-enabled'];
  const wideEvents = obs.config['wide-events'].enabled;
  const figures = figuresOf(obs);
  let warned = false;

  const record = (
    hookContext: FlagHookContextLike,
    details: FlagEvaluationDetailsLike | undefined,
    error: unknown,
  ): void => {
    if (!enabled) return;
    try {
      const rawKey = String(hookContext?.flagKey ?? details?.flagKey ?? '');
      const key = rawKey.slice(0, MAX_FLAG_KEY_CHARS);
      const failed = error !== undefined || details?.errorCode !== undefined;
      let result = flagResultText(error === undefined ? details : undefined);
      if (result !== undefined && mask) result = maskText(result);
      const attributes: Record<string, AttributeValue> = { [FEATURE_FLAG_ATTRIBUTES.key]: key };
      const provider = hookContext?.providerMetadata?.name;
      if (typeof provider === 'string' && provider !== '') {
        attributes[FEATURE_FLAG_ATTRIBUTES.provider] = provider.slice(0, MAX_FLAG_KEY_CHARS);
      }
      if (result !== undefined) {
        const hasVariant = typeof details?.variant === 'string' && details.variant !== '';
        attributes[hasVariant ? FEATURE_FLAG_ATTRIBUTES.variant : FEATURE_FLAG_ATTRIBUTES.value] = result;
      }
      if (typeof details?.reason === 'string') {
        attributes[FEATURE_FLAG_ATTRIBUTES.reason] = details.reason.slice(0, MAX_FLAG_VALUE_CHARS);
      }
      if (failed) {
        attributes[FEATURE_FLAG_ATTRIBUTES.errorType] = errorTypeOf(error, details);
      }

      figures.evaluations += 1;
      if (failed) figures.errors += 1;
      let flag = figures.byFlag.get(key);
      if (flag === undefined && figures.byFlag.size < MAX_TRACKED_FLAGS) {
        flag = { evaluations: 0, errors: 0, last: null };
        figures.byFlag.set(key, flag);
      } else if (flag === undefined) figures.flagsUntracked += 1;
      if (flag !== undefined) {
        flag.evaluations += 1;
        if (failed) flag.errors += 1;
        flag.last = result ?? null;
      }

      const flags = currentRequestContext()?.state?.[FEATURE];
      if (flags instanceof RequestFlags) {
        const before = flags.dropped;
        flags.record(key, result ?? (failed ? 'error' : ''));
        figures.flagsDropped += flags.dropped - before;
      }

      // obs.event puts the same event on the active span; without it, the span event alone.
      if (wideEvents) obs.event(FEATURE_FLAG_EVENT, attributes as Record<string, string>);
      else trace.getActiveSpan()?.addEvent(FEATURE_FLAG_EVENT, attributes);
    } catch (failure) {
      // telemetry never fails an evaluation
      if (warned) return;
      warned = true;
      try {
        obs.logger.warn(
          { obs: FEATURE, err: String(failure) },
          'obs could not record a feature-flag evaluation; the evaluation goes on',
        );
      } catch {
        // nothing more to do
      }
    }
  };

  return {
    after(hookContext, details) {
      record(hookContext, details, undefined);
    },
    error(hookContext, error) {
      record(hookContext, undefined, error ?? 'error');
    },
  };
}

/** `error.type`: the OpenFeature error code, else the error's name, else `general`. */
function errorTypeOf(error: unknown, details: FlagEvaluationDetailsLike | undefined): string {
  const code =
    (typeof error === 'object' && error !== null && (error as { code?: unknown }).code) || details?.errorCode;
  if (typeof code === 'string' && code !== '') return code.slice(0, MAX_FLAG_VALUE_CHARS).toLowerCase();
  if (error instanceof Error && error.name !== '') return error.name.slice(0, MAX_FLAG_VALUE_CHARS);
  return 'general';
}
