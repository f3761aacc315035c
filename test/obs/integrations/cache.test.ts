import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LRUCache } from 'lru-cache';
import { Registry } from 'prom-client';
import { createObs, instrumentCache, isObsError, type Obs } from '../../../src/obs/index.ts';
import { CACHE_METRICS, MAX_CACHES, registerCache } from '../../../src/obs/integrations/cache.ts';
import { capturingLogger, startObsApp } from '../helpers.ts';

/**
 * Cache observability with the real lru-cache (v11): hits, misses, evictions by reason, size and
 * limit read at scrape time; the cache's own behaviour unchanged.
 */

function cacheObs(enabled = true): {
  obs: Obs;
  registry: Registry;
  logger: ReturnType<typeof capturingLogger>;
} {
  const registry = new Registry();
  const logger = capturingLogger();
  const obs = createObs({ env: {}, registry, logger, config: { cache: { enabled } } });
  return { obs, registry, logger };
}

/** The value of a series of a metric, 0 when absent. */
async function value(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (metric === undefined) return 0;
  const { values } = await metric.get();
  const found = values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return found?.value ?? 0;
}

test('cache – get counts hits and misses; values, this and recency are unchanged', async (t) => {
  const { obs, registry } = cacheObs();
  t.after(() => obs.close());
  const cache = new LRUCache<string, { n: number }>({ max: 3 });
  const same = instrumentCache(cache, obs, { name: 'users' });
  assert.equal(same, cache);
  const a = { n: 1 };
  cache.set('a', a);
  assert.equal(cache.get('a'), a);
  assert.equal(cache.get('a'), a);
  assert.equal(cache.get('nope'), undefined);
  assert.equal(cache.has('a'), true);
  assert.equal(cache.peek('a'), a);
  // a method taken off the instance still works on it (this is passed through)
  const get = cache.get;
  assert.equal(get.call(cache, 'a'), a);
  assert.equal(await value(registry, CACHE_METRICS.requests, { cache: 'users', result: 'hit' }), 3);
  assert.equal(await value(registry, CACHE_METRICS.requests, { cache: 'users', result: 'miss' }), 1);
  // recency still follows get: 'a' was read last, so 'b' goes first
  cache.set('b', { n: 2 });
  cache.set('c', { n: 3 });
  cache.get('a');
  cache.set('d', { n: 4 });
  assert.deepEqual([...cache.keys()].sort(), ['a', 'c', 'd']);
});

test('cache – evictions: capacity is evict, a stale entry purged is expire, removals by the application are neither', async (t) => {
  const { obs, registry } = cacheObs();
  t.after(() => obs.close());
  let now = 1_000;
  const disposed: string[] = [];
  const cache = new LRUCache<string, string>({
    max: 2,
    ttl: 100,
    ttlResolution: 0,
    perf: { now: () => now },
    // the application's own dispose keeps working: obs does not replace it
    dispose: (_value, key, reason) => disposed.push(`${key}:${reason}`),
  });
  instrumentCache(cache, obs, { name: 'sessions' });
  cache.set('a', '1');
  cache.set('b', '2');
  cache.set('a', '1b'); // overwrite: not an eviction
  cache.set('c', '3'); // full: 'b' is evicted
  cache.delete('c'); // the application's removal
  cache.set('d', '4');
  now += 500; // everything is stale now
  assert.equal(cache.get('a'), undefined); // purged on read: expire
  assert.equal(cache.has('d'), false);
  assert.equal(cache.purgeStale(), true); // 'd'
  cache.set('e', '5');
  cache.set('e', undefined as unknown as string); // a set of undefined deletes: not an eviction
  assert.equal(await value(registry, CACHE_METRICS.evictions, { cache: 'sessions', reason: 'evict' }), 1);
  assert.equal(await value(registry, CACHE_METRICS.evictions, { cache: 'sessions', reason: 'expire' }), 2);
  assert.ok(disposed.includes('b:evict'), disposed.join());
  assert.ok(disposed.includes('c:delete'), disposed.join());
});

test('cache – maxSize evicting several entries for one set counts each', async (t) => {
  const { obs, registry } = cacheObs();
  t.after(() => obs.close());
  const cache = new LRUCache<string, string>({ maxSize: 10, sizeCalculation: (v) => v.length });
  instrumentCache(cache, obs, { name: 'blobs' });
  cache.set('a', 'xxx');
  cache.set('b', 'xxx');
  cache.set('c', 'xxx');
  cache.set('big', 'xxxxxxxx'); // 8: a, b and c must go... but only as many as needed
  const evicted = 4 - cache.size;
  assert.ok(evicted >= 2);
  assert.equal(await value(registry, CACHE_METRICS.evictions, { cache: 'blobs', reason: 'evict' }), evicted);
  // bounded only by maxSize: max reads 0
  assert.equal(await value(registry, CACHE_METRICS.max, { cache: 'blobs' }), 0);
});

