/**
 * The request context on a fastify app: one `onRequest` hook, first among obs's, builds each
 * request's context (`request-context.ts`) from what the features contribute (the timeout budget,
 * the retry depth, the priority, the tenant, fan-out's tally) and runs the rest of the request
 * inside it and inside an OpenTelemetry context whose baggage carries what the features added. The
 * features' span attributes go on the active span (the request's server span, when an SDK traces
 * it). A contributor that throws is logged and skipped: telemetry never fails a request.
 */
import {
  type Context,
  context,
  createContextKey,
  propagation,
  ROOT_CONTEXT,
  trace,
} from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ObsCore } from '../../core/obs.ts';
import { installOutboundBudget } from '../timeout-budget/timeout-budget-clients.ts';
import {
  type ContextPropagation,
  isAcceptableRequestId,
  type RequestContext,
  runInRequestContext,
} from './request-context.ts';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** What a feature's contributor sees of a request while its context is built. */
export interface InboundScope {
  readonly request: FastifyRequest;
  /** The context being built: a contributor sets its feature's fields. */
  readonly store: Mutable<Omit<RequestContext, 'state'>> & { readonly state: Record<string, unknown> };
  /** Adds an entry to the request's OpenTelemetry baggage. */
  baggage(key: string, value: string): void;
  /** Sets an attribute on the active span, when there is one. */
  attribute(key: string, value: string | number | boolean): void;
}

/** One feature's part in building a request's context. May throw: the hook logs it and goes on. */
export type InboundContributor = (scope: InboundScope) => void;

function ignoreAttribute(): void {
  // no span: nothing to set
}

const PROBE_KEY = createContextKey('echo-chaos.obs.context-probe');
const PROBE = ROOT_CONTEXT.setValue(PROBE_KEY, true);

/**
 * Whether an OpenTelemetry context manager runs (an SDK registered one): the API's default manager
 * keeps no context, so a context entered with `with` is not the active one inside it.
 */
function otelContextActive(): boolean {
  return context.with(PROBE, () => context.active() === PROBE);
}

/** Where `@opentelemetry/api` 1.x keeps its global context manager (and its other globals). */
const OTEL_GLOBALS = Symbol.for('opentelemetry.js.api.1');
let probedManager: unknown;
let probed = false;

/**
 * {@link otelContextActive}, probed once per registered context manager rather than for every
 * request: without a registered manager there is none, and the same manager gives the same answer
 * (an SDK enables its manager before it registers it).
 */
function otelContextActiveCached(): boolean {
  const manager = (globalThis as { [OTEL_GLOBALS]?: { context?: unknown } })[OTEL_GLOBALS]?.context;
  if (manager === undefined) return false;
  if (manager !== probedManager) {
    probed = otelContextActive();
    probedManager = manager;
  }
  return probed;
}

function ignoreBaggage(): void {
  // no context manager: no context would carry the baggage
}

/** The request-context machinery of one obs instance. */
export interface ContextKit {
  /** Shared by every request context of this instance; features set their header names on it. */
  readonly propagation: ContextPropagation;
  /** Requests that entered a context. */
  readonly entered: () => number;
  /** Adds a contributor, run for each request in the order added. */
  addContributor(feature: string, contributor: InboundContributor): void;
}

interface Kit extends ContextKit {
  readonly contributors: Array<readonly [string, InboundContributor]>;
  countEntered(): void;
}

const kits = new WeakMap<ObsCore, Kit>();

function kitOf(obs: ObsCore): Kit {
  let kit = kits.get(obs);
  if (kit !== undefined) return kit;
  const contributors: Array<readonly [string, InboundContributor]> = [];
  let entered = 0;
  kit = {
    contributors,
    propagation: {
      failed(transport, error) {
        try {
          obs.logger.warn(
            { obs: 'context', transport, err: String(error) },
            `obs could not propagate the request context on a ${transport} call; the call goes on without it`,
          );
        } catch {
          // nothing more to do
        }
      },
    },
    entered: () => entered,
    countEntered() {
      entered += 1;
    },
    addContributor(feature, contributor) {
      contributors.push([feature, contributor]);
    },
  };
  kits.set(obs, kit);
  return kit;
}

/** The request-context kit of `obs`, made on first use. */
export function contextKit(obs: ObsCore): ContextKit {
  return kitOf(obs);
}

/**
 * The request id of a request: its `request-id-header` when {@link isAcceptableRequestId}, else
 * fastify's id.
 */
export function requestIdOf(request: Pick<FastifyRequest, 'id' | 'headers'>, header: string): string {
  const value = request.headers[header];
  return isAcceptableRequestId(value) ? value : String(request.id);
}

/**
 * Adds the request-context hook to a fastify app. Register it before any other `onRequest` hook
 * of obs, so that they and the handler run inside the context.
 */
export function registerRequestContext(app: FastifyInstance, obs: ObsCore): void {
  const kit = kitOf(obs);
  const { contributors, propagation: shared } = kit;
  const idHeader = obs.config.context['request-id-header'].toLowerCase();
  obs.addSnapshotSection('context', () => ({
    enabled: obs.config.context.enabled,
    config: obs.resolved.effective.context ?? null,
    request_id_header: obs.config.context['request-id-header'],
    contributors: contributors.map(([feature]) => feature),
    entered: kit.entered(),
  }));

  // The global fetch and node:http carry the context (once per process; inert outside a request).
  installOutboundBudget();
  app.addHook('onRequest', (request, _reply, done) => {
    let otel: Context | undefined;
    let store: InboundScope['store'];
    try {
      store = { requestId: requestIdOf(request, idHeader), state: {}, propagation: shared };
      // Built only when it can matter: baggage once some feature adds an entry and an OpenTelemetry
      // context manager runs (without one no context is ever active, so none would carry it), span
      // attributes only when there is a span.
      let entries: Array<readonly [string, string]> | undefined;
      const span = trace.getActiveSpan();
      const scope: InboundScope = {
        request,
        store,
        baggage: otelContextActiveCached()
          ? (key, value) => {
              entries ??= [];
              entries.push([key, value]);
            }
          : ignoreBaggage,
        attribute:
          span === undefined
            ? ignoreAttribute
            : (key, value) => {
                span.setAttribute(key, value);
              },
      };
      scope.attribute('obs.request_id', store.requestId);
      for (const [feature, contribute] of contributors) {
        try {
          contribute(scope);
        } catch (error) {
          shared.failed(`inbound ${feature}`, error);
        }
      }
      if (entries !== undefined) {
        const active = context.active();
        let baggage = propagation.getBaggage(active) ?? propagation.createBaggage();
        for (const [key, value] of entries) baggage = baggage.setEntry(key, { value });
        otel = propagation.setBaggage(active, baggage);
      }
      kit.countEntered();
    } catch (error) {
      // telemetry never fails a request: it goes on without a context
      shared.failed('inbound', error);
      done();
      return;
    }
    const entered: RequestContext = store;
    // The rest of the request (later hooks, the handler) runs inside both contexts.
    runInRequestContext(entered, () => (otel === undefined ? done() : context.with(otel, done)));
  });
}
