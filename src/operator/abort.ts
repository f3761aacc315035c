/**
 * Steady-state abort (`spec.abortWhen`): every poll interval, each running EchoScenario that has one
 * has its Prometheus query evaluated (`GET <PROMETHEUS_URL>/api/v1/query`, one at a time, each with
 * a timeout); when the comparison with the threshold has held at every poll for `for`, the
 * experiment is aborted (the operator removes it from its pods, reason `Aborted`, until the spec
 * changes). A failed query breaks the streak: only a condition seen to hold aborts. A check that
 * cannot be made (no `PROMETHEUS_URL`, Prometheus down, an answer that is no query result) fails
 * closed: after `failureThreshold` failures in a row the check is unhealthy, and with `onError:
 * Suspend` (the default) the experiment leaves its pods until a check succeeds again.
 */
import { parseDurationMs } from '@echo-chaos/obs/internal';
import type { Counter } from 'prom-client';
import type { EchoScenario } from './echo-scenario.ts';
import { OperatorError } from './errors.ts';
import {
  type AbortCheck,
  type AbortWhen,
  type Comparison,
  failureThresholdOf,
  onErrorOf,
} from './lifecycle.ts';
import type { OperatorLogger } from './logger.ts';

/** Longest Prometheus answer read, in bytes. */
const MAX_BODY_BYTES = 1 << 20;

/** Whether `data` is a query result {@link evaluate} can read: a vector or a scalar. */
export function isQueryResult(data: unknown): boolean {
  const d = data as { resultType?: unknown; result?: unknown } | null | undefined;
  if (typeof d !== 'object' || d === null || !Array.isArray(d.result)) return false;
  if (d.resultType === 'scalar') return d.result.length === 2;
  if (d.resultType !== 'vector') return false;
  return d.result.every(
    (sample: { value?: unknown } | null) => Array.isArray(sample?.value) && sample.value.length === 2,
  );
}

/** Whether a query result holds: any sample of a vector, or the scalar, compared with the threshold. */
export function evaluate(
  data: unknown,
  comparison: Comparison,
  threshold: number,
): { holds: boolean; value: number | undefined } {
  const d = data as { resultType?: string; result?: unknown } | undefined;
  const values: number[] = [];
  if (d?.resultType === 'scalar' && Array.isArray(d.result)) values.push(Number(d.result[1]));
  if (d?.resultType === 'vector' && Array.isArray(d.result)) {
    for (const sample of d.result as Array<{ value?: [number, string] }>)
      values.push(Number(sample.value?.[1]));
  }
  const compare = (v: number) =>
    comparison === '>'
      ? v > threshold
      : comparison === '>='
        ? v >= threshold
        : comparison === '<'
          ? v < threshold
          : v <= threshold;
  const finite = values.filter((v) => !Number.isNaN(v));
  const hit = finite.find(compare);
  return { holds: hit !== undefined, value: hit ?? finite[0] };
}

/** The URL an instant query goes to (without its query string), as messages name it. */
export function queryUrlOf(baseUrl: string): URL {
  return new URL('api/v1/query', baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
}

/**
 * One query against Prometheus' HTTP API: its `data`, a vector or a scalar. Rejects with
 * `OPERATOR_ERR_ABORT_QUERY`, naming the URL queried and what went wrong.
 */
export async function queryPrometheus(baseUrl: string, query: string, timeoutMs: number): Promise<unknown> {
  const url = queryUrlOf(baseUrl);
  const named = url.href;
  url.searchParams.set('query', query);
  const failed = (detail: string, cause?: unknown) =>
    new OperatorError(
      'OPERATOR_ERR_ABORT_QUERY',
      [named, detail],
      cause === undefined ? undefined : { cause },
    );
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, {
      signal: AbortSignal.timeout(timeoutMs),
      headers: { accept: 'application/json' },
    });
    text = await res.text();
  } catch (error) {
    // fetch's own message is a bare "fetch failed": the cause's code (ECONNREFUSED...) says more.
    throw failed((error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message, error);
  }
  if (text.length > MAX_BODY_BYTES) throw failed(`answer over ${MAX_BODY_BYTES} bytes`);
  let body: { status?: string; data?: unknown; error?: string } | null;
  try {
    body = JSON.parse(text);
  } catch {
    throw failed(`HTTP ${res.status}, not JSON`);
  }
  if (!res.ok || body?.status !== 'success')
    throw failed(`HTTP ${res.status}: ${body?.error ?? 'not a success'}`);
  if (!isQueryResult(body.data)) throw failed(`HTTP ${res.status}: an answer that is no vector or scalar`);
  return body.data;
}

