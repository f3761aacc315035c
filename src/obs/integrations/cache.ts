/**
 * Cache observability (`obs.cache`, opt-in), for lru-cache instances handed to obs with
 * {@link instrumentCache}: hits and misses, evictions, size and capacity of each named cache.
 *
 * - `obs_cache_requests_total{cache,result}`: every `get` (`hit` when it returned a value, `miss`
 *   when it returned `undefined`: lru-cache cannot hold `undefined`) and every `fetch` (`hit` when
 *   the value was in the cache, stale or not, or already being fetched; `miss` when `fetchMethod`
 *   ran for it, `forceRefresh` included).
 * - `obs_cache_evictions_total{cache,reason}`: entries the cache dropped on its own, never those the
 *   application removed (`delete`, `clear`, overwriting a key). lru-cache's options, `dispose`
 *   included, are fixed when it is built, so obs sees evictions as the cache's size after each call:
 *   a `set` that leaves fewer entries than it should have is `evict` (the `max` or `maxSize` limit),
 *   a `get`, `has`, `peek`, `fetch` or `purgeStale` that leaves fewer is `expire` (a stale entry
 *   purged). Entries removed by `ttlAutopurge`'s timers are not seen.
 * - `obs_cache_size{cache}` and `obs_cache_max{cache}`: read from the cache when scraped
 *   (`max` is 0 for a cache bounded only by `maxSize` or `ttl`).
 *
 * lru-cache is not a dependency: the cache is typed by its shape. The methods are wrapped on the
 * instance; what they return and their `this` are unchanged, and a failure of the instrumentation
 * is logged once and never reaches the caller.
 */
import { Counter, Gauge } from 'prom-client';
import { ObsError } from '../core/errors.ts';
import type { ObsCore } from '../core/obs.ts';

const FEATURE = 'cache';

/** Names of the cache meters. */
export const CACHE_METRICS = {
  requests: 'obs_cache_requests_total',
  evictions: 'obs_cache_evictions_total',
  size: 'obs_cache_size',
  max: 'obs_cache_max',
} as const;

/** Caches one obs instance instruments; a further one is left as it is, with a warning. */
export const MAX_CACHES = 100;
/** A cache name: 1 to 64 letters, digits, `_`, `.`, `:` or `-`. */
const CACHE_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;

/** The part of an lru-cache (v7 to v11) obs reads and wraps. */
export interface LruCacheLike {
  readonly size: number;
  readonly max?: number;
  get(key: never, ...rest: never[]): unknown;
  set(key: never, value: never, ...rest: never[]): unknown;
  has(key: never, ...rest: never[]): boolean;
  peek?(key: never, ...rest: never[]): unknown;
  fetch?(key: never, ...rest: never[]): Promise<unknown>;
  purgeStale?(): boolean;
}

/** Options of {@link instrumentCache}. */
export interface InstrumentCacheOptions {
  /** The `cache` label: 1 to 64 letters, digits, `_`, `.`, `:` or `-`. */
  readonly name: string;
}

interface CacheFigures {
  hits: number;
  misses: number;
  evicted: number;
  expired: number;
}

interface CacheState {
  readonly caches: Map<string, { readonly ref: WeakRef<LruCacheLike>; readonly figures: CacheFigures }>;
  readonly requests: Counter<'cache' | 'result'>;
  readonly evictions: Counter<'cache' | 'reason'>;
  refused: number;
  failures: number;
  warned: boolean;
}

const states = new WeakMap<ObsCore, CacheState>();
const INSTRUMENTED = Symbol.for('echo-chaos.obs.cache-instrumented');

