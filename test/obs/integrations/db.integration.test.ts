// obs.db against a real PostgreSQL (test/helpers/postgres.ts) through the real pg package.
import assert from 'node:assert/strict';
import { after, type TestContext, test } from 'node:test';
import pg from 'pg';
import { Registry } from 'prom-client';
import { createObs, instrumentPg, type ObsConfigInput, sqlShape } from '../../../src/obs/index.ts';
import { DB_METRICS, DbTally, MAX_SHAPE_LENGTH } from '../../../src/obs/integrations/db.ts';
import { type Postgres, requirePostgres, startPostgres } from '../../helpers/postgres.ts';
import { capturingLogger, type RunningObsApp, startObsApp } from '../helpers.ts';

let server: Promise<Postgres> | undefined;
after(async () => {
  if (server !== undefined) await (await server).stop();
});

/** The shared throwaway server (started on first use), or undefined when the test was skipped. */
async function postgres(t: TestContext): Promise<Postgres | undefined> {
  if (!requirePostgres(t)) return undefined;
  server ??= startPostgres();
  const running = await server;
  return running;
}

async function client(t: TestContext, db: Postgres): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: db.connectionString });
  await c.connect();
  t.after(() => c.end());
  return c;
}

function pool(t: TestContext, db: Postgres, max = 4): pg.Pool {
  const p = new pg.Pool({ connectionString: db.connectionString, max });
  t.after(() => p.end());
  return p;
}

async function app(
  t: TestContext,
  config: ObsConfigInput,
  routes: (app: RunningObsApp['app']) => void,
): Promise<RunningObsApp> {
  const running = await startObsApp({ config }, routes);
  t.after(() => running.close());
  return running;
}

async function value(registry: Registry, name: string, labels: Record<string, string>, suffix = '') {
  const metric = await registry.getSingleMetric(name)?.get();
  const sample = metric?.values.find(
    (v) =>
      (suffix === '' || (v as { metricName?: string }).metricName === `${name}${suffix}`) &&
      Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l),
  );
  return sample?.value ?? 0;
}

const ids = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

test('db – sqlShape strips literals, numbers and comments, keeps $n and caps the length', () => {
  assert.equal(sqlShape('select *  from items\n where id = $1'), 'select * from items where id = $1');
  assert.equal(
    sqlShape("SELECT name FROM users WHERE email = 'a@b.c' AND age > 42 -- who\n LIMIT 10"),
    'SELECT name FROM users WHERE email = ? AND age > ? LIMIT ?',
  );
  assert.equal(sqlShape("select 'it''s', $$x$$, $t$y$t$, 1.5e3, -7"), 'select ?, ?, ?, ?, ?');
  assert.equal(sqlShape('select * from t where id in (1, 2, 3) /* c */'), 'select * from t where id in (?)');
  assert.equal(sqlShape('select t1.c2 from t1 where x = $12'), 'select t1.c2 from t1 where x = $12');
  const long = sqlShape(`select ${'column_name, '.repeat(1000)} 1`);
  assert.equal(long.length, MAX_SHAPE_LENGTH);
  assert.ok(long.endsWith('…'));
  assert.equal(sqlShape(undefined), '?');
});

test('db – a request tally tracks at most its cap of distinct shapes', () => {
  const tally = new DbTally(3);
  for (const i of ids(10)) tally.count(`select ${i}`);
  tally.count('select 1');
  assert.equal(tally.statements, 11);
  assert.equal(tally.shapes, 3);
  assert.equal(tally.untracked, 7);
  assert.deepEqual(tally.mostRepeated(), { shape: 'select 1', count: 2 });
});

