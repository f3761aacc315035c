/**
 * Exception handling of a fastify app (`obs.exception-handler`): recording server errors with their
 * fingerprint (`fingerprint.ts`), and RFC 7807 problem answers.
 *
 * {@link registerExceptionHandler} (called by the plugin) records every server error that reaches
 * error handling: one log line with the fingerprint, the exception on the active span
 * (`span.recordException`, attribute `exception.fingerprint`, status ERROR) and one increment of
 * `obs_errors_unhandled_total{exception,fingerprint}`. Answering is opt-in, because many apps have
 * an error handler of their own: the plugin option `problemErrorHandler: true` installs
 * {@link problemErrorHandler} as the app's error handler, or an app's own handler delegates to it.
 */
import { STATUS_CODES } from 'node:http';
import { context, isSpanContextValid, SpanStatusCode, trace } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Counter } from 'prom-client';
import type { ObsCore } from '../../core/obs.ts';
import { maskText } from '../logging/masking.ts';
import { traceIdOfTraceparent } from '../trace-guard.ts';
import { errorType, fingerprint } from './fingerprint.ts';

/** Names of the meters of this feature. */
export const EXCEPTION_METRICS = { unhandled: 'obs_errors_unhandled_total' } as const;
/** The media type of a problem answer (RFC 7807 / RFC 9457). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';
/** The `detail` of a server error's problem: the message of an internal error is not for clients. */
export const SERVER_ERROR_DETAIL =
  'The server could not complete the request. Quote the fingerprint and the request id when reporting it.';

/** What obs knows about an error of a request once it was recorded. */
export interface RecordedError {
  readonly fingerprint: string;
  readonly type: string;
  readonly status: number;
}

interface ExceptionState {
  readonly obs: ObsCore;
  readonly frames: number;
  readonly record: (error: unknown, request: FastifyRequest, reply: FastifyReply) => RecordedError;
  readonly recorded: WeakMap<FastifyRequest, RecordedError>;
}

const states = new WeakMap<ObsCore, ExceptionState>();

/** The status an error answers with, as fastify's default handler picks it. */
export function errorStatus(error: unknown, replyStatus = 200): number {
  const e = (typeof error === 'object' && error !== null ? error : {}) as {
    statusCode?: unknown;
    status?: unknown;
  };
  const own = typeof e.statusCode === 'number' ? e.statusCode : e.status;
  if (typeof own === 'number' && Number.isInteger(own) && own >= 400 && own <= 599) return own;
  if (replyStatus >= 400 && replyStatus <= 599) return replyStatus;
  return 500;
}

function messageOf(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const message = (error as { message?: unknown }).message;
    if (typeof message === 'string') return message;
  }
  return typeof error === 'string' ? error : '';
}