/** The cache meters of `obs`, made on the first instrumented cache. */
function stateOf(obs: ObsCore): CacheState {
  const known = states.get(obs);
  if (known !== undefined) return known;
  const caches: CacheState['caches'] = new Map();
  const live = () => {
    const out: Array<[string, LruCacheLike]> = [];
    for (const [name, entry] of caches) {
      const cache = entry.ref.deref();
      if (cache !== undefined) out.push([name, cache]);
    }
    return out;
  };
  const state: CacheState = {
    caches,
    refused: 0,
    failures: 0,
    warned: false,
    requests: new Counter({
      name: CACHE_METRICS.requests,
      help: 'Lookups (get, fetch) of caches handed to obs, by cache and result (hit, miss)',
      labelNames: ['cache', 'result'],
      registers: [obs.registry],
    }),
    evictions: new Counter({
      name: CACHE_METRICS.evictions,
      help: 'Entries a cache dropped on its own, by cache and reason (evict: capacity, expire: stale)',
      labelNames: ['cache', 'reason'],
      registers: [obs.registry],
    }),
  };
  new Gauge({
    name: CACHE_METRICS.size,
    help: 'Entries in the cache when scraped, by cache',
    labelNames: ['cache'],
    registers: [obs.registry],
    collect() {
      this.reset();
      for (const [name, cache] of live()) this.set({ cache: name }, numberOr0(cache.size));
    },
  });
  new Gauge({
    name: CACHE_METRICS.max,
    help: 'The entry limit of the cache (max; 0 when only maxSize or ttl bound it), by cache',
    labelNames: ['cache'],
    registers: [obs.registry],
    collect() {
      this.reset();
      for (const [name, cache] of live()) this.set({ cache: name }, numberOr0(cache.max));
    },
  });
  states.set(obs, state);
  return state;
}

