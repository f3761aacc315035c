/**
 * `.github/workflows/release.yml` cannot run here, so its structure is checked: each check below
 * returns the problems it sees, the real workflow must have none, and every check is shown to
 * notice a broken copy (the mutation table), so none of them passes vacuously. actionlint runs on it
 * when present. This file: the trigger, the CI gate, the npm packages, the docs site (GitHub Pages),
 * permissions, pinned actions and the scripts the steps name; test/release-workflow-ghcr.integration.test.ts: the image and the chart;
 * test/release-check.integration.test.ts: the release preflight the workflow runs.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { load } from 'js-yaml';
import { isBuilt, RELEASE_PACKAGES } from '../scripts/release-check.ts';
import {
  type Any,
  type Check,
  envAt,
  every,
  findActionlint,
  gha,
  jobOf,
  type Mutation,
  moveStep,
  needsOf,
  npmPublishOf,
  pathsNamedBy,
  runIndex,
  step,
  stepsOf,
  tagTriggers,
  testChecks,
  usesIndex,
  using,
} from './helpers/workflow.ts';

const ROOT = join(import.meta.dirname, '..');
const WORKFLOW_PATH = join(ROOT, '.github', 'workflows', 'release.yml');

/** What the checks read of the repository besides the workflow. */
interface Repo {
  readonly scripts: Record<string, string>;
  readonly exists: (path: string) => boolean;
  /** Where `npm run docs:build` writes the site: docs/ plus the outDir of its VitePress config. */
  readonly docsOutDir: string;
}

function readRepo(): Repo {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const config = readFileSync(join(ROOT, 'docs', '.vitepress', 'config.ts'), 'utf8');
  const outDir = /^\s*outDir:\s*'([^']+)'/m.exec(config)?.[1] ?? '(no outDir in docs/.vitepress/config.ts)';
  return {
    scripts: pkg.scripts ?? {},
    exists: (path) => existsSync(join(ROOT, path)),
    docsOutDir: `docs/${outDir.replace(/^\.\//, '').replace(/\/$/, '')}`,
  };
}

/** What `npm run build` writes (scripts/build.ts): the root's dist/ and each package built to publish. */
const BUILT = ['dist', ...RELEASE_PACKAGES.filter(isBuilt).map((p) => p.publishDir)];
const BUILD = /^\s*npm run build\s*$/m;
/** The preflight that also reads the built manifests. */
const BUILT_PREFLIGHT = /node scripts\/release-check\.ts --built\b/;
const OBS_PUBLISH = /npm publish \.\/src\/obs\/dist\b/;
const OPERATOR_PUBLISH = /npm publish \.\/src\/operator\/dist\b/;
const DOCS_BUILD = /^\s*npm run docs:build\s*$/m;
const literal = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

// --- The checks -------------------------------------------------------------------------------

