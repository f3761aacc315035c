/**
 * Kafka (`obs.kafka`), for a kafkajs client handed to obs with {@link instrumentKafka}:
 *
 * - Producers (`send`, `sendBatch`, and those of a transaction) stamp each record, inside a request
 *   context, with the absolute deadline (`Obs-Timeout-Deadline-Ms`), the remaining milliseconds
 *   (`outbound-header`) and the request id (`obs.context.request-id-header`); a header the caller
 *   set is kept. With `minimum-budget` or less left, the call counts in
 *   `obs_timeout_budget_exhausted_total{transport="kafka"}`; a produce is never refused, whatever
 *   `abort-on-exhaustion` says. Outside a request context nothing is stamped or counted.
 * - Consumers (`run` with `eachMessage` or `eachBatch`) run each message (batch) inside a request
 *   context rebuilt from the record's headers ({@link recordContext}): the absolute deadline first,
 *   the remaining milliseconds from now only when it is absent, never the record's timestamp. A
 *   record is never skipped because its deadline passed; only `skip-stale-records` skips records
 *   older than `skip-stale-max-age` (by their timestamp), counted in
 *   `obs_kafka_records_skipped_total{topic}`. `obs_kafka_consumer_time_lag_seconds{group,topic,partition}`
 *   is how old the last consumed record was.
 *
 * kafkajs is not a dependency: the small part of it used here is typed by its shape
 * (`kafka-records.ts`). The instrumentation never fails a produce or a consume: a failure of its
 * own is logged and the call goes on without it.
 */
import { type Context, context, propagation } from '@opentelemetry/api';
import { Counter, Gauge } from 'prom-client';
import type { ObsCore } from '../../core/obs.ts';
import { PRIORITY_BAGGAGE_KEY, parsePriority } from '../../features/priority.ts';
import { contextKit } from '../../features/request-context/context-hook.ts';
import {
  currentRequestContext,
  type RequestContext,
  runInRequestContext,
} from '../../features/request-context/request-context.ts';
import { parseRetryDepth, RETRY_DEPTH_BAGGAGE_KEY } from '../../features/retry/retry-depth.ts';
import { TENANT_BAGGAGE_KEY, tenantFromHeader } from '../../features/tenant.ts';
import { decideOutbound } from '../../features/timeout-budget/timeout-budget-clients.ts';
import { DEADLINE_BAGGAGE_KEY, outboundPolicyOf } from '../../features/timeout-budget/timeout-budget-hook.ts';
import {
  type CarriedContext,
  isStaleRecord,
  type KafkaConsumerLike,
  type KafkaLike,
  type KafkaMessageLike,
  type KafkaProducerBatchLike,
  type KafkaProducerLike,
  type KafkaProducerRecordLike,
  type KafkaRunConfigLike,
  type KafkaSenderLike,
  type RecordContextSettings,
  recordAgeMs,
  recordContext,
  stampMessage,
} from './kafka-records.ts';

/** Names of the Kafka meters. */
export const KAFKA_METRICS = {
  consumerTimeLag: 'obs_kafka_consumer_time_lag_seconds',
  recordsSkipped: 'obs_kafka_records_skipped_total',
} as const;

// ---------------------------------------------------------------------------------------------
// Instrumentation

interface KafkaInstrumentation {
  readonly obs: ObsCore;
  readonly skipped: Counter<'topic'>;
  readonly lag: Gauge<'group' | 'topic' | 'partition'>;
  readonly counts: { stamped: number; consumed: number; skipped: number };
  failed(where: string, error: unknown): void;
}

const instrumentations = new WeakMap<ObsCore, KafkaInstrumentation>();
const INSTRUMENTED = Symbol.for('echo-chaos.obs.kafka-instrumented');

