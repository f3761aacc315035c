/**
 * `Obs`, what `app.obs` is and `createObs` makes: the obs core (`core/obs.ts`) with the APIs the
 * features put beside it. Each feature's API is declared and built in the feature's own module; this
 * module only lists them (docs/adr/0044-obs-feature-plugins.md).
 */
import { type CreateObsOptions, createObsCore, type ObsCore } from './core/obs.ts';
import { type ContainerMemoryApi, containerMemoryApi } from './features/container-memory.ts';
import { type Diagnostics, type DiagnosticsApi, installDiagnostics } from './features/diagnostics.ts';
import { type WideEventsApi, wideEventsApi } from './features/events.ts';
import { type ContextApi, contextApi } from './features/request-context/context-api.ts';
import { type RetryApi, retryApi } from './features/retry/retry-helper.ts';
import { installJobs, type JobsApi } from './integrations/jobs.ts';

/**
 * The obs instance of an application, reachable as `app.obs`: the core (configuration, lever,
 * firewall, registry, drain, snapshot, health) and the APIs of the features that have one.
 */
export interface Obs
  extends ObsCore,
    WideEventsApi,
    DiagnosticsApi,
    ContainerMemoryApi,
    ContextApi,
    RetryApi,
    JobsApi {}

/**
 * Builds an obs instance: the core, then each feature's API on it.
 * @throws {ObsConfigError} `OBS_ERR_CONFIG` when the configuration is invalid.
 */
export function createObs(options: CreateObsOptions = {}): Obs {
  let diagnostics: Diagnostics | undefined;
  const core = createObsCore(options, {
    // The diagnostics are made just below, before anything can read the snapshot.
    runtime: () => (diagnostics as Diagnostics).runtime(),
    onClose: () => diagnostics?.close(),
  });
  const events = wideEventsApi(core);
  const memory = containerMemoryApi(core);
  diagnostics = installDiagnostics(core, memory);
  const made = diagnostics;
  const apis: Omit<Obs, keyof ObsCore> = {
    ...events,
    runtime: () => made.runtime(),
    ...memory,
    ...contextApi(core),
    ...retryApi(core),
    ...installJobs(core),
  };
  // The features' state is kept by the object they were installed on (their WeakMaps hold the
  // core), so the APIs go on the core itself rather than on a copy of it.
  return Object.assign(core, apis);
}