test('cache – fetch: a fetched miss, a hit, an in-flight join; the promise is the cache’s own', async (t) => {
  const { obs, registry } = cacheObs();
  t.after(() => obs.close());
  let calls = 0;
  const cache = new LRUCache<string, string>({
    max: 10,
    fetchMethod: async (key) => {
      calls += 1;
      return `v-${key}`;
    },
  });
  instrumentCache(cache, obs, { name: 'remote' });
  const first = cache.fetch('k');
  const joined = cache.fetch('k'); // in flight: no second fetchMethod call
  assert.equal(await first, 'v-k');
  assert.equal(await joined, 'v-k');
  const status: LRUCache.Status<string, string> = {};
  assert.equal(await cache.fetch('k', { status }), 'v-k');
  assert.equal(status.fetch, 'hit', 'the caller’s status object is the one fetch fills');
  assert.equal(calls, 1);
  assert.equal(await value(registry, CACHE_METRICS.requests, { cache: 'remote', result: 'miss' }), 1);
  assert.equal(await value(registry, CACHE_METRICS.requests, { cache: 'remote', result: 'hit' }), 2);

  // without fetchMethod, fetch is a get
  const plain = new LRUCache<string, string>({ max: 2 });
  instrumentCache(plain, obs, { name: 'plain' });
  plain.set('x', 'y');
  assert.equal(await plain.fetch('x'), 'y');
  assert.equal(await plain.fetch('z'), undefined);
  assert.equal(await value(registry, CACHE_METRICS.requests, { cache: 'plain', result: 'hit' }), 1);
  assert.equal(await value(registry, CACHE_METRICS.requests, { cache: 'plain', result: 'miss' }), 1);
});

test('cache – size and max are read when scraped', async (t) => {
  const { obs, registry } = cacheObs();
  t.after(() => obs.close());
  const cache = new LRUCache<number, number>({ max: 50 });
  instrumentCache(cache, obs, { name: 'numbers' });
  for (let i = 0; i < 7; i++) cache.set(i, i);
  const text = await registry.metrics();
  assert.match(text, /obs_cache_size\{cache="numbers"\} 7/);
  assert.match(text, /obs_cache_max\{cache="numbers"\} 50/);
  cache.clear();
  assert.match(await registry.metrics(), /obs_cache_size\{cache="numbers"\} 0/);
});

test('cache – off by default: the cache is left as it is; names are checked and bounded', (t) => {
  const off = cacheObs(false);
  t.after(() => off.obs.close());
  const cache = new LRUCache<string, string>({ max: 1 });
  const getBefore = cache.get;
  instrumentCache(cache, off.obs, { name: 'x' });
  assert.equal(cache.get, getBefore);
  assert.equal(off.registry.getSingleMetric(CACHE_METRICS.requests), undefined);

  const { obs, logger } = cacheObs();
  t.after(() => obs.close());
  assert.throws(
    () => instrumentCache(new LRUCache<string, string>({ max: 1 }), obs, { name: 'bad name!' }),
    (e: unknown) => isObsError(e) && e.code === 'OBS_ERR_INVALID_CACHE_NAME',
  );
  const first = new LRUCache<string, string>({ max: 1 });
  instrumentCache(first, obs, { name: 'dup' });
  const wrappedGet = first.get;
  instrumentCache(first, obs, { name: 'dup' }); // the same cache again: nothing changes
  assert.equal(first.get, wrappedGet);
  assert.throws(
    () => instrumentCache(new LRUCache<string, string>({ max: 1 }), obs, { name: 'dup' }),
    (e: unknown) => isObsError(e) && e.code === 'OBS_ERR_DUPLICATE_NAME',
  );
  for (let i = 1; i < MAX_CACHES; i++) instrumentCache(new LRUCache({ max: 1 }), obs, { name: `c${i}` });
  const extra = new LRUCache<string, string>({ max: 1 });
  const extraGet = extra.get;
  instrumentCache(extra, obs, { name: 'one-too-many' });
  assert.equal(extra.get, extraGet, 'past the bound a cache is left uninstrumented');
  assert.equal(logger.lines.filter((l) => l.level === 'warn').length, 1);
});

test('cache – a failing size read never reaches the caller; it is logged once', async (t) => {
  const { obs, logger } = cacheObs();
  t.after(() => obs.close());
  const cache = new LRUCache<string, string>({ max: 5 });
  instrumentCache(cache, obs, { name: 'broken' });
  cache.set('a', 'b');
  Object.defineProperty(cache, 'size', {
    get() {
      throw new Error('boom');
    },
  });
  assert.equal(cache.get('a'), 'b');
  assert.equal(cache.get('a'), 'b');
  assert.equal(logger.lines.filter((l) => l.level === 'warn').length, 1);
});

test('cache – the snapshot section shows each cache with live figures', async (t) => {
  let cache: LRUCache<string, string> | undefined;
  const running = await startObsApp({ config: { cache: { enabled: true } } }, (app) => {
    cache = instrumentCache(new LRUCache<string, string>({ max: 4 }), app.obs, { name: 'pages' });
  });
  t.after(() => running.close());
  cache?.set('a', '1');
  cache?.get('a');
  cache?.get('b');
  const snapshot = (await (await fetch(`${running.url}/actuator/obs`)).json()) as {
    features: Record<string, { status: string; enabled: boolean }>;
    sections: Record<string, { enabled: boolean; caches: Array<Record<string, unknown>> }>;
  };
  assert.deepEqual(
    { status: snapshot.features.cache?.status, enabled: snapshot.features.cache?.enabled },
    { status: 'built', enabled: true },
  );
  const section = snapshot.sections.cache;
  assert.equal(section?.enabled, true);
  assert.deepEqual(section?.caches, [
    {
      name: 'pages',
      collected: false,
      size: 1,
      max: 4,
      hits: 1,
      misses: 1,
      hit_ratio: 0.5,
      evictions: { evict: 0, expire: 0 },
    },
  ]);
});

test('cache – registerCache alone shows an empty section', (t) => {
  const { obs } = cacheObs(false);
  t.after(() => obs.close());
  registerCache(obs);
  const section = obs.snapshot().sections.cache as { enabled: boolean; caches: unknown[] };
  assert.equal(section.enabled, false);
  assert.deepEqual(section.caches, []);
});
