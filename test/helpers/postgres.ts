/**
 * A real, throwaway PostgreSQL server for tests, from Debian's `postgresql` package (`.ci/run`
 * installs it). {@link startPostgres} runs `initdb` into a fresh temporary directory (trust
 * authentication, superuser `postgres`, no fsync) and starts `postgres` listening on 127.0.0.1 only,
 * on a free port, with its unix socket in the same directory.
 *
 * PostgreSQL refuses to run as root. When the tests run as root (CI containers), initdb and the
 * server run as `nobody` through `setpriv` (util-linux), and the temporary directory is handed to
 * that user. The server runs under a small `sh` that holds its stdin: when the test process dies,
 * stdin ends and the shell asks the server for a fast shutdown, so a crashed test leaves no server
 * behind. `stop()` asks for that shutdown, then kills the whole process group, waits, and removes
 * the directory.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { freePort } from './runtime.ts';

/** What a test says when PostgreSQL's server binaries are missing. */
export const POSTGRES_MISSING =
  'PostgreSQL server binaries (initdb, postgres) not found: install the Debian package postgresql (apt-get install -y postgresql)';

let binDir: string | null | undefined;

/** The directory of `initdb` and `postgres`: `pg_config --bindir`, else `/usr/lib/postgresql/<newest>/bin`. */
export function postgresBinDir(): string | undefined {
  if (binDir !== undefined) return binDir ?? undefined;
  const candidates: string[] = [];
  const probed = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8', timeout: 10_000 });
  if (probed.status === 0) candidates.push(probed.stdout.trim());
  try {
    const versions = readdirSync('/usr/lib/postgresql')
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of versions) candidates.push(join('/usr/lib/postgresql', v, 'bin'));
  } catch {
    // no Debian layout
  }
  binDir =
    candidates.find((dir) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'))) ?? null;
  return binDir ?? undefined;
}

/**
 * True when the test can start PostgreSQL. When it is missing the test fails under CI (`CI` set)
 * and is skipped elsewhere, saying how to install it.
 */
export function requirePostgres(t: TestContext): boolean {
  if (postgresBinDir() !== undefined) return true;
  if (process.env['CI']) assert.fail(`${POSTGRES_MISSING}: required in CI`);
  t.skip(POSTGRES_MISSING);
  return false;
}

export interface Postgres {
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly user: 'postgres';
  readonly database: 'postgres';
  /** The directory of the server's unix socket. */
  readonly socketDir: string;
  /** `postgresql://postgres@127.0.0.1:PORT/postgres` */
  readonly connectionString: string;
  /** The data and socket directory (removed by `stop()`). */
  readonly dir: string;
  /** The process id of the server's supervisor shell (its process group holds the server). */
  readonly pid: number;
  /** The last part of the server's output, for failure messages. */
  output(): string;
  /** Shuts the server down (fast, then kill), waits for it and removes the directory; always resolves. */
  stop(): Promise<void>;
}

export interface PostgresOptions {
  /** How long initdb and the start may take together (default 60 s). */
  startTimeoutMs?: number;
}

const READY_LINE = /database system is ready to accept connections/;
const OUTPUT_KEPT = 32 * 1024;

