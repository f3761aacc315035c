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

import { HTTP_URL, loadSettings, setting } from '@echo-chaos/obs/internal';
import { Type } from '@sinclair/typebox';

/** One variable: the configuration page's table and `--help` list these. */
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
const PROTOCOLS = Type.Union([Type.Literal('http/protobuf'), Type.Literal('http/json')]);
const PROTOCOL = { trim: true, lowercase: true, form: PROTOCOL_FORM } as const;
const URL = { trim: true, form: URL_FORM } as const;
const WORD = { trim: true, lowercase: true } as const;

/**
 * Every `OTEL_*` variable read here, one schema each (the one settings mechanism,
 * docs/adr/0045-one-settings-mechanism.md); values standard names spell in either case are read in
 * lower case.
 */
export const OTEL_SETTINGS = {
  disabled: setting(
    'OTEL_SDK_DISABLED',
    Type.Boolean({ default: false }),
    'OpenTelemetry: `true` starts no SDK at all, whatever the other `OTEL_*` variables say',
    WORD,
  ),
  endpoint: setting(
    'OTEL_EXPORTER_OTLP_ENDPOINT',
    Type.Optional(HTTP_URL),
    'OpenTelemetry: set, traces are exported over OTLP/HTTP to `<URL>/v1/traces`',
    URL,
  ),
  tracesEndpoint: setting(
    'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    Type.Optional(HTTP_URL),
    'OpenTelemetry: set, traces are exported to this URL as is (wins over the one above)',
    URL,
  ),
  tracesExporter: setting(
    'OTEL_TRACES_EXPORTER',
    Type.Optional(Type.Union([Type.Literal('otlp'), Type.Literal('none')])),
    'OpenTelemetry: `none` exports no traces; `otlp` exports them even without an endpoint (to `http://localhost:4318`)',
    { ...WORD, form: '`otlp` or `none`' },
  ),
  protocol: setting(
    'OTEL_EXPORTER_OTLP_PROTOCOL',
    Type.Optional(PROTOCOLS),
    'OpenTelemetry: OTLP encoding (`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` wins when set)',
    { ...PROTOCOL, unset: 'http/protobuf' },
  ),
  tracesProtocol: setting(
    'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
    Type.Optional(PROTOCOLS),
    'OpenTelemetry: OTLP encoding of traces',
    PROTOCOL,
  ),
  metricsExporter: setting(
    'OTEL_METRICS_EXPORTER',
    Type.Optional(Type.Union([Type.Literal('prometheus'), Type.Literal('none')])),
    'OpenTelemetry: meters of the OpenTelemetry metrics API join `/metrics` whenever the SDK starts; `prometheus` starts it for that alone, `none` leaves them out',
    { ...WORD, form: '`prometheus` or `none`' },
  ),
  serviceName: setting(
    'OTEL_SERVICE_NAME',
    Type.Optional(Type.String({ minLength: 1 })),
    'OpenTelemetry: `service.name` of the exported spans (`OTEL_RESOURCE_ATTRIBUTES` adds attributes)',
    { trim: true, unset: 'the program name', form: 'any text' },
  ),
  scheduledDelayMillis: setting(
    'OTEL_BSP_SCHEDULE_DELAY',
    Type.Integer({ minimum: 1, maximum: 3_600_000, default: 5000 }),
    'OpenTelemetry: delay between two exports of the batch span processor',
    { trim: true, form: 'integer milliseconds 1-3600000' },
  ),
  exportTimeoutMillis: setting(
    'OTEL_BSP_EXPORT_TIMEOUT',
    Type.Integer({ minimum: 1, maximum: 3_600_000, default: 30_000 }),
    'OpenTelemetry: longest export of the batch span processor',
    { trim: true, form: 'integer milliseconds 1-3600000' },
  ),
  maxQueueSize: setting(
    'OTEL_BSP_MAX_QUEUE_SIZE',
    Type.Integer({ minimum: 1, maximum: 1_000_000, default: 2048 }),
    'OpenTelemetry: spans waiting for export; past it new spans are dropped',
    { trim: true, form: 'integer 1-1000000' },
  ),
  maxExportBatchSize: setting(
    'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
    Type.Integer({ minimum: 1, maximum: 1_000_000, default: 512 }),
    'OpenTelemetry: spans in one export (at most the queue size)',
    { trim: true, form: 'integer 1-1000000' },
  ),
} as const;

/** The variables the configuration page and `--help` list, in their order. */
const DOCUMENTED: readonly (keyof typeof OTEL_SETTINGS)[] = [
  'disabled',
  'endpoint',
  'tracesEndpoint',
  'tracesExporter',
  'protocol',
  'metricsExporter',
  'serviceName',
  'scheduledDelayMillis',
  'maxQueueSize',
];

export const OTEL_VARIABLES: readonly OtelVariable[] = DOCUMENTED.map((key) => {
  const entry = OTEL_SETTINGS[key];
  const fallback = entry.schema.default;
  return {
    name: entry.env,
    default: fallback === undefined ? entry.unset : String(fallback),
    form: entry.form,
    meaning: entry.description,
  };
});

/** The variables other than the ones above that the OTLP exporter reads itself (listed in help). */
export const OTEL_PASSED_THROUGH =
  'OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_COMPRESSION, OTEL_RESOURCE_ATTRIBUTES and their *_TRACES_* forms';

/** Reads the `OTEL_*` variables of `env`. Pure: loads nothing, starts nothing. */
export function otelSettings(env: Readonly<Record<string, string | undefined>>): OtelSettingsResult {
  const loaded = loadSettings(OTEL_SETTINGS, env);
  if (!loaded.ok) return { ok: false, problems: loaded.problems };
  const v = loaded.value;
  const traces =
    !v.disabled &&
    v.tracesExporter !== 'none' &&
    (v.endpoint !== undefined || v.tracesEndpoint !== undefined || v.tracesExporter === 'otlp');
  const metrics =
    !v.disabled && v.metricsExporter !== 'none' && (traces || v.metricsExporter === 'prometheus');
  return {
    ok: true,
    settings: {
      traces,
      metrics,
      protocol: v.tracesProtocol ?? v.protocol ?? 'http/protobuf',
      serviceName: v.serviceName,
      batch: {
        scheduledDelayMillis: v.scheduledDelayMillis,
        exportTimeoutMillis: v.exportTimeoutMillis,
        maxQueueSize: v.maxQueueSize,
        maxExportBatchSize: Math.min(v.maxExportBatchSize, v.maxQueueSize),
      },
    },
  };
}

/** Whether the settings ask for the SDK at all. */
export function otelWanted(settings: OtelSettings): boolean {
  return settings.traces || settings.metrics;
}
