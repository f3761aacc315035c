/**
 * Structured logs (`obs.logging`): pino options that put the trace and span ids of the active
 * OpenTelemetry span on every line and mask personal data and secrets in every line (the masking
 * itself is `masking.ts`).
 *
 * The library imports pino's types only, so it hands out options rather than a logger:
 *
 * ```ts
 * const resolved = loadObsConfig({ env: process.env });
 * const app = Fastify({
 *   ...obsFastifyOptions({ config: resolved.config }),
 *   logController: new LogController({ requestIdLogLabel: REQUEST_ID_LOG_LABEL }),
 * });
 * // or, a logger of its own:
 * const logger = pino(obsLoggerOptions({ config: resolved.config, base: { level: 'info' } }), destination);
 * await app.register(obsPlugin, { resolved });
 * ```
 *
 * Masking runs in pino's `hooks.streamWrite`, on the finished JSON line: it is the one place that sees
 * everything a line holds, whatever the caller logged (the message, the merge object, the output of
 * serializers such as fastify's `req` and `err`, and the bindings of child loggers, which pino never
 * passes through `formatters.log`). A line with nothing that could be a secret is written as it is;
 * any other line is parsed, masked value by value and written again. Masking never throws and its
 * work is bounded (see {@link MASK_LIMITS}).
 */
import { context, isSpanContextValid, trace } from '@opentelemetry/api';
import type { LoggerOptions } from 'pino';
import { loadObsConfig } from '../../core/config/config.ts';
import type { ObsConfig } from '../../core/config/config-schema.ts';
import type { ObsCore } from '../../core/obs.ts';
import { requestFlagFields } from '../../integrations/feature-flags.ts';
import { jobOfContext } from '../../integrations/jobs.ts';
import { currentRequestContext, currentTimeoutBudget } from '../request-context/request-context.ts';
import { remainingMs } from '../timeout-budget/timeout-budget.ts';
import { MASK_LIMITS, maskLogLine } from './masking.ts';

/** The name of the request id on log lines and in problem bodies (fastify's `requestIdLogLabel`). */
export const REQUEST_ID_LOG_LABEL = 'request_id';

// ---------------------------------------------------------------------------------------------
// Trace context

/** Adds the ids of the active span to `fields`, when there is a valid one. May throw. */
function addTraceFields(fields: Record<string, unknown>): void {
  const span = trace.getSpanContext(context.active());
  if (span === undefined || !isSpanContextValid(span)) return;
  fields.trace_id = span.traceId;
  fields.span_id = span.spanId;
  fields.trace_flags = `0${(span.traceFlags & 0xff).toString(16)}`.slice(-2);
}

/** The ids of the active span, for a log line: `{trace_id, span_id, trace_flags}`, or `{}`. */
export function activeTraceFields(): { trace_id?: string; span_id?: string; trace_flags?: string } {
  try {
    const fields: Record<string, unknown> = {};
    addTraceFields(fields);
    return fields;
  } catch {
    return {};
  }
}

/** The remaining timeout budget of the current request, for a log line: `{timeout_remaining_ms}`, or `{}`. */
export function budgetFields(): { timeout_remaining_ms?: number } {
  try {
    const budget = currentTimeoutBudget();
    return budget === undefined ? {} : { timeout_remaining_ms: budget.remainingMs };
  } catch {
    return {};
  }
}

/** The fields {@link contextFields} may add to a log line. */
// A type, not an interface: callers read it as a Record.
export type ContextLogFields = {
  request_id?: string;
  job?: string;
  retry_depth?: number;
  priority?: string;
  tenant?: string;
  /** The flags evaluated so far in the request (`obs.feature-flags`): `{ key: variant }`. */
  feature_flags?: Record<string, string>;
};

/** Adds the carried context of `store` to `fields` ({@link contextFields}). May throw. */
function addContextFields(
  store: NonNullable<ReturnType<typeof currentRequestContext>>,
  fields: Record<string, unknown>,
): void {
  const job = jobOfContext(store);
  if (job !== undefined) {
    fields[REQUEST_ID_LOG_LABEL] = store.requestId;
    fields.job = job;
  }
  if (store.retryDepth !== undefined) fields.retry_depth = store.retryDepth;
  if (store.priority !== undefined) fields.priority = store.priority;
  if (store.tenant !== undefined) fields.tenant = store.tenant;
  const flags = requestFlagFields();
  if (flags !== undefined) fields.feature_flags = flags;
}

/**
 * The carried context of the current request, for a log line: `retry_depth`, `priority`, `tenant`
 * and `feature_flags` as their features set them, or `{}`. In a background job's run (`obs.job`),
 * also its `request_id` (no fastify request binds it there) and `job`.
 */
export function contextFields(): ContextLogFields {
  try {
    const store = currentRequestContext();
    if (store === undefined) return {};
    const fields: ContextLogFields = {};
    addContextFields(store, fields);
    return fields;
  } catch {
    return {};
  }
}

/**
 * Everything obs adds to one line, in one object ({@link activeTraceFields}, {@link budgetFields},
 * {@link contextFields}, in that order): the mixin runs for every line, so it fills one object
 * rather than spreading three.
 */
