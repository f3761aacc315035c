/**
 * The real OpenTelemetry SDK for tests (dev dependencies only: obs itself never depends on an SDK,
 * decisions.md section 2). {@link installOtelSdk} registers, as the global ones, a tracer provider
 * (`@opentelemetry/sdk-trace`, the successor of `sdk-trace-base`'s `BasicTracerProvider`) whose
 * spans end up in an `InMemorySpanExporter` through a `SimpleSpanProcessor`, the
 * `AsyncLocalStorageContextManager` and the W3C trace-context + baggage propagators; the test's
 * `after` restores the globals. {@link traceServer} makes every request of a node http server run
 * inside a real SERVER span, made active, whose parent is extracted from the request headers, as
 * `@opentelemetry/instrumentation-http` does (it wraps the server's `request` listeners), and ends
 * the span when the response finishes. {@link injectHeaders} puts the active context on an outbound
 * call (`traceparent`, `baggage`). {@link startTracedObsApp} starts an obs app traced this way.
 * {@link randomTraceId} and {@link randomSpanId} make W3C ids for hand-built span contexts.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import {
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  CompositePropagator,
  suppressTracing,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
} from '@opentelemetry/core';
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { FastifyInstance } from 'fastify';
import type { ObsPluginOptions } from '../../src/obs/index.ts';
import { type RunningObsApp, startObsApp } from '../obs/helpers.ts';

/** The SDK of one test: what it recorded, and the tracer of the server spans. */
export interface OtelSdk {
  readonly exporter: InMemorySpanExporter;
  readonly provider: TracerProvider;
  readonly tracer: Tracer;
  /**
   * The finished spans, once every server span started so far has ended (a client can read its
   * response before the server's `finish` event ends the span) and has been exported.
   */
  finishedSpans(): Promise<ReadableSpan[]>;
  /** Counts a span that will end later; {@link finishedSpans} waits for it. */
  track(ended: Promise<void>): void;
}

/** A random W3C trace id: 32 lowercase hex digits. */
export const randomTraceId = (): string => randomBytes(16).toString('hex');
/** A random W3C span id: 16 lowercase hex digits. */
export const randomSpanId = (): string => randomBytes(8).toString('hex');

/** The scope name of the server spans {@link traceServer} starts. */
export const TEST_TRACER = 'echo-chaos-test-http';

/**
 * Registers the SDK as the global tracer provider, context manager and propagator for the rest of
 * the test; `t.after` disables them again (`trace.disable()`, `context.disable()`,
 * `propagation.disable()`) and shuts the provider down. Throws when another test left globals set.
 */
export function installOtelSdk(t: { after(fn: () => Promise<void>): void }): OtelSdk {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const manager = new AsyncLocalStorageContextManager().enable();
  const registered = [
    context.setGlobalContextManager(manager),
    trace.setGlobalTracerProvider(provider),
    propagation.setGlobalPropagator(
      new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
    ),
  ];
  const restore = async () => {
    trace.disable();
    context.disable();
    propagation.disable();
    manager.disable();
    await provider.shutdown();
  };
  if (registered.includes(false)) {
    void restore();
    throw new Error(
      'an OpenTelemetry global (context manager, tracer provider or propagator) is already set',
    );
  }
  t.after(restore);
  const pending = new Set<Promise<void>>();
  return {
    exporter,
    provider,
    tracer: trace.getTracer(TEST_TRACER),
    track(ended) {
      pending.add(ended);
      void ended.finally(() => pending.delete(ended));
    },
    async finishedSpans() {
      while (pending.size > 0) await Promise.all(pending);
      await provider.forceFlush(); // the simple processor exports each ended span asynchronously
      return exporter.getFinishedSpans();
    },
  };
}

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

/** Where a request's span came from: the incoming `traceparent`/`baggage` it was extracted from. */
export function extractedContext(request: IncomingMessage): Context {
  return propagation.extract(ROOT_CONTEXT, request.headers);
}

/** What {@link traceServer} leaves untraced. */
export interface TraceServerOptions {
  /**
   * True for a request that gets no span: like instrumentation-http's `ignoreIncomingRequestHook`,
   * it runs with tracing suppressed, so no span is active while it is served.
   */
  readonly ignore?: (request: IncomingMessage) => boolean;
}

/**
 * Runs every request of `server` inside a SERVER span of `sdk`, active in a context whose parent
 * (and baggage) is extracted from the request headers; the span ends when the response finishes
 * or the connection closes, with `http.response.status_code`. Requests `options.ignore` picks get
 * no span. Call it after the fastify app is built and before it listens.
 */
export function traceServer(server: Server, sdk: OtelSdk, options: TraceServerOptions = {}): void {
  const listeners = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (options.ignore?.(request) === true) {
      context.with(suppressTracing(context.active()), () => {
        for (const listener of listeners) listener.call(server, request, response);
      });
      return;
    }
    const parent = extractedContext(request);
    const span: Span = sdk.tracer.startSpan(
      request.method ?? 'HTTP',
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': request.method ?? '',
          'url.path': request.url ?? '',
          'server.port': request.socket.localPort ?? 0,
        },
      },
      parent,
    );
    sdk.track(
      new Promise<void>((resolve) => {
        const end = () => {
          if (span.isRecording()) {
            span.setAttribute('http.response.status_code', response.statusCode);
            span.end();
          }
          resolve();
        };
        response.once('finish', end);
        response.once('close', end);
      }),
    );
    context.with(trace.setSpan(parent, span), () => {
      for (const listener of listeners) listener.call(server, request, response);
    });
  });
}

/**
 * `headers` with the active context injected (`traceparent`, and `baggage` when the context has
 * some), as an instrumented client does on an outbound call.
 */
export function injectHeaders(headers: Record<string, string> = {}): Record<string, string> {
  const carrier = { ...headers };
  propagation.inject(context.active(), carrier);
  return carrier;
}

/** A running obs app whose requests are traced by the real SDK. */
export interface TracedObsApp extends RunningObsApp {
  readonly sdk: OtelSdk;
  /** This app's finished server spans, in the order they ended. */
  serverSpans(): Promise<ReadableSpan[]>;
}

/**
 * Starts an obs app ({@link startObsApp}) whose every request runs in a real SERVER span of `sdk`
 * ({@link traceServer}); closed when the test ends. Several apps may share one SDK (a call chain).
 */
export async function startTracedObsApp(
  t: { after(fn: () => Promise<void>): void },
  sdk: OtelSdk,
  options: ObsPluginOptions = {},
  setup: (app: FastifyInstance) => void | Promise<void> = () => {},
): Promise<TracedObsApp> {
  const running = await startObsApp(options, async (app) => {
    traceServer(app.server, sdk);
    await setup(app);
  });
  t.after(() => running.close());
  const port = new URL(running.url).port;
  return {
    ...running,
    sdk,
    async serverSpans() {
      return (await sdk.finishedSpans()).filter(
        (s) => s.kind === SpanKind.SERVER && s.attributes['server.port'] === Number(port),
      );
    },
  };
}
