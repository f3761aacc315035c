/**
 * The process-wide enforcement mode: ENFORCING or DRY_RUN. It lives in memory, per process; a
 * restart returns it to `obs.enforcement.mode`. Every guardrail reads it when it acts, so a change
 * is visible on the very next request.
 */
import { matchWord } from './config/config-fields.ts';
import { ENFORCEMENT_MODES, type EnforcementMode } from './config/config-schema.ts';
import { ObsError } from './errors.ts';

export { ENFORCEMENT_MODES, type EnforcementMode };

/** The outcome of {@link Enforcement.set}. */
export interface ModeChange {
  readonly previous: EnforcementMode;
  readonly current: EnforcementMode;
}

/** Called after the mode changed (not when it was set to the value it had). Must not throw. */
export type ModeListener = (change: ModeChange) => void;

/** Whether a value is exactly one of the two modes. */
export function isEnforcementMode(value: unknown): value is EnforcementMode {
  return typeof value === 'string' && (ENFORCEMENT_MODES as readonly string[]).includes(value);
}

/**
 * The mode `value` names, in its canonical spelling, or undefined: case, surrounding blanks and
 * `-` against `_` do not matter (`dry_run`, `Dry-Run` are `DRY_RUN`). The one rule of the lever,
 * read alike by `obs.enforcement.mode` (`OBS_ENFORCEMENT_MODE`), the enforcement routes and
 * {@link Enforcement.set}.
 */
export function parseEnforcementMode(value: unknown): EnforcementMode | undefined {
  return matchWord(ENFORCEMENT_MODES, value);
}

/**
 * The mode lever. Reachable as `app.obs.mode`; the actuator route `POST /actuator/obs/enforcement`
 * calls {@link set}, and code may call it where the actuator routes are not exposed.
 */
export class Enforcement {
  #mode: EnforcementMode;
  readonly #listeners = new Set<ModeListener>();

  /** @param initial the mode at startup, read as {@link parseEnforcementMode} reads it; default ENFORCING. */
  constructor(initial: EnforcementMode = 'ENFORCING') {
    const mode = parseEnforcementMode(initial);
    if (mode === undefined) throw new ObsError('OBS_ERR_INVALID_MODE', [JSON.stringify(initial)]);
    this.#mode = mode;
  }

  /** The current mode. */
  get(): EnforcementMode {
    return this.#mode;
  }

  /** Whether guardrails enforce (ENFORCING) rather than only observe (DRY_RUN). */
  get enforcing(): boolean {
    return this.#mode === 'ENFORCING';
  }

  /**
   * Sets the mode for this process, at once. The value is read as {@link parseEnforcementMode}
   * reads it (a JavaScript caller's `'dry_run'` is `DRY_RUN`); the change names the canonical one.
   * @returns the previous and the current mode.
   * @throws {ObsError} `OBS_ERR_INVALID_MODE` for anything but `ENFORCING` or `DRY_RUN`.
   */
  set(mode: EnforcementMode): ModeChange {
    const current = parseEnforcementMode(mode);
    if (current === undefined) throw new ObsError('OBS_ERR_INVALID_MODE', [JSON.stringify(mode)]);
    const previous = this.#mode;
    this.#mode = current;
    const change = { previous, current };
    if (previous !== current) {
      for (const listener of this.#listeners) {
        try {
          listener(change);
        } catch {
          // a listener never undoes or fails the change
        }
      }
    }
    return change;
  }

  /**
   * Calls `listener` after every change of mode.
   * @returns a function that removes the listener.
   */
  onChange(listener: ModeListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }
}
