/**
 * Readiness checks: named pass/fail checks that obs features (container memory) and the application
 * add. Each is a health component (`health.ts`): ok is `UP`, not ok is `DOWN`. Readiness follows
 * health: ready while the aggregate health is `UP` or `DEGRADED`.
 */
import type { JsonValue } from './config/config-hash.ts';

/** What a readiness check answers: a verdict, with an optional detail for people. */
export type ReadinessResult = boolean | { readonly ok: boolean; readonly detail?: JsonValue };
/** A readiness check. It may be async; it is given `readinessTimeoutMs` (default 2s) to answer. */
export type ReadinessCheck = () => ReadinessResult | Promise<ReadinessResult>;

/**
 * The outcome of `Obs.readiness()`: ready while the aggregate health is `UP` or `DEGRADED`; one
 * check per health component (ok while it is `UP` or `DEGRADED`, its details as the detail).
 */
export interface ReadinessReport {
  readonly ready: boolean;
  readonly checks: Readonly<Record<string, { readonly ok: boolean; readonly detail?: JsonValue }>>;
}

/** How long one readiness check may take before it counts as failed, in milliseconds. */
export const READINESS_TIMEOUT_MS = 2000;

/**
 * Runs every check concurrently; ready when all pass. A check that returns false, throws or does
 * not answer within `timeoutMs` fails. Never rejects.
 */
export async function runReadinessChecks(
  checks: ReadonlyMap<string, ReadinessCheck>,
  timeoutMs: number,
): Promise<ReadinessReport> {
  const entries = await Promise.all(
    [...checks].map(async ([name, check]) => [name, await runReadinessCheck(check, timeoutMs)] as const),
  );
  return { ready: entries.every(([, r]) => r.ok), checks: Object.fromEntries(entries) };
}

/** Runs one check, bounded by `timeoutMs`: false, a throw or no answer in time fail. Never rejects. */
export async function runReadinessCheck(
  check: ReadinessCheck,
  timeoutMs: number,
): Promise<{ ok: boolean; detail?: JsonValue }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs}ms`)), timeoutMs);
      timer.unref();
    });
    const result = await Promise.race([Promise.resolve().then(check), timeout]);
    if (typeof result === 'boolean') return { ok: result };
    return result.detail === undefined
      ? { ok: result.ok === true }
      : { ok: result.ok === true, detail: result.detail };
  } catch (error) {
    return { ok: false, detail: { error: error instanceof Error ? error.message : String(error) } };
  } finally {
    clearTimeout(timer);
  }
}