test('db – N+1 through a Client: 60 statements of one shape are counted and warned with the shape', async (t) => {
  const db = await postgres(t);
  if (db === undefined) return;
  const c = await client(t, db);
  const running = await app(t, {}, (a) => {
    instrumentPg(c, a.obs);
    a.get('/items', async () => {
      const names: string[] = [];
      for (const id of ids(60)) {
        const result = await c.query('select $1::int * 2 as id where $1::int = $1', [id]);
        names.push(String(result.rows[0].id));
      }
      return { count: names.length, last: names.at(-1) };
    });
    a.get('/few', async () => {
      for (const id of ids(10)) await c.query(`select ${id} as id where 1 = $1`, [1]);
      return 'ok';
    });
  });
  const response = await fetch(`${running.url}/items`);
  assert.deepEqual(await response.json(), { count: 60, last: '120' }, 'results unchanged');
  assert.equal(await (await fetch(`${running.url}/few`)).text(), 'ok');

  assert.equal(await value(running.registry, DB_METRICS.nPlusOne, { endpoint: '/items' }), 1);
  assert.equal(await value(running.registry, DB_METRICS.nPlusOne, { endpoint: '/few' }), 0);
  const warnings = running.logger.lines.filter((l) => l.level === 'warn');
  assert.equal(warnings.length, 1, JSON.stringify(warnings));
  const [warning] = warnings;
  assert.match(warning?.message ?? '', /\/items ran one statement 60 times .*N\+1/);
  assert.match(warning?.message ?? '', /select \$1::int \* \? as id where \$1::int = \$1$/);
  assert.deepEqual(
    { ...warning?.object },
    {
      obs: 'db',
      endpoint: '/items',
      shape: 'select $1::int * ? as id where $1::int = $1',
      repeats: 60,
      statements: 60,
      threshold: 50,
      suppressed: 0,
    },
  );
  // statements per request, by endpoint
  assert.equal(
    await value(running.registry, DB_METRICS.statementsPerRequest, { endpoint: '/items' }, '_sum'),
    60,
  );
  assert.equal(
    await value(running.registry, DB_METRICS.statementsPerRequest, { endpoint: '/few' }, '_sum'),
    10,
  );
  assert.equal(
    await value(running.registry, DB_METRICS.statementsPerRequest, { endpoint: '/few', le: '10' }, '_bucket'),
    1,
  );
  assert.equal(
    await value(running.registry, DB_METRICS.statementsPerRequest, { endpoint: '/few', le: '5' }, '_bucket'),
    0,
  );
  // a second N+1 request within the minute: counted, warning suppressed
  await (await fetch(`${running.url}/items`)).json();
  assert.equal(await value(running.registry, DB_METRICS.nPlusOne, { endpoint: '/items' }), 2);
  assert.equal(running.logger.lines.filter((l) => l.level === 'warn').length, 1);
  const section = running.app.obs.snapshot().sections['db'] as Record<string, unknown>;
  assert.equal(section['enabled'], true);
  assert.equal(section['n_plus_one'], 2);
  assert.equal(section['requests_observed'], 3);
  assert.equal(section['statements'], 130);
  assert.equal(section['max_statements_per_request'], 60);
  assert.equal(section['warnings_suppressed'], 1);
  assert.deepEqual(section['instrumented'], ['client']);
});

test('db – the threshold boundary: more than n-plus-one-threshold repeats, not as many', async (t) => {
  const db = await postgres(t);
  if (db === undefined) return;
  const c = await client(t, db);
  const running = await app(t, { db: { 'n-plus-one-threshold': 3 } }, (a) => {
    instrumentPg(c, a.obs);
    a.get('/n/:n', async (request) => {
      const n = Number((request.params as { n: string }).n);
      for (const id of ids(n)) await c.query('select id from (select $1::int as id) s where id = $1', [id]);
      // other shapes never add up to one
      await c.query('select 1');
      await c.query('select 2 + $1::int', [1]);
      return n;
    });
  });
  await fetch(`${running.url}/n/3`);
  assert.equal(
    await value(running.registry, DB_METRICS.nPlusOne, { endpoint: '/n/:n' }),
    0,
    '3 is not above 3',
  );
  await fetch(`${running.url}/n/4`);
  assert.equal(await value(running.registry, DB_METRICS.nPlusOne, { endpoint: '/n/:n' }), 1, '4 is');
  const [warning] = running.logger.lines.filter((l) => l.level === 'warn');
  assert.equal(
    (warning?.object as { shape?: string } | undefined)?.shape,
    'select id from (select $1::int as id) s where id = $1',
  );
});

test('db – a Pool: N+1, statements per request, and two concurrent requests kept apart', async (t) => {
  const db = await postgres(t);
  if (db === undefined) return;
  // One connection: each request's pool.query waits for the client the other one releases.
  const p = pool(t, db, 1);
  const running = await app(t, { db: { 'n-plus-one-threshold': 20 } }, (a) => {
    instrumentPg(p, a.obs);
    a.get('/many', async () => {
      await Promise.all(ids(30).map((id) => p.query('select $1::int as id', [id])));
      return 'many';
    });
    a.get('/one', async () => {
      const results = await Promise.all(ids(5).map(() => p.query('select now()')));
      return results.length;
    });
  });
  const [many, one] = await Promise.all([fetch(`${running.url}/many`), fetch(`${running.url}/one`)]);
  assert.equal(await many.text(), 'many');
  assert.equal(await one.text(), '5');
  const sum = (endpoint: string) =>
    value(running.registry, DB_METRICS.statementsPerRequest, { endpoint }, '_sum');
  assert.equal(await sum('/many'), 30);
  assert.equal(await sum('/one'), 5);
  assert.equal(await value(running.registry, DB_METRICS.nPlusOne, { endpoint: '/many' }), 1);
  assert.equal(await value(running.registry, DB_METRICS.nPlusOne, { endpoint: '/one' }), 0);
});

