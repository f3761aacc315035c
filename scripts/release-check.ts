/**
 * The release preflight of `.github/workflows/release.yml`: before anything is published, the pushed
 * tag `vX.Y.Z` must be the version of every npm package the release publishes, each package must
 * have the name the workflow publishes it by, and (in GitHub Actions, where `GITHUB_REPOSITORY` is
 * set) its `repository.url` must name the repository that builds it, which npm's provenance check
 * demands (a publish with `--provenance` is refused otherwise, possibly after obs went out).
 *
 * `node scripts/release-check.ts v1.2.3` prints the problems and exits 1, or prints the release and,
 * under GitHub Actions, writes `version` (no `v`) and `dist-tag` (`latest`, or `next` for a
 * pre-release, which npm 11 will not publish without a tag) to `$GITHUB_OUTPUT`.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The packages a release publishes, in publishing order (obs first: the service depends on it). */
export const RELEASE_PACKAGES: readonly { readonly name: string; readonly dir: string }[] = [
  { name: '@echo-chaos/obs', dir: 'src/obs' },
  { name: 'echo-chaos', dir: '.' },
];

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

/** What stands in the way of releasing `tag` from the tree at `root`; empty when nothing does. */
export function releaseProblems(tag: string, root: string = ROOT, repository?: string): string[] {
  const match = TAG.exec(tag);
  if (!match) return [`tag ${JSON.stringify(tag)} is not v<major>.<minor>.<patch>`];
  const version = match[1]!;
  const problems: string[] = [];
  for (const { name, dir } of RELEASE_PACKAGES) {
    const file = join(dir, 'package.json');
    if (!existsSync(join(root, file))) {
      problems.push(`${file} is missing (the package ${name})`);
      continue;
    }
    const manifest = JSON.parse(readFileSync(join(root, file), 'utf8')) as Record<string, unknown>;
    if (manifest['name'] !== name) problems.push(`${file}: name is ${String(manifest['name'])}, not ${name}`);
    if (manifest['version'] !== version) {
      problems.push(`${file}: version is ${String(manifest['version'])}, the tag ${tag} says ${version}`);
    }
    if (manifest['private'] === true) problems.push(`${file}: private is true, npm will not publish it`);
    if (repository !== undefined) {
      const field = manifest['repository'];
      const url = typeof field === 'string' ? field : (field as { url?: unknown } | undefined)?.url;
      const expected = `https://github.com/${repository}`;
      if (typeof url !== 'string' || normalizeRepositoryUrl(url) !== normalizeRepositoryUrl(expected)) {
        problems.push(
          `${file}: repository.url is ${JSON.stringify(url ?? '')}, npm provenance needs ${expected}`,
        );
      }
    }
  }
  return problems;
}

/** The version and npm dist-tag of a release tag known to be valid. */
export function releaseOf(tag: string): Release {
  const version = tag.replace(/^v/, '');
  return { version, distTag: /^[^+]*-/.test(version) ? 'next' : 'latest' };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const tag = process.argv[2] ?? process.env['GITHUB_REF_NAME'] ?? '';
  const problems = releaseProblems(tag, ROOT, process.env['GITHUB_REPOSITORY']);
  if (problems.length > 0) {
    for (const problem of problems) console.error(`release-check: ${problem}`);
    process.exit(1);
  }
  const { version, distTag } = releaseOf(tag);
  console.log(
    `release-check: ${tag} releases ${RELEASE_PACKAGES.map((p) => `${p.name}@${version}`).join(', ')} (npm tag ${distTag})`,
  );
  const output = process.env['GITHUB_OUTPUT'];
  if (output) appendFileSync(output, `version=${version}\ndist-tag=${distTag}\n`);
}
