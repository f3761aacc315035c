import { existsSync } from 'node:fs';
import type { Logger } from 'pino';
import {
  isScenarioError,
  loadScenarioFile,
  type ScenarioInvalidError,
  type ScenarioStore,
  watchScenarioFile,
} from '../scenario/index.ts';
import { type EchoConfig, scenarioLimits } from './config.ts';
import { EchoConfigError } from './errors.ts';

/**
 * Loads `ECHO_SCENARIO_FILE` into the store and watches it. A file named explicitly must exist and
 * be valid, else startup stops. The default file (`scenarios.yaml` in the working directory, with
 * the variable unset) is optional: missing, it means no scenarios; invalid, a warning names the
 * problem and the service starts without scenarios (a stray file nobody asked for is no reason to
 * refuse to start). Either way it is watched, so a default file written or fixed later is applied.
 */
export function startScenarioFile(
  config: EchoConfig,
  store: ScenarioStore,
  logger: Logger,
): { close(): void } | undefined {
  const file = config.scenarioFile;
  if (!existsSync(file)) {
    if (config.scenarioFileExplicit) {
      throw new EchoConfigError([
        `ECHO_SCENARIO_FILE=${JSON.stringify(file)} is invalid: the file does not exist`,
      ]);
    }
    return watch(file, config, store, logger);
  }
  try {
    store.replace(loadScenarioFile(file, scenarioLimits(config)));
  } catch (err) {
    if (!config.scenarioFileExplicit) {
      logger.warn(
        { file, problem: describe(err) },
        `${file} is invalid and ignored until it is fixed: starting without scenarios (ECHO_SCENARIO_FILE is unset; set it to this file to make it required)`,
      );
      return watch(file, config, store, logger);
    }
    throw new EchoConfigError([`ECHO_SCENARIO_FILE=${JSON.stringify(file)} is invalid: ${describe(err)}`]);
  }
  logger.info({ file, scenarios: store.size }, 'scenarios loaded');
  return watch(file, config, store, logger);
}

/** Watches the file; each valid change replaces the store's set. */
function watch(file: string, config: EchoConfig, store: ScenarioStore, logger: Logger): { close(): void } {
  return watchScenarioFile(file, {
    ...scenarioLimits(config),
    // The set just loaded: a change made between that load and the watcher's first read is then
    // applied, not taken for the starting point.
    initial: store.list(),
    onChange: (scenarios) => {
      store.replace(scenarios);
      logger.info({ file, scenarios: scenarios.length }, 'scenarios reloaded');
    },
    onError: (err) =>
      logger.warn({ file, err: describe(err) }, 'scenario file change ignored; the previous scenarios stay'),
  });
}

function describe(err: unknown): string {
  if (isScenarioError(err) && err.code === 'SCENARIO_ERR_INVALID') {
    const { problems } = err as ScenarioInvalidError;
    if (problems.length > 0) return problems.map((p) => `${p.path || '/'}: ${p.message}`).join('; ');
  }
  return err instanceof Error ? err.message : String(err);
}