/** The trace id of the request: the active span's, else the inbound `traceparent`'s, else null. */
function traceIdOf(request: FastifyRequest): string | null {
  try {
    const span = trace.getSpanContext(context.active());
    if (span !== undefined && isSpanContextValid(span)) return span.traceId;
    return traceIdOfTraceparent(request.headers.traceparent) ?? null;
  } catch {
    return null;
  }
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** The RFC 7807 body of an error: no stack, and no message of a server error. */
export function problemBody(
  error: unknown,
  request: FastifyRequest,
  recorded: RecordedError,
): Record<string, string | number | null> {
  const status = recorded.status;
  const code = (
    typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined
  ) as unknown | undefined;
  return {
    type: 'about:blank',
    title: STATUS_CODES[status] ?? 'Error',
    status,
    detail: status >= 500 ? SERVER_ERROR_DETAIL : maskText(messageOf(error)).slice(0, 1000),
    instance: maskText(pathOf(request.url)).slice(0, 1000),
    request_id: String(request.id),
    trace_id: traceIdOf(request),
    fingerprint: recorded.fingerprint,
    ...(status < 500 && typeof code === 'string' ? { code } : {}),
  };
}

/**
 * A fastify error handler that answers every error with an RFC 7807 problem
 * (`application/problem+json`: `type`, `title`, `status`, `detail`, `instance`, `request_id`,
 * `trace_id`, `fingerprint`). Server errors get a fixed `detail`; client errors (4xx) their
 * message, masked, and their `code`. Install it with the plugin option `problemErrorHandler: true`,
 * or call it from an error handler of your own for the errors you do not answer yourself. When obs
 * is not registered, or `obs.exception-handler` is off or skips the request, the error goes on to
 * the parent error handler (fastify's default at the root).
 */
export function problemErrorHandler(
  error: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  const obs = (request.server as FastifyInstance & { obs?: ObsCore }).obs;
  const state = obs === undefined ? undefined : states.get(obs);
  let recorded: RecordedError | undefined;
  try {
    if (state?.obs.isEnabledFor('exception-handler', request)) {
      recorded = state.recorded.get(request) ?? state.record(error, request, reply);
    }
  } catch {
    recorded = undefined;
  }
  if (recorded === undefined || state === undefined) return reply.send(error);
  if (reply.sent) return reply;
  const headers = (error as { headers?: unknown } | null)?.headers;
  if (recorded.status < 500 && typeof headers === 'object' && headers !== null) {
    try {
      reply.headers(headers as Record<string, string>);
    } catch {
      // a bad header from an error never stops the answer
    }
  }
  return reply
    .code(recorded.status)
    .type(PROBLEM_CONTENT_TYPE)
    .send(JSON.stringify(problemBody(error, request, recorded)));
}

/** Options of {@link registerExceptionHandler}. */
export interface ExceptionHandlerOptions {
  /** Install {@link problemErrorHandler} as the error handler of `app`. Default false. */
  readonly problemErrorHandler?: boolean;
}

type LogFn = (object: object, message?: string) => void;

/**
 * Wires the exception feature into a fastify app: an `onError` hook that records server errors
 * (log line, span, `obs_errors_unhandled_total`) while `obs.exception-handler` is on and its
 * `enabled-when` admits the request, the `exception-handler` snapshot section, and, when asked,
 * {@link problemErrorHandler} as the app's error handler. An error handler the app set before obs
 * is never replaced (a warning says how to delegate instead); one it sets after obs replaces ours.
 */
export function registerExceptionHandler(
  app: FastifyInstance,
  obs: ObsCore,
  options: ExceptionHandlerOptions = {},
): void {
  const settings = obs.config['exception-handler'];
  const frames = settings['fingerprint-frames'];
  let installed: 'installed' | 'not requested' | 'kept the error handler set before obs' = 'not requested';
  obs.addSnapshotSection('exception-handler', () => ({
    enabled: settings.enabled,
    fingerprint: {
      algorithm: 'sha256',
      frames,
      covers: 'error type and top frames (function, package-relative file)',
    },
    problem_error_handler: settings.enabled ? installed : 'off',
    metric: EXCEPTION_METRICS.unhandled,
  }));
  if (!settings.enabled) return;

  const unhandled = new Counter({
    name: EXCEPTION_METRICS.unhandled,
    help: 'Server errors (5xx) that reached error handling, by exception type and fingerprint',
    labelNames: ['exception', 'fingerprint'],
    registers: [obs.registry],
  });
  const recorded = new WeakMap<FastifyRequest, RecordedError>();
  const logger = obs.logger as typeof obs.logger & { error?: LogFn };
  const logError: LogFn =
    typeof logger.error === 'function' ? logger.error.bind(logger) : logger.warn.bind(logger);

  const record = (error: unknown, request: FastifyRequest, reply: FastifyReply): RecordedError => {
    const status = errorStatus(error, reply.statusCode);
    const result: RecordedError = { fingerprint: fingerprint(error, frames), type: errorType(error), status };
    recorded.set(request, result);
    if (status < 500) return result;
    const message = maskText(messageOf(error)).slice(0, 2000);
    const stack = (error as { stack?: unknown } | null)?.stack;
    const maskedStack = typeof stack === 'string' ? maskText(stack) : undefined;
    try {
      const span = trace.getActiveSpan();
      if (span !== undefined) {
        span.recordException(
          maskedStack === undefined
            ? { name: result.type, message }
            : { name: result.type, message, stack: maskedStack },
        );
        span.setAttribute('exception.fingerprint', result.fingerprint);
        span.setStatus({ code: SpanStatusCode.ERROR, message: result.type });
      }
    } catch {
      // telemetry never fails a request
    }
    try {
      unhandled.inc(
        obs.firewall.admitLabels(EXCEPTION_METRICS.unhandled, {
          exception: result.type,
          fingerprint: result.fingerprint,
        }),
      );
    } catch {
      // idem
    }
    try {
      logError(
        {
          obs: 'exception',
          request_id: request.id,
          fingerprint: result.fingerprint,
          exception: result.type,
          status,
          method: request.method,
          route: request.routeOptions.url ?? null,
          error: { type: result.type, message, ...(maskedStack === undefined ? {} : { stack: maskedStack }) },
        },
        `unhandled ${result.type} (fingerprint ${result.fingerprint.slice(0, 12)}): ${message}`,
      );
    } catch {
      // idem
    }
    return result;
  };
  states.set(obs, { obs, frames, record, recorded });

  app.addHook('onError', (request, reply, error, done) => {
    try {
      if (obs.isEnabledFor('exception-handler', request)) record(error, request, reply);
    } catch {
      // idem
    }
    done();
  });

  if (options.problemErrorHandler === true) {
    // fastify's own handler is `defaultErrorHandler`; anything else was set by the app before obs.
    if (app.errorHandler.name === 'defaultErrorHandler') {
      app.setErrorHandler(problemErrorHandler);
      installed = 'installed';
    } else {
      installed = 'kept the error handler set before obs';
      obs.logger.warn(
        { obs: 'exception' },
        'obs problemErrorHandler not installed: the app set an error handler before obs; call problemErrorHandler(error, request, reply) from it to answer with problems',
      );
    }
  }
}
