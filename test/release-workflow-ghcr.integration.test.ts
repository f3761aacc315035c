/**
 * `.github/workflows/release.yml`, what it pushes to ghcr.io: the image job (two images from the one
 * Dockerfile, the service's default target and the operator's target `operator` (ADR 0048), both
 * platforms, tagged with the version) and the chart job (packaged at the version, pushed as an OCI
 * artifact once the images exist), and the chart's default images, which must be the ones the
 * workflow pushes for the upstream owner. As in test/release-workflow.integration.test.ts (the trigger, the CI
 * gate, npm, permissions), each check returns the problems it sees and is shown to notice a broken
 * copy (test/helpers/workflow.ts).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { load } from 'js-yaml';
import { helm, helmSkip } from './helpers/helm.ts';
import {
  type Any,
  type Check,
  envAt,
  gha,
  jobOf,
  type Mutation,
  needsOf,
  runIndex,
  step,
  stepsOf,
  testChecks,
  usesIndex,
  using,
} from './helpers/workflow.ts';

const ROOT = join(import.meta.dirname, '..');
const CHART = join(ROOT, 'charts', 'echo-chaos');

const OWNER = gha('github.repository_owner');
/**
 * The images the workflow pushes, as written there (the owner is only known in GitHub), each with
 * the Dockerfile target it is built from (none: the default, the last stage) and the chart value
 * that names it.
 */
const IMAGES = [
  { image: `ghcr.io/${OWNER}/echo-chaos`, target: undefined, value: 'image' },
  { image: `ghcr.io/${OWNER}/echo-chaos-operator`, target: 'operator', value: 'operator.image' },
] as const;
/** The owner of the upstream repository, whose image the chart's default values name. */
const UPSTREAM_OWNER = 'echo-chaos';

/** What the checks read of the chart and the Dockerfile. */
interface Chart {
  readonly values: Any;
  readonly chart: Any;
  /** The Dockerfile's stage names (FROM ... AS name), in order. */
  readonly stages: readonly string[];
}

/** The image job's step whose name matches `pattern`. */
function named(wf: Any, pattern: RegExp): Any {
  const found = stepsOf(jobOf(wf, 'image')).find((s) => pattern.test(String(s.name ?? '')));
  assert.ok(found, `the mutation table looks for a step of image named ${pattern}: there is none`);
  return found;
}

/** `a.b` of `values`. */
const valueAt = (values: Any, path: string): Any =>
  path.split('.').reduce((at: Any, key) => at?.[key], values);

