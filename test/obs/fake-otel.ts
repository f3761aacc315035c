/**
 * Just enough OpenTelemetry for tests, without an SDK: a context manager on AsyncLocalStorage, a
 * span that keeps what it is given, and a wrapper that makes a span active around each request
 * the way `@opentelemetry/instrumentation-http` does (around the server's `request` event).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import {
  type Attributes,
  type Context,
  type ContextManager,
  context,
  type Exception,
  type Link,
  ROOT_CONTEXT,
  type Span,
  type SpanAttributeValue,
  type SpanContext,
  type SpanStatus,
  TraceFlags,
  trace,
} from '@opentelemetry/api';

export class TestContextManager implements ContextManager {
  readonly #storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.#storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.#storage.run(ctx, () => fn.apply(thisArg, args));
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.#storage.disable();
    return this;
  }
}

/** Installs the test context manager for the rest of the test file's process. */
export function installContextManager(t: { after(fn: () => void): void }): void {
  if (!context.setGlobalContextManager(new TestContextManager())) throw new Error('a context manager is set');
  t.after(() => context.disable());
}

export const randomTraceId = (): string => randomBytes(16).toString('hex');
export const randomSpanId = (): string => randomBytes(8).toString('hex');

/** A span that records what it is given. */
export class RecordingSpan implements Span {
  readonly context: SpanContext;
  readonly attributes: Attributes = {};
  readonly events: Array<{ name: string; attributes: unknown }> = [];
  readonly exceptions: Exception[] = [];
  status: SpanStatus | undefined;

  constructor(ctx?: Partial<SpanContext>) {
    this.context = {
      traceId: randomTraceId(),
      spanId: randomSpanId(),
      traceFlags: TraceFlags.SAMPLED,
      ...ctx,
    };
  }
  spanContext(): SpanContext {
    return this.context;
  }
  setAttribute(key: string, value: SpanAttributeValue): this {
    this.attributes[key] = value;
    return this;
  }
  setAttributes(attributes: Attributes): this {
    Object.assign(this.attributes, attributes);
    return this;
  }
  addEvent(name: string, attributes?: unknown): this {
    this.events.push({ name, attributes });
    return this;
  }
  addLink(_link: Link): this {
    return this;
  }
  addLinks(_links: Link[]): this {
    return this;
  }
  setStatus(status: SpanStatus): this {
    this.status = status;
    return this;
  }
  updateName(): this {
    return this;
  }
  end(): void {}
  isRecording(): boolean {
    return true;
  }
  recordException(exception: Exception): void {
    this.exceptions.push(exception);
  }
}

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * Runs every request of `server` inside a context whose active span is `spanFor(request)` (none
 * when it returns undefined), as the OpenTelemetry HTTP instrumentation does. Call it after the
 * fastify app is built and before it listens.
 */
export function traceEveryRequest(
  server: Server,
  spanFor: (request: IncomingMessage) => Span | undefined,
): void {
  const listeners = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const span = spanFor(request);
    const ctx = span === undefined ? ROOT_CONTEXT : trace.setSpan(ROOT_CONTEXT, span);
    context.with(ctx, () => {
      for (const listener of listeners) listener.call(server, request, response);
    });
  });
}
