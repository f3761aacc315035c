/**
 * Head sampling (`obs.sampling`) as an OpenTelemetry sampler the application hands to its SDK.
 * obs never imports an SDK, so the sampler has the SDK's `Sampler` shape
 * (`shouldSample(context, traceId, spanName, spanKind, attributes, links)` → `{decision}`) with
 * the decision numbers of `@opentelemetry/sdk-trace-base` (0 NOT_RECORD, 1 RECORD,
 * 2 RECORD_AND_SAMPLED), declared here.
 *
 * ```ts
 * const { config } = loadObsConfig({ env: process.env });
 * const sdk = new NodeSDK({
 *   sampler: createObsSampler(config),
 *   spanProcessors: [createErrorUpgradeSpanProcessor(new BatchSpanProcessor(exporter))],
 * });
 * ```
 *
 * The sampler is parent-based: a span with a parent follows the parent's sampled flag, a root span
 * is sampled when its trace id falls under `obs.sampling.probability` (deterministic on the trace
 * id, so every service with the same rate agrees on a trace). With `prefer-sampling-on-error`, a
 * span the rate drops is still RECORDed (not sampled): it costs memory while it lives but is not
 * exported, unless {@link createErrorUpgradeSpanProcessor} sees it end with status ERROR and
 * exports it after all. This is best effort: the upgraded span is exported alone, its parents and
 * the services downstream already decided not to sample the trace, so the trace is partial.
 */
import {
  type Attributes,
  type Context,
  isSpanContextValid,
  type Link,
  type SpanContext,
  type SpanKind,
  SpanStatusCode,
  TraceFlags,
  type TraceState,
  trace,
} from '@opentelemetry/api';
import type { ObsConfig } from '../core/config/config-schema.ts';
import type { ObsCore } from '../core/obs.ts';

/** The sampling decisions of the OpenTelemetry SDK (`SamplingDecision`), by value. */
export const SAMPLING_DECISION = { NOT_RECORD: 0, RECORD: 1, RECORD_AND_SAMPLED: 2 } as const;
/** One of {@link SAMPLING_DECISION}'s values: the SDK's `SamplingDecision`. */
export type ObsSamplingDecision = (typeof SAMPLING_DECISION)[keyof typeof SAMPLING_DECISION];

/** The SDK's `SamplingResult`. */
export interface ObsSamplingResult {
  readonly decision: ObsSamplingDecision;
  readonly attributes?: Readonly<Attributes>;
  readonly traceState?: TraceState;
}

/** The SDK's `Sampler`. */
export interface ObsSampler {
  shouldSample(
    context: Context,
    traceId: string,
    spanName: string,
    spanKind: SpanKind,
    attributes: Attributes,
    links: Link[],
  ): ObsSamplingResult;
  toString(): string;
}

/** The sampling settings; any subset, the rest at the defaults. */
export type ObsSamplingSettings = Partial<ObsConfig['sampling']>;

/** Set on a span that was recorded only so that an error could upgrade it. */
export const UPGRADABLE_ATTRIBUTE = 'obs.sampling.upgradable';
/** Set on a span {@link createErrorUpgradeSpanProcessor} exported because it ended in error. */
export const UPGRADED_ATTRIBUTE = 'obs.sampling.upgraded_on_error';

const TWO_POW_56 = 2 ** 56;

/**
 * Whether a trace id falls under a sampling probability: its lowest 56 bits (the random part of
 * W3C Trace Context level 2 ids) compared with `(1 - probability) * 2^56`, as OpenTelemetry's
 * consistent-probability samplers do. The same id always gets the same answer; 1 samples every id,
 * 0 none; an id that is not 32 hex digits is never sampled (unless the probability is 1).
 */
export function traceIdSampled(traceId: string, probability: number): boolean {
  if (probability >= 1) return true;
  if (!(probability > 0) || !/^[0-9a-f]{32}$/i.test(traceId)) return false;
  const randomness = BigInt(`0x${traceId.slice(18)}`);
  const threshold = BigInt(Math.round((1 - probability) * TWO_POW_56));
  return randomness >= threshold;
}

function settingsOf(
  config: ObsSamplingSettings | Pick<ObsConfig, 'sampling'>,
): Required<ObsSamplingSettings> {
  const s = ('sampling' in config ? config.sampling : config) as ObsSamplingSettings;
  return {
    enabled: s.enabled ?? true,
    probability: s.probability ?? 1,
    'prefer-sampling-on-error': s['prefer-sampling-on-error'] ?? true,
  };
}

