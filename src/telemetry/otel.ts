/**
 * The OpenTelemetry Node SDK of the echo service and the operator, started only when the `OTEL_*`
 * variables ask for it (see `./otel-config.ts`). The entry points import this module dynamically,
 * before fastify and the rest of the application, so that the HTTP instrumentation patches
 * `node:http` as fastify loads it.
 *
 * - Traces: a tracer provider with obs's head sampler (`createObsSampler`, `obs.sampling`), its
 *   error-upgrade span processor around a batch span processor, an OTLP/HTTP exporter
 *   (protobuf or JSON), the W3C trace-context and baggage propagators, the async-hooks context
 *   manager, and the http and undici instrumentations (undici: the global `fetch` too).
 * - Metrics: a meter provider whose reader is a `PrometheusExporter` with its own server off; the
 *   application appends {@link Telemetry.metricsText} to its `/metrics` and sets the provider as
 *   the global one through obs's cardinality firewall ({@link Telemetry.registerMeterProvider}).
 *
 * The instrumentations get no meter provider: echo and obs already count requests on `/metrics`,
 * and a second set of `http_server_*` series would only duplicate them.
 */
import { context, type MeterProvider, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { OTLPTraceExporter as OTLPJsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import { MeterProvider as SdkMeterProvider } from '@opentelemetry/sdk-metrics';
import {
  BatchSpanProcessor,
  type Sampler,
  type SpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { OtelSettings } from './otel-config.ts';

/** What the application needs of the started SDK. */
export interface Telemetry {
  readonly traces: boolean;
  readonly metrics: boolean;
  /**
   * Sets the meter provider as the global one, wrapped by `guard` (obs's
   * `app.obs.guardMeterProvider`, so every attribute passes the cardinality firewall). Call once
   * the application's obs exists; meters taken from the global API before that are no-ops.
   */
  registerMeterProvider(guard: (provider: MeterProvider) => MeterProvider): void;
  /** The OpenTelemetry meters in the Prometheus text format; empty when metrics are off. */
  metricsText(): Promise<string>;
  /** Exports what is buffered (an obs flush hook calls it on SIGTERM). */
  flush(): Promise<void>;
  /** Flushes and stops the SDK; the globals are left as they are. */
  shutdown(): Promise<void>;
}

/** What the SDK is started with besides the settings. */
export interface TelemetryOptions {
  /** The default `service.name` (`OTEL_SERVICE_NAME` wins). */
  readonly serviceName: string;
  readonly version: string;
  /** obs's head sampler (`createObsSampler(config)`). */
  readonly sampler: Sampler;
  /** obs's error-upgrade processor around the exporting one (`createErrorUpgradeSpanProcessor`). */
  readonly wrapProcessor?: (processor: SpanProcessor) => SpanProcessor;
  /** Loop-back and health paths to leave untraced, e.g. `/metrics` scrapes; default none. */
  readonly ignorePaths?: readonly string[];
}

/** Starts the SDK as the settings ask. Call it before fastify or node:http clients are imported. */
export function startTelemetry(settings: OtelSettings, options: TelemetryOptions): Telemetry {
  const resource = defaultResource()
    .merge(
      resourceFromAttributes({
        [ATTR_SERVICE_NAME]: options.serviceName,
        [ATTR_SERVICE_VERSION]: options.version,
      }),
    )
    .merge(detectResources({ detectors: [envDetector] }));

  let tracerProvider: TracerProvider | undefined;
  if (settings.traces) {
    const exporter =
      settings.protocol === 'http/json' ? new OTLPJsonTraceExporter() : new OTLPProtoTraceExporter();
    const batch = new BatchSpanProcessor({ exporter, ...settings.batch });
    tracerProvider = new TracerProvider({
      resource,
      sampler: options.sampler,
      spanProcessors: [options.wrapProcessor?.(batch) ?? batch],
    });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(
      new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
    );
    trace.setGlobalTracerProvider(tracerProvider);
    const ignored = new Set(options.ignorePaths ?? []);
    registerInstrumentations({
      tracerProvider,
      instrumentations: [
        new HttpInstrumentation({
          ignoreIncomingRequestHook: (request) => ignored.has((request.url ?? '/').split('?')[0] ?? '/'),
        }),
        new UndiciInstrumentation(),
      ],
    });
  }

  let meterProvider: SdkMeterProvider | undefined;
  let reader: PrometheusExporter | undefined;
  const serializer = new PrometheusSerializer(undefined, false, undefined, true);
  if (settings.metrics) {
    reader = new PrometheusExporter({ preventServerStart: true, withoutTargetInfo: true });
    meterProvider = new SdkMeterProvider({ resource, readers: [reader] });
  }

  return {
    traces: settings.traces,
    metrics: settings.metrics,
    registerMeterProvider(guard) {
      if (meterProvider !== undefined) metrics.setGlobalMeterProvider(guard(meterProvider));
    },
    async metricsText() {
      if (reader === undefined) return '';
      const { resourceMetrics } = await reader.collect();
      return serializer.serialize(resourceMetrics);
    },
    async flush() {
      await Promise.all([tracerProvider?.forceFlush(), meterProvider?.forceFlush()]);
    },
    async shutdown() {
      await Promise.all([tracerProvider?.shutdown(), meterProvider?.shutdown()]);
    },
  };
}
