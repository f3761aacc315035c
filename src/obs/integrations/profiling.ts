/**
 * Continuous-profiling correlation (`obs.profiling`, opt-in): links each request's trace to
 * Pyroscope's profiles, the way Pyroscope's span profiles do (its `otel-profiling-*` packages).
 *
 * - Its part of the request context puts, on the span active when the request arrives (the
 *   request's server span, the root span of the request in this service), `profile.id` and
 *   `pyroscope.profile_id`, both set to that span's id: the profile samples of the request carry the
 *   same id as their `span_id` label.
 * - With `obs.profiling.pyroscope-url` set, the span also gets `pyroscope.profile.url`, a deep link
 *   to the request's profile in Pyroscope's explore view ({@link profileUrl}).
 * - With a `@pyroscope/nodejs` handed to obs ({@link instrumentPyroscope}) and profiling started by
 *   the application (`Pyroscope.init(...)`, `Pyroscope.start()`), the rest of the request's
 *   `onRequest` chain runs inside `Pyroscope.wrapWithLabels({ span_id })`, so the samples it takes
 *   carry the span id. Only the synchronous part of that chain is labelled (the wall profiler's
 *   labels follow synchronous calls, not promises); a label that cannot be set (profiling not
 *   started) is counted and the request goes on.
 *
 * Without an OpenTelemetry SDK there is no span, so nothing is stamped. `@pyroscope/nodejs` is not
 * a dependency: it is typed by its shape; obs never starts profiling or pushes anything itself.
 */
import { isSpanContextValid, trace } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ObsCore } from '../core/obs.ts';
import { contextKit } from '../features/request-context/context-hook.ts';

const FEATURE = 'profiling';

/** The attributes profiling puts on a request's root span. */
export const PROFILING_SPAN_ATTRIBUTES = {
  profileId: 'profile.id',
  pyroscopeProfileId: 'pyroscope.profile_id',
  profileUrl: 'pyroscope.profile.url',
} as const;

/** The label the profile samples of a request carry (Pyroscope's span profiles). */
export const PYROSCOPE_SPAN_LABEL = 'span_id';
/** The profile type of the deep link: the Node.js SDK's wall-clock profile. */
export const PYROSCOPE_PROFILE_TYPE = 'wall:wall:nanoseconds:wall:nanoseconds';

/** The part of `@pyroscope/nodejs` obs uses. */
export interface PyroscopeLike {
  wrapWithLabels(labels: Record<string, string | number>, fn: () => void, ...args: unknown[]): void;
}

interface ProfilingState {
  pyroscope: PyroscopeLike | undefined;
  stamped: number;
  noSpan: number;
  labelled: number;
  labelFailures: number;
  warned: boolean;
}

const states = new WeakMap<ObsCore, ProfilingState>();

function stateOf(obs: ObsCore): ProfilingState {
  let state = states.get(obs);
  if (state === undefined) {
    state = { pyroscope: undefined, stamped: 0, noSpan: 0, labelled: 0, labelFailures: 0, warned: false };
    states.set(obs, state);
  }
  return state;
}

/**
 * The deep link of a span's profile:
 * `<pyroscope-url>/explore?query=<type>{service_name="<service>",span_id="<span id>"}&from=now-1h&until=now`
 * (the query URL-encoded; `<type>` is {@link PYROSCOPE_PROFILE_TYPE}). `service` is the name the
 * application gives Pyroscope (`appName`), which obs takes to be its own service name.
 */
export function profileUrl(base: string, service: string, spanId: string): string {
  const selector = `${PYROSCOPE_PROFILE_TYPE}{service_name="${quoteLabel(service)}",${PYROSCOPE_SPAN_LABEL}="${quoteLabel(spanId)}"}`;
  return `${base.replace(/\/+$/, '')}/explore?query=${encodeURIComponent(selector)}&from=now-1h&until=now`;
}

function quoteLabel(value: string): string {
  return value.replace(/["\\]/g, (c) => `\\${c}`);
}

/**
 * Hands a `@pyroscope/nodejs` module to obs: the requests of apps with `obs.profiling.enabled`
 * then label their profile samples with their span id (see the module comment). Returns it.
 */
export function instrumentPyroscope<P extends PyroscopeLike>(pyroscope: P, obs: ObsCore): P {
  stateOf(obs).pyroscope = pyroscope;
  return pyroscope;
}

/**
 * Adds profiling to a fastify app: its part of the request context (the span attributes), the
 * labelling hook and the `profiling` snapshot section (the first two only when
 * `obs.profiling.enabled`). plugin.ts calls it.
 */
export function registerProfiling(app: FastifyInstance, obs: ObsCore): void {
  const config = obs.config[FEATURE];
  const state = stateOf(obs);
  const base = config['pyroscope-url'];
  obs.addSnapshotSection(FEATURE, () => ({
    enabled: config.enabled,
    config: obs.resolved.effective[FEATURE] ?? null,
    span_attributes: Object.values(PROFILING_SPAN_ATTRIBUTES).filter(
      (a) => base !== undefined || a !== PROFILING_SPAN_ATTRIBUTES.profileUrl,
    ),
    pyroscope: state.pyroscope !== undefined,
    stamped: state.stamped,
    without_span: state.noSpan,
    labelled: state.labelled,
    label_failures: state.labelFailures,
  }));
  if (!config.enabled) return;

  const spanIds = new WeakMap<FastifyRequest, string>();
  contextKit(obs).addContributor(FEATURE, ({ request, attribute }) => {
    const spanContext = trace.getActiveSpan()?.spanContext();
    if (spanContext === undefined || !isSpanContextValid(spanContext)) {
      state.noSpan += 1;
      return;
    }
    const id = spanContext.spanId;
    attribute(PROFILING_SPAN_ATTRIBUTES.profileId, id);
    attribute(PROFILING_SPAN_ATTRIBUTES.pyroscopeProfileId, id);
    if (base !== undefined)
      attribute(PROFILING_SPAN_ATTRIBUTES.profileUrl, profileUrl(base, obs.serviceName, id));
    state.stamped += 1;
    spanIds.set(request, id);
  });

  app.addHook('onRequest', (request, _reply, done) => {
    const pyroscope = state.pyroscope;
    const id = spanIds.get(request);
    if (pyroscope === undefined || id === undefined) {
      done();
      return;
    }
    spanIds.delete(request);
    let called = false;
    let chainError: { readonly error: unknown } | undefined;
    const next = (): void => {
      called = true;
      try {
        done();
      } catch (error) {
        chainError = { error };
        throw error;
      }
    };
    try {
      pyroscope.wrapWithLabels({ [PYROSCOPE_SPAN_LABEL]: id }, next);
      state.labelled += 1;
    } catch (error) {
      if (chainError !== undefined) throw chainError.error; // the request's own chain: not ours to hide
      state.labelFailures += 1;
      if (!state.warned) {
        state.warned = true;
        try {
          obs.logger.warn(
            { obs: FEATURE, err: String(error) },
            'obs could not label profile samples with the span id (has the application started Pyroscope?); requests go on unlabelled',
          );
        } catch {
          // nothing more to do
        }
      }
      if (!called) done();
    }
  });
}
