/**
 * The proxy-retries example, as a new user meets it: its README's three processes (the inventory,
 * echo-chaos in front of it as `npm start` runs it, orders calling echo-chaos), each started once
 * for the file as written there on free ports, and every command of its README run in order against
 * them, its output checked. The README's "Inject faults into a real service" section shows the same
 * commands: they must be the example's, so they run here too. Then the same behaviour checked
 * directly, without the README's words: the attempts orders reports, what reached the inventory by
 * its own count, and what echo-chaos's history says of each attempt.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parseCommand, runCommands, shellBlocks } from './helpers/doc-commands.ts';
import { type EchoProcess, startEchoProcess } from './helpers/liveness.ts';
import { freePort } from './helpers/runtime.ts';
import { needTools } from './helpers/tools.ts';

const ROOT = join(import.meta.dirname, '..');
const EXAMPLE_README = readFileSync(join(ROOT, 'examples', 'proxy-retries', 'README.md'), 'utf8');
const [starts = [], calls = [], proofs = []] = shellBlocks(EXAMPLE_README);
const START_TIMEOUT_MS = 20_000;

/** The main README's section on the proxy: its `sh` blocks. */
function readmeSectionBlocks(): string[][] {
  const text = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = text.indexOf('\n## Inject faults into a real service\n');
  assert.notEqual(start, -1, 'README.md has a "## Inject faults into a real service" section');
  const end = text.indexOf('\n## ', start + 1);
  return shellBlocks(text.slice(start, end === -1 ? undefined : end));
}

/** A start line of the README: its environment and what it runs (`npm start` or a script). */
interface Start {
  readonly env: Record<string, string>;
  readonly program: string;
  readonly script?: string;
}

/** The port each program listens on when its line sets no `PORT`: their own defaults. */
const DEFAULT_PORTS: Record<string, string> = {
  'npm start': '8080',
  'examples/proxy-retries/inventory.ts': '9000',
  'examples/proxy-retries/server.ts': '3000',
};

function parseStart(line: string): Start {
  const text = parseCommand(line).text.trim();
  const m = /^((?:[A-Z_]+=\S+ )*)(npm start|npx node (\S+))$/.exec(text);
  assert.ok(m, `a start command: ${line}`);
  const env: Record<string, string> = {};
  for (const assignment of (m[1] ?? '').trim().split(' ').filter(Boolean)) {
    const at = assignment.indexOf('=');
    env[assignment.slice(0, at)] = assignment.slice(at + 1);
  }
  const program = m[3] ?? 'npm start';
  assert.ok(program in DEFAULT_PORTS, `a program of the example: ${program}`);
  return m[3] === undefined ? { env, program } : { env, script: m[3], program };
}

const ports = new Map<string, number>();
const rewrite = (text: string) =>
  text.replace(/(localhost|127\.0\.0\.1):(\d+)/g, (whole, _host: string, port: string) => {
    const mapped = ports.get(port);
    return mapped === undefined ? whole : `127.0.0.1:${mapped}`;
  });
/** The address of the program the README runs on `port`, on this run's free port. */
const at = (port: string) => `http://127.0.0.1:${ports.get(port)}`;

const scripts: ChildProcess[] = [];
let echo: EchoProcess | undefined;

/**
 * A node script of the example, started as `npx node <script>` (kept in `scripts`, so `after` stops
 * it even when it never listens): resolves once it logs `listening at`.
 */
async function startScript(script: string, env: Record<string, string>): Promise<void> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(OBS|OTEL)_/i.test(k)));
  const child = spawn(process.execPath, [join(ROOT, script)], {
    cwd: ROOT,
    env: { ...base, HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  scripts.push(child);
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${script}: no "listening at" line:\n${output}`)),
      START_TIMEOUT_MS,
    );
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk;
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk;
      if (/listening at https?:\/\//i.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with ${code} before listening:\n${output}`));
    });
  });
}

before(async () => {
  const parsed = starts.map(parseStart);
  for (const start of parsed) ports.set(start.env['PORT'] ?? DEFAULT_PORTS[start.program]!, await freePort());
  for (const start of parsed) {
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(start.env)) env[name] = rewrite(value);
    env['PORT'] = String(ports.get(start.env['PORT'] ?? DEFAULT_PORTS[start.program]!));
    if (start.script === undefined) echo = await startEchoProcess({ ...env, LOG_REQUESTS: 'false' });
    else await startScript(start.script, env);
  }
});
after(async () => {
  await echo?.stop();
  for (const child of scripts) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
});

