/**
 * docs/service/testing-your-service.md runs as written: its first `sh` block starts the service
 * (the variables before `npm start` are its environment, started as `npm start` starts it), and
 * every command of the other blocks runs in order with bash against it, `localhost:8080` pointed at
 * the started server. A command's `# → text` comment is its whole output; `# (exit N...)` its exit
 * code; a command without either must succeed.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type EchoProcess, startEchoProcess } from '../helpers/liveness.ts';
import { needCurl } from '../helpers/protocol-clients.ts';

const PAGE = join(import.meta.dirname, '..', '..', 'docs', 'service', 'testing-your-service.md');

interface Command {
  readonly text: string;
  readonly output?: string;
  readonly exit?: number;
}

/** The `sh` blocks of the page, each a list of commands (continuation lines joined). */
function blocks(markdown: string): string[][] {
  const found: string[][] = [];
  for (const match of markdown.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const commands: string[] = [];
    let pending = '';
    for (const line of (match[1] ?? '').split('\n')) {
      if (line.trim() === '') continue;
      if (line.endsWith('\\')) pending += `${line.slice(0, -1)} `;
      else {
        commands.push(pending + line);
        pending = '';
      }
    }
    found.push(commands);
  }
  return found;
}

function parse(line: string): Command {
  const hash = line.lastIndexOf('   # ');
  if (hash === -1) return { text: line };
  const text = line.slice(0, hash);
  const comment = line.slice(hash + 5).trim();
  const exit = /^\(exit (\d+)/.exec(comment);
  if (exit !== null) return { text, exit: Number(exit[1]) };
  if (comment.startsWith('→ ')) return { text, output: comment.slice(2) };
  return { text };
}

const page = readFileSync(PAGE, 'utf8');
const [start, ...rest] = blocks(page);

let echo: EchoProcess;
before(async () => {
  const line = start?.[0] ?? '';
  assert.match(line, /^(?:[A-Z_]+=\S+ )+npm start$/, 'the first block starts the service');
  const env: Record<string, string> = {};
  for (const assignment of line.replace(/ npm start$/, '').split(' ')) {
    const [name, value] = assignment.split('=') as [string, string];
    env[name] = value;
  }
  echo = await startEchoProcess(env);
});
after(() => echo?.stop());

test('testing-your-service.md – every command runs and answers as the page says', async (t) => {
  if (!needCurl(t)) return;
  const commands = rest.flat().map(parse);
  assert.ok(commands.length >= 10, `the page has its commands (${commands.length})`);
  for (const command of commands) {
    const text = command.text.replaceAll('localhost:8080', `127.0.0.1:${echo.port}`);
    const run = spawnSync('bash', ['-c', text], { encoding: 'utf8', timeout: 30_000 });
    const where = `${command.text}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`;
    assert.equal(run.status, command.exit ?? 0, where);
    if (command.output !== undefined) assert.equal(run.stdout.trim(), command.output, where);
  }
});
