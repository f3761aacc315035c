import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { nodeSupportWarning, SUPPORTED_NODE_MAJOR } from '../../src/telemetry/node-support.ts';
import { exitOf, freePort, until } from '../helpers/runtime.ts';

/**
 * A start on a Node the packages do not support prints one warning line naming the version and
 * what is supported, and goes on. The processes below run on this Node with `process.versions.node`
 * made to say an older one (a preload), so the entry points are tried as a user on Node 20 meets them.
 */

const ROOT = new URL('../..', import.meta.url).pathname;
const ECHO_MAIN = join(ROOT, 'src/echo/main.ts');
const OPERATOR_MAIN = join(ROOT, 'src/operator/main.ts');
const AS_NODE_20 = `data:text/javascript,Object.defineProperty(process.versions,'node',{value:'20.19.0'})`;

test('node support – the supported major is the one package.json "engines" names', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
  assert.equal(pkg.engines.node, `>=${SUPPORTED_NODE_MAJOR}`);
  assert.equal(nodeSupportWarning('x', `${SUPPORTED_NODE_MAJOR}.0.0`), undefined);
  assert.equal(nodeSupportWarning('x', `${SUPPORTED_NODE_MAJOR + 1}.2.3`), undefined);
  assert.match(
    nodeSupportWarning('x', '22.12.0') ?? '',
    /^x: warning: Node 22\.12\.0 is not supported \(Node >= 24/,
  );
});

test('node support – echo-chaos on an older Node warns in one line and serves anyway', async () => {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', AS_NODE_20, ECHO_MAIN], {
    env: { PATH: process.env['PATH'] ?? '', PORT: String(port), HOST: '127.0.0.1', LOG_REQUESTS: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = exitOf(child);
  try {
    let status: number | undefined;
    const answers = async () => {
      status = await fetch(`http://127.0.0.1:${port}/health`).then(
        (res) => res.status,
        () => undefined,
      );
      return status !== undefined;
    };
    await until('/health answers', answers, 30_000, 100);
    assert.equal(status, 200, 'it serves');
  } finally {
    child.kill('SIGINT');
  }
  const { stderr } = await exited;
  const lines = stderr.split('\n').filter((line) => line !== '');
  assert.deepEqual(lines, [
    'echo-chaos: warning: Node 20.19.0 is not supported (Node >= 24 is, as package.json "engines" says); running anyway, some features may fail',
  ]);
});

test('node support – echo-chaos on a supported Node says nothing of it', async () => {
  const { stderr, code } = await exitOf(spawn(process.execPath, [ECHO_MAIN, '--version']));
  assert.equal(code, 0);
  assert.equal(stderr, '');
  // --version answers before the check: a run that starts is what is checked.
  const port = await freePort();
  const child = spawn(process.execPath, [ECHO_MAIN], {
    env: { PATH: process.env['PATH'] ?? '', PORT: String(port), HOST: '127.0.0.1', LOG_REQUESTS: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = exitOf(child);
  // It must have started: a run that never served would say nothing of Node either.
  const up = () =>
    fetch(`http://127.0.0.1:${port}/health`).then(
      () => true,
      () => false,
    );
  await until('/health answers', up, 30_000, 100).finally(() => child.kill('SIGINT'));
  assert.doesNotMatch((await exited).stderr, /not supported/);
});

test('node support – echo-chaos-operator on an older Node warns before anything else it says', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'operator-home-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  // No cluster: it stops with its one line about that, after the warning.
  const result = await exitOf(
    spawn(process.execPath, ['--import', AS_NODE_20, OPERATOR_MAIN], {
      env: { PATH: process.env['PATH'] ?? '', HOME: home, PORT: '0', HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 30_000,
    }),
  );
  const lines = result.stderr.split('\n').filter((line) => line !== '');
  assert.equal(lines.length, 2, result.stderr);
  assert.equal(
    lines[0],
    'echo-chaos-operator: warning: Node 20.19.0 is not supported (Node >= 24 is, as package.json "engines" says); running anyway, some features may fail',
  );
  assert.match(lines[1]!, /^echo-chaos-operator: .*no kubeconfig or in-cluster config was found/);
});
