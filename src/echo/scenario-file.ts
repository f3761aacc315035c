import { existsSync } from 'node:fs';
import type { Logger } from 'pino';
import {
  isScenarioError,
  loadScenarioFile,
  type ScenarioInvalidError,
  type ScenarioStore,
  watchScenarioFile,
} from '../scenario/index.ts';
import type { EchoConfig } from './config.ts';
import { EchoConfigError } from './errors.ts';

/**
 * Loads `ECHO_SCENARIO_FILE` into the store and watches it. A missing default file means no
 * scenarios; a file named explicitly must exist and be valid, else startup stops.
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
    return undefined;
  }
  try {
    store.replace(loadScenarioFile(file, { maxDelayMs: config.maxDelayMs }));
  } catch (err) {
    throw new EchoConfigError([`ECHO_SCENARIO_FILE=${JSON.stringify(file)} is invalid: ${describe(err)}`]);
  }
  logger.info({ file, scenarios: store.size }, 'scenarios loaded');
  return watchScenarioFile(file, {
    maxDelayMs: config.maxDelayMs,
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
