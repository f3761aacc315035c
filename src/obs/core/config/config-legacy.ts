/**
 * The legacy key `obs.runtime.mode`, migrated to `obs.enforcement.mode` with one warning.
 */

import type { ConfigProblem } from '../errors.ts';
import { problem, unknownKey } from './config-problems.ts';
import { isPlainObject, type Tree } from './config-values.ts';

/** The legacy key migrated to `obs.enforcement.mode`. */
export const LEGACY_MODE_KEY = 'obs.runtime.mode';

/** One source's use of the legacy key. */
export interface LegacyUse {
  readonly value: unknown;
  readonly source: string;
  readonly superseded: boolean;
}

/**
 * Moves `runtime.mode` (nested or dotted) of one source to `enforcement.mode` of the same source,
 * unless that source also sets `enforcement.mode`, which then wins.
 * @returns the raw tree without the legacy key, and the use found (if any).
 */
export function migrateLegacy(
  raw: unknown,
  source: string,
  problems: ConfigProblem[],
): { raw: unknown; use: LegacyUse | undefined } {
  if (!isPlainObject(raw)) return { raw, use: undefined };
  const hasNested = Object.hasOwn(raw, 'runtime');
  const hasDotted = Object.hasOwn(raw, 'runtime.mode');
  if (!hasNested && !hasDotted) return { raw, use: undefined };
  const copy: Tree = { ...raw };
  let value: unknown;
  if (hasNested) {
    const runtime = copy.runtime;
    delete copy.runtime;
    if (isPlainObject(runtime)) {
      for (const [key, v] of Object.entries(runtime)) {
        if (key === 'mode') value = v;
        else {
          const where = `obs.runtime.${key}`;
          problems.push(
            unknownKey(
              where,
              v,
              source,
              `obs.runtime holds only the deprecated mode; see ${LEGACY_MODE_KEY}`,
            ),
          );
        }
      }
    } else if (runtime !== null && runtime !== undefined) {
      problems.push(
        problem('obs.runtime', runtime, source, `a mapping with mode (deprecated: ${LEGACY_MODE_KEY})`),
      );
    }
  }
  if (hasDotted) {
    value = copy['runtime.mode'];
    delete copy['runtime.mode'];
  }
  if (value === undefined) return { raw: copy, use: undefined };
  if (typeof value === 'string' && value.trim().toUpperCase() === 'OFF') {
    problems.push(
      problem(
        LEGACY_MODE_KEY,
        value,
        source,
        `ENFORCING or DRY_RUN; the OFF mode was dropped, turn a feature off with obs.<feature>.enabled=false`,
      ),
    );
    return { raw: copy, use: undefined };
  }
  const enforcement = copy.enforcement;
  const superseded =
    Object.hasOwn(copy, 'enforcement.mode') ||
    (isPlainObject(enforcement) && Object.hasOwn(enforcement, 'mode'));
  if (!superseded) copy.enforcement = { ...(isPlainObject(enforcement) ? enforcement : {}), mode: value };
  return { raw: copy, use: { value, source, superseded } };
}