const CHECKS: Record<string, Check<Repo>> = {
  'the trigger is a pushed tag v*.*.* and nothing else, one run per tag'(wf) {
    const problems: string[] = [];
    const on = wf?.on;
    if (on === null || typeof on !== 'object' || Array.isArray(on))
      return ['`on` is not a mapping of events'];
    if (Object.keys(on).join() !== 'push')
      problems.push(`events are ${Object.keys(on).join(', ')}, not push alone`);
    const push = on.push ?? {};
    if (Object.keys(push).join() !== 'tags') problems.push('push filters on something besides tags');
    const tags: string[] = [push.tags ?? []].flat();
    for (const tag of ['v1.2.3', 'v0.10.0', 'v2.0.0-rc.1']) {
      if (!tagTriggers(tags, tag)) problems.push(`tag ${tag} does not trigger a release`);
    }
    for (const tag of ['1.2.3', 'v1', 'v1.2', 'latest', 'release/v1.2.3']) {
      if (tagTriggers(tags, tag)) problems.push(`tag ${tag} triggers a release`);
    }
    if (!String(wf?.concurrency?.group ?? '').includes('github.ref')) {
      problems.push('the concurrency group is not per tag (github.ref)');
    }
    if (wf?.concurrency?.['cancel-in-progress'] !== false) {
      problems.push('a newer run may cancel a release half-published (cancel-in-progress is not false)');
    }
    return problems;
  },

  'the ci job runs bash .ci/run under CI=true, after the preflight, in a Debian container'(wf) {
    const job = jobOf(wf, 'ci');
    if (job === undefined) return ['no job ci'];
    const problems: string[] = [];
    const at = runIndex(job, /^\s*bash \.ci\/run\s*$/m);
    if (at === -1) problems.push('no step runs `bash .ci/run`');
    else if (String(envAt(wf, job, stepsOf(job)[at], 'CI')) !== 'true')
      problems.push('.ci/run runs without CI=true');
    if (usesIndex(job, 'actions/checkout') === -1) problems.push('ci does not check out the repository');
    const node = using(job, 'actions/setup-node')[0];
    if (String(node?.with?.['node-version']) !== '24') problems.push('ci does not set up Node 24');
    const preflight = runIndex(job, /node scripts\/release-check\.ts\b/);
    if (preflight === -1 || preflight > at)
      problems.push('the release preflight does not run before the suite');
    // .ci/run installs its packages with apt-get as root, as on Debian: not on the Ubuntu runner's user.
    const image = typeof job.container === 'string' ? job.container : job.container?.image;
    if (!/^(?:node:24-|debian:)/.test(String(image)))
      problems.push(`ci runs in ${image}, not a Debian container`);
    return problems;
  },

  'the npm job publishes each package from its publish directory after the build, obs first, with provenance'(
    wf,
  ) {
    const job = jobOf(wf, 'npm');
    if (job === undefined) return ['no job npm'];
    const problems: string[] = [];
    if (!needsOf(job).includes('ci')) problems.push('npm does not need ci');
    if (job.permissions?.['id-token'] !== 'write') problems.push('npm lacks id-token: write (provenance)');
    const node = using(job, 'actions/setup-node')[0];
    if (node?.with?.['registry-url'] !== 'https://registry.npmjs.org')
      problems.push('setup-node has no registry-url');
    if (String(node?.with?.['node-version']) !== '24') problems.push('npm does not set up Node 24');
    const publishes = stepsOf(job).flatMap((step, at) =>
      String(step.run ?? '')
        .split('\n')
        .filter((line) => /^\s*npm publish\b/.test(line))
        .map((line) => ({ line: line.trim(), at, step, ...npmPublishOf(line) })),
    );
    // Each package from its publishDir (scripts/release-check.ts), once, in RELEASE_PACKAGES order.
    const found = RELEASE_PACKAGES.map((pkg) => {
      const from = publishes.filter((p) => p.folder === pkg.publishDir);
      if (from.length !== 1)
        problems.push(`${pkg.name} is published from ${pkg.publishDir} ${from.length} times, not once`);
      return { pkg, publish: from[0] };
    });
    for (const { folder, line } of publishes) {
      if (!RELEASE_PACKAGES.some((pkg) => pkg.publishDir === folder))
        problems.push(`a publish of ${folder}, not a package of the release: ${line}`);
    }
    found.reduce((before, next) => {
      if (before.publish && next.publish && before.publish.at >= next.publish.at)
        problems.push(`${next.pkg.name} is published before (or with) ${before.pkg.name}, which goes first`);
      return next;
    });
    for (const { line, options, step } of publishes) {
      // npm skips a private workspace with a warning and exits 0; a public one would ship its sources.
      if (options['--workspace'] ?? options['-w'] ?? options['--workspaces'])
        problems.push(`publishes a workspace, not a built package: ${line}`);
      if (options['--provenance'] !== true) problems.push(`without --provenance: ${line}`);
      if (options['--access'] !== 'public') problems.push(`without --access public: ${line}`);
      if (options['--tag'] !== '$DIST_TAG') problems.push(`without --tag "$DIST_TAG": ${line}`);
      if (envAt(wf, job, step, 'NODE_AUTH_TOKEN') !== gha('secrets.NPM_TOKEN'))
        problems.push(`NODE_AUTH_TOKEN is not secrets.NPM_TOKEN for: ${line}`);
    }
    // A re-run after a failed second publish must get past the first: each skips a published version.
    for (const { pkg, publish } of found) {
      const view = new RegExp(`\\bnpm view "?${literal(pkg.name)}@\\$VERSION"?`);
      if (publish && !(view.test(publish.step.run) && /\belse\b/.test(publish.step.run)))
        problems.push(`${pkg.name}@$VERSION is published again when it is already published (no npm view)`);
    }
    if (envAt(wf, job, undefined, 'VERSION') !== gha('needs.ci.outputs.version'))
      problems.push('VERSION is not the ci output');
    const first = Math.min(...publishes.map((p) => p.at));
    const build = runIndex(job, BUILD);
    const preflight = runIndex(job, BUILT_PREFLIGHT);
    for (const [what, at] of [
      ['npm ci', runIndex(job, /^\s*npm ci\b/m)],
      ['npm run build', build],
      ['the version check with --built', preflight],
    ] as const) {
      if (at === -1 || at >= first) problems.push(`${what} does not run before publishing`);
    }
    if (preflight !== -1 && build !== -1 && preflight < build)
      problems.push('the version check runs before npm run build, so it cannot read the built manifests');
    return problems;
  },

  'the docs job builds the site for the Pages base path after the suite, and the pages job deploys it'(
    wf,
    repo,
  ) {
    const job = jobOf(wf, 'docs');
    if (job === undefined) return ['no job docs'];
    const problems: string[] = [];
    if (!needsOf(job).includes('ci')) problems.push('docs does not need ci');
    const node = using(job, 'actions/setup-node')[0];
    if (String(node?.with?.['node-version']) !== '24') problems.push('docs does not set up Node 24');
    const install = runIndex(job, /^\s*npm ci\b/m);
    const build = runIndex(job, DOCS_BUILD);
    const configure = usesIndex(job, 'actions/configure-pages');
    const upload = usesIndex(job, 'actions/upload-pages-artifact');
    if (build === -1) problems.push('no step runs npm run docs:build');
    if (install === -1 || install > build) problems.push('npm ci does not run before npm run docs:build');
    if (configure === -1 || configure > build)
      problems.push('actions/configure-pages does not run before the build (its base path)');
    const id = stepsOf(job)[configure]?.id;
    const base = String(envAt(wf, job, stepsOf(job)[build], 'DOCS_BASE') ?? '');
    if (id === undefined || !base.includes(gha(`steps.${id}.outputs.base_path`)))
      problems.push("the build's DOCS_BASE is not configure-pages' base_path");
    if (upload === -1 || upload < build) problems.push('the site is not uploaded after it is built');
    else if (String(stepsOf(job)[upload].with?.path).replace(/\/$/, '') !== repo.docsOutDir)
      problems.push(`the upload is not the build's outDir ${repo.docsOutDir}`);
    const pages = jobOf(wf, 'pages');
    if (pages === undefined) return [...problems, 'no job pages'];
    if (!needsOf(pages).includes('docs')) problems.push('pages does not need docs');
    if (usesIndex(pages, 'actions/deploy-pages') === -1)
      problems.push('pages does not run actions/deploy-pages');
    const environment = typeof pages.environment === 'string' ? pages.environment : pages.environment?.name;
    if (environment !== 'github-pages')
      problems.push('pages does not deploy to the github-pages environment');
    return problems;
  },

  'permissions: none by default, each job its own, writes only where it publishes'(wf) {
    const problems: string[] = [];
    const top = wf?.permissions;
    if (top === null || typeof top !== 'object' || Object.keys(top).length > 0) {
      problems.push('the workflow grants permissions by default (want permissions: {})');
    }
    const writes: Record<string, Record<string, string>> = {
      ci: {},
      image: { packages: 'write' },
      npm: { 'id-token': 'write' },
      chart: { packages: 'write' },
      docs: { pages: 'read' },
      pages: { pages: 'write', 'id-token': 'write' },
    };
    for (const [name, job] of every(wf)) {
      const granted = job.permissions;
      if (granted === null || typeof granted !== 'object') {
        problems.push(`job ${name} does not list its permissions`);
        continue;
      }
      const expected = { contents: 'read', ...writes[name] };
      for (const [scope, level] of Object.entries(granted)) {
        if (level !== 'none' && expected[scope as keyof typeof expected] !== level) {
          problems.push(`job ${name} has ${scope}: ${String(level)}`);
        }
      }
      for (const [scope, level] of Object.entries(expected)) {
        if (granted[scope] !== level) problems.push(`job ${name} lacks ${scope}: ${level}`);
      }
    }
    return problems;
  },

  'every uses: is pinned to a version or a commit'(wf) {
    const problems: string[] = [];
    for (const [name, job] of every(wf)) {
      for (const { uses } of stepsOf(job)) {
        if (uses === undefined || String(uses).startsWith('./')) continue;
        if (!/@(?:v\d+(?:\.\d+){0,2}|[0-9a-f]{40})$/.test(String(uses)))
          problems.push(`${name}: ${uses} is not pinned`);
      }
    }
    return problems;
  },

  'every script a run: step names exists or is built before it, and every npm run names a script'(wf, repo) {
    const problems: string[] = [];
    for (const [name, job] of every(wf)) {
      stepsOf(job).forEach(({ run }, at) => {
        if (typeof run !== 'string') return;
        for (const path of pathsNamedBy(run)) {
          if (BUILT.some((dir) => path === dir || path.startsWith(`${dir}/`))) {
            const build = runIndex(job, BUILD);
            if (build === -1 || build >= at)
              problems.push(`${name}: ${path} is written by npm run build, which does not run before it`);
          } else if (!repo.exists(path)) problems.push(`${name}: ${path} does not exist`);
        }
        for (const [, script] of run.matchAll(/\bnpm run ([\w:-]+)/g)) {
          if (repo.scripts[script!] === undefined)
            problems.push(`${name}: package.json has no script ${script}`);
        }
      });
    }
    return problems;
  },
};

