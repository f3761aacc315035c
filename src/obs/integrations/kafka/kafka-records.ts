/**
 * What obs reads from and writes to a Kafka record, and the part of kafkajs it touches, typed by
 * shape (kafkajs is not a dependency of obs). Pure: {@link recordContext} rebuilds the request
 * context of a consumed record from its headers, {@link isStaleRecord} says whether
 * `skip-stale-records` skips it, `stampMessage` adds the produce stamps. `kafka.ts` instruments a
 * client with them.
 */
import { randomUUID } from 'node:crypto';
import {
  type ContextPropagation,
  isAcceptableRequestId,
  type OutboundBudgetPolicy,
  type RequestContext,
} from '../../features/request-context/request-context.ts';
import {
  DEADLINE_HEADER,
  establishBudget,
  type TimeoutBudgetConfig,
} from '../../features/timeout-budget/timeout-budget.ts';

// ---------------------------------------------------------------------------------------------
// The part of kafkajs obs uses, by shape.

/** A kafkajs header value: text, bytes, or a repeated header. */
export type KafkaHeaderValue = Buffer | string | Array<Buffer | string> | undefined;
/** kafkajs `IHeaders`. */
export interface KafkaHeadersLike {
  [name: string]: KafkaHeaderValue;
}
/** A record as produced (kafkajs `Message`) or consumed (`KafkaMessage`): the part obs reads. */
export interface KafkaMessageLike {
  headers?: KafkaHeadersLike;
  /** Epoch milliseconds, as text. */
  timestamp?: string;
}
/** kafkajs `ProducerRecord`: the part obs reads. */
export interface KafkaProducerRecordLike {
  topic: string;
  messages: KafkaMessageLike[];
}
/** kafkajs `ProducerBatch`: the part obs reads. */
export interface KafkaProducerBatchLike {
  topicMessages?: KafkaProducerRecordLike[];
}
/** What sends records: a kafkajs producer or transaction. */
export interface KafkaSenderLike {
  send(record: KafkaProducerRecordLike): Promise<unknown>;
  sendBatch(batch: KafkaProducerBatchLike): Promise<unknown>;
}
/** A kafkajs `Producer`: the part obs instruments. */
export interface KafkaProducerLike extends KafkaSenderLike {
  transaction?(): Promise<KafkaSenderLike>;
}
/** kafkajs `EachMessagePayload`: the part obs reads. */
export interface KafkaEachMessagePayloadLike {
  topic: string;
  partition: number;
  message: KafkaMessageLike;
}
/** kafkajs `Batch`: the part obs reads. */
export interface KafkaBatchLike {
  topic: string;
  partition: number;
  messages: KafkaMessageLike[];
  lastOffset(): string;
}
/** kafkajs `EachBatchPayload`: the part obs reads. */
export interface KafkaEachBatchPayloadLike {
  batch: KafkaBatchLike;
  resolveOffset(offset: string): void;
}
/** kafkajs `ConsumerRunConfig`: the part obs wraps. */
export interface KafkaRunConfigLike {
  eachMessage?(payload: KafkaEachMessagePayloadLike): Promise<void>;
  eachBatch?(payload: KafkaEachBatchPayloadLike): Promise<void>;
}
/** A kafkajs `Consumer`: the part obs instruments. */
export interface KafkaConsumerLike {
  run(config?: KafkaRunConfigLike): Promise<void>;
}
/** A kafkajs `Kafka` client: its producer and consumer factories. */
export interface KafkaLike {
  producer(config?: unknown): KafkaProducerLike;
  consumer(config: { groupId: string }): KafkaConsumerLike;
}

// ---------------------------------------------------------------------------------------------
// Pure parts

/** A header value as text: bytes as UTF-8; a repeated header stays a list (malformed for a deadline). */
function headerText(value: KafkaHeaderValue): string | string[] | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) {
    const texts = value.map((v) => v.toString());
    return texts.length === 1 ? texts[0] : texts;
  }
  return value.toString();
}

/** A header of `headers` by name, ignoring case (kafkajs keeps names as produced). */
function findHeader(headers: KafkaHeadersLike | undefined, name: string): KafkaHeaderValue {
  if (headers === undefined || headers === null) return undefined;
  const wanted = name.toLowerCase();
  for (const key of Object.keys(headers)) if (key.toLowerCase() === wanted) return headers[key];
  return undefined;
}