function lineFields(): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  try {
    addTraceFields(fields);
  } catch {
    // no trace fields
  }
  try {
    const store = currentRequestContext();
    if (store === undefined) return fields;
    const budget = store.budget;
    if (budget !== undefined) fields.timeout_remaining_ms = remainingMs(budget.deadlineEpochMs, Date.now());
    addContextFields(store, fields);
  } catch {
    // no context fields
  }
  return fields;
}

// ---------------------------------------------------------------------------------------------
// pino and fastify options

/** What {@link obsLoggerOptions} takes. */
export interface ObsLoggerOptionsInput {
  /**
   * The resolved `obs.*` tree (its `logging` and `context` parts are read). Default: resolved from
   * `env`, which may throw `ObsConfigError` like the plugin does.
   */
  readonly config?: Pick<ObsConfig, 'logging'> & Partial<Pick<ObsConfig, 'context'>>;
  /** The environment the configuration is resolved from when `config` is absent. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * The application's own pino options. Kept as they are; its `mixin` and `hooks.streamWrite` run
   * too (its `streamWrite` gets the masked line).
   */
  readonly base?: LoggerOptions;
}

function resolveConfig(
  input: ObsLoggerOptionsInput,
): Pick<ObsConfig, 'logging'> & Partial<Pick<ObsConfig, 'context'>> {
  return input.config ?? loadObsConfig({ env: input.env ?? process.env }).config;
}

/**
 * pino options for obs's structured logs. With `obs.logging.enabled` every line carries `trace_id`,
 * `span_id` and `trace_flags` of the active span (absent without an SDK or a span) and, inside a
 * request with a timeout budget, `timeout_remaining_ms` (its remaining milliseconds at log time); with
 * `obs.logging.pii-masking-enabled` (default) every line is masked by {@link maskLogLine} in
 * `hooks.streamWrite`. Times are ISO 8601 UTC (`"time":"2026-11-28T08:00:00.000Z"`) unless the base
 * options bring their own `timestamp`. With `obs.logging.enabled=false` the base options come back
 * unchanged.
 */
export function obsLoggerOptions(input: ObsLoggerOptionsInput = {}): LoggerOptions {
  const base: LoggerOptions = input.base ?? {};
  const logging = resolveConfig(input).logging;
  if (!logging.enabled) return base;
  const baseMixin = base.mixin;
  const options: LoggerOptions = {
    ...base,
    // ISO 8601 UTC, as the echo service logs it: pino's default epoch milliseconds are 13 digits,
    // which read badly and could look like a card number to the masking. The base's own wins.
    timestamp: base.timestamp ?? isoTime,
    mixin(mergeObject, level, logger) {
      const fields = lineFields();
      return baseMixin === undefined ? fields : Object.assign(fields, baseMixin(mergeObject, level, logger));
    },
  };
  if (logging['pii-masking-enabled']) {
    const baseWrite = base.hooks?.streamWrite;
    options.hooks = {
      ...base.hooks,
      streamWrite: baseWrite === undefined ? maskLogLine : (line: string) => baseWrite(maskLogLine(line)),
    };
  }
  return options;
}

/** pino's `timestamp` as `"time":"2026-11-28T08:00:00.000Z"` (pino's own `stdTimeFunctions.isoTime`). */
function isoTime(): string {
  return `,"time":"${new Date().toISOString()}"`;
}

/** What {@link obsFastifyOptions} returns: spread it into `Fastify({...})`. */
export interface ObsFastifyOptions {
  readonly logger: LoggerOptions;
  /** `obs.context.request-id-header`, lower case: an inbound id is kept as the request id. */
  readonly requestIdHeader: string;
}

/**
 * The fastify options of obs's structured logs: the pino options of {@link obsLoggerOptions} and
 * the request id taken from `obs.context.request-id-header` when the request carries one. fastify
 * builds the logger; add `stream` to `logger` to choose where lines go. To log the request id as
 * `request_id` (the name problem bodies use) rather than fastify's `reqId`, also pass
 * `logController: new LogController({ requestIdLogLabel: REQUEST_ID_LOG_LABEL })` (fastify's
 * `LogController`; obs does not import fastify at runtime).
 */
export function obsFastifyOptions(input: ObsLoggerOptionsInput = {}): ObsFastifyOptions {
  const config = resolveConfig(input);
  return {
    logger: obsLoggerOptions({ ...input, config }),
    requestIdHeader: (config.context?.['request-id-header'] ?? 'X-Request-ID').toLowerCase(),
  };
}

/** Adds the `logging` section to the snapshot: what the logger options of this configuration do. */
export function addLoggingSnapshot(obs: ObsCore): void {
  const logging = obs.config.logging;
  obs.addSnapshotSection('logging', () => ({
    enabled: logging.enabled,
    pii_masking: logging.enabled && logging['pii-masking-enabled'],
    fields: logging.enabled
      ? ['trace_id', 'span_id', 'trace_flags', 'timeout_remaining_ms', 'retry_depth', 'priority', 'tenant']
      : [],
    masked: ['emails', 'bearer tokens', 'JWTs', 'card numbers (Luhn)', 'US SSNs', 'secret-named fields'],
    applies_to: 'loggers built from obsLoggerOptions() or obsFastifyOptions()',
    limits: {
      max_string_chars: MASK_LIMITS.maxStringChars,
      max_depth: MASK_LIMITS.maxDepth,
      max_nodes: MASK_LIMITS.maxNodes,
      max_line_chars: MASK_LIMITS.maxLineChars,
    },
  }));
}
