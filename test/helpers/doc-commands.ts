/**
 * Runs a docs page's shell commands as a reader would: its `sh` blocks, command by command (a
 * trailing `\` joins lines), with bash. A command's `# → text` comment is its whole output, and
 * `# (exit N...)` its exit code; a command without either must succeed.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

export interface DocCommand {
  readonly text: string;
  readonly output?: string;
  readonly exit?: number;
}

/** The `sh` blocks of a page, each a list of commands (continuation lines joined). */
export function shellBlocks(markdown: string): string[][] {
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

/** A command and what its comment says it gives. */
export function parseCommand(line: string): DocCommand {
  const hash = line.lastIndexOf('   # ');
  if (hash === -1) return { text: line };
  const text = line.slice(0, hash);
  const comment = line.slice(hash + 5).trim();
  const exit = /^\(exit (\d+)/.exec(comment);
  if (exit !== null) return { text, exit: Number(exit[1]) };
  if (comment.startsWith('→ ')) return { text, output: comment.slice(2) };
  return { text };
}

/** `VAR=value ... npm start` as the environment it starts the service with. */
export function startEnv(line: string): Record<string, string> {
  assert.match(line, /^(?:[A-Z_]+=\S+ )+npm start$/, `a start command: ${line}`);
  const env: Record<string, string> = {};
  for (const assignment of line.replace(/ npm start$/, '').split(' ')) {
    const at = assignment.indexOf('=');
    env[assignment.slice(0, at)] = assignment.slice(at + 1);
  }
  return env;
}

/** Runs each command with bash after `rewrite` (ports, hosts), checking what its comment says. */
export function runCommands(commands: readonly DocCommand[], rewrite: (text: string) => string): void {
  for (const command of commands) {
    const run = spawnSync('bash', ['-c', rewrite(command.text)], { encoding: 'utf8', timeout: 30_000 });
    const where = `${command.text}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`;
    assert.equal(run.status, command.exit ?? 0, where);
    if (command.output !== undefined) assert.equal(run.stdout.trim(), command.output, where);
  }
}