/** What {@link recordContext} reads besides the headers. */
export interface RecordContextSettings {
  /** `obs.timeout-budget`: the inbound header, the safety margin and the maximum budget. */
  readonly budgetConfig: TimeoutBudgetConfig;
  /** The policy the rebuilt budget carries; without one, no budget is rebuilt. */
  readonly policy?: OutboundBudgetPolicy;
  /** `obs.context.request-id-header`. */
  readonly requestIdHeader: string;
  /** Makes a request id when the record carries none; default `randomUUID`. */
  readonly newRequestId?: () => string;
  /**
   * Reads what the other features carry (retry depth, priority, tenant) from the record's headers;
   * `header(name)` is a header's text, ignoring case, undefined when absent or repeated.
   */
  readonly carried?: (header: (name: string) => string | undefined) => CarriedContext;
  /** How the rebuilt context travels on the listener's own outbound calls. */
  readonly propagation?: ContextPropagation;
}

/** The values of a request context other features carry through a record. */
export type CarriedContext = Partial<Pick<RequestContext, 'retryDepth' | 'priority' | 'tenant'>>;

/**
 * The request context of a consumed record, rebuilt from its headers at `nowMs`: the budget from
 * `Obs-Timeout-Deadline-Ms` when present, else from the remaining-ms header (`inbound-header`, less
 * `safety-margin`) counted from now, else none (a record is not given the default budget); its
 * timestamp is never read. An expired deadline stays expired. The request id from its header (when
 * `isAcceptableRequestId`), or a new one. Never throws.
 */
export function recordContext(
  headers: KafkaHeadersLike | undefined,
  settings: RecordContextSettings,
  nowMs: number,
): RequestContext {
  const id = headerText(findHeader(headers, settings.requestIdHeader));
  const requestId = isAcceptableRequestId(id) ? id : (settings.newRequestId ?? randomUUID)();
  const single = (name: string): string | undefined => {
    const text = headerText(findHeader(headers, name));
    return typeof text === 'string' ? text : undefined;
  };
  const base: RequestContext = {
    requestId,
    ...(settings.carried?.(single) ?? {}),
    ...(settings.propagation === undefined ? {} : { propagation: settings.propagation }),
  };
  const policy = settings.policy;
  if (policy === undefined) return base;
  const absolute = headerText(findHeader(headers, DEADLINE_HEADER));
  const inbound = settings.budgetConfig['inbound-header'];
  const remaining = headerText(findHeader(headers, inbound));
  const present: Record<string, string | string[]> = {};
  if (absolute !== undefined) present[DEADLINE_HEADER.toLowerCase()] = absolute;
  if (remaining !== undefined) present[inbound.toLowerCase()] = remaining;
  const { budget } = establishBudget(present, settings.budgetConfig, nowMs);
  // Neither header, or only malformed ones: establishBudget fell back to the default (or to none,
  // with a zero default); a record has none.
  if (budget === undefined || budget.source === 'default') return base;
  return { ...base, budget: { ...budget, policy } };
}

/** How old a record with `timestamp` (epoch ms, as kafkajs gives it) is at `nowMs`; undefined when unreadable. */
export function recordAgeMs(timestamp: string | undefined, nowMs: number): number | undefined {
  if (timestamp === undefined) return undefined;
  const at = Number(timestamp);
  if (timestamp.trim() === '' || !Number.isFinite(at) || at <= 0) return undefined;
  return Math.max(0, nowMs - at);
}

/** Whether a record is older than `maxAgeMs` at `nowMs` (a record of unknown age is not stale). */
export function isStaleRecord(timestamp: string | undefined, nowMs: number, maxAgeMs: number): boolean {
  const age = recordAgeMs(timestamp, nowMs);
  return age !== undefined && age > maxAgeMs;
}

/**
 * The record with the given stamps added where it has no header of that name (ignoring case); a
 * new record, the caller's left as it was.
 */
export function stampMessage<M extends KafkaMessageLike>(
  message: M,
  stamps: ReadonlyArray<readonly [string, string]>,
): M {
  const headers: KafkaHeadersLike = { ...message.headers };
  const names = new Set(Object.keys(headers).map((n) => n.toLowerCase()));
  for (const [name, value] of stamps) if (!names.has(name.toLowerCase())) headers[name] = value;
  return { ...message, headers };
}