const CHECKS: Record<string, Check<Chart>> = {
  'the image job builds both platforms and pushes ghcr.io/<owner>/echo-chaos and echo-chaos-operator:<version>'(
    wf,
    repo,
  ) {
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
    const metas = using(job, 'docker/metadata-action');
    const builds = using(job, 'docker/build-push-action');
    for (const { image, target } of IMAGES) {
      const meta = metas.find((m) => String(m.with?.images ?? '').trim() === image);
      if (meta === undefined) {
        problems.push(`no metadata-action names the image ${image}`);
        continue;
      }
      const tags = String(meta.with?.tags ?? '')
        .split('\n')
        .map((t) => t.trim());
      if (!tags.includes('type=semver,pattern={{version}}')) {
        problems.push(`${image} is not tagged with the version (type=semver,pattern={{version}})`);
      }
      const build = builds.find(
        (b) => meta.id !== undefined && b.with?.tags === `\${{ steps.${meta.id}.outputs.tags }}`,
      );
      if (build === undefined) {
        problems.push(`no build-push-action pushes metadata-action's tags of ${image}`);
        continue;
      }
      const platforms = String(build.with?.platforms ?? '')
        .split(',')
        .map((p) => p.trim());
      for (const platform of ['linux/amd64', 'linux/arm64']) {
        if (!platforms.includes(platform)) problems.push(`${image} is not built for ${platform}`);
      }
      if (build.with?.push !== true) problems.push(`build-push-action does not push ${image}`);
      // The service is the Dockerfile's default target, its last stage; the operator a named one.
      const built = build.with?.target ?? repo.stages.at(-1);
      const expected = target ?? repo.stages.at(-1);
      if (built !== expected) {
        problems.push(`${image} is built from the stage ${String(built)}, not ${String(expected)}`);
      }
      if (!repo.stages.includes(String(built))) {
        problems.push(`the Dockerfile has no stage ${String(built)} (${image})`);
      }
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

  "the chart's default images are the workflow's images with the owner echo-chaos"(wf, repo) {
    const problems: string[] = [];
    const metas = using(jobOf(wf, 'image'), 'docker/metadata-action');
    for (const { image, value } of IMAGES) {
      const images = String(
        metas.find((m) => String(m.with?.images ?? '').endsWith(image.slice(image.lastIndexOf('/'))))?.with
          ?.images ?? '',
      ).trim();
      const upstream = images.replace(OWNER, UPSTREAM_OWNER);
      if (!images.includes(OWNER)) problems.push(`the image ${images} does not follow the owner`);
      const repository = valueAt(repo.values, `${value}.repository`);
      if (repository !== upstream) {
        problems.push(`values.yaml ${value}.repository is ${repository}, the workflow pushes ${upstream}`);
      }
      if (valueAt(repo.values, `${value}.tag`) !== '')
        problems.push(`values.yaml pins ${value}.tag: it should follow appVersion`);
    }
    if (repo.chart?.name !== 'echo-chaos')
      problems.push(`the chart is ${repo.chart?.name}: helm push names echo-chaos-*.tgz`);
    return problems;
  },
};

const MUTATIONS: Mutation<Chart>[] = [
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
    expect: /does not push ghcr\.io\/.+\/echo-chaos$/m,
  },
  {
    check: 'the image job',
    what: 'another image',
    wf: (wf) => (step(wf, 'image', /metadata/).with.images = `ghcr.io/${OWNER}/other`),
    expect: /no metadata-action names the image ghcr\.io\/.+\/echo-chaos$/m,
  },
  {
    check: 'the image job',
    what: 'no version tag',
    wf: (wf) => (step(wf, 'image', /metadata/).with.tags = 'type=sha'),
    expect: /not tagged with the version/,
  },
  {
    check: 'the image job',
    what: 'no operator image',
    wf: (wf) => wf.jobs.image.steps.splice(-2, 2),
    expect: /no metadata-action names the image ghcr\.io\/.+\/echo-chaos-operator/,
  },
  {
    check: 'the image job',
    what: 'the operator image built from the default target (the service)',
    wf: (wf) => delete named(wf, /Build and push the operator/).with.target,
    expect: /echo-chaos-operator is built from the stage runtime, not operator/,
  },
  {
    check: 'the image job',
    what: 'the service built from the operator stage',
    wf: (wf) => (named(wf, /Build and push the service/).with.target = 'operator'),
    expect: /echo-chaos is built from the stage operator, not runtime/,
  },
  {
    check: 'the image job',
    what: 'a target the Dockerfile lacks',
    wf: (wf) => (named(wf, /Build and push the operator/).with.target = 'operatr'),
    expect: /no stage operatr/,
  },
  {
    check: 'the image job',
    what: 'the operator image with the service tags',
    wf: (wf) => (named(wf, /Build and push the operator/).with.tags = gha('steps.meta.outputs.tags')),
    expect: /no build-push-action pushes metadata-action's tags of ghcr\.io\/.+\/echo-chaos-operator/,
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
    expect: /metadata-action's tags of ghcr\.io\/.+\/echo-chaos$/m,
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
    what: 'the operator from the service image',
    repo: (r) => ({
      ...r,
      values: { ...r.values, operator: { ...r.values.operator, image: { repository: '', tag: '' } } },
    }),
    expect:
      /values\.yaml operator\.image\.repository is , the workflow pushes ghcr\.io\/echo-chaos\/echo-chaos-operator/,
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

describe('release workflow: image and chart', () => {
  const wf = load(readFileSync(join(ROOT, '.github', 'workflows', 'release.yml'), 'utf8'));
  const chart: Chart = {
    values: load(readFileSync(join(CHART, 'values.yaml'), 'utf8')),
    chart: load(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')),
    stages: [...readFileSync(join(ROOT, 'Dockerfile'), 'utf8').matchAll(/^FROM\s+\S+\s+AS\s+(\S+)/gim)].map(
      (m) => m[1]!,
    ),
  };

  testChecks('release workflow', CHECKS, MUTATIONS, wf, chart);

  test('release workflow – the chart is packaged by the helm the chart tests run', {
    skip: helmSkip(),
  }, () => {
    const pinned = using(jobOf(wf, 'chart'), 'azure/setup-helm')[0]?.with?.version;
    const tested = helm(['version', '--template', '{{.Version}}']).trim();
    assert.equal(pinned, tested, `azure/setup-helm installs ${pinned}; test/helpers/helm.ts runs ${tested}`);
  });
});
