/**
 * Which of the standard `OTEL_*` variables the echo service and the operator honour, and what they
 * ask for. A pure function of the environment that loads no OpenTelemetry SDK module: the entry
 * points read it first and import `./otel.ts` (the SDK) only when something is asked for.
 *
 * The rule:
 * - `OTEL_SDK_DISABLED=true`: nothing starts, whatever else is set.
 * - Traces are exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
 *   `OTEL_EXPORTER_OTLP_ENDPOINT` is set, or `OTEL_TRACES_EXPORTER=otlp` is (then to the default
 *   `http://localhost:4318/v1/traces`); `OTEL_TRACES_EXPORTER=none` turns them off.
 * - Meters recorded through the OpenTelemetry metrics API join the `/metrics` scrape whenever the
 *   SDK starts (for traces, or because `OTEL_METRICS_EXPORTER=prometheus`), unless
 *   `OTEL_METRICS_EXPORTER=none`.
 * - With none of these set, no SDK module is loaded and nothing is exported.
 *
 * The exporter reads the rest of the OTLP variables itself (`OTEL_EXPORTER_OTLP_HEADERS`,
 * `…_TIMEOUT`, `…_COMPRESSION`, certificates), as the OpenTelemetry specification has it.
 */

/** One variable: the README's configuration table and `--help` list these. */
export interface OtelVariable {
  readonly name: string;
  readonly default: string;
  readonly form: string;
  readonly meaning: string;
}

/** What the environment asks of the OpenTelemetry SDK. */
export interface OtelSettings {
  /** Export traces over OTLP/HTTP. */
  readonly traces: boolean;
  /** Serve OpenTelemetry meters on `/metrics`. */
  readonly metrics: boolean;
  readonly protocol: 'http/protobuf' | 'http/json';
  /** `OTEL_SERVICE_NAME`, when set. */
  readonly serviceName: string | undefined;
  /** The batch span processor's settings (`OTEL_BSP_*`). */
  readonly batch: {
    readonly scheduledDelayMillis: number;
    readonly exportTimeoutMillis: number;
    readonly maxQueueSize: number;
    readonly maxExportBatchSize: number;
  };
}

/** The settings, or one line per bad value (naming the variable, the value and the accepted form). */
export type OtelSettingsResult =
  | { readonly ok: true; readonly settings: OtelSettings }
  | { readonly ok: false; readonly problems: readonly string[] };

const URL_FORM = 'an http:// or https:// URL';
const PROTOCOL_FORM = '`http/protobuf` or `http/json` (grpc is not supported)';

export const OTEL_VARIABLES: readonly OtelVariable[] = [
  {
    name: 'OTEL_SDK_DISABLED',
    default: 'false',
    form: '`true` or `false`',
    meaning: 'OpenTelemetry: `true` starts no SDK at all, whatever the other `OTEL_*` variables say',
  },
  {
    name: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    default: 'unset',
    form: URL_FORM,
    meaning: 'OpenTelemetry: set, traces are exported over OTLP/HTTP to `<URL>/v1/traces`',
  },
  {
    name: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    default: 'unset',
    form: URL_FORM,
    meaning: 'OpenTelemetry: set, traces are exported to this URL as is (wins over the one above)',
  },
  {
    name: 'OTEL_TRACES_EXPORTER',
    default: 'unset',
    form: '`otlp` or `none`',
    meaning:
      'OpenTelemetry: `none` exports no traces; `otlp` exports them even without an endpoint (to `http://localhost:4318`)',
  },
  {
    name: 'OTEL_EXPORTER_OTLP_PROTOCOL',
    default: 'http/protobuf',
    form: PROTOCOL_FORM,
    meaning: 'OpenTelemetry: OTLP encoding (`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` wins when set)',
  },
  {
    name: 'OTEL_METRICS_EXPORTER',
    default: 'unset',
    form: '`prometheus` or `none`',
    meaning:
      'OpenTelemetry: meters of the OpenTelemetry metrics API join `/metrics` whenever the SDK starts; `prometheus` starts it for that alone, `none` leaves them out',
  },
  {
    name: 'OTEL_SERVICE_NAME',
    default: 'the program name',
    form: 'any text',
    meaning:
      'OpenTelemetry: `service.name` of the exported spans (`OTEL_RESOURCE_ATTRIBUTES` adds attributes)',
  },
  {
    name: 'OTEL_BSP_SCHEDULE_DELAY',
    default: '5000',
    form: 'integer milliseconds 1-3600000',
    meaning: 'OpenTelemetry: delay between two exports of the batch span processor',
  },
  {
    name: 'OTEL_BSP_MAX_QUEUE_SIZE',
    default: '2048',
    form: 'integer 1-1000000',
    meaning: 'OpenTelemetry: spans waiting for export; past it new spans are dropped',
  },
];

