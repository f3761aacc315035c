/**
 * Cluster mode, proven here where no cluster runs: the operator suite runs with `KUBECONFIG` pointing at
 * the API double started as a separate process (test/helpers/kube-api-server.ts). It can only reach that
 * "cluster" through the API, as it would a real one; what needs control over the API server is skipped,
 * and nothing else is.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION } from '../../src/operator/echo-scenario.ts';
import { exitOf } from '../helpers/runtime.ts';
import { CLUSTER, NEEDS_API_CONTROL } from './fixture.ts';

const ROOT = join(import.meta.dirname, '../..');
const SUITE = ['operator.integration.test.ts', 'cluster.integration.test.ts', 'lifecycle.integration.test.ts']
  .map((file) => `test/operator/${file}`)
  .map((file) => {
    // A renamed file must fail here, not drop out of the run unnoticed.
    if (!existsSync(join(ROOT, file))) throw new Error(`${file} is gone: update SUITE`);
    return file;
  });
/** The tests that need control over the API server itself, so cannot run against a real cluster. */
const API_CONTROL_TESTS = [
  'operator – a dropped watch and a 410 Gone recover',
  'operator – its watches take bookmarks: a dropped watch resumes past a compaction without a new list',
  'lifecycle – nothing is pushed before the EchoScenario carries the finalizer',
];
const RUN_TIMEOUT_MS = 240_000;

interface TapResult {
  readonly name: string;
  readonly ok: boolean;
  readonly skip: string | undefined;
}

/** The tests (not suites) of a TAP report, with the summary counts. */
function parseTap(tap: string): { tests: TapResult[]; counts: Record<string, number> } {
  const lines = tap.split('\n');
  const tests: TapResult[] = [];
  const counts: Record<string, number> = {};
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const count = /^# (\w+) (\d+)$/.exec(line);
    if (count !== null) counts[count[1]!] = Number(count[2]);
    const result = /^\s*(not ok|ok) \d+ - (.*?)(?: # SKIP(?: (.*))?)?$/.exec(line);
    if (result === null) continue;
    let suite = false;
    if (lines[i + 1]?.trim() === '---') {
      for (let j = i + 2; j < lines.length && lines[j]!.trim() !== '...'; j++) {
        if (lines[j]!.trim() === "type: 'suite'") suite = true;
      }
    }
    if (suite) continue;
    const skip = line.includes(' # SKIP') ? (result[3] ?? '') : undefined;
    tests.push({ name: result[2]!.replaceAll('\\#', '#'), ok: result[1] === 'ok', skip });
  }
  return { tests, counts };
}

/** Runs the suite files in a child test runner with `env` on top of ours, reported as TAP. */
async function runSuite(env: Record<string, string>, extra: string[] = []) {
  // Inside a test run NODE_TEST_CONTEXT makes a child runner report to its parent instead of stdout.
  const { NODE_TEST_CONTEXT: _parent, ...inherited } = process.env;
  const child = spawn(process.execPath, ['--test', '--test-reporter=tap', ...extra, ...SUITE], {
    cwd: ROOT,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: RUN_TIMEOUT_MS,
  });
  const exit = await exitOf(child);
  return { exit, ...parseTap(exit.stdout) };
}

async function startDouble(kubeconfig: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(ROOT, 'test/helpers/kube-api-server.ts'), kubeconfig], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no READY line within 10 s: ${out}`)), 10_000);
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      if (/^READY http:\/\/\S+\n/m.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the API double exited (${code}): ${out}`));
    });
  });
  return child;
}

test('operator cluster mode – the suite passes against a KUBECONFIG cluster, skipping only what needs the API server', {
  skip: CLUSTER && 'already in cluster mode (KUBECONFIG is set)',
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'echo-chaos-cluster-mode-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const kubeconfig = join(dir, 'kubeconfig.yaml');
  const double = await startDouble(kubeconfig);
  t.after(() => {
    double.kill('SIGTERM');
  });

  // Every test of the suite, by name, without running any (no name matches the pattern).
  const listed = await runSuite({ KUBECONFIG: '' }, ['--test-name-pattern=^$']);
  const all = listed.tests.map((r) => r.name).sort();
  assert.ok(all.length >= API_CONTROL_TESTS.length + 8, `tests listed: ${all.join(', ')}`);
  for (const name of API_CONTROL_TESTS) assert.ok(all.includes(name), `${name} is in the suite`);

  const run = await runSuite({
    KUBECONFIG: kubeconfig,
    // The double does not reject loopback addresses, as a cluster's EndpointSlice validation does.
    ECHO_CHAOS_TEST_POD_IP: '127.0.0.1',
    ECHO_CHAOS_TEST_TIMEOUT_MS: '10000',
  });
  const report = `${run.exit.stdout.slice(-6000)}\n${run.exit.stderr.slice(-2000)}`;
  assert.equal(run.exit.code, 0, report);
  assert.equal(run.counts['fail'], 0, report);
  assert.equal(run.counts['cancelled'], 0, report);
  assert.deepEqual(run.tests.map((r) => r.name).sort(), all, 'the same tests as in double mode');
  const skipped = run.tests.filter((r) => r.skip !== undefined);
  for (const r of skipped) {
    assert.match(r.skip!, new RegExp(`^${NEEDS_API_CONTROL}: \\S`), `${r.name} says what it needs`);
  }
  assert.deepEqual(skipped.map((r) => r.name).sort(), [...API_CONTROL_TESTS].sort(), report);
  const ran = run.tests.filter((r) => r.skip === undefined);
  assert.ok(ran.every((r) => r.ok));
  assert.equal(ran.length, all.length - API_CONTROL_TESTS.length);

  // What a cluster would not delete by itself is gone (the double does not empty deleted namespaces).
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const names = (list: { items: Array<{ metadata?: { name?: string } }> }) =>
    list.items.map((o) => o.metadata?.name);
  assert.deepEqual(names(await core.listNamespace()), [], 'namespaces');
  assert.deepEqual(names(await core.listNode()), [], 'nodes');
  assert.deepEqual(names(await core.listPodForAllNamespaces()), [], 'pods');
  const leases = kc.makeApiClient(CoordinationV1Api);
  assert.deepEqual(
    names(await leases.listNamespacedLease({ namespace: 'kube-node-lease' })),
    [],
    'node leases',
  );
  const custom = kc.makeApiClient(CustomObjectsApi);
  const scenarios = await custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL });
  assert.deepEqual(names(scenarios as { items: [] }), [], 'EchoScenarios');

  t.diagnostic(`cluster mode: ${ran.length} ran, ${skipped.length} skipped`);
  for (const r of skipped) t.diagnostic(`skipped: ${r.name} (${r.skip})`);
});