export interface AbortWatcherOptions {
  /** `PROMETHEUS_URL`; undefined: every check of an EchoScenario with `abortWhen` fails. */
  readonly prometheusUrl: string | undefined;
  readonly intervalMs: number;
  readonly queryTimeoutMs: number;
  readonly logger: Pick<OperatorLogger, 'warn'>;
  readonly now: () => Date;
  /** The running EchoScenarios that have `spec.abortWhen`, and those its failing checks stopped. */
  readonly candidates: () => EchoScenario[];
  /** The condition held for `for`: abort this generation. */
  readonly onAbort: (es: EchoScenario, message: string) => void;
  /** A check failed (or cannot be made); called once per streak of failures, at its first. */
  readonly onError: (es: EchoScenario, message: string) => void;
  /**
   * What the checks say changed: healthy at the first success (of a generation, or after failures),
   * unhealthy once `failureThreshold` checks in a row failed.
   */
  readonly onCheck: (es: EchoScenario, check: AbortCheck) => void;
  /** `echo_operator_abort_checks_total`, by `result`: `held`, `clear` or `failed`. */
  readonly checks?: Pick<Counter<'result'>, 'inc'>;
}

interface CheckState {
  generation: number;
  /** Since when the condition holds. */
  since?: number;
  /** Failed checks in a row. */
  failures: number;
  /** What `onCheck` was last told; undefined before the first word. */
  healthy?: boolean;
}

export class AbortWatcher {
  readonly #o: AbortWatcherOptions;
  /** `<ns>/<name>` → the generation, since when its condition holds, and its failing streak. */
  readonly #state = new Map<string, CheckState>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = true;

