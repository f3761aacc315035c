// The PostgreSQL test harness (test/helpers/postgres.ts): a throwaway server per call. It lives
// here, not beside the helper, because `test/**/*.test.ts` would run test/helpers/*.test.ts too.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import pg from 'pg';
import { requirePostgres, startPostgres } from './helpers/postgres.ts';

/** Processes whose command line names the server's directory (the server and its children). */
function processesOf(dir: string): string[] {
  const ps = spawnSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return ps.stdout.split('\n').filter((line) => line.includes(dir));
}

test('postgres – a throwaway server answers on 127.0.0.1, and stop() leaves no process and no directory', async (t) => {
  if (!requirePostgres(t)) return;
  const server = await startPostgres();
  try {
    assert.match(server.connectionString, /^postgresql:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
    assert.ok(processesOf(server.dir).length > 0, 'the server runs');
    const client = new pg.Client({ connectionString: server.connectionString });
    await client.connect();
    const { rows } = await client.query("select current_setting('listen_addresses') as listen, 1 + 1 as two");
    assert.deepEqual(rows, [{ listen: '127.0.0.1', two: 2 }]);
    await client.end();
    // the unix socket in the temporary directory works too
    const viaSocket = new pg.Client({ host: server.socketDir, port: server.port, user: 'postgres' });
    await viaSocket.connect();
    assert.equal((await viaSocket.query('select 3 as three')).rows[0].three, 3);
    await viaSocket.end();
  } finally {
    await server.stop();
  }
  assert.deepEqual(processesOf(server.dir), [], 'no process left behind');
  assert.equal(existsSync(server.dir), false, 'the directory is removed');
  await server.stop(); // idempotent
});

test('postgres – not ready in time: rejected with what the server said, nothing left behind', async (t) => {
  if (!requirePostgres(t)) return;
  await assert.rejects(
    startPostgres({ startTimeoutMs: 1 }),
    /initdb failed|postgres was not ready within 1 ms/,
  );
});