const SAMPLED: ObsSamplingResult = Object.freeze({ decision: SAMPLING_DECISION.RECORD_AND_SAMPLED });
const DROPPED: ObsSamplingResult = Object.freeze({ decision: SAMPLING_DECISION.NOT_RECORD });
const RECORDED: ObsSamplingResult = Object.freeze({
  decision: SAMPLING_DECISION.RECORD,
  attributes: Object.freeze({ [UPGRADABLE_ATTRIBUTE]: true }),
});

/**
 * The sampler of `obs.sampling` (the whole resolved tree or its `sampling` part): parent-based
 * ratio sampling at `probability` (default 1), RECORD instead of NOT_RECORD for dropped spans when
 * `prefer-sampling-on-error` (default true). With `enabled: false` it samples like the SDK's
 * default (parent-based, always on) and never records for errors. Never throws.
 */
export function createObsSampler(config: ObsSamplingSettings | Pick<ObsConfig, 'sampling'> = {}): ObsSampler {
  const settings = settingsOf(config);
  const probability = settings.enabled ? Math.min(1, Math.max(0, settings.probability)) : 1;
  // Also at probability 1: the spans of an unsampled parent are dropped there too, and the
  // description then says what the setting says.
  const preferOnError = settings.enabled && settings['prefer-sampling-on-error'];
  const unsampled = preferOnError ? RECORDED : DROPPED;
  const description = `ObsSampler{ParentBased{root=TraceIdRatio{${probability}}},preferSamplingOnError=${preferOnError}}`;
  return {
    shouldSample(parentContext, traceId) {
      try {
        const parent: SpanContext | undefined = trace.getSpanContext(parentContext);
        if (parent !== undefined && isSpanContextValid(parent)) {
          return (parent.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? SAMPLED : unsampled;
        }
        return traceIdSampled(traceId, probability) ? SAMPLED : unsampled;
      } catch {
        return SAMPLED;
      }
    },
    toString: () => description,
  };
}

/** What {@link createErrorUpgradeSpanProcessor} needs of an ended span (the SDK's `ReadableSpan`). */
export interface UpgradableSpan {
  spanContext(): SpanContext;
  readonly status: { readonly code: number };
  readonly attributes?: Attributes;
}

/** The SDK's `SpanProcessor`, as far as obs uses it. */
export interface ObsSpanProcessor<S extends UpgradableSpan = UpgradableSpan> {
  onStart(span: unknown, parentContext: Context): void;
  onEnd(span: S): void;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * Wraps the application's exporting span processor (`BatchSpanProcessor`, `SimpleSpanProcessor`):
 * sampled spans pass as they are; a span that was only recorded (see {@link createObsSampler})
 * and ended with status ERROR is passed on as sampled, so the exporting processor exports it;
 * other recorded spans are dropped. Best effort: see the module comment.
 */
export function createErrorUpgradeSpanProcessor<S extends UpgradableSpan>(
  delegate: ObsSpanProcessor<S>,
): ObsSpanProcessor<S> {
  return {
    onStart: (span, parentContext) => delegate.onStart(span, parentContext),
    onEnd(span) {
      let ctx: SpanContext;
      try {
        ctx = span.spanContext();
      } catch {
        return;
      }
      if ((ctx.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED) {
        delegate.onEnd(span);
        return;
      }
      if (span.status?.code !== SpanStatusCode.ERROR) return;
      const upgraded = { ...ctx, traceFlags: ctx.traceFlags | TraceFlags.SAMPLED };
      const attributes = { ...span.attributes, [UPGRADED_ATTRIBUTE]: true };
      // A proxy, not a copy: the SDK's span keeps its own fields and getters; only the sampled
      // flag (which the exporting processor checks) and one attribute differ.
      const view = new Proxy(span, {
        get(target, property) {
          if (property === 'spanContext') return () => upgraded;
          if (property === 'attributes') return attributes;
          const value: unknown = Reflect.get(target, property, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      delegate.onEnd(view);
    },
    forceFlush: () => delegate.forceFlush(),
    shutdown: () => delegate.shutdown(),
  };
}

/** Adds the `sampling` section to the snapshot: the sampler this configuration builds. */
export function addSamplingSnapshot(obs: ObsCore): void {
  const settings = obs.config.sampling;
  obs.addSnapshotSection('sampling', () => ({
    enabled: settings.enabled,
    sampler: createObsSampler(settings).toString(),
    probability: settings.probability,
    probability_source: obs.resolved.origins['obs.sampling.probability'] ?? 'default',
    prefer_sampling_on_error: settings['prefer-sampling-on-error'],
    applies_to: 'the SDK the application builds with createObsSampler(config)',
  }));
}