  constructor(options: AbortWatcherOptions) {
    this.#o = options;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  /** One timer at a time; a tick never overlaps another (a stop and a start while one runs). */
  #schedule(): void {
    clearTimeout(this.#timer);
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      if (this.#running !== undefined) return;
      this.#running = this.tick().finally(() => {
        this.#running = undefined;
        this.#schedule();
      });
    }, this.#o.intervalMs);
    this.#timer.unref();
  }

  /** One poll of every candidate (exposed for tests). */
  async tick(): Promise<void> {
    const { prometheusUrl, queryTimeoutMs, logger, now, onAbort, onCheck, checks } = this.#o;
    const candidates = this.#o.candidates();
    const keys = new Set(candidates.map(keyOf));
    for (const key of this.#state.keys()) if (!keys.has(key)) this.#state.delete(key);
    for (const es of candidates) {
      if (this.#stopped) return;
      const key = keyOf(es);
      const generation = es.metadata.generation ?? 0;
      let state = this.#state.get(key);
      if (state?.generation !== generation) {
        state = { generation, failures: 0 };
        this.#state.set(key, state);
      }
      const abort = (es.spec?.abortWhen ?? {}) as AbortWhen;
      const comparison = (abort.comparison ?? '>') as Comparison;
      const threshold = abort.threshold as number;
      const forMs = parseDurationMs(abort.for ?? '0') ?? 0;
      const failureThreshold = failureThresholdOf(abort);
      const policy = onErrorOf(abort);
      const fail = (reason: string, detail: string) => {
        checks?.inc({ result: 'failed' });
        state.since = undefined;
        state.failures++;
        const then =
          policy === 'Suspend'
            ? `after ${failureThreshold} in a row, onError Suspend removes it from its pods until a check succeeds`
            : 'onError is Continue: it goes on without its steady-state check';
        if (state.failures === 1) this.#o.onError(es, `abortWhen cannot be evaluated: ${detail} (${then})`);
        if (state.failures >= failureThreshold && state.healthy !== false) {
          state.healthy = false;
          onCheck(es, {
            healthy: false,
            reason,
            message: `abortWhen could not be evaluated ${state.failures} times in a row: ${detail}`,
          });
        }
      };
      if (prometheusUrl === undefined) {
        fail('PrometheusUnset', 'the operator setting PROMETHEUS_URL is not set');
        continue;
      }
      let result: ReturnType<typeof evaluate>;
      try {
        result = evaluate(
          await queryPrometheus(prometheusUrl, String(abort.query), queryTimeoutMs),
          comparison,
          threshold,
        );
      } catch (error) {
        logger.warn({ echoScenario: es.metadata.name, err: String(error) }, 'abortWhen query failed');
        fail('QueryFailed', (error as Error).message);
        continue;
      }
      checks?.inc({ result: result.holds ? 'held' : 'clear' });
      state.failures = 0;
      if (state.healthy !== true) {
        state.healthy = true;
        onCheck(es, {
          healthy: true,
          reason: 'QuerySucceeded',
          message: `Prometheus at ${queryUrlOf(prometheusUrl).href} answered the query`,
        });
      }
      if (!result.holds) {
        state.since = undefined;
        continue;
      }
      const at = now().getTime();
      state.since ??= at;
      if (at - state.since >= forMs) {
        this.#state.delete(key);
        onAbort(
          es,
          `abortWhen held for ${abort.for ?? '0s'}: ${String(abort.query)} = ${result.value} ${comparison} ${threshold}; removed from its pods until the spec changes`,
        );
      }
    }
  }
}

function keyOf(es: EchoScenario): string {
  return `${es.metadata.namespace}/${es.metadata.name}`;
}

/**
 * The aborts this leader decided, each for one generation of its EchoScenario, until its status says
 * so: a new generation (the spec changed) starts a new run, which no earlier abort stops.
 */
export class AbortedRuns {
  /** `<ns>/<name>` → the generation aborted, and why. */
  readonly #aborted = new Map<string, { generation: number; message: string }>();

  set(es: EchoScenario, message: string): void {
    this.#aborted.set(keyOf(es), { generation: es.metadata.generation ?? 0, message });
  }

  /** The abort of `es`'s generation, if this leader decided one. */
  of(es: EchoScenario): { message: string } | undefined {
    const key = keyOf(es);
    const entry = this.#aborted.get(key);
    if (entry === undefined) return undefined;
    if (entry.generation !== (es.metadata.generation ?? 0)) {
      this.#aborted.delete(key);
      return undefined;
    }
    return entry;
  }

  forget(es: EchoScenario): void {
    this.#aborted.delete(keyOf(es));
  }
}

/**
 * This leader's last word on each EchoScenario's `abortWhen` checks, for one generation: whether
 * they can be made. The status keeps it too (`AbortCheckHealthy`), for the next leader.
 */
export class AbortChecks {
  readonly #checks = new Map<string, { generation: number; check: AbortCheck }>();

  set(es: EchoScenario, check: AbortCheck): void {
    this.#checks.set(keyOf(es), { generation: es.metadata.generation ?? 0, check });
  }

  /** The last word on `es`'s generation, if this leader has one. */
  of(es: EchoScenario): AbortCheck | undefined {
    const key = keyOf(es);
    const entry = this.#checks.get(key);
    if (entry === undefined) return undefined;
    if (entry.generation !== (es.metadata.generation ?? 0)) {
      this.#checks.delete(key);
      return undefined;
    }
    return entry.check;
  }

  forget(es: EchoScenario): void {
    this.#checks.delete(keyOf(es));
  }
}