const MUTATIONS: Mutation<Repo>[] = [
  {
    check: 'the trigger',
    what: 'branch push',
    wf: (wf) => (wf.on = { push: { branches: ['main'] } }),
    expect: /v1\.2\.3 does not trigger/,
  },
  {
    check: 'the trigger',
    what: 'any tag',
    wf: (wf) => (wf.on.push.tags = ['*']),
    expect: /tag latest triggers/,
  },
  {
    check: 'the trigger',
    what: 'manual runs too',
    wf: (wf) => (wf.on.workflow_dispatch = null),
    expect: /not push alone/,
  },
  {
    check: 'the trigger',
    what: 'cancelled releases',
    wf: (wf) => (wf.concurrency['cancel-in-progress'] = true),
    expect: /half-published/,
  },
  {
    check: 'the trigger',
    what: 'one group for all tags',
    wf: (wf) => (wf.concurrency.group = 'release'),
    expect: /not per tag/,
  },
  {
    check: 'the ci job',
    what: 'npm test instead of .ci/run',
    wf: (wf) => (step(wf, 'ci', /\.ci\/run/).run = 'npm test'),
    expect: /no step runs `bash \.ci\/run`/,
  },
  {
    check: 'the ci job',
    what: 'CI unset',
    wf: (wf) => delete step(wf, 'ci', /\.ci\/run/).env,
    expect: /without CI=true/,
  },
  {
    check: 'the ci job',
    what: 'Node 22',
    wf: (wf) => (step(wf, 'ci', /setup-node/).with['node-version'] = 22),
    expect: /Node 24/,
  },
  {
    check: 'the ci job',
    what: 'no preflight',
    wf: (wf) => (step(wf, 'ci', /release-check/).run = 'true'),
    expect: /preflight/,
  },
  {
    check: 'the ci job',
    what: 'the Ubuntu runner',
    wf: (wf) => delete wf.jobs.ci.container,
    expect: /not a Debian container/,
  },
  {
    check: 'the npm job',
    what: 'no id-token',
    wf: (wf) => delete wf.jobs.npm.permissions['id-token'],
    expect: /id-token/,
  },
  {
    check: 'the npm job',
    what: 'no provenance',
    wf: (wf) => {
      const s = step(wf, 'npm', /npm publish --provenance --access public --tag/);
      s.run = s.run.replace('--provenance ', '');
    },
    expect: /without --provenance/,
  },
  {
    check: 'the npm job',
    what: 'no dist-tag (npm 11 refuses a pre-release without one)',
    wf: (wf) => {
      const s = step(wf, 'npm', OBS_PUBLISH);
      s.run = s.run.replace(' --tag "$DIST_TAG"', '');
    },
    expect: /without --tag "\$DIST_TAG"/,
  },
  {
    check: 'the npm job',
    what: 'service first',
    wf: (wf) => moveStep(wf, 'npm', OBS_PUBLISH),
    expect: /echo-chaos is published before \(or with\) @echo-chaos\/obs/,
  },
  {
    check: 'the npm job',
    what: 'no obs',
    wf: (wf) => (step(wf, 'npm', OBS_PUBLISH).run = 'true'),
    expect: /@echo-chaos\/obs is published from src\/obs\/dist 0 times/,
  },
  {
    check: 'the npm job',
    what: 'obs as the workspace (npm skips it: private)',
    wf: (wf) => {
      const s = step(wf, 'npm', OBS_PUBLISH);
      s.run = s.run.replace('./src/obs/dist', '--workspace @echo-chaos/obs');
    },
    expect: /publishes a workspace/,
  },
  {
    check: 'the npm job',
    what: 'obs from its sources',
    wf: (wf) => {
      const s = step(wf, 'npm', OBS_PUBLISH);
      s.run = s.run.replace('./src/obs/dist', './src/obs');
    },
    expect: /a publish of src\/obs, not a package/,
  },
  {
    check: 'the npm job',
    what: 'no operator',
    wf: (wf) => (step(wf, 'npm', OPERATOR_PUBLISH).run = 'true'),
    expect: /@echo-chaos\/operator is published from src\/operator\/dist 0 times/,
  },
  {
    check: 'the npm job',
    what: 'the operator from its sources (private, packing them fails)',
    wf: (wf) => {
      const s = step(wf, 'npm', OPERATOR_PUBLISH);
      s.run = s.run.replace('./src/operator/dist', './src/operator');
    },
    expect: /a publish of src\/operator, not a package/,
  },
  {
    check: 'the npm job',
    what: 'the operator before the service',
    wf: (wf) => moveStep(wf, 'npm', OPERATOR_PUBLISH, OBS_PUBLISH),
    expect: /@echo-chaos\/operator is published before \(or with\) echo-chaos/,
  },
  {
    check: 'the npm job',
    what: 'the operator published again on a re-run',
    wf: (wf) => {
      const s = step(wf, 'npm', OPERATOR_PUBLISH);
      s.run = `${/^\s*npm publish .*$/m.exec(s.run)![0].trim()}\n`;
    },
    expect: /@echo-chaos\/operator@\$VERSION is published again/,
  },
  {
    check: 'the npm job',
    what: 'obs published again on a re-run',
    wf: (wf) => {
      const s = step(wf, 'npm', OBS_PUBLISH);
      s.run = `${/^\s*npm publish .*$/m.exec(s.run)![0].trim()}\n`;
    },
    expect: /@echo-chaos\/obs@\$VERSION is published again/,
  },
  {
    check: 'the npm job',
    what: 'no build',
    wf: (wf) => (step(wf, 'npm', BUILD).run = 'true'),
    expect: /npm run build does not run/,
  },
  {
    check: 'the npm job',
    what: 'the build after the obs publish',
    wf: (wf) => moveStep(wf, 'npm', BUILD, OBS_PUBLISH),
    expect: /npm run build does not run before publishing/,
  },
  {
    check: 'the npm job',
    what: 'the version check before the build',
    wf: (wf) => moveStep(wf, 'npm', BUILD, BUILT_PREFLIGHT),
    expect: /runs before npm run build/,
  },
  {
    check: 'the npm job',
    what: 'the version check without --built',
    wf: (wf) => {
      const s = step(wf, 'npm', BUILT_PREFLIGHT);
      s.run = s.run.replace('--built ', '');
    },
    expect: /version check with --built does not run/,
  },
  {
    check: 'the npm job',
    what: 'the tag with its v',
    wf: (wf) => (wf.jobs.npm.env.VERSION = gha('github.ref_name')),
    expect: /VERSION is not the ci output/,
  },
  {
    check: 'the npm job',
    what: 'no token',
    wf: (wf) => delete wf.jobs.npm.env.NODE_AUTH_TOKEN,
    expect: /NODE_AUTH_TOKEN/,
  },
  {
    check: 'the npm job',
    what: 'default registry',
    wf: (wf) => delete step(wf, 'npm', /setup-node/).with['registry-url'],
    expect: /registry-url/,
  },
  {
    check: 'the docs job',
    what: 'docs before the suite',
    wf: (wf) => delete wf.jobs.docs.needs,
    expect: /docs does not need ci/,
  },
  {
    check: 'the docs job',
    what: 'no build',
    wf: (wf) => (step(wf, 'docs', DOCS_BUILD).run = 'true'),
    expect: /no step runs npm run docs:build/,
  },
  {
    check: 'the docs job',
    what: 'the build before npm ci',
    wf: (wf) => moveStep(wf, 'docs', /^\s*npm ci\b/m),
    expect: /npm ci does not run before/,
  },
  {
    check: 'the docs job',
    what: 'configure-pages after the build',
    wf: (wf) => moveStep(wf, 'docs', /configure-pages/),
    expect: /configure-pages does not run before the build/,
  },
  {
    check: 'the docs job',
    what: 'the default base path (/echo-chaos/) whatever the repository',
    wf: (wf) => delete step(wf, 'docs', DOCS_BUILD).env,
    expect: /DOCS_BASE is not configure-pages' base_path/,
  },
  {
    check: 'the docs job',
    what: 'the upload of another folder',
    wf: (wf) => (step(wf, 'docs', /upload-pages-artifact/).with.path = 'docs/dist'),
    expect: /the upload is not the build's outDir docs\/\.vitepress\/dist/,
  },
  {
    check: 'the docs job',
    what: 'the upload before the build',
    wf: (wf) => moveStep(wf, 'docs', /upload-pages-artifact/, /configure-pages/),
    expect: /not uploaded after it is built/,
  },
  {
    check: 'the docs job',
    what: 'a deploy before the build',
    wf: (wf) => delete wf.jobs.pages.needs,
    expect: /pages does not need docs/,
  },
  {
    check: 'the docs job',
    what: 'no deploy',
    wf: (wf) => (wf.jobs.pages.steps = [{ run: 'true' }]),
    expect: /pages does not run actions\/deploy-pages/,
  },
  {
    check: 'the docs job',
    what: 'no environment',
    wf: (wf) => delete wf.jobs.pages.environment,
    expect: /github-pages environment/,
  },
  {
    check: 'permissions',
    what: 'no id-token for the Pages deploy',
    wf: (wf) => delete wf.jobs.pages.permissions['id-token'],
    expect: /job pages lacks id-token: write/,
  },
  {
    check: 'permissions',
    what: 'pages: write for the build',
    wf: (wf) => (wf.jobs.docs.permissions.pages = 'write'),
    expect: /job docs has pages: write/,
  },
  {
    check: 'permissions',
    what: 'write-all by default',
    wf: (wf) => (wf.permissions = 'write-all'),
    expect: /by default/,
  },
  {
    check: 'permissions',
    what: 'packages for npm',
    wf: (wf) => (wf.jobs.npm.permissions.packages = 'write'),
    expect: /job npm has packages: write/,
  },
  {
    check: 'permissions',
    what: 'no packages for the chart',
    wf: (wf) => delete wf.jobs.chart.permissions.packages,
    expect: /job chart lacks packages: write/,
  },
  {
    check: 'every uses',
    what: 'a branch',
    wf: (wf) => (step(wf, 'ci', /checkout/).uses = 'actions/checkout@main'),
    expect: /not pinned/,
  },
  {
    check: 'every uses',
    what: 'no ref',
    wf: (wf) => (step(wf, 'image', /build-push/).uses = 'docker/build-push-action'),
    expect: /not pinned/,
  },
  {
    check: 'every script',
    what: 'a missing script',
    wf: (wf) => (step(wf, 'ci', /\.ci\/run/).run = 'bash .ci/runn'),
    expect: /\.ci\/runn does not exist/,
  },
  {
    check: 'every script',
    what: 'a missing npm script',
    wf: (wf) => (step(wf, 'npm', /npm run build/).run = 'npm run bulid'),
    expect: /no script bulid/,
  },
  {
    check: 'every script',
    what: 'a missing chart',
    wf: (wf) => {
      const s = step(wf, 'chart', /helm package/);
      s.run = s.run.replace('charts/echo-chaos', 'charts/gone');
    },
    expect: /charts\/gone does not exist/,
  },
  {
    check: 'every script',
    what: 'the obs build published before the build',
    wf: (wf) => moveStep(wf, 'npm', BUILD),
    expect: /src\/obs\/dist is written by npm run build, which does not run before it/,
  },
  {
    check: 'every script',
    what: 'a misspelt publish directory',
    wf: (wf) => {
      const s = step(wf, 'npm', OBS_PUBLISH);
      s.run = s.run.replace('./src/obs/dist', './src/obz/dist');
    },
    expect: /src\/obz\/dist does not exist/,
  },
];

