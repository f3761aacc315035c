/**
 * The release preflight of `.github/workflows/release.yml`: before anything is published, the pushed
 * tag `vX.Y.Z` must be the version of every npm package the release publishes, each package must
 * have the name the workflow publishes it by, and (in GitHub Actions, where `GITHUB_REPOSITORY` is
 * set) its `repository.url` must name the repository that builds it, which npm's provenance check
 * demands (a publish with `--provenance` is refused otherwise, possibly after obs went out).
 *
 * A package is checked where it is kept (`manifest`) and where it is published from (`publishDir`).
 * For `echo-chaos` the two are one file. `@echo-chaos/obs` is kept as the workspace `src/obs`, whose
 * manifest is for development (private, exports pointing at the TypeScript sources), and ships as
 * `src/obs/dist`, which `npm run build` writes with its own package.json (scripts/build.ts).
 * `@echo-chaos/operator` likewise: `src/operator/package.json` is private (packing it fails, naming
 * `npm run pack:operator`) and it ships as `src/operator/dist`, the bundle the build writes (ADR
 * 0048). A kept manifest must stay private, and the built one, once there, must not be private and
 * must carry the same name and version. `--built` demands the built manifests (the workflow's npm
 * job checks again after `npm run build`, just before publishing).
 *
 * `node scripts/release-check.ts [--built] v1.2.3` prints the problems and exits 1, or prints the
 * release and, under GitHub Actions, writes `version` (no `v`) and `dist-tag` (`latest`, or `next`
 * for a pre-release, which npm 11 will not publish without a tag) to `$GITHUB_OUTPUT`.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface ReleasePackage {
  /** The name it is published by. */
  readonly name: string;
  /** Its package.json in the repository, relative to the root: the version is bumped here. */
  readonly manifest: string;
  /**
   * The directory `npm publish` is given, relative to the root. When it is not the manifest's own
   * directory, the build writes the package.json that ships there, and `manifest` is a private
   * development manifest that npm must never publish.
   */
  readonly publishDir: string;
}

/**
 * The packages a release publishes, in publishing order: obs first, since the service depends on it;
 * the operator bundles what it uses of obs and the service, so it depends on neither.
 */
export const RELEASE_PACKAGES: readonly ReleasePackage[] = [
  { name: '@echo-chaos/obs', manifest: 'src/obs/package.json', publishDir: 'src/obs/dist' },
  { name: 'echo-chaos', manifest: 'package.json', publishDir: '.' },
  { name: '@echo-chaos/operator', manifest: 'src/operator/package.json', publishDir: 'src/operator/dist' },
];

/** The package.json that ships: `publishDir`'s (the manifest itself when it is published as is). */
export const publishedManifest = (pkg: ReleasePackage): string => posix.join(pkg.publishDir, 'package.json');

/** Whether the package ships with a package.json the build writes, not the one kept in the repository. */
export const isBuilt = (pkg: ReleasePackage): boolean =>
  publishedManifest(pkg) !== posix.normalize(pkg.manifest);

/** A release tag: `v` and a semantic version, pre-release and build parts allowed. */
const TAG = /^v(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)$/;

export interface Release {
  readonly version: string;
  readonly distTag: 'latest' | 'next';
}

/** `https://github.com/o/r`, `git+https://github.com/o/r.git`, `github:o/r`, `o/r` → `github.com/o/r`. */
export function normalizeRepositoryUrl(url: string): string {
  return url
    .trim()
    .replace(/^git\+/, '')
    .replace(/^github:/, 'github.com/')
    .replace(/^(?:https?|ssh|git):\/\/(?:git@)?/, '')
    .replace(/^git@github\.com:/, 'github.com/')
    .replace(/^(?=[^/.]+\/[^/]+$)/, 'github.com/')
    .replace(/\.git$/, '')
    .replace(/\/+$/, '');
}