test('db – slow queries: counted by endpoint and logged with the shape only; none outside a request', async (t) => {
  const db = await postgres(t);
  if (db === undefined) return;
  const c = await client(t, db);
  const running = await app(t, { db: { 'slow-query-threshold': '100ms' } }, (a) => {
    instrumentPg(c, a.obs);
    a.get('/slow', async () => {
      await c.query("select pg_sleep(0.2), 'secret-value' as v");
      return 'slow';
    });
  });
  assert.equal(await (await fetch(`${running.url}/slow`)).text(), 'slow');
  assert.equal(await value(running.registry, DB_METRICS.slowQueries, { endpoint: '/slow' }), 1);
  const [warning] = running.logger.lines.filter((l) => l.level === 'warn');
  assert.match(
    warning?.message ?? '',
    /^slow query \(\d+ ms, above the slow-query-threshold of 100 ms\) at \/slow/,
  );
  assert.equal((warning?.object as { shape?: string } | undefined)?.shape, 'select pg_sleep(?), ? as v');
  assert.doesNotMatch(JSON.stringify(running.logger.lines), /secret-value/);

  // outside any request: endpoint none, and no per-request figures
  await c.query('select pg_sleep(0.2)');
  await c.query('select 1');
  assert.equal(await value(running.registry, DB_METRICS.slowQueries, { endpoint: 'none' }), 1);
  const section = running.app.obs.snapshot().sections['db'] as Record<string, number>;
  assert.equal(section['requests_observed'], 1);
  assert.equal(section['statements_outside_requests'], 2);
  assert.equal(section['slow_queries'], 2);
  const perRequest = await running.registry.getSingleMetric(DB_METRICS.statementsPerRequest)?.get();
  assert.deepEqual(
    [...new Set(perRequest?.values.map((v) => v.labels['endpoint']))],
    ['/slow'],
    'no per-request figures outside a request',
  );
});

test('db – callback, promise, config-object and Submittable forms keep their results; errors pass through', async (t) => {
  const db = await postgres(t);
  if (db === undefined) return;
  const c = await client(t, db);
  const registry = new Registry();
  const obs = createObs({ env: {}, registry, logger: capturingLogger() });
  t.after(() => obs.close());
  instrumentPg(c, obs);
  instrumentPg(c, obs); // twice: instrumented once

  const promised = await c.query('select $1::text as a', ['x']);
  assert.deepEqual(promised.rows, [{ a: 'x' }]);
  const called = await new Promise<pg.QueryResult>((resolve, reject) => {
    const returned = c.query('select $1::int + 1 as b', [41], (error, result) =>
      error ? reject(error) : resolve(result),
    );
    assert.equal(returned, undefined, 'the callback form returns nothing');
  });
  assert.deepEqual(called.rows, [{ b: 42 }]);
  const noValues = await new Promise<pg.QueryResult>((resolve, reject) =>
    c.query('select 7 as c', (error: Error | null, result: pg.QueryResult) =>
      error ? reject(error) : resolve(result),
    ),
  );
  assert.deepEqual(noValues.rows, [{ c: 7 }]);
  const config = await c.query({ text: 'select $1::int as d', values: [3], rowMode: 'array' });
  assert.deepEqual(config.rows, [[3]]);
  const configCallback = await new Promise<pg.QueryResult>((resolve, reject) => {
    const query = {
      text: 'select 5 as e',
      callback: (e: Error | null, r: pg.QueryResult) => (e ? reject(e) : resolve(r)),
    };
    c.query(query as unknown as pg.QueryConfig);
  });
  assert.deepEqual(configCallback.rows, [{ e: 5 }]);
  const submittable = new pg.Query('select 9 as f');
  const rows: unknown[] = [];
  submittable.on('row', (row) => rows.push(row));
  const submitted = await new Promise<void>((resolve, reject) => {
    submittable.on('end', () => resolve());
    submittable.on('error', reject);
    assert.equal(c.query(submittable), submittable, 'a Submittable comes back as given');
  });
  assert.equal(submitted, undefined);
  assert.deepEqual(rows, [{ f: 9 }]);

  // errors: the same error, in both forms
  const rejected = await c.query('select * from no_such_table').catch((error: unknown) => error);
  assert.ok(rejected instanceof Error);
  assert.equal((rejected as { code?: string }).code, '42P01');
  const callbackError = await new Promise<unknown>((resolve) =>
    c.query('select 1/0', (error) => resolve(error)),
  );
  assert.equal((callbackError as { code?: string }).code, '22012');
  assert.throws(() => c.query(null as unknown as string), /Client was passed a null or undefined query/);

  const section = obs.snapshot().sections['db'] as Record<string, unknown>;
  assert.equal(section['statements'], 8, 'each statement counted once (null refused by pg, not counted)');
  assert.equal(section['failures'], 0);
});

