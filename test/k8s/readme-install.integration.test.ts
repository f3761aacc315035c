/**
 * The README's Kubernetes walkthrough and the docs page that goes on from it
 * (docs/kubernetes/index.md), held to the repository: the helm commands render with this
 * chart (every `--set` a real value), one release name, the image it builds is the one it loads and
 * installs, the files it applies exist, the columns it names are the CRD's, and the curl it shows
 * answers as shown (real curl against a real echo-chaos holding the applied EchoScenario).
 */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { load } from 'js-yaml';
import { startEcho } from '../helpers/echo-server.ts';
import { helm, helmSkip } from '../helpers/helm.ts';
import { loadYamlDocuments, readYamlDocuments } from './crd-schema.ts';

const execFileAsync = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const CHART = join(ROOT, 'charts', 'echo-chaos');

// biome-ignore lint/suspicious/noExplicitAny: YAML is walked field by field below.
type Any = any;

/**
 * The README's `## Kubernetes` section up to the next `## ` (its first sh block: the walkthrough),
 * then the page that includes it and holds the rest (the values, the CRD, the operator, the proxy).
 */
function kubernetesSection(): { text: string; block: string } {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Kubernetes\n');
  assert.ok(start !== -1, 'README has a ## Kubernetes section');
  const next = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, next === -1 ? undefined : next);
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block !== undefined, 'the section opens with an sh block');
  const page = readFileSync(join(ROOT, 'docs', 'kubernetes', 'index.md'), 'utf8');
  assert.ok(page.includes('<!--@section: README.md#kubernetes-->'), 'the page includes the README section');
  return { text: `${section}\n${page}`, block };
}

/** Shell words: whitespace-separated, single and double quotes kept together and removed. */
function words(line: string): string[] {
  const out: string[] = [];
  for (const m of line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)) out.push(m[1] ?? m[2] ?? m[3]!);
  return out;
}

/**
 * The block's commands, continuation lines joined, as words. A comment's indented command
 * (`#    helm install ...`, an alternative) is a command too, marked `alternative`.
 */
