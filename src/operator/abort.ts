/**
 * Steady-state abort (`spec.abortWhen`): every poll interval, each running EchoScenario that has one
 * has its Prometheus query evaluated (`GET <PROMETHEUS_URL>/api/v1/query`, one at a time, each with
 * a timeout); when the comparison with the threshold has held at every poll for `for`, the
 * experiment is aborted (the operator removes it from its pods, reason `Aborted`, until the spec
 * changes). A failed query breaks the streak: only a condition seen to hold aborts.
 */
import { parseDurationMs } from '@echo-chaos/obs/internal';
import type { EchoScenario } from './echo-scenario.ts';
import { OperatorError } from './errors.ts';
import type { AbortWhen, Comparison } from './lifecycle.ts';
import type { OperatorLogger } from './logger.ts';

/** Longest Prometheus answer read, in bytes. */
const MAX_BODY_BYTES = 1 << 20;

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

/** One query against Prometheus' HTTP API; rejects with `OPERATOR_ERR_ABORT_QUERY`. */
export async function queryPrometheus(baseUrl: string, query: string, timeoutMs: number): Promise<unknown> {
  const url = new URL('api/v1/query', baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
  url.searchParams.set('query', query);
  const failed = (detail: string, cause?: unknown) =>
    new OperatorError(
      'OPERATOR_ERR_ABORT_QUERY',
      [baseUrl, detail],
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
  let body: { status?: string; data?: unknown; error?: string };
  try {
    body = JSON.parse(text);
  } catch {
    throw failed(`HTTP ${res.status}, not JSON`);
  }
  if (!res.ok || body.status !== 'success')
    throw failed(`HTTP ${res.status}: ${body.error ?? 'query failed'}`);
  return body.data;
}

export interface AbortWatcherOptions {
  /** `PROMETHEUS_URL`; undefined: an EchoScenario with `abortWhen` gets `onError`. */
  readonly prometheusUrl: string | undefined;
  readonly intervalMs: number;
  readonly queryTimeoutMs: number;
  readonly logger: Pick<OperatorLogger, 'warn'>;
  readonly now: () => Date;
  /** The running EchoScenarios that have `spec.abortWhen`. */
  readonly candidates: () => EchoScenario[];
  /** The condition held for `for`: abort this generation. */
  readonly onAbort: (es: EchoScenario, message: string) => void;
  /** A query failed (or cannot be made); called once per streak of failures. */
  readonly onError: (es: EchoScenario, message: string) => void;
}

export class AbortWatcher {
  readonly #o: AbortWatcherOptions;
  /** `<ns>/<name>` → the generation and since when its condition holds, or its failing streak. */
  readonly #state = new Map<string, { generation: number; since?: number; failing?: boolean }>();
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
    const { prometheusUrl, queryTimeoutMs, logger, now, onAbort, onError } = this.#o;
    const candidates = this.#o.candidates();
    const keys = new Set(candidates.map(keyOf));
    for (const key of this.#state.keys()) if (!keys.has(key)) this.#state.delete(key);
    for (const es of candidates) {
      if (this.#stopped) return;
      const key = keyOf(es);
      const generation = es.metadata.generation ?? 0;
      let state = this.#state.get(key);
      if (state?.generation !== generation) {
        state = { generation };
        this.#state.set(key, state);
      }
      const abort = (es.spec?.abortWhen ?? {}) as AbortWhen;
      const comparison = (abort.comparison ?? '>') as Comparison;
      const threshold = abort.threshold as number;
      const forMs = parseDurationMs(abort.for ?? '0') ?? 0;
      const fail = (message: string) => {
        state.since = undefined;
        if (!state.failing) onError(es, message);
        state.failing = true;
      };
      if (prometheusUrl === undefined) {
        fail('spec.abortWhen needs the operator setting PROMETHEUS_URL, which is not set');
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
        fail(`abortWhen query failed: ${(error as Error).message}`);
        continue;
      }
      state.failing = false;
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
