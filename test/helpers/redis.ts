/**
 * A real, throwaway Redis server for tests, from Debian's `redis-server` package (`.ci/run` installs
 * it): no persistence (`--save ''`, `--appendonly no`), 127.0.0.1 only, on a free port (or the port
 * given, so a test can stop it and start it again where its clients look). `stop()` kills it and
 * waits for it to exit. A test process that dies takes it along: it runs with `--daemonize no` as a
 * child whose stdin is the test's.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import type { TestContext } from 'node:test';
import { freePort, until } from './runtime.ts';

/** What a test says when the server is missing. */
export const REDIS_MISSING =
  'redis-server not found: install the Debian package redis-server (apt-get install -y redis-server)';

/** Whether `redis-server` runs here. */
export function hasRedis(): boolean {
  return spawnSync('redis-server', ['--version'], { encoding: 'utf8', timeout: 10_000 }).status === 0;
}

/** True when the test can start Redis; missing, the test fails under CI and is skipped elsewhere. */
export function requireRedis(t: TestContext): boolean {
  if (hasRedis()) return true;
  if (process.env['CI']) assert.fail(`${REDIS_MISSING}: required in CI`);
  t.skip(REDIS_MISSING);
  return false;
}

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  stop(): Promise<void>;
}

/** Answers `PING` with `+PONG`: the server takes commands. */
async function pings(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(String(data).startsWith('+PONG')));
  });
}

/** Starts `redis-server` and waits (10 s at most) until it answers. */
export async function startRedis(port?: number): Promise<RedisServer> {
  const chosen = port ?? (await freePort());
  const child: ChildProcess = spawn(
    'redis-server',
    [
      '--port',
      String(chosen),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'no',
    ],
    { stdio: ['pipe', 'ignore', 'ignore'] },
  );
  const exited = once(child, 'exit');
  try {
    await until(
      `redis-server on port ${chosen} answers PING`,
      async () => {
        if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
        return pings(chosen);
      },
      10_000,
      50,
    );
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`redis-server on port ${chosen} did not start: ${(error as Error).message}`);
  }
  return {
    port: chosen,
    url: `redis://127.0.0.1:${chosen}`,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** A section of `INFO` (`stats`, `commandstats`, …) as Redis prints it, read over a raw socket. */
export async function redisInfo(port: number, section: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let length: number | undefined;
    socket.setEncoding('utf8');
    socket.setTimeout(10_000, () => {
      socket.destroy();
      reject(new Error(`INFO ${section}: no answer within 10 s`));
    });
    socket.once('connect', () => socket.write(`INFO ${section}\r\n`));
    socket.on('data', (chunk: string) => {
      text += chunk;
      // A bulk string: `$<length>\r\n<text>\r\n`.
      const head = text.indexOf('\r\n');
      if (length === undefined && head !== -1) length = Number(text.slice(1, head));
      if (length !== undefined && Buffer.byteLength(text) >= head + 2 + length) {
        socket.destroy();
        resolve(text.slice(head + 2, head + 2 + length));
      }
    });
    socket.once('error', reject);
  });
}

/** Commands Redis has processed so far (`total_commands_processed`, scripts' own included). */
export async function commandsProcessed(port: number): Promise<number> {
  return Number(/total_commands_processed:(\d+)/.exec(await redisInfo(port, 'stats'))?.[1]);
}

/** How many times Redis has run `command` (`INFO commandstats`): 0 before the first. */
export async function commandCalls(port: number, command: string): Promise<number> {
  const match = new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(await redisInfo(port, 'commandstats'));
  return match === null ? 0 : Number(match[1]);
}
