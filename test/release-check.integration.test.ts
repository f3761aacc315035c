/**
 * The release preflight (`scripts/release-check.ts`), which `.github/workflows/release.yml` runs
 * before publishing, on trees it makes: every package's kept manifest, and the manifest it ships
 * with when the build writes one (`@echo-chaos/obs`: `src/obs/dist/package.json`;
 * `@echo-chaos/operator`: `src/operator/dist/package.json`).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import {
  isBuilt,
  normalizeRepositoryUrl,
  publishedManifest,
  RELEASE_PACKAGES,
  releaseOf,
  releaseProblems,
} from '../scripts/release-check.ts';

const ROOT = join(import.meta.dirname, '..');
const SCRIPT = join(ROOT, 'scripts', 'release-check.ts');
const OBS = 'src/obs/package.json';
const OBS_BUILT = 'src/obs/dist/package.json';
const SERVICE = 'package.json';
const OPERATOR = 'src/operator/package.json';
const OPERATOR_BUILT = 'src/operator/dist/package.json';

describe('release preflight (scripts/release-check.ts)', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'echo-chaos-release-'));
  after(() => rmSync(scratch, { recursive: true, force: true }));
  let trees = 0;

  /**
   * A tree with the packages of a release at `version`, as the repository has them: kept manifests
   * (obs's private), and the built ones unless `built` is false. `edits` overrides fields of a
   * manifest by its path (undefined drops a field).
   */
  function tree(
    version: string,
    edits: Record<string, Record<string, unknown>> = {},
    { built = true }: { built?: boolean } = {},
  ): string {
    const root = join(scratch, `tree-${trees++}`);
    const write = (file: string, fields: Record<string, unknown>): void => {
      mkdirSync(dirname(join(root, file)), { recursive: true });
      writeFileSync(join(root, file), JSON.stringify({ ...fields, ...edits[file] }));
    };
    const repository = { type: 'git', url: 'git+https://github.com/o/r.git' };
    for (const pkg of RELEASE_PACKAGES) {
      const { name } = pkg;
      if (!isBuilt(pkg)) {
        write(pkg.manifest, { name, version, repository });
        continue;
      }
      write(pkg.manifest, { name, version, repository, private: true });
      if (built) write(publishedManifest(pkg), { name, version, repository });
    }
    return root;
  }

  test('release preflight – the model: obs and the operator are kept in src/ and ship from their builds', () => {
    assert.deepEqual(
      RELEASE_PACKAGES.map((p) => [p.name, p.manifest, publishedManifest(p), isBuilt(p)]),
      [
        ['@echo-chaos/obs', OBS, OBS_BUILT, true],
        ['echo-chaos', SERVICE, SERVICE, false],
        ['@echo-chaos/operator', OPERATOR, OPERATOR_BUILT, true],
      ],
    );
    // The repository's own manifests are what the model says: the kept ones of obs and the operator
    // are private, at the service's version.
    const service = JSON.parse(readFileSync(join(ROOT, SERVICE), 'utf8'));
    assert.notEqual(service.private, true);
    for (const file of [OBS, OPERATOR]) {
      const kept = JSON.parse(readFileSync(join(ROOT, file), 'utf8'));
      assert.equal(kept.private, true, file);
      assert.equal(kept.version, service.version, file);
    }
  });

  test('release preflight – a tag equal to every version passes, built or not, repository included', () => {
    assert.deepEqual(releaseProblems('v1.2.3', tree('1.2.3'), { repository: 'o/r' }), []);
    assert.deepEqual(releaseProblems('v1.2.3', tree('1.2.3'), { repository: 'o/r', built: true }), []);
    assert.deepEqual(releaseProblems('v1.2.3-rc.1', tree('1.2.3-rc.1'), { repository: 'o/r' }), []);
    assert.deepEqual(
      releaseProblems('v1.2.3', tree('1.2.3', {}, { built: false }), { repository: 'o/r' }),
      [],
    );
    const noRepository = { repository: undefined };
    const unnamed = tree('1.2.3', {
      [SERVICE]: noRepository,
      [OBS]: noRepository,
      [OBS_BUILT]: noRepository,
    });
    assert.deepEqual(releaseProblems('v1.2.3', unnamed), []);
  });

  test('release preflight – names the manifest whose version differs from the tag, a stale build too', () => {
    const obsBehind = tree('1.2.3', { [OBS]: { version: '1.2.2' } });
    assert.deepEqual(releaseProblems('v1.2.3', obsBehind), [
      'src/obs/package.json: version is 1.2.2, the tag v1.2.3 says 1.2.3',
    ]);
    // Bumped but not rebuilt: the package that would ship is the old one.
    const stale = tree('1.2.3', { [OBS_BUILT]: { version: '1.2.2' } });
    assert.deepEqual(releaseProblems('v1.2.3', stale), [
      'src/obs/dist/package.json: version is 1.2.2, the tag v1.2.3 says 1.2.3',
    ]);
    assert.deepEqual(releaseProblems('v1.2.4', tree('1.2.3')), [
      'src/obs/package.json: version is 1.2.3, the tag v1.2.4 says 1.2.4',
      'src/obs/dist/package.json: version is 1.2.3, the tag v1.2.4 says 1.2.4',
      'package.json: version is 1.2.3, the tag v1.2.4 says 1.2.4',
      'src/operator/package.json: version is 1.2.3, the tag v1.2.4 says 1.2.4',
      'src/operator/dist/package.json: version is 1.2.3, the tag v1.2.4 says 1.2.4',
    ]);
    const operatorStale = tree('1.2.3', { [OPERATOR_BUILT]: { version: '1.2.2' } });
    assert.deepEqual(releaseProblems('v1.2.3', operatorStale), [
      'src/operator/dist/package.json: version is 1.2.2, the tag v1.2.3 says 1.2.3',
    ]);
  });

  test('release preflight – refuses a tag that is not v<semver>, a missing or renamed package', () => {
    assert.match(releaseProblems('1.2.3', tree('1.2.3')).join(), /is not v<major>/);
    assert.match(releaseProblems('v1.2', tree('1.2')).join(), /is not v<major>/);
    const root = tree('1.2.3');
    rmSync(join(root, 'src'), { recursive: true });
    assert.deepEqual(releaseProblems('v1.2.3', root), [
      'src/obs/package.json is missing (the package @echo-chaos/obs)',
      'src/operator/package.json is missing (the package @echo-chaos/operator)',
    ]);
    const renamed = tree('1.2.3', { [OBS]: { name: 'obs' } });
    assert.deepEqual(releaseProblems('v1.2.3', renamed), [
      'src/obs/package.json: name is obs, not @echo-chaos/obs',
    ]);
    const builtRenamed = tree('1.2.3', { [OBS_BUILT]: { name: 'obs' } });
    assert.deepEqual(releaseProblems('v1.2.3', builtRenamed), [
      'src/obs/dist/package.json: name is obs, not @echo-chaos/obs',
    ]);
  });

  test('release preflight – private: what ships must not be, the obs workspace must be', () => {
    const service = tree('1.2.3', { [SERVICE]: { private: true } });
    assert.deepEqual(releaseProblems('v1.2.3', service), [
      'package.json: private is true, npm will not publish it',
    ]);
    const built = tree('1.2.3', { [OBS_BUILT]: { private: true } });
    assert.deepEqual(releaseProblems('v1.2.3', built), [
      'src/obs/dist/package.json: private is true, npm will not publish it',
    ]);
    // Published as is, the workspace would ship its TypeScript sources and development exports.
    const workspace = tree('1.2.3', { [OBS]: { private: undefined } });
    assert.deepEqual(releaseProblems('v1.2.3', workspace), [
      'src/obs/package.json: private is not true, yet @echo-chaos/obs ships from src/obs/dist (npm run build)',
    ]);
    const operatorSources = tree('1.2.3', { [OPERATOR]: { private: false } });
    assert.deepEqual(releaseProblems('v1.2.3', operatorSources), [
      'src/operator/package.json: private is not true, yet @echo-chaos/operator ships from src/operator/dist (npm run build)',
    ]);
    const operatorBuilt = tree('1.2.3', { [OPERATOR_BUILT]: { private: true } });
    assert.deepEqual(releaseProblems('v1.2.3', operatorBuilt), [
      'src/operator/dist/package.json: private is true, npm will not publish it',
    ]);
  });

  test('release preflight – the built manifest is checked when present, and demanded with built', () => {
    const unbuilt = tree('1.2.3', {}, { built: false });
    assert.deepEqual(releaseProblems('v1.2.3', unbuilt), []);
    assert.deepEqual(releaseProblems('v1.2.3', unbuilt, { built: true }), [
      'src/obs/dist/package.json is missing (the package @echo-chaos/obs): run npm run build',
      'src/operator/dist/package.json is missing (the package @echo-chaos/operator): run npm run build',
    ]);
  });

  test('release preflight – repository.url must name the building repository (npm provenance)', () => {
    assert.deepEqual(
      releaseProblems('v1.2.3', tree('1.2.3'), { repository: 'fork/r' }).map((p) => p.split(':')[0]),
      [OBS, OBS_BUILT, SERVICE, OPERATOR, OPERATOR_BUILT],
    );
    assert.match(
      releaseProblems('v1.2.3', tree('1.2.3'), { repository: 'fork/r' }).join('\n'),
      /npm provenance needs https:\/\/github\.com\/fork\/r/,
    );
    const none = tree('1.2.3', { [SERVICE]: { repository: undefined } });
    assert.deepEqual(releaseProblems('v1.2.3', none, { repository: 'o/r' }), [
      'package.json: repository.url is "", npm provenance needs https://github.com/o/r',
    ]);
    const builtNone = tree('1.2.3', { [OBS_BUILT]: { repository: undefined } });
    assert.deepEqual(releaseProblems('v1.2.3', builtNone, { repository: 'o/r' }), [
      'src/obs/dist/package.json: repository.url is "", npm provenance needs https://github.com/o/r',
    ]);
    for (const url of [
      'https://github.com/o/r',
      'git+https://github.com/o/r.git',
      'github:o/r',
      'o/r',
      'git+ssh://git@github.com/o/r.git',
    ]) {
      assert.equal(normalizeRepositoryUrl(url), 'github.com/o/r', url);
    }
  });

  test('release preflight – the version has no v; a pre-release goes to the npm tag next', () => {
    assert.deepEqual(releaseOf('v1.2.3'), { version: '1.2.3', distTag: 'latest' });
    assert.deepEqual(releaseOf('v1.2.3-rc.1'), { version: '1.2.3-rc.1', distTag: 'next' });
    assert.deepEqual(releaseOf('v1.2.3+build-5'), { version: '1.2.3+build-5', distTag: 'latest' });
  });

  test('release preflight – the command prints the problems and exits 1, or writes the outputs', () => {
    const run = (args: string[], env: Record<string, string> = {}) =>
      spawnSync(process.execPath, [SCRIPT, ...args], {
        encoding: 'utf8',
        env: { PATH: process.env['PATH'], ...env },
      });
    const bad = run(['nope']);
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /release-check: tag "nope" is not v<major>/);
    // The real tree at its own version (src/obs/dist/package.json too, when a build left one).
    const version = JSON.parse(readFileSync(join(ROOT, SERVICE), 'utf8')).version;
    const output = join(scratch, 'github-output');
    const good = run([`v${version}`], { GITHUB_OUTPUT: output });
    assert.equal(good.status, 0, good.stderr);
    assert.equal(readFileSync(output, 'utf8'), `version=${version}\ndist-tag=latest\n`);
    assert.match(
      good.stdout,
      /@echo-chaos\/obs@\S+ from src\/obs\/dist, echo-chaos@\S+, @echo-chaos\/operator@\S+ from src\/operator\/dist /,
    );
    const next = run([`v${version}-next.0`]);
    assert.equal(next.status, 1);
    assert.match(next.stderr, /release-check: src\/obs\/package\.json: version is/);
    // --built demands the build: it passes after `npm run build`, else says only that the build is
    // missing (whether there is one depends on what ran before: packages.integration.test.ts builds too).
    const built = run(['--built', `v${version}`]);
    if (built.status !== 0) {
      assert.match(
        built.stderr,
        /^(release-check: src\/(obs|operator)\/dist\/package\.json is missing \(the package @echo-chaos\/(obs|operator)\): run npm run build\n)+$/,
      );
    }
  });
});
