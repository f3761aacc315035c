/**
 * docs/service/testing-your-service.md runs as written: its first `sh` block starts the service
 * (the variables before `npm start` are its environment, started as `npm start` starts it), and
 * every command of the other blocks runs in order with bash against it, `localhost:8080` pointed at
 * the started server. A command's `# → text` comment is its whole output; `# (exit N...)` its exit
 * code; a command without either must succeed.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parseCommand, runCommands, shellBlocks, startEnv } from '../helpers/doc-commands.ts';
import { type EchoProcess, startEchoProcess } from '../helpers/liveness.ts';
import { needCurl } from '../helpers/protocol-clients.ts';

const PAGE = join(import.meta.dirname, '..', '..', 'docs', 'service', 'testing-your-service.md');

// The walkthrough, steps 1 to 4; "Faults without headers" after it is reference, whose `npm start`
// is the reader's own (it was the README's until the reference moved to the pages, ADR 0039).
const page = (() => {
  const text = readFileSync(PAGE, 'utf8');
  const end = text.indexOf('\n## Faults without headers\n');
  if (end === -1) throw new Error(`${PAGE} has no "## Faults without headers" after its walkthrough`);
  return text.slice(0, end);
})();
const [start, ...rest] = shellBlocks(page);

let echo: EchoProcess;
before(async () => {
  const env = startEnv(start?.[0] ?? '');
  echo = await startEchoProcess(env);
});
after(() => echo?.stop());

test('testing-your-service.md – every command runs and answers as the page says', async (t) => {
  if (!needCurl(t)) return;
  const commands = rest.flat().map(parseCommand);
  assert.ok(commands.length >= 10, `the page has its commands (${commands.length})`);
  runCommands(commands, (text) => text.replaceAll('localhost:8080', `127.0.0.1:${echo.port}`));
});