/** The variables other than the ones above that the OTLP exporter reads itself (listed in help). */
export const OTEL_PASSED_THROUGH =
  'OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_COMPRESSION, OTEL_RESOURCE_ATTRIBUTES and their *_TRACES_* forms';

const isSet = (value: string | undefined): value is string => value !== undefined && value.trim() !== '';

/** Reads the `OTEL_*` variables of `env`. Pure: loads nothing, starts nothing. */
export function otelSettings(env: Readonly<Record<string, string | undefined>>): OtelSettingsResult {
  const problems: string[] = [];
  const problem = (name: string, raw: string, form: string) =>
    problems.push(`${name}=${JSON.stringify(raw)} is invalid: expected ${form.replaceAll('`', '')}`);

  const pick = <T extends string>(name: string, allowed: readonly T[], form: string): T | undefined => {
    const raw = env[name];
    if (!isSet(raw)) return undefined;
    const value = raw.trim().toLowerCase();
    if ((allowed as readonly string[]).includes(value)) return value as T;
    problem(name, raw, form);
    return undefined;
  };
  const integer = (name: string, fallback: number, max: number): number => {
    const raw = env[name];
    if (!isSet(raw)) return fallback;
    const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
    if (n >= 1 && n <= max) return n;
    problem(name, raw, OTEL_VARIABLES.find((v) => v.name === name)?.form ?? 'an integer');
    return fallback;
  };
  const url = (name: string): boolean => {
    const raw = env[name];
    if (!isSet(raw)) return false;
    let ok = false;
    try {
      ok = ['http:', 'https:'].includes(new URL(raw.trim()).protocol);
    } catch {
      ok = false;
    }
    if (!ok) problem(name, raw, URL_FORM);
    return ok;
  };

  const disabled = pick('OTEL_SDK_DISABLED', ['true', 'false'], '`true` or `false`') === 'true';
  const endpoint = url('OTEL_EXPORTER_OTLP_ENDPOINT');
  const tracesEndpoint = url('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const tracesExporter = pick('OTEL_TRACES_EXPORTER', ['otlp', 'none'], '`otlp` or `none`');
  const metricsExporter = pick('OTEL_METRICS_EXPORTER', ['prometheus', 'none'], '`prometheus` or `none`');
  const protocols = ['http/protobuf', 'http/json'] as const;
  const protocol =
    pick('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', protocols, PROTOCOL_FORM) ??
    pick('OTEL_EXPORTER_OTLP_PROTOCOL', protocols, PROTOCOL_FORM) ??
    'http/protobuf';
  const batch = {
    scheduledDelayMillis: integer('OTEL_BSP_SCHEDULE_DELAY', 5000, 3_600_000),
    exportTimeoutMillis: integer('OTEL_BSP_EXPORT_TIMEOUT', 30_000, 3_600_000),
    maxQueueSize: integer('OTEL_BSP_MAX_QUEUE_SIZE', 2048, 1_000_000),
    maxExportBatchSize: integer('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512, 1_000_000),
  };
  if (problems.length > 0) return { ok: false, problems };

  const traces =
    !disabled && tracesExporter !== 'none' && (endpoint || tracesEndpoint || tracesExporter === 'otlp');
  const metrics = !disabled && metricsExporter !== 'none' && (traces || metricsExporter === 'prometheus');
  const serviceName = isSet(env['OTEL_SERVICE_NAME']) ? env['OTEL_SERVICE_NAME'].trim() : undefined;
  return {
    ok: true,
    settings: {
      traces,
      metrics,
      protocol,
      serviceName,
      batch: { ...batch, maxExportBatchSize: Math.min(batch.maxExportBatchSize, batch.maxQueueSize) },
    },
  };
}

/** Whether the settings ask for the SDK at all. */
export function otelWanted(settings: OtelSettings): boolean {
  return settings.traces || settings.metrics;
}