/** The user the server runs as: root cannot run PostgreSQL, so root hands it to `nobody`. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = spawnSync('id', ['-u', 'nobody'], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', 'nobody'], { encoding: 'utf8' });
  return { uid: Number(uid.stdout.trim() || 65534), gid: Number(gid.stdout.trim() || 65534) };
}

function asUser(user: { uid: number; gid: number } | undefined, command: string[]): string[] {
  if (user === undefined) return command;
  return ['setpriv', `--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--', ...command];
}

/** Starts a throwaway PostgreSQL server. Rejects with its output when it is not ready in time. */
export async function startPostgres(options: PostgresOptions = {}): Promise<Postgres> {
  const bin = postgresBinDir();
  if (bin === undefined) throw new Error(POSTGRES_MISSING);
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const deadline = Date.now() + startTimeoutMs;
  const user = runAs();
  const dir = mkdtempSync(join(tmpdir(), 'obs-pg-'));
  const data = join(dir, 'data');
  if (user !== undefined) chownSync(dir, user.uid, user.gid);
  const remove = (): void => rmSync(dir, { recursive: true, force: true });

  const [initCommand, ...initArgs] = asUser(user, [
    join(bin, 'initdb'),
    '-D',
    data,
    '-A',
    'trust',
    '-U',
    'postgres',
    '-E',
    'UTF8',
    '--locale=C',
    '--no-sync',
  ]);
  const init = spawnSync(initCommand!, initArgs, {
    encoding: 'utf8',
    timeout: Math.max(1, deadline - Date.now()),
    cwd: dir,
  });
  if (init.status !== 0) {
    remove();
    throw new Error(
      `initdb failed (status ${init.status}, ${init.error ?? ''}):\n${init.stdout}${init.stderr}`,
    );
  }

  const port = await freePort();
  const server = [
    join(bin, 'postgres'),
    '-D',
    data,
    '-h',
    '127.0.0.1',
    '-p',
    String(port),
    '-k',
    dir,
    '-c',
    'fsync=off',
    '-c',
    'synchronous_commit=off',
    '-c',
    'full_page_writes=off',
    '-c',
    'max_connections=40',
    '-c',
    'shared_buffers=16MB',
  ];
  const quoted = server.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  // The shell ends the server (fast shutdown) when its stdin ends: stop(), or the test process died.
  const script = `${quoted} & p=$!; trap 'kill -INT $p' TERM; read _ || true; kill -INT $p 2>/dev/null; wait $p`;
  const [command, ...args] = asUser(user, ['sh', '-c', script]);
  const child = spawn(command!, args, { stdio: ['pipe', 'pipe', 'pipe'], detached: true, cwd: dir });
  child.stdin.on('error', () => {});
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= stopChild(child, exited).finally(remove);
    return stopped;
  };

  return new Promise<Postgres>((resolve, reject) => {
    let settled = false;
    const fail = (why: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void stop().then(() => reject(new Error(`${why}; postgres said:\n${output.slice(-8192)}`)));
    };
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      if (output.length > 2 * OUTPUT_KEPT) output = output.slice(-OUTPUT_KEPT);
      if (settled || !READY_LINE.test(output)) return;
      settled = true;
      clearTimeout(timer);
      resolve({
        host: '127.0.0.1',
        port,
        user: 'postgres',
        database: 'postgres',
        socketDir: dir,
        connectionString: `postgresql://postgres@127.0.0.1:${port}/postgres`,
        dir,
        pid: child.pid!,
        output: () => output.slice(-OUTPUT_KEPT),
        stop,
      });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (err) => fail(`postgres could not be started (${err.message})`));
    child.once('exit', (code, signal) =>
      fail(`postgres exited (code ${code}, signal ${signal}) before it was ready`),
    );
    const timer = setTimeout(
      () => fail(`postgres was not ready within ${startTimeoutMs} ms`),
      Math.max(0, deadline - Date.now()),
    );
  });
}

/** Ends the process group: stdin closed (fast shutdown), then SIGTERM, then SIGKILL to the whole group. */
async function stopChild(child: ChildProcess, exited: Promise<void>, boundMs = 10_000): Promise<void> {
  const pid = child.pid;
  const waitFor = (ms: number): Promise<boolean> =>
    Promise.race([
      exited.then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref()),
    ]);
  const group = (signal: NodeJS.Signals): void => {
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // the group is gone
    }
  };
  if (child.exitCode === null && child.signalCode === null) {
    child.stdin?.end();
    if (!(await waitFor(boundMs))) {
      child.kill('SIGTERM');
      if (!(await waitFor(boundMs))) {
        group('SIGKILL');
        await waitFor(boundMs);
      }
    }
  }
  // The server's own children (checkpointer, walwriter …) share the group: none may outlive it.
  group('SIGKILL');
}