/** The meters and snapshot section of `obs`'s Kafka instrumentation, made once per obs. */
function instrumentationOf(obs: ObsCore): KafkaInstrumentation {
  const known = instrumentations.get(obs);
  if (known !== undefined) return known;
  const counts = { stamped: 0, consumed: 0, skipped: 0 };
  const made: KafkaInstrumentation = {
    obs,
    counts,
    skipped: new Counter({
      name: KAFKA_METRICS.recordsSkipped,
      help: 'Consumed Kafka records skipped as older than obs.kafka.skip-stale-max-age, by topic',
      labelNames: ['topic'],
      registers: [obs.registry],
    }),
    lag: new Gauge({
      name: KAFKA_METRICS.consumerTimeLag,
      help: 'How old the last consumed Kafka record was (now minus its timestamp), seconds',
      labelNames: ['group', 'topic', 'partition'],
      registers: [obs.registry],
    }),
    failed(where, error) {
      try {
        obs.logger.warn(
          { obs: 'kafka', where, err: String(error) },
          `obs could not instrument a Kafka ${where}; it goes on without it`,
        );
      } catch {
        // nothing more to do
      }
    },
  };
  obs.addSnapshotSection('kafka', () => ({
    config: obs.resolved.effective['kafka'] ?? null,
    metrics: [KAFKA_METRICS.consumerTimeLag, KAFKA_METRICS.recordsSkipped],
    ...counts,
  }));
  instrumentations.set(obs, made);
  return made;
}

/** The headers a produce made now stamps on each record, with its exhaustion counted; none outside a request. */
function produceStamps(obs: ObsCore): Array<readonly [string, string]> | undefined {
  if (!obs.config.kafka['propagation-enabled']) return undefined;
  const requestContext = currentRequestContext();
  if (requestContext === undefined) return undefined;
  const decision = decideOutbound('kafka');
  // A produce is never refused: decision.refusal (abort-on-exhaustion) is ignored on purpose.
  const stamps: Array<readonly [string, string]> = [...(decision?.headers ?? [])];
  stamps.push([obs.config.context['request-id-header'], requestContext.requestId]);
  return stamps;
}

function instrumentSender<S extends KafkaSenderLike>(sender: S, kit: KafkaInstrumentation): S {
  const send = sender.send;
  const sendBatch = sender.sendBatch;
  sender.send = function (this: unknown, record: KafkaProducerRecordLike) {
    let next = record;
    try {
      const stamps = produceStamps(kit.obs);
      if (stamps !== undefined && record !== undefined && Array.isArray(record.messages)) {
        next = { ...record, messages: record.messages.map((m) => stampMessage(m, stamps)) };
        kit.counts.stamped += next.messages.length;
      }
    } catch (error) {
      kit.failed('produce', error);
      next = record;
    }
    return send.call(this, next);
  };
  sender.sendBatch = function (this: unknown, batch: KafkaProducerBatchLike) {
    let next = batch;
    try {
      const stamps = produceStamps(kit.obs);
      if (stamps !== undefined && batch !== undefined && Array.isArray(batch.topicMessages)) {
        next = {
          ...batch,
          topicMessages: batch.topicMessages.map((t) => ({
            ...t,
            messages: t.messages.map((m) => stampMessage(m, stamps)),
          })),
        };
        for (const t of next.topicMessages ?? []) kit.counts.stamped += t.messages.length;
      }
    } catch (error) {
      kit.failed('produce', error);
      next = batch;
    }
    return sendBatch.call(this, next);
  };
  return sender;
}

function instrumentProducer<P extends KafkaProducerLike>(producer: P, kit: KafkaInstrumentation): P {
  instrumentSender(producer, kit);
  const transaction = producer.transaction;
  if (typeof transaction === 'function') {
    producer.transaction = async function (this: unknown) {
      const made = await transaction.call(this);
      try {
        instrumentSender(made, kit);
      } catch (error) {
        kit.failed('transaction', error);
      }
      return made;
    };
  }
  return producer;
}

/** The settings records are read with, read when each record arrives (the plugin may register later). */
function contextSettings(obs: ObsCore): RecordContextSettings {
  const budgetConfig = obs.config['timeout-budget'];
  const { retry, priority, tenant } = obs.config;
  return {
    budgetConfig,
    policy: budgetConfig.enabled ? outboundPolicyOf(obs) : undefined,
    requestIdHeader: obs.config.context['request-id-header'],
    propagation: contextKit(obs).propagation,
    // The header forms only: a record has no Authorization header or host of its own.
    carried(header) {
      const carried: { -readonly [K in keyof CarriedContext]: CarriedContext[K] } = {};
      if (retry.enabled) {
        const depth = parseRetryDepth(header(retry['header-name']));
        carried.retryDepth = typeof depth === 'number' ? depth : 0;
      }
      if (priority.enabled) {
        carried.priority = parsePriority(
          header(priority['header-name']),
          priority['default-priority'],
        ).priority;
      }
      if (tenant.enabled) {
        const read = tenantFromHeader(header(tenant.header.name));
        if (read.kind === 'valid') carried.tenant = read.tenant;
      }
      return carried;
    },
  };
}

