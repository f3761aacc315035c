/**
 * The README's five-minute tour, run command by command against a real echo-chaos.
 *
 * Each tour step in README.md is an HTML comment `<!-- tour -->`, then a ```sh block (the command,
 * as a reader copies it) and a ```text block (what it prints). The steps run in order, against one
 * server started for the test, through bash with curl and jq, `localhost:8080` rewritten to the
 * server's port. The printed output must equal the shown one once both are normalized; only what
 * differs from run to run is normalized: generated request ids, timestamps, the `Date` header, the
 * port, curl's version and the `Content-Length` of a summary that holds them.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { readerTexts } from '../scripts/docs-site.ts';
import { type RunningEcho, startEcho } from './helpers/echo-server.ts';
import { missingTools, needTools } from './helpers/tools.ts';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const MARKER = '<!-- tour -->';
/** Bound of one step (a tour step takes about a second; the machine may be loaded). */
const STEP_TIMEOUT_MS = 30_000;

export interface TourStep {
  /** 1-based line of the `<!-- tour -->` marker in README.md. */
  readonly line: number;
  readonly command: string;
  readonly expected: string;
}

/** The fenced block that starts at the first non-blank line from `from`, or an error naming the line. */
function fencedBlock(lines: readonly string[], from: number, lang: string): { body: string; end: number } {
  let i = from;
  while (i < lines.length && lines[i]!.trim() === '') i++;
  if (lines[i] !== `\`\`\`${lang}`) {
    throw new Error(
      `README.md line ${i + 1}: expected a \`\`\`${lang} block, found ${JSON.stringify(lines[i])}`,
    );
  }
  const start = i + 1;
  let end = start;
  while (end < lines.length && lines[end] !== '```') end++;
  if (end === lines.length) throw new Error(`README.md line ${i + 1}: the \`\`\`${lang} block never ends`);
  return { body: lines.slice(start, end).join('\n'), end: end + 1 };
}

/** Every tour step of `readme`, in order. */
export function tourSteps(readme: string): TourStep[] {
  const lines = readme.split('\n');
  const steps: TourStep[] = [];
  lines.forEach((line, index) => {
    if (line.trim() !== MARKER) return;
    const command = fencedBlock(lines, index + 1, 'sh');
    const output = fencedBlock(lines, command.end, 'text');
    steps.push({ line: index + 1, command: command.body, expected: output.body });
  });
  return steps;
}

/** What may differ between the README and a run, replaced by placeholders; line ends and trailing blanks too. */
export function normalizeOutput(text: string): string {
  return (
    text
      .replaceAll('\r\n', '\n')
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, '<timestamp>')
      .replace(/^date: .*$/gim, 'Date: <date>')
      .replace(/\bcurl\/\d+(?:\.\d+)*/g, 'curl/<version>')
      // The length of a GET summary counts the Host (the port) and the User-Agent (curl's version).
      .replace(/^content-length: \d+$/gim, 'content-length: <length>')
      .split('\n')
      .map((line) => line.trimEnd())
      .join('\n')
      .trim()
  );
}

/** Runs one step's command against `port` (asynchronously: the server shares this process). */
function runStep(command: string, port: number): Promise<string> {
  const script = command.replaceAll('localhost:8080', `localhost:${port}`);
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-o', 'pipefail', '-c', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: STEP_TIMEOUT_MS,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (code !== 0) reject(new Error(`exit ${code ?? signal}: ${stderr}\n${stdout}`));
      else resolve(stdout.replaceAll(`localhost:${port}`, 'localhost:8080'));
    });
  });
}

const steps = tourSteps(README);

test('README tour – the steps are found, each a command with its shown output, covering the tour', () => {
  const commands = steps.map((s) => s.command).join('\n');
  for (const needle of [
    'X-Echo-Delay',
    'X-Echo-Seed',
    'localhost:8080/scenario',
    'localhost:8080/history',
    'localhost:8080/replay',
    'localhost:8080/metrics',
    'web-ws',
    'web-sse',
    'actuator/obsui',
  ]) {
    assert.ok(commands.includes(needle), `no tour step uses ${needle}`);
  }
  for (const step of steps)
    assert.notEqual(step.expected.trim(), '', `README line ${step.line}: no shown output`);
});

