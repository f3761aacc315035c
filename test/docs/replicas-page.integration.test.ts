/**
 * docs/service/replicas.md ("More than one replica") runs as written: a real
 * `redis-server` stands at the page's 127.0.0.1:6379 (on a free port), its first `sh` block starts
 * the two replicas (each as `npm start` starts it, on free ports), and every command of the next
 * block runs in order against them.
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
import { hasRedis, REDIS_MISSING, type RedisServer, startRedis } from '../helpers/redis.ts';
import { freePort, until } from '../helpers/runtime.ts';

const PAGE = join(import.meta.dirname, '..', '..', 'docs', 'service', 'replicas.md');
const section = (() => {
  const text = readFileSync(PAGE, 'utf8');
  if (!text.startsWith('# More than one replica\n')) throw new Error(`${PAGE} is not the replicas page`);
  return text;
})();
const [starts = [], commands = []] = shellBlocks(section);

const ports = new Map<string, number>();
const rewrite = (text: string) =>
  text.replace(/(localhost|127\.0\.0\.1):(\d+)/g, (whole, _host: string, port: string) => {
    const mapped = ports.get(port);
    return mapped === undefined ? whole : `127.0.0.1:${mapped}`;
  });

const skip = hasRedis() || process.env['CI'] ? false : REDIS_MISSING;
let redis: RedisServer | undefined;
const running: EchoProcess[] = [];
before(async () => {
  if (skip !== false) return;
  redis = await startRedis();
  ports.set('6379', redis.port);
  for (const line of starts) ports.set(startEnv(line)['PORT'] ?? '8080', await freePort());
  for (const line of starts) {
    const env = startEnv(line);
    const rewritten: Record<string, string> = {};
    for (const [name, value] of Object.entries(env)) rewritten[name] = rewrite(value);
    const port = ports.get(env['PORT'] ?? '8080')!;
    running.push(await startEchoProcess({ ...rewritten, PORT: String(port) }));
  }
  // Connected to the store before the page's first command, as a reader's replicas are by then.
  for (const replica of running) {
    await until(
      `${replica.url} connected to the store`,
      async () =>
        ((await (await fetch(`${replica.url}/health`)).json()) as { store?: { status: string } }).store
          ?.status === 'up',
      10_000,
      50,
    );
  }
});
after(async () => {
  for (const process of running) await process.stop();
  await redis?.stop();
});

test('docs "More than one replica" – two replicas on one Redis answer as the page says', { skip }, (t) => {
  if (!needCurl(t)) return;
  const parsed: DocCommand[] = commands.map(parseCommand);
  runCommands(parsed, rewrite);
});
