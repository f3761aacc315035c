/**
 * docs/service/proxy.md runs as written: its first `sh` block starts the two processes (the real
 * service on 9000, echo-chaos in front of it on 8080, each started as `npm start` starts it, on free
 * ports), and every command of the next block runs in order against them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import {
  type DocCommand,
  parseCommand,
  runCommands,
  shellBlocks,
  startEnv,
} from '../helpers/doc-commands.ts';
import { type EchoProcess, startEchoProcess } from '../helpers/liveness.ts';
import { needCurl } from '../helpers/protocol-clients.ts';
import { freePort } from '../helpers/runtime.ts';

const PAGE = join(import.meta.dirname, '..', '..', 'docs', 'service', 'proxy.md');
const [starts = [], commands = []] = shellBlocks(readFileSync(PAGE, 'utf8'));

const ports = new Map<string, number>();
const rewrite = (text: string) =>
  text.replace(/(localhost|127\.0\.0\.1):(\d+)/g, (whole, _host: string, port: string) => {
    const mapped = ports.get(port);
    return mapped === undefined ? whole : `127.0.0.1:${mapped}`;
  });

const running: EchoProcess[] = [];
before(async () => {
  for (const line of starts) {
    const env = startEnv(line);
    const port = env['PORT'] ?? '8080';
    ports.set(port, await freePort());
  }
  for (const line of starts) {
    const env = startEnv(line);
    const port = ports.get(env['PORT'] ?? '8080')!;
    const rewritten: Record<string, string> = {};
    for (const [name, value] of Object.entries(env)) rewritten[name] = rewrite(value);
    running.push(await startEchoProcess({ ...rewritten, PORT: String(port), LOG_REQUESTS: 'false' }));
  }
});
after(async () => {
  for (const process of running) await process.stop();
});

test('proxy.md – the two-process example runs and answers as the page says', (t) => {
  if (!needCurl(t)) return;
  const parsed: DocCommand[] = commands.map(parseCommand);
  runCommands(parsed, rewrite);
});