test('db – the pg module: every Client and Pool of it; a waiting pool.query counts in its own request', async (t) => {
  const db = await postgres(t);
  if (db === undefined) return;
  const { Client, Pool } = pg;
  const originalQuery = Client.prototype.query;
  const originalConnect = Pool.prototype.connect;
  t.after(() => {
    Client.prototype.query = originalQuery;
    Pool.prototype.connect = originalConnect;
  });
  const p = pool(t, db, 1);
  const running = await app(t, { db: { 'n-plus-one-threshold': 5 } }, (a) => {
    instrumentPg(pg, a.obs);
    a.get('/a', async () => {
      for (const id of ids(8)) await p.query('select $1::int as a', [id]);
      return 'a';
    });
    a.get('/b', async () => {
      for (const id of ids(3)) await p.query('select $1::int as b', [id]);
      return 'b';
    });
  });
  assert.notEqual(Client.prototype.query, originalQuery);
  await Promise.all([fetch(`${running.url}/a`), fetch(`${running.url}/b`), fetch(`${running.url}/b`)]);
  const sum = (endpoint: string) =>
    value(running.registry, DB_METRICS.statementsPerRequest, { endpoint }, '_sum');
  assert.equal(await sum('/a'), 8);
  assert.equal(await sum('/b'), 6);
  assert.equal(await value(running.registry, DB_METRICS.nPlusOne, { endpoint: '/a' }), 1);
  assert.equal(await value(running.registry, DB_METRICS.nPlusOne, { endpoint: '/b' }), 0);
});

test('db – enabled-when skips a request; obs.db.enabled false leaves pg untouched', async (t) => {
  const db = await postgres(t);
  if (db === undefined) return;
  const c = await client(t, db);
  const running = await app(
    t,
    { db: { 'n-plus-one-threshold': 1, 'enabled-when': { 'header-not-equals': { 'x-synthetic': 'true' } } } },
    (a) => {
      instrumentPg(c, a.obs);
      a.get('/q', async () => {
        for (const id of ids(3)) await c.query('select $1::int', [id]);
        return 'q';
      });
    },
  );
  await fetch(`${running.url}/q`, { headers: { 'x-synthetic': 'true' } });
  assert.equal(await value(running.registry, DB_METRICS.statementsPerRequest, {}, '_count'), 0);
  const section = running.app.obs.snapshot().sections['db'] as Record<string, number>;
  assert.equal(section['requests_skipped'], 1);
  assert.equal(section['statements'], 0);
  await fetch(`${running.url}/q`);
  assert.equal(await value(running.registry, DB_METRICS.nPlusOne, { endpoint: '/q' }), 1);

  const other = await client(t, db);
  const query = other.query;
  const off = createObs({ env: {}, registry: new Registry(), config: { db: { enabled: false } } });
  t.after(() => off.close());
  assert.equal(instrumentPg(other, off), other);
  assert.equal(other.query, query, 'untouched');
  assert.equal(off.registry.getSingleMetric(DB_METRICS.nPlusOne), undefined);
});

test('db – memory stays bounded: distinct shapes per request are capped', async (t) => {
  const db = await postgres(t);
  if (db === undefined) return;
  const c = await client(t, db);
  const running = await app(t, { db: { 'n-plus-one-threshold': 2 } }, (a) => {
    instrumentPg(c, a.obs);
    a.get('/shapes', async () => {
      // 150 distinct shapes (the column alias differs), then one repeated 3 times past the cap
      for (const i of ids(150)) await c.query(`select 1 as c${i}`);
      for (const _ of ids(3)) await c.query('select 2 as late');
      return 'ok';
    });
  });
  await fetch(`${running.url}/shapes`);
  assert.equal(
    await value(running.registry, DB_METRICS.statementsPerRequest, { endpoint: '/shapes' }, '_sum'),
    153,
    'every statement counts',
  );
  assert.equal(
    await value(running.registry, DB_METRICS.nPlusOne, { endpoint: '/shapes' }),
    0,
    'a shape past the cap is not tracked',
  );
});