/** The baggage entries of a rebuilt context: the deadline and what the other features carry. */
function recordBaggage(store: RequestContext): Array<readonly [string, string]> {
  const entries: Array<readonly [string, string]> = [];
  if (store.budget !== undefined) entries.push([DEADLINE_BAGGAGE_KEY, String(store.budget.deadlineEpochMs)]);
  if (store.retryDepth !== undefined) entries.push([RETRY_DEPTH_BAGGAGE_KEY, String(store.retryDepth)]);
  if (store.priority !== undefined) entries.push([PRIORITY_BAGGAGE_KEY, store.priority]);
  if (store.tenant !== undefined) entries.push([TENANT_BAGGAGE_KEY, store.tenant]);
  return entries;
}

/**
 * Runs `fn` inside `store` and an OpenTelemetry context whose baggage holds the deadline and the
 * carried values (when there are any).
 */
function runInside<T>(store: RequestContext | undefined, fn: () => T, kit: KafkaInstrumentation): T {
  if (store === undefined) return fn();
  let otel: Context | undefined;
  try {
    const entries = recordBaggage(store);
    if (entries.length > 0) {
      const active = context.active();
      let baggage = propagation.getBaggage(active) ?? propagation.createBaggage();
      for (const [key, value] of entries) baggage = baggage.setEntry(key, { value });
      otel = propagation.setBaggage(active, baggage);
    }
  } catch (error) {
    kit.failed('consume', error);
  }
  return runInRequestContext(store, () => (otel === undefined ? fn() : context.with(otel, fn)));
}

function recordLag(
  kit: KafkaInstrumentation,
  group: string,
  topic: string,
  partition: number,
  message: KafkaMessageLike,
  nowMs: number,
): void {
  if (!kit.obs.config.kafka['consumer-time-lag-enabled']) return;
  const age = recordAgeMs(message.timestamp, nowMs);
  if (age !== undefined) kit.lag.set({ group, topic, partition: String(partition) }, age / 1000);
}

function isSkipped(
  kit: KafkaInstrumentation,
  topic: string,
  message: KafkaMessageLike,
  nowMs: number,
): boolean {
  const config = kit.obs.config.kafka;
  if (
    !config['skip-stale-records'] ||
    !isStaleRecord(message.timestamp, nowMs, config['skip-stale-max-age'])
  ) {
    return false;
  }
  kit.counts.skipped += 1;
  kit.skipped.inc({ topic });
  return true;
}

function wrapEachMessage(
  handler: NonNullable<KafkaRunConfigLike['eachMessage']>,
  kit: KafkaInstrumentation,
  group: string,
): NonNullable<KafkaRunConfigLike['eachMessage']> {
  return function (this: unknown, payload) {
    let store: RequestContext | undefined;
    try {
      const nowMs = Date.now();
      const { topic, partition, message } = payload;
      recordLag(kit, group, topic, partition, message, nowMs);
      if (isSkipped(kit, topic, message, nowMs)) return Promise.resolve();
      kit.counts.consumed += 1;
      store = recordContext(message.headers, contextSettings(kit.obs), nowMs);
    } catch (error) {
      kit.failed('consume', error);
      store = undefined;
    }
    return runInside(store, () => handler.call(this, payload), kit);
  };
}

/**
 * eachBatch: stale records are taken out of `batch.messages` (a view of the batch; its offsets,
 * `lastOffset()` included, still cover them, so resolving the batch commits past them); a batch
 * whose records are all stale is not handed over, its last offset is resolved. The batch runs in
 * the context of the record with the earliest deadline (the first record when none has one): the
 * batch's work should be done before any of its records' deadlines.
 */