function commands(block: string): Array<{ words: string[]; alternative: boolean }> {
  const joined = block.replace(/\\\n/g, ' ');
  const found: Array<{ words: string[]; alternative: boolean }> = [];
  for (const raw of joined.split('\n')) {
    const alternative = /^#\s{3,}(helm|kubectl|kind|docker|k3d) /.exec(raw) !== null;
    const line = alternative ? raw.replace(/^#\s+/, '') : raw;
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    found.push({ words: words(line.replace(/\s#\s.*$/, '')), alternative });
  }
  return found;
}

/**
 * A `helm install RELEASE CHART ...` as the `helm template` of this chart with the same flags (all
 * of them: an unknown flag fails), but `--version`, which names a released chart.
 */
function templateFlags(args: string[]): string[] {
  const flags = args.slice(4);
  const version = flags.indexOf('--version');
  if (version !== -1) flags.splice(version, 2);
  return flags;
}

const skipHelm = helmSkip();

describe('README Kubernetes walkthrough', () => {
  const { text, block } = kubernetesSection();
  const cmds = commands(block);
  const named = (tool: string, sub?: string) =>
    cmds.filter((c) => c.words[0] === tool && (sub === undefined || c.words[1] === sub));

  test('README k8s – one release name everywhere, installed once (plus one commented alternative)', () => {
    const installs = named('helm', 'install');
    assert.deepEqual(
      installs.map((c) => c.alternative),
      [false, true],
    );
    const releases = new Set([
      ...installs.map((c) => c.words[2]),
      ...named('helm', 'test').map((c) => c.words[2]),
      ...named('helm', 'uninstall').map((c) => c.words[2]),
    ]);
    assert.deepEqual([...releases], ['echo-chaos']);
  });

  test('README k8s – the helm install renders with this chart, the operator on, the images built and loaded', {
    skip: skipHelm,
  }, () => {
    const [install, released] = named('helm', 'install');
    assert.equal(install!.words[3], 'charts/echo-chaos');
    assert.match(released!.words[3]!, /^oci:\/\/ghcr\.io\/echo-chaos\/charts\/echo-chaos$/);
    // Two images from the one Dockerfile (ADR 0048): the service (the default target) and the operator.
    const builds = named('docker', 'build').map((c) => c.words);
    const tagOf = (words: string[]): string => words[words.indexOf('-t') + 1]!;
    const service = builds.filter((w) => !w.includes('--target')).map(tagOf);
    const operator = builds.filter((w) => w[w.indexOf('--target') + 1] === 'operator').map(tagOf);
    assert.equal(service.length, 1, 'one docker build of the service (no --target)');
    assert.equal(operator.length, 1, 'one docker build --target operator');
    const loaded = named('kind', 'load').map((c) => c.words[3]);
    assert.deepEqual(loaded.sort(), [service[0], operator[0]].sort(), 'kind loads the images docker built');
    const docs = loadYamlDocuments(
      helm(['template', 'echo-chaos', CHART, ...templateFlags(install!.words)]),
    ) as Any[];
    const imageOf = (name: string): string =>
      docs.find((d) => d.kind === 'Deployment' && d.metadata.name === name).spec.template.spec.containers[0]
        .image;
    assert.equal(imageOf('echo-chaos'), service[0], 'the echo Deployment runs the loaded service image');
    assert.equal(imageOf('echo-chaos-operator'), operator[0], 'the operator runs the loaded operator image');
    const defaults = loadYamlDocuments(
      helm(['template', 'echo-chaos', CHART, ...templateFlags(released!.words)]),
    ) as Any[];
    const released_images = defaults
      .filter((d) => d.kind === 'Deployment')
      .map((d) => d.spec.template.spec.containers[0].image as string);
    assert.equal(released_images.length, 2, 'the alternative installs the operator too');
    assert.deepEqual(released_images.map((image) => image.replace(/:.*$/, '')).sort(), [
      'ghcr.io/echo-chaos/echo-chaos',
      'ghcr.io/echo-chaos/echo-chaos-operator',
    ]);
  });

  test('README k8s – every value the section names is a value of the chart', () => {
    const values = load(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Any;
    const has = (path: string) =>
      path
        .split('.')
        .reduce<Any>((node, key) => (node !== undefined && node !== null ? node[key] : undefined), values) !==
      undefined;
    const tops = Object.keys(values);
    const setKeys = cmds.flatMap((c) =>
      c.words.flatMap((w, i) =>
        c.words[i - 1] === '--set' ? w.split(',').map((kv) => kv.slice(0, kv.indexOf('='))) : [],
      ),
    );
    const prose = [...text.matchAll(/`([a-zA-Z]+(?:\.[a-zA-Z]+)+)(?:=[^`]*)?`/g)]
      .map((m) => m[1]!)
      .filter((p) => tops.includes(p.split('.')[0]!));
    const missing = [...setKeys, ...prose].filter((p) => !has(p));
    assert.deepEqual(missing, []);
    assert.ok(setKeys.includes('operator.enabled') && prose.includes('grafanaDashboard.label'));
  });

  test('README k8s – the files it applies exist; the columns and the name it waits on are the CRD and example', () => {
    const applied = cmds.flatMap((c) =>
      c.words[0] === 'kubectl' ? c.words.flatMap((w, i) => (c.words[i - 1] === '-f' ? [w] : [])) : [],
    );
    assert.ok(applied.length > 0);
    for (const file of applied) assert.ok(existsSync(join(ROOT, file)), file);
    const [example] = readYamlDocuments(join(ROOT, applied[0]!)) as Any[];
    assert.equal(example.kind, 'EchoScenario');
    assert.match(block, new RegExp(`echoscenario/${example.metadata.name} `));
    const crd = readYamlDocuments(join(ROOT, 'crds', 'echoscenarios.echo-chaos.dev.yaml'))[0] as Any;
    const columns = crd.spec.versions[0].additionalPrinterColumns
      .filter((c: Any) => (c.priority ?? 0) === 0)
      .map((c: Any) => c.name.toUpperCase());
    assert.match(block, new RegExp(`# ${columns.join(', ')}:`), `the columns ${columns.join(', ')}`);
  });

  test('README k8s – the curl it shows answers as shown, against echo-chaos holding the example', async (t) => {
    const probe = spawnSync('curl', ['--version'], { encoding: 'utf8', timeout: 10_000 });
    if (probe.error !== undefined || probe.status !== 0) {
      t.skip('curl not found on PATH (Debian package curl)');
      return;
    }
    const applied = named('kubectl', 'apply')[0]!.words.at(-1)!;
    const [example] = readYamlDocuments(join(ROOT, applied)) as Any[];
    const run = named('kubectl', 'run')[0]!.words;
    const args = run.slice(run.indexOf('--') + 1);
    const urls = args.filter((a) => a.startsWith('http://'));
    assert.ok(urls.length >= 2);
    const service = loadYamlDocuments(readFileSync(join(ROOT, 'manifests', 'echo-chaos.yaml'), 'utf8')).find(
      (d) => d['kind'] === 'Service',
    ) as Any;
    for (const url of urls) {
      const u = new URL(url);
      assert.equal(u.hostname, service.metadata.name);
      assert.equal(Number(u.port), service.spec.ports[0].port);
    }
    const dir = mkdtempSync(join(tmpdir(), 'echo-chaos-readme-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'scenarios.json');
    const { path, responses } = example.spec;
    writeFileSync(file, JSON.stringify([{ name: example.metadata.name, path, responses }]));
    const echo = await startEcho({ ECHO_SCENARIO_FILE: file });
    try {
      const local = args.map((a) => (a.startsWith('http://') ? `${echo.url}${new URL(a).pathname}` : a));
      // Asynchronously: the echo server answers from this process's event loop.
      const result = await execFileAsync('curl', local, { encoding: 'utf8', timeout: 30_000 });
      const shown = block
        .slice(block.indexOf(urls.at(-1)!))
        .split('\n')
        .slice(1)
        .filter((l) => l.startsWith('# '))
        .map((l) => l.slice(2));
      const lines = result.stdout.split('\n').filter((l) => l !== '');
      assert.deepEqual(lines, shown.slice(0, lines.length));
      assert.equal(lines.length, 2 * urls.length);
    } finally {
      await echo.close();
    }
  });
});
