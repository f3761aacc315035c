/**
 * Packages a run imports only when a setting asks for them, and which the service's and the
 * operator's packages therefore leave to the user (optional peer dependencies, #35 item 1): the
 * OpenTelemetry SDK (`OTEL_*`) and, for the service, ioredis (`ECHO_STATE_URL`). A run that asks
 * for one that is not installed stops with one line saying what to install.
 */
import type * as Otel from './otel.ts';

/**
 * The OpenTelemetry SDK `otel.ts` imports, with the ranges the package declares for them (a test
 * keeps them equal to package.json's peerDependencies). Ranges, not the pinned versions the
 * repository tests with: `npm install` saves them as given, and an exact peer would then refuse
 * the next patch release on `npm update`.
 */
export const OTEL_SDK_PACKAGES: Readonly<Record<string, string>> = {
  '@opentelemetry/context-async-hooks': '^3.1.0',
  '@opentelemetry/core': '^3.1.0',
  '@opentelemetry/exporter-prometheus': '^0.301.0',
  '@opentelemetry/exporter-trace-otlp-http': '^0.301.0',
  '@opentelemetry/exporter-trace-otlp-proto': '^0.301.0',
  '@opentelemetry/instrumentation': '^0.301.0',
  '@opentelemetry/instrumentation-http': '^0.301.0',
  '@opentelemetry/instrumentation-undici': '^0.34.0',
  '@opentelemetry/resources': '^3.1.0',
  '@opentelemetry/sdk-metrics': '^3.1.0',
  '@opentelemetry/sdk-trace': '^3.1.0',
  '@opentelemetry/semantic-conventions': '^1.45.0',
};

/** The `npm install` arguments of a set of packages. */
export function installArguments(packages: Readonly<Record<string, string>>): string {
  return Object.entries(packages)
    .map(([name, version]) => `${name}@${version}`)
    .join(' ');
}

/**
 * The package an `import` failed to find (node's `ERR_MODULE_NOT_FOUND` for a bare specifier:
 * "Cannot find package 'ioredis' imported from ..."), or undefined for any other failure.
 */
export function missingPackage(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (code !== 'ERR_MODULE_NOT_FOUND' || typeof message !== 'string') return undefined;
  return /Cannot find package '((?:@[^/']+\/)?[^/']+)/.exec(message)?.[1];
}

/** Why a run that asks for OpenTelemetry cannot start: the SDK package `name` is not installed. */
export class TelemetryUnavailableError extends Error {
  readonly packageName: string;
  constructor(packageName: string) {
    super(
      `OTEL_* variables ask for OpenTelemetry, but its SDK is not installed (${packageName} is missing); install it beside this package: npm install ${installArguments(OTEL_SDK_PACKAGES)}`,
    );
    this.name = 'TelemetryUnavailableError';
    this.packageName = packageName;
  }
}

/**
 * Imports the OpenTelemetry SDK module through `importer` (`() => import('../telemetry/otel.ts')`,
 * written at the call site so that the operator's bundle keeps it a separate module).
 * @throws {TelemetryUnavailableError} when one of its packages is not installed.
 */
export async function loadTelemetry(importer: () => Promise<typeof Otel>): Promise<typeof Otel> {
  try {
    return await importer();
  } catch (err) {
    const name = missingPackage(err);
    if (name === undefined || !Object.hasOwn(OTEL_SDK_PACKAGES, name)) throw err;
    throw new TelemetryUnavailableError(name);
  }
}