interface Order {
  order: string;
  item?: { id: string; stock: number };
  error?: unknown;
  attempts: number;
  tries: Array<number | string>;
}

test('examples – proxy-retries: the README starts the inventory, echo-chaos in front of it and orders, and the main README shows the same commands', () => {
  assert.deepEqual(
    starts.map((line) => parseStart(line).program),
    ['examples/proxy-retries/inventory.ts', 'npm start', 'examples/proxy-retries/server.ts'],
  );
  assert.ok(
    calls.length >= 5 && proofs.length >= 3,
    `the README's blocks: ${calls.length}, ${proofs.length}`,
  );
  // The main README's section runs the example's own commands, word for word, in the same order,
  // so running the example's blocks below runs the section's too.
  assert.deepEqual(readmeSectionBlocks(), [starts, calls]);
});

test('examples – proxy-retries: every command of the README runs and answers as the README says', (t) => {
  if (!needTools(t, ['curl', 'jq'], 'Debian packages curl, jq')) return;
  runCommands([...calls, ...proofs].map(parseCommand), rewrite);
});

test('examples – proxy-retries: injected failures are retried by orders and never reach the inventory; faults off, one attempt', async () => {
  const echoUrl = at('8080');
  const orders = (id: string) =>
    fetch(`${at('3000')}/orders/${id}`).then(async (res) => ({
      status: res.status,
      body: (await res.json()) as Order,
    }));
  const inventoryRequests = async () =>
    ((await (await fetch(`${at('9000')}/stats`)).json()) as { requests: number }).requests;
  const faults = async (enabled: boolean) => {
    const res = await fetch(`${echoUrl}/control/faults`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ enabled }),
    });
    assert.equal(res.status, 200, await res.text());
  };
  /** The one scenario on the inventory's `/items/43`, or none. */
  const scenario = async (responses: unknown[] | null) => {
    const res = await fetch(`${echoUrl}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(responses === null ? [] : [{ path: '/items/43', responses }]),
    });
    assert.equal(res.status, 200, await res.text());
  };
  const history = async () =>
    (await (await fetch(`${echoUrl}/history?path=/items/43&limit=1000`)).json()) as Array<{
      status: number;
      upstream?: { status: number };
    }>;

  await faults(true);
  await scenario(null);

  // No fault: one attempt, one request at the inventory.
  let seen = await inventoryRequests();
  let answer = await orders('43');
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.deepEqual(answer.body, { order: '43', item: { id: '43', stock: 0 }, attempts: 1, tries: [200] });
  assert.equal(await inventoryRequests(), seen + 1);

  // Two failures before the real answer, in turn: three attempts, only the last reaches the inventory.
  const failing = [{ status: 502 }, { error: 'reset' }, {}];
  await scenario(failing);
  const before = (await history()).length;
  seen = await inventoryRequests();
  answer = await orders('43');
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.equal(answer.body.attempts, failing.length, JSON.stringify(answer.body));
  assert.deepEqual(answer.body.tries, [502, 'ECONNRESET', 200]);
  assert.deepEqual(answer.body.item, { id: '43', stock: 0 });
  assert.equal(await inventoryRequests(), seen + 1, 'the injected failures never reached the inventory');
  const attempts = (await history()).slice(before);
  assert.deepEqual(
    attempts.map((entry) => [entry.status, entry.upstream?.status ?? null]),
    [
      [502, null],
      [0, null],
      [200, 200],
    ],
  );

  // Failing every time: orders gives up after its 4 attempts with a 502, the inventory never called.
  await scenario([{ status: 503 }]);
  seen = await inventoryRequests();
  answer = await orders('43');
  assert.equal(answer.status, 502, JSON.stringify(answer.body));
  assert.deepEqual(answer.body.tries, [503, 503, 503, 503]);
  assert.equal(answer.body.attempts, 4);
  assert.equal(await inventoryRequests(), seen);

  // The master switch off: the scenario stays, and the call goes through at once.
  await faults(false);
  seen = await inventoryRequests();
  answer = await orders('43');
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.deepEqual(answer.body, { order: '43', item: { id: '43', stock: 0 }, attempts: 1, tries: [200] });
  assert.equal(await inventoryRequests(), seen + 1);
  await faults(true);
  await scenario(null);
});