// --- Tests ------------------------------------------------------------------------------------

describe('release workflow', () => {
  const wf: Any = load(readFileSync(WORKFLOW_PATH, 'utf8'));
  const repo = readRepo();

  testChecks('release workflow', CHECKS, MUTATIONS, wf, repo);

  test('release workflow – filter patterns and script paths are read as GitHub and bash would', () => {
    assert.equal(tagTriggers(['v*.*.*'], 'v1.2.3'), true);
    assert.equal(tagTriggers(['v*.*.*'], 'x/v1.2.3'), false);
    assert.equal(tagTriggers(['v*.*.*', '!v*-*'], 'v1.2.3-rc.1'), false);
    assert.equal(tagTriggers(['v**'], 'v1/2'), true);
    assert.deepEqual(pathsNamedBy('bash .ci/run'), ['.ci/run']);
    assert.deepEqual(pathsNamedBy('node scripts/x.ts "$TAG" >/dev/null 2>&1'), ['scripts/x.ts']);
    assert.deepEqual(pathsNamedBy('sh ./deploy.sh && helm package charts/a --version "$V"'), [
      'deploy.sh',
      'charts/a',
    ]);
    assert.deepEqual(
      pathsNamedBy('npm publish --workspace @echo-chaos/obs; helm push "a-$V.tgz" "oci://ghcr.io/o/charts"'),
      [],
    );
    assert.deepEqual(pathsNamedBy('npm publish ./src/obs/dist --tag "$T"'), ['src/obs/dist']);
    assert.deepEqual(npmPublishOf('  npm publish ./src/obs/dist/ --provenance --access public --tag "$T"'), {
      folder: 'src/obs/dist',
      options: { '--provenance': true, '--access': 'public', '--tag': '$T' },
    });
    assert.deepEqual(npmPublishOf('npm publish --workspace=@echo-chaos/obs -w x --dry-run'), {
      folder: '.',
      options: { '--workspace': '@echo-chaos/obs', '-w': 'x', '--dry-run': true },
    });
  });

  test('release workflow – actionlint finds nothing, and notices a broken workflow', async (t) => {
    const linter = await findActionlint();
    if (typeof linter === 'string') {
      t.skip(linter);
      return;
    }
    const text = readFileSync(WORKFLOW_PATH, 'utf8');
    assert.deepEqual(linter.lint(text, '.github/workflows/release.yml'), [], linter.name);
    const broken = text.replace('needs: [ci, image]', 'needs: [ci, imagez]');
    assert.notEqual(broken, text, 'the chart job no longer reads `needs: [ci, image]`');
    assert.match(linter.lint(broken, '.github/workflows/release.yml').join('\n'), /imagez/, linter.name);
  });
});