test('README tour – a marker without its blocks is refused, naming the line', () => {
  assert.throws(() => tourSteps(`# x\n${MARKER}\nsome prose\n`), /line 3: expected a ```sh block/);
  assert.throws(
    () => tourSteps(`${MARKER}\n\`\`\`sh\ncurl localhost:8080/x\n\`\`\`\nprose\n`),
    /line 5: expected a ```text block/,
  );
});

test('README tour – normalizing keeps what a reader should see: statuses, counts, bodies', () => {
  const shown =
    'x-request-id: 4f41bfaf-4cc4-4fa9-b03c-c12410b3ae07\nDate: Tue, 24 Nov 2026 15:16:08 GMT\n200 503';
  const run =
    'x-request-id: 00000000-1111-2222-3333-444444444444\r\ndate: Wed, 25 Nov 2026 01:02:03 GMT\r\n200 503 \n';
  assert.equal(normalizeOutput(run), normalizeOutput(shown));
  assert.notEqual(normalizeOutput(run.replace('503', '504')), normalizeOutput(shown));
  assert.notEqual(
    normalizeOutput('echo_faults_injected_total{kind="delay"} 2'),
    'echo_faults_injected_total{kind="delay"} 1',
  );
});

test('README and docs – every test file an HTML comment names as evidence exists', () => {
  // The README's comments (the tour, Run it) and the pages' (Compared with, the reference).
  const texts = readerTexts();
  const named = texts.flatMap(({ file, text }) =>
    [...text.matchAll(/<!--([\s\S]*?)-->/g)].flatMap(([, body]) =>
      (body!.match(/test\/[\w/.-]+\.test\.ts/g) ?? []).map((test) => ({ file, test })),
    ),
  );
  assert.ok(named.length >= 10, `only ${named.length} test files named in comments`);
  assert.ok(
    named.some(({ file }) => file === 'README.md'),
    'the README names no test file in a comment',
  );
  const missing = named.filter(({ test }) => !existsSync(new URL(`../${test}`, import.meta.url)));
  assert.deepEqual(
    [...new Set(missing.map(({ file, test }) => `${file}: ${test}`))],
    [],
    'the README or a docs page names test files that do not exist',
  );
});

describe('README tour – every command, in order, prints what the README shows', {
  concurrency: false,
}, () => {
  let echo: RunningEcho | undefined;
  const printed = new Map<number, string>();

  before(async () => {
    if (missingTools(['curl', 'jq']).length === 0) echo = await startEcho();
  });
  after(async () => {
    await echo?.close();
  });

  for (const step of steps) {
    const title = step.command.split('\n', 1)[0]!;
    test(`README line ${step.line}: ${title.length > 90 ? `${title.slice(0, 90)}…` : title}`, async (t) => {
      if (!needTools(t, ['curl', 'jq'], 'Debian packages curl, jq') || echo === undefined) return;
      const output = await runStep(step.command, echo.port);
      printed.set(step.line, output);
      assert.equal(
        normalizeOutput(output),
        normalizeOutput(step.expected),
        `README.md line ${step.line}: the shown output has drifted from what the command prints`,
      );
    });
  }

  test('a drifted shown output fails: one digit changed in any step is noticed', (t) => {
    if (!needTools(t, ['curl', 'jq'], 'Debian packages curl, jq')) return;
    let checked = 0;
    for (const step of steps) {
      const output = printed.get(step.line);
      // Placeholders hold no digit, so a digit left after normalizing is one a reader relies on.
      const shown = normalizeOutput(step.expected);
      if (output === undefined || !/[0-9]/.test(shown)) continue;
      const drifted = shown.replace(/[0-9]/, (d) => String((Number(d) + 1) % 10));
      assert.notEqual(normalizeOutput(output), normalizeOutput(drifted), `README line ${step.line}`);
      checked++;
    }
    assert.ok(checked >= 3, `only ${checked} steps had a digit to change`);
  });
});