export interface ReleaseCheckOptions {
  /** The `GITHUB_REPOSITORY` (`owner/name`) every `repository.url` must name; unchecked when absent. */
  readonly repository?: string | undefined;
  /** Whether the built manifests must exist (after `npm run build`); else they are checked when present. */
  readonly built?: boolean;
}

type Manifest = Record<string, unknown>;

/** What stands in the way of releasing `tag` from the tree at `root`; empty when nothing does. */
export function releaseProblems(
  tag: string,
  root: string = ROOT,
  options: ReleaseCheckOptions = {},
): string[] {
  const match = TAG.exec(tag);
  if (!match) return [`tag ${JSON.stringify(tag)} is not v<major>.<minor>.<patch>`];
  const version = match[1]!;
  const problems: string[] = [];
  const read = (file: string): Manifest => JSON.parse(readFileSync(join(root, file), 'utf8')) as Manifest;

  /** Name, version and repository.url: the same demands of the kept and of the shipped manifest. */
  function identity(file: string, manifest: Manifest, name: string): void {
    if (manifest['name'] !== name) problems.push(`${file}: name is ${String(manifest['name'])}, not ${name}`);
    if (manifest['version'] !== version) {
      problems.push(`${file}: version is ${String(manifest['version'])}, the tag ${tag} says ${version}`);
    }
    if (options.repository !== undefined) {
      const field = manifest['repository'];
      const url = typeof field === 'string' ? field : (field as { url?: unknown } | undefined)?.url;
      const expected = `https://github.com/${options.repository}`;
      if (typeof url !== 'string' || normalizeRepositoryUrl(url) !== normalizeRepositoryUrl(expected)) {
        problems.push(
          `${file}: repository.url is ${JSON.stringify(url ?? '')}, npm provenance needs ${expected}`,
        );
      }
    }
  }

  for (const pkg of RELEASE_PACKAGES) {
    const { name, manifest: file, publishDir } = pkg;
    if (!existsSync(join(root, file))) {
      problems.push(`${file} is missing (the package ${name})`);
      continue;
    }
    const kept = read(file);
    identity(file, kept, name);
    if (!isBuilt(pkg)) {
      if (kept['private'] === true) problems.push(`${file}: private is true, npm will not publish it`);
      continue;
    }
    // A development manifest: published as is it would ship the sources, so npm must refuse it.
    if (kept['private'] !== true) {
      problems.push(`${file}: private is not true, yet ${name} ships from ${publishDir} (npm run build)`);
    }
    const shipped = publishedManifest(pkg);
    if (!existsSync(join(root, shipped))) {
      if (options.built) problems.push(`${shipped} is missing (the package ${name}): run npm run build`);
      continue;
    }
    const published = read(shipped);
    identity(shipped, published, name);
    if (published['private'] === true) problems.push(`${shipped}: private is true, npm will not publish it`);
  }
  return problems;
}

/** The version and npm dist-tag of a release tag known to be valid. */
export function releaseOf(tag: string): Release {
  const version = tag.replace(/^v/, '');
  return { version, distTag: /^[^+]*-/.test(version) ? 'next' : 'latest' };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const built = args.includes('--built');
  const tag = args.find((a) => a !== '--built') ?? process.env['GITHUB_REF_NAME'] ?? '';
  const problems = releaseProblems(tag, ROOT, { repository: process.env['GITHUB_REPOSITORY'], built });
  if (problems.length > 0) {
    for (const problem of problems) console.error(`release-check: ${problem}`);
    process.exit(1);
  }
  const { version, distTag } = releaseOf(tag);
  const from = (p: ReleasePackage): string => (isBuilt(p) ? ` from ${p.publishDir}` : '');
  console.log(
    `release-check: ${tag} releases ${RELEASE_PACKAGES.map((p) => `${p.name}@${version}${from(p)}`).join(', ')} (npm tag ${distTag})`,
  );
  const output = process.env['GITHUB_OUTPUT'];
  if (output) appendFileSync(output, `version=${version}\ndist-tag=${distTag}\n`);
}