function wrapEachBatch(
  handler: NonNullable<KafkaRunConfigLike['eachBatch']>,
  kit: KafkaInstrumentation,
  group: string,
): NonNullable<KafkaRunConfigLike['eachBatch']> {
  return function (this: unknown, payload) {
    let store: RequestContext | undefined;
    let view = payload;
    try {
      const nowMs = Date.now();
      const { batch } = payload;
      const { topic, partition, messages } = batch;
      const last = messages[messages.length - 1];
      if (last !== undefined) recordLag(kit, group, topic, partition, last, nowMs);
      const fresh = messages.filter((m) => !isSkipped(kit, topic, m, nowMs));
      if (fresh.length === 0 && messages.length > 0) {
        payload.resolveOffset(batch.lastOffset());
        return Promise.resolve();
      }
      if (fresh.length < messages.length) {
        view = {
          ...payload,
          batch: Object.create(batch, { messages: { value: fresh, enumerable: true, writable: true } }),
        };
      }
      kit.counts.consumed += fresh.length;
      const settings = contextSettings(kit.obs);
      const contexts = fresh.map((m) => recordContext(m.headers, settings, nowMs));
      store = contexts.reduce<RequestContext | undefined>((best, c) => {
        if (best === undefined) return c;
        if (c.budget === undefined) return best;
        return best.budget === undefined || c.budget.deadlineEpochMs < best.budget.deadlineEpochMs ? c : best;
      }, undefined);
    } catch (error) {
      kit.failed('consume', error);
      store = undefined;
      view = payload;
    }
    const handed = view;
    return runInside(store, () => handler.call(this, handed), kit);
  };
}

function instrumentConsumer<C extends KafkaConsumerLike>(
  consumer: C,
  kit: KafkaInstrumentation,
  group: string,
): C {
  const run = consumer.run;
  consumer.run = function (this: unknown, config?: KafkaRunConfigLike) {
    let next = config;
    try {
      if (config !== undefined) {
        next = { ...config };
        if (typeof config.eachMessage === 'function') {
          next.eachMessage = wrapEachMessage(config.eachMessage, kit, group);
        }
        if (typeof config.eachBatch === 'function') {
          next.eachBatch = wrapEachBatch(config.eachBatch, kit, group);
        }
      }
    } catch (error) {
      kit.failed('consumer', error);
      next = config;
    }
    return run.call(this, next);
  };
  return consumer;
}

/**
 * Instruments a kafkajs `Kafka` client for `obs` (see the module comment): the producers and
 * consumers it makes from now on stamp and rebuild the request context, skip stale records when
 * asked and record the consumer time lag. Returns the same client. Does nothing when
 * `obs.kafka.enabled=false`, or a second time for the same client. The rebuilt contexts carry a
 * budget when the obs plugin registered the timeout budget (`obs.timeout-budget.enabled`). Never
 * throws: a client obs cannot instrument is logged and returned as it was.
 */
export function instrumentKafka<K extends KafkaLike>(kafka: K, obs: ObsCore): K {
  try {
    if (!obs.config.kafka.enabled) return kafka;
    const marked = kafka as K & { [INSTRUMENTED]?: boolean };
    if (marked[INSTRUMENTED] === true) return kafka;
    const kit = instrumentationOf(obs);
    const producer = kafka.producer;
    const consumer = kafka.consumer;
    Object.defineProperty(marked, INSTRUMENTED, { value: true });
    kafka.producer = function (this: unknown, config?: unknown) {
      const made = producer.call(this, config);
      try {
        return instrumentProducer(made, kit);
      } catch (error) {
        kit.failed('producer', error);
        return made;
      }
    };
    kafka.consumer = function (this: unknown, config: { groupId: string }) {
      const made = consumer.call(this, config);
      try {
        return instrumentConsumer(made, kit, String(config?.groupId ?? ''));
      } catch (error) {
        kit.failed('consumer', error);
        return made;
      }
    };
  } catch (error) {
    try {
      obs.logger.warn({ obs: 'kafka', err: String(error) }, 'obs could not instrument the Kafka client');
    } catch {
      // nothing more to do
    }
  }
  return kafka;
}
