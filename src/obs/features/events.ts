/**
 * Wide events (`obs.wide-events`): `obs.event(name, attributes)` writes a span event on the active
 * span (a no-op without an SDK or a span), increments `obs_events_total{event}` (the name through
 * the cardinality firewall) and writes one log line. Nothing runs until it is called: no hook, no
 * timer. Attributes are bounded (`max-attributes` of them, string values cut at
 * `max-attribute-length` characters) and, while `obs.logging.pii-masking-enabled`, masked before
 * they reach the span or the log.
 */
import { trace } from '@opentelemetry/api';
import { Counter, type Registry } from 'prom-client';
import type { CardinalityFirewall } from '../core/cardinality.ts';
import type { ObsConfig } from '../core/config/config-schema.ts';
import type { ObsCore } from '../core/obs.ts';
import { isSecretName, MASK, maskText } from './logging/masking.ts';

/** Attribute values of a wide event. */
export type EventAttributes = Readonly<Record<string, string | number | boolean>>;

/** Characters of an event name kept (span event and log line); the metric label is firewalled. */
export const MAX_EVENT_NAME_CHARS = 128;
/** Characters of an attribute key kept. */
export const MAX_EVENT_KEY_CHARS = 128;
/** The name of the counter of wide events. */
export const EVENTS_METRIC = 'obs_events_total';

/** What {@link createWideEvents} needs from the obs core. */
export interface WideEventsDependencies {
  readonly config: Pick<ObsConfig, 'wide-events' | 'logging'>;
  readonly firewall: CardinalityFirewall;
  readonly registry: Registry;
  readonly logger: { info(object: object, message?: string): void };
}

/** The wide-event API of one obs core. */
export interface WideEvents {
  /** Emits an event as `obs.wide-events` allows. Never throws. */
  emit(name: string, attributes?: EventAttributes): void;
  /** Events emitted so far (the snapshot shows it). */
  readonly emitted: number;
}

/**
 * Keeps at most `maxAttributes` attributes with string, finite number or boolean values: other
 * values become text, keys and strings are cut, and with `mask` strings are masked and the value of
 * a secret-named key (`password`, `token`, ...) is replaced whole.
 */
export function boundEventAttributes(
  attributes: unknown,
  limits: { readonly maxAttributes: number; readonly maxValueChars: number; readonly mask: boolean },
): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  if (typeof attributes !== 'object' || attributes === null) return out;
  let kept = 0;
  for (const key of Object.keys(attributes)) {
    if (kept >= limits.maxAttributes) break;
    const raw: unknown = (attributes as Record<string, unknown>)[key];
    let value: string | number | boolean;
    if (typeof raw === 'boolean') value = raw;
    else if (typeof raw === 'number') value = Number.isFinite(raw) ? raw : String(raw);
    else if (raw === undefined || typeof raw === 'function' || typeof raw === 'symbol') continue;
    else if (typeof raw === 'string') value = raw;
    else {
      try {
        value = typeof raw === 'bigint' ? raw.toString() : (JSON.stringify(raw) ?? String(raw));
      } catch {
        value = '[unserializable]';
      }
    }
    if (limits.mask && isSecretName(key)) value = MASK;
    else if (typeof value === 'string') {
      if (value.length > limits.maxValueChars) value = `${value.slice(0, limits.maxValueChars)}…`;
      if (limits.mask) value = maskText(value);
    }
    out[key.slice(0, MAX_EVENT_KEY_CHARS)] = value;
    kept++;
  }
  return out;
}

/** Builds the wide-event API and its counter (registered at once; no series until an event). */
export function createWideEvents(deps: WideEventsDependencies): WideEvents {
  const settings = deps.config['wide-events'];
  const mask = deps.config.logging['pii-masking-enabled'];
  const counter = new Counter({
    name: EVENTS_METRIC,
    help: 'Wide events emitted through obs.event, by event name',
    labelNames: ['event'],
    registers: [deps.registry],
  });
  let emitted = 0;
  return {
    get emitted() {
      return emitted;
    },
    emit(name, attributes) {
      if (!settings.enabled) return;
      try {
        emitted++;
        const eventName = String(name).slice(0, MAX_EVENT_NAME_CHARS);
        const bounded = boundEventAttributes(attributes ?? {}, {
          maxAttributes: settings['max-attributes'],
          maxValueChars: settings['max-attribute-length'],
          mask,
        });
        try {
          trace.getActiveSpan()?.addEvent(eventName, bounded);
        } catch {
          // a broken span never stops the counter or the log line
        }
        if (settings['counter-enabled']) {
          try {
            counter.inc({ event: deps.firewall.admit(EVENTS_METRIC, 'event', eventName) });
          } catch {
            // idem
          }
        }
        if (settings['log-enabled']) {
          const logged = mask ? maskText(eventName) : eventName;
          deps.logger.info({ event: logged, attributes: bounded }, `event ${logged}`);
        }
      } catch {
        // telemetry never fails the caller
      }
    },
  };
}

/** The wide-events feature's part of `app.obs`. */
export interface WideEventsApi {
  /**
   * Emits a wide event: a span event on the active span (a no-op without an SDK), one increment of
   * `obs_events_total{event}` and one log line, as `obs.wide-events` allows. Never throws.
   */
  event(name: string, attributes?: EventAttributes): void;
}

/** The wide-event API of an obs core; its counter is registered at once. */
export function wideEventsApi(core: ObsCore): WideEventsApi {
  const events = createWideEvents(core);
  return {
    event(name, attributes) {
      events.emit(name, attributes);
    },
  };
}