function numberOr0(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

/**
 * Adds the `cache` snapshot section (plugin.ts calls it): whether the feature is on and, per
 * instrumented cache, its size, limit, hits, misses and evictions so far.
 */
export function registerCache(obs: ObsCore): void {
  obs.addSnapshotSection(FEATURE, () => {
    const state = states.get(obs);
    return {
      enabled: obs.config.cache.enabled,
      config: obs.resolved.effective[FEATURE] ?? null,
      metrics: Object.values(CACHE_METRICS),
      max_caches: MAX_CACHES,
      refused: state?.refused ?? 0,
      failures: state?.failures ?? 0,
      caches: [...(state?.caches ?? new Map()).entries()].map(([name, { ref, figures }]) => {
        const cache = ref.deref();
        const lookups = figures.hits + figures.misses;
        return {
          name,
          collected: cache === undefined,
          size: cache === undefined ? null : numberOr0(cache.size),
          max: cache === undefined ? null : numberOr0(cache.max),
          hits: figures.hits,
          misses: figures.misses,
          hit_ratio: lookups === 0 ? null : Math.round((figures.hits / lookups) * 1000) / 1000,
          evictions: { evict: figures.evicted, expire: figures.expired },
        };
      }),
    };
  });
}

type AnyMethod = (this: unknown, ...args: unknown[]) => unknown;

/**
 * Instruments an lru-cache for `obs.cache` and returns it (the same object). A no-op while
 * `obs.cache.enabled` is false, for a cache already instrumented, and past {@link MAX_CACHES} caches
 * (with a warning).
 *
 * @throws {ObsError} `OBS_ERR_DUPLICATE_NAME` when another cache has this name;
 *   `OBS_ERR_INVALID_CACHE_NAME` when the name is not 1 to 64 letters, digits, `_`, `.`, `:` or `-`.
 */
export function instrumentCache<C extends LruCacheLike>(
  cache: C,
  obs: ObsCore,
  options: InstrumentCacheOptions,
): C {
  if (!obs.config.cache.enabled) return cache;
  const name = options?.name;
  if (typeof name !== 'string' || !CACHE_NAME.test(name)) {
    throw new ObsError('OBS_ERR_INVALID_CACHE_NAME', [JSON.stringify(String(name)).slice(0, 80)]);
  }
  const target = cache as C & { [INSTRUMENTED]?: string };
  if (target[INSTRUMENTED] !== undefined) return cache;
  const state = stateOf(obs);
  if (state.caches.has(name)) throw new ObsError('OBS_ERR_DUPLICATE_NAME', ['cache', name]);
  if (state.caches.size >= MAX_CACHES) {
    state.refused += 1;
    obs.logger.warn(
      { obs: FEATURE, cache: name, max_caches: MAX_CACHES },
      `obs instruments at most ${MAX_CACHES} caches; cache ${name} is left uninstrumented`,
    );
    return cache;
  }
  const figures: CacheFigures = { hits: 0, misses: 0, evicted: 0, expired: 0 };
  state.caches.set(name, { ref: new WeakRef(cache), figures });
  const cacheLabel = obs.firewall.admit(CACHE_METRICS.requests, 'cache', name);

  const failed = (error: unknown): void => {
    state.failures += 1;
    if (state.warned) return;
    state.warned = true;
    try {
      obs.logger.warn(
        { obs: FEATURE, cache: name, err: String(error) },
        `obs could not record a call of cache ${name}; the cache goes on unobserved for that call`,
      );
    } catch {
      // nothing more to do
    }
  };
  const lookup = (hit: boolean): void => {
    if (hit) figures.hits += 1;
    else figures.misses += 1;
    state.requests.inc({ cache: cacheLabel, result: hit ? 'hit' : 'miss' });
  };
  const dropped = (reason: 'evict' | 'expire', count: number): void => {
    if (count <= 0) return;
    if (reason === 'evict') figures.evicted += count;
    else figures.expired += count;
    state.evictions.inc({ cache: cacheLabel, reason }, count);
  };
  const sizeOf = (): number => numberOr0(cache.size);
  const originalPeek = typeof cache.peek === 'function' ? (cache.peek as AnyMethod) : undefined;

  // Wraps one method on the instance; `observe` sees the arguments, the result and the size before.
  const wrap = (
    method: keyof LruCacheLike,
    observe: (args: unknown[], result: unknown, before: number, had: boolean | undefined) => void,
    needsHad = false,
  ): void => {
    const original = cache[method];
    if (typeof original !== 'function') return;
    const fn = original as AnyMethod;
    Object.defineProperty(cache, method, {
      configurable: true,
      writable: true,
      enumerable: false,
      value: function (this: unknown, ...args: unknown[]) {
        let before = 0;
        let had: boolean | undefined;
        try {
          before = sizeOf();
          // peek neither counts as a lookup nor purges nor moves the entry
          if (needsHad && originalPeek !== undefined) {
            had = originalPeek.call(cache, args[0], { allowStale: true }) !== undefined;
          }
        } catch (error) {
          failed(error);
        }
        const result = fn.apply(this, args);
        try {
          observe(args, result, before, had);
        } catch (error) {
          failed(error);
        }
        return result;
      },
    });
  };

  wrap('get', (_args, result, before) => {
    lookup(result !== undefined);
    dropped('expire', before - sizeOf());
  });
  wrap('has', (_args, _result, before) => dropped('expire', before - sizeOf()));
  wrap('peek', (_args, _result, before) => dropped('expire', before - sizeOf()));
  wrap('purgeStale', (_args, _result, before) => dropped('expire', before - sizeOf()));
  wrap(
    'set',
    (args, _result, before, had) => {
      // A set(k, undefined) is a delete; an application's removal is not an eviction.
      if (args[1] === undefined || had === undefined) return;
      const expected = before + (had ? 0 : 1);
      dropped('evict', expected - sizeOf());
    },
    true,
  );
  // fetch reports what it did on a status object: the caller's, or one given to it here.
  wrap('fetch', (args, result, before) => {
    const status = (args[1] as { status?: { fetch?: string } } | undefined)?.status?.fetch;
    dropped('expire', before - sizeOf());
    if (status === 'get') {
      // no fetchMethod: fetch is a get whose value arrives as a promise
      if (result instanceof Promise) {
        result.then(
          (value) => lookup(value !== undefined),
          () => {},
        );
      }
    } else if (status !== undefined) lookup(status !== 'miss' && status !== 'refresh');
  });
  const fetchWrapped = cache.fetch;
  if (typeof fetchWrapped === 'function') {
    const inner = fetchWrapped as AnyMethod;
    Object.defineProperty(cache, 'fetch', {
      configurable: true,
      writable: true,
      enumerable: false,
      value: function (this: unknown, ...args: unknown[]) {
        const given = args[1];
        if (given === undefined || given === null) args[1] = { status: {} };
        else if (typeof given === 'object' && (given as { status?: unknown }).status === undefined) {
          args[1] = { ...(given as object), status: {} };
        }
        return inner.apply(this, args);
      },
    });
  }
  Object.defineProperty(cache, INSTRUMENTED, { value: name, enumerable: false });
  return cache;
}
