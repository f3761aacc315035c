/**
 * Database N+1 and slow-query detection (`obs.db`), for node-postgres (`pg`) handed to obs with
 * {@link instrumentPg}:
 *
 * - Inside a request, every statement counts in the request's tally (`state.db`, made by the
 *   request context's contributor), by its shape ({@link sqlShape}: literals and numbers replaced
 *   with `?`, comments dropped, whitespace collapsed, `$1` parameters kept, at most
 *   {@link MAX_SHAPE_LENGTH} characters). At most {@link MAX_SHAPES_PER_REQUEST} distinct shapes are
 *   tracked per request; later new shapes still count as statements.
 * - When the response has finished, `obs_db_statements_per_request{endpoint}` observes the request's
 *   statements. When one shape ran more than `n-plus-one-threshold` times (strictly more, as the
 *   key's documentation says "above"), the request counts in `obs_db_n_plus_one_total{endpoint}`
 *   and a warning names the shape (masked by `maskText`) and its count, at most one per endpoint
 *   per {@link DB_WARN_INTERVAL_MS}.
 * - A statement slower than `slow-query-threshold` (from the `query` call until its result, error
 *   or end: the wait in the client's own queue counts) counts in
 *   `obs_db_slow_queries_total{endpoint}` and logs its shape (never its values), at most one
 *   warning per shape per {@link DB_WARN_INTERVAL_MS}. Outside a request the endpoint is `none`,
 *   and nothing per request is recorded.
 * - The request's active span carries {@link DB_SPAN_ATTRIBUTES}, kept current on each statement.
 * - A request that `enabled-when` skips is not counted at all (no slow queries either).
 *
 * `pg` is not a dependency: it is typed by its shape. The instrumentation never changes what
 * `query` does or returns, and never fails a query: a failure of its own is logged.
 */
import { AsyncResource } from 'node:async_hooks';
import { type Span, trace } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Counter, Histogram } from 'prom-client';
import type { ObsCore } from '../core/obs.ts';
import { routeOf } from '../core/route.ts';
import { WarningLimiter } from '../core/warning-limiter.ts';
import { maskText } from '../features/logging/masking.ts';
import { contextKit } from '../features/request-context/context-hook.ts';
import { currentRequestContext } from '../features/request-context/request-context.ts';

const FEATURE = 'db';

/** Names of the database meters. */
export const DB_METRICS = {
  statementsPerRequest: 'obs_db_statements_per_request',
  nPlusOne: 'obs_db_n_plus_one_total',
  slowQueries: 'obs_db_slow_queries_total',
} as const;

/** The attributes kept on the request's active span: statements so far, and N+1 once suspected. */
export const DB_SPAN_ATTRIBUTES = {
  statements: 'obs.db.statement_count',
  nPlusOne: 'obs.db.n_plus_one',
} as const;

/** The buckets of `obs_db_statements_per_request`. */
export const DB_STATEMENT_BUCKETS = [0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] as const;
/** A statement's shape is cut to this many characters. */
export const MAX_SHAPE_LENGTH = 200;
/** Characters of a statement's text read to make its shape (bounded work per statement). */
export const MAX_SQL_SCANNED = 4096;
/** Distinct shapes tracked per request; statements of later new shapes count, unshaped. */
export const MAX_SHAPES_PER_REQUEST = 100;
/** At most one N+1 warning per endpoint, and one slow-query warning per shape, in this many ms. */
export const DB_WARN_INTERVAL_MS = 60_000;
/** Endpoints, and statement shapes, whose last warning is remembered. */
const DB_WARNED_KEYS = 1000;
/** The endpoint label of statements run outside a request. */
export const NO_ENDPOINT = 'none';

// ---------------------------------------------------------------------------------------------
// Shapes

/**
 * The shape of a SQL statement: comments dropped, string literals (`'…'`, `E'…'`, dollar-quoted)
 * and numbers replaced with `?`, lists of `?` collapsed to `(?)`, whitespace collapsed; `$1`
 * parameters, identifiers and keywords kept as written. Reads at most {@link MAX_SQL_SCANNED}
 * characters and returns at most {@link MAX_SHAPE_LENGTH}. Never throws.
 */
export function sqlShape(sql: unknown): string {
  if (typeof sql !== 'string') return '?';
  let text = sql.length > MAX_SQL_SCANNED ? sql.slice(0, MAX_SQL_SCANNED) : sql;
  text = text
    .replace(/\/\*[\s\S]*?(?:\*\/|$)/g, ' ')
    .replace(/--[^\n]*/g, ' ')
    .replace(/\$([A-Za-z_]\w*)?\$[\s\S]*?(?:\$\1\$|$)/g, '?')
    .replace(/'(?:[^']|'')*(?:'|$)/g, '?')
    .replace(/(?<![\w$.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w$])/g, '?')
    .replace(/\b[eEbBxXuU]\?/g, '?')
    .replace(/\(\s*\?(?:\s*,\s*\?)+\s*\)/g, '(?)')
    .replace(/\s+/g, ' ')
    .trim();
  return text.length > MAX_SHAPE_LENGTH ? `${text.slice(0, MAX_SHAPE_LENGTH - 1)}…` : text;
}

/** The statements of one request. */
export class DbTally {
  statements = 0;
  /** Statements whose shape was new once {@link MAX_SHAPES_PER_REQUEST} were tracked. */
  untracked = 0;
  readonly #shapes = new Map<string, number>();
  readonly #maxShapes: number;

  constructor(maxShapes: number = MAX_SHAPES_PER_REQUEST) {
    this.#maxShapes = maxShapes;
  }

  /** Counts one statement; returns how often its shape ran in this request (0 when untracked). */
  count(shape: string): number {
    this.statements += 1;
    const known = this.#shapes.get(shape);
    if (known !== undefined) {
      this.#shapes.set(shape, known + 1);
      return known + 1;
    }
    if (this.#shapes.size >= this.#maxShapes) {
      this.untracked += 1;
      return 0;
    }
    this.#shapes.set(shape, 1);
    return 1;
  }

  /** Distinct shapes tracked. */
  get shapes(): number {
    return this.#shapes.size;
  }

  /** The most repeated shape and its count (the first seen among equals); undefined when none. */
  mostRepeated(): { shape: string; count: number } | undefined {
    let best: { shape: string; count: number } | undefined;
    for (const [shape, count] of this.#shapes)
      if (best === undefined || count > best.count) best = { shape, count };
    return best;
  }
}

// ---------------------------------------------------------------------------------------------
// Per-obs state

/** What the request's context holds under `state.db`. */
interface RequestDb {
  readonly tally: DbTally;
  readonly endpoint: string;
  readonly instrumentation: DbInstrumentation;
  readonly span: Span | undefined;
  flagged: boolean;
}
/** In `state.db` of a request `enabled-when` skipped. */
const SKIPPED = Symbol('db skipped');

interface DbMeters {
  readonly perRequest: Histogram<'endpoint'>;
  readonly nPlusOne: Counter<'endpoint'>;
  readonly slow: Counter<'endpoint'>;
}

interface DbInstrumentation {
  readonly obs: ObsCore;
  meters: DbMeters | undefined;
  readonly figures: {
    instrumented: string[];
    statements: number;
    statements_outside_requests: number;
    requests_observed: number;
    requests_skipped: number;
    max_statements_per_request: number;
    n_plus_one: number;
    slow_queries: number;
    warnings: number;
    warnings_suppressed: number;
    failures: number;
  };
  readonly endpointLimiter: WarningLimiter;
  readonly shapeLimiter: WarningLimiter;
  nowMs: () => number;
  sectioned: boolean;
  failed(where: string, error: unknown): void;
}

const instrumentations = new WeakMap<ObsCore, DbInstrumentation>();

function stateOf(obs: ObsCore): DbInstrumentation {
  const known = instrumentations.get(obs);
  if (known !== undefined) return known;
  const made: DbInstrumentation = {
    obs,
    meters: undefined,
    figures: {
      instrumented: [],
      statements: 0,
      statements_outside_requests: 0,
      requests_observed: 0,
      requests_skipped: 0,
      max_statements_per_request: 0,
      n_plus_one: 0,
      slow_queries: 0,
      warnings: 0,
      warnings_suppressed: 0,
      failures: 0,
    },
    endpointLimiter: new WarningLimiter(DB_WARN_INTERVAL_MS, DB_WARNED_KEYS),
    shapeLimiter: new WarningLimiter(DB_WARN_INTERVAL_MS, DB_WARNED_KEYS),
    nowMs: Date.now,
    sectioned: false,
    failed(where, error) {
      made.figures.failures += 1;
      try {
        obs.logger.warn(
          { obs: FEATURE, where, err: String(error) },
          `obs could not observe a pg ${where}; the query goes on without it`,
        );
      } catch {
        // nothing more to do
      }
    },
  };
  instrumentations.set(obs, made);
  return made;
}

function addSection(state: DbInstrumentation): void {
  if (state.sectioned) return;
  state.sectioned = true;
  const { obs } = state;
  const config = obs.config[FEATURE];
  obs.addSnapshotSection(FEATURE, () => ({
    enabled: config.enabled,
    config: obs.resolved.effective[FEATURE] ?? null,
    metrics: Object.values(DB_METRICS),
    span_attributes: Object.values(DB_SPAN_ATTRIBUTES),
    n_plus_one_threshold: config['n-plus-one-threshold'],
    slow_query_threshold_ms: config['slow-query-threshold'],
    warn_interval_ms: DB_WARN_INTERVAL_MS,
    ...state.figures,
    instrumented: [...state.figures.instrumented],
  }));
}

function metersOf(state: DbInstrumentation): DbMeters {
  state.meters ??= {
    perRequest: new Histogram({
      name: DB_METRICS.statementsPerRequest,
      help: 'SQL statements run while serving one request, by endpoint (route pattern)',
      labelNames: ['endpoint'],
      buckets: [...DB_STATEMENT_BUCKETS],
      registers: [state.obs.registry],
    }),
    nPlusOne: new Counter({
      name: DB_METRICS.nPlusOne,
      help: 'Requests in which one statement shape ran more than obs.db.n-plus-one-threshold times (suspected N+1), by endpoint',
      labelNames: ['endpoint'],
      registers: [state.obs.registry],
    }),
    slow: new Counter({
      name: DB_METRICS.slowQueries,
      help: 'SQL statements slower than obs.db.slow-query-threshold, by endpoint (none: outside a request)',
      labelNames: ['endpoint'],
      registers: [state.obs.registry],
    }),
  };
  return state.meters;
}

function warn(
  state: DbInstrumentation,
  limiter: WarningLimiter,
  key: string,
  fields: object,
  message: string,
): void {
  const admission = limiter.admit(key, state.nowMs());
  if (admission === undefined) {
    state.figures.warnings_suppressed += 1;
    return;
  }
  state.figures.warnings += 1;
  state.obs.logger.warn(
    { obs: FEATURE, ...fields, suppressed: admission.suppressed },
    message +
      (admission.suppressed > 0 ? ` (${admission.suppressed} such warnings suppressed before this one)` : ''),
  );
}

// ---------------------------------------------------------------------------------------------
// The request side (registered by the plugin)

/** Options of {@link registerDb}. */
export interface DbOptions {
  /** The clock of the warning limiters, epoch milliseconds. Default `Date.now`. */
  readonly nowMs?: () => number;
}

/**
 * Adds the request side of `obs.db` to a fastify app: the `db` snapshot section, and (when
 * `obs.db.enabled`) the request context's tally and the figures observed when each response has
 * finished. Requests are counted once pg was handed to obs with {@link instrumentPg}.
 */
export function registerDb(app: FastifyInstance, obs: ObsCore, options: DbOptions = {}): void {
  const state = stateOf(obs);
  if (options.nowMs !== undefined) state.nowMs = options.nowMs;
  addSection(state);
  if (!obs.config[FEATURE].enabled) return;
  const threshold = obs.config[FEATURE]['n-plus-one-threshold'];
  const counted = new WeakMap<FastifyRequest, RequestDb>();

  contextKit(obs).addContributor(FEATURE, ({ request, store }) => {
    if (state.meters === undefined) return; // pg not handed to obs (yet)
    if (!obs.isEnabledFor(FEATURE, request)) {
      state.figures.requests_skipped += 1;
      store.state[FEATURE] = SKIPPED;
      return;
    }
    const entry: RequestDb = {
      tally: new DbTally(),
      endpoint: routeOf(request),
      instrumentation: state,
      span: trace.getActiveSpan(),
      flagged: false,
    };
    store.state[FEATURE] = entry;
    counted.set(request, entry);
  });

  app.addHook('onResponse', (request, _reply, done) => {
    // Until pg is handed to obs no request is counted: no WeakMap look-up (it gives the request an
    // identity hash) on every response.
    if (state.meters === undefined) {
      done();
      return;
    }
    try {
      const entry = counted.get(request);
      if (entry !== undefined) {
        counted.delete(request);
        const meters = metersOf(state);
        const { tally, endpoint } = entry;
        meters.perRequest.observe({ endpoint }, tally.statements);
        state.figures.requests_observed += 1;
        state.figures.max_statements_per_request = Math.max(
          state.figures.max_statements_per_request,
          tally.statements,
        );
        const top = tally.mostRepeated();
        if (top !== undefined && top.count > threshold) {
          meters.nPlusOne.inc({ endpoint });
          state.figures.n_plus_one += 1;
          const shape = maskText(top.shape);
          warn(
            state,
            state.endpointLimiter,
            endpoint,
            { endpoint, shape, repeats: top.count, statements: tally.statements, threshold },
            `${endpoint} ran one statement ${top.count} times while serving one request, above the n-plus-one-threshold of ${threshold} (suspected N+1): ${shape}`,
          );
        }
      }
    } catch (error) {
      state.failed('request', error);
    }
    done();
  });
}

// ---------------------------------------------------------------------------------------------
// The query side

/** What the pg module looks like to obs: `Client` (and `Pool`) classes. */
export interface PgModuleLike {
  readonly Client: { readonly prototype: PgQueryable };
  readonly Pool?: { readonly prototype: PgPoolLike };
}
/** Anything with pg's `query(text | config | submittable, values?, callback?)`. */
export interface PgQueryable {
  query: (...args: never[]) => unknown;
}
/** A pg (pg-pool) pool: `query`, `connect` and the `connect` event of each new client. */
export interface PgPoolLike extends PgQueryable {
  connect: (...args: never[]) => unknown;
  readonly totalCount?: number;
  on?: (event: 'connect', listener: (client: PgQueryable) => void) => unknown;
}

const QUERY_HOOKS = Symbol.for('echo-chaos.obs.db-query');
const CONNECT_BOUND = Symbol.for('echo-chaos.obs.db-connect');

/** What obs replaces on a client, a prototype or a pool; each is checked to be a function first. */
type Holder = { query?: unknown; connect?: unknown };
/** A wrapper obs put in place is marked with a global symbol (one for every copy of obs loaded). */
type Marked = AnyFunction & { [QUERY_HOOKS]?: Set<DbInstrumentation>; [CONNECT_BOUND]?: true };
type AnyFunction = (this: unknown, ...args: unknown[]) => unknown;

/** One statement in flight: counted when issued, timed until its end. */
function issued(
  holderStates: ReadonlySet<DbInstrumentation>,
  text: unknown,
): ((error?: unknown) => void) | undefined {
  const context = currentRequestContext();
  const inRequest = context?.state?.[FEATURE];
  if (inRequest === SKIPPED) return undefined;
  const shape = sqlShape(text);
  const startedMs = performance.now();
  let targets: DbInstrumentation[];
  let endpoint = NO_ENDPOINT;
  if (inRequest !== undefined && holderStates.has((inRequest as RequestDb).instrumentation)) {
    const entry = inRequest as RequestDb;
    const state = entry.instrumentation;
    targets = [state];
    endpoint = entry.endpoint;
    state.figures.statements += 1;
    const repeats = entry.tally.count(shape);
    entry.span?.setAttribute(DB_SPAN_ATTRIBUTES.statements, entry.tally.statements);
    if (!entry.flagged && repeats > state.obs.config[FEATURE]['n-plus-one-threshold']) {
      entry.flagged = true;
      entry.span?.setAttribute(DB_SPAN_ATTRIBUTES.nPlusOne, true);
    }
  } else {
    targets = [...holderStates];
    for (const state of targets) {
      state.figures.statements += 1;
      state.figures.statements_outside_requests += 1;
    }
  }
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    const ms = performance.now() - startedMs;
    for (const state of targets) {
      try {
        const threshold = state.obs.config[FEATURE]['slow-query-threshold'];
        if (ms <= threshold) continue;
        metersOf(state).slow.inc({ endpoint });
        state.figures.slow_queries += 1;
        const masked = maskText(shape);
        const rounded = Math.round(ms);
        warn(
          state,
          state.shapeLimiter,
          masked,
          { endpoint, shape: masked, duration_ms: rounded, threshold_ms: threshold },
          `slow query (${rounded} ms, above the slow-query-threshold of ${threshold} ms) at ${endpoint}: ${masked}`,
        );
      } catch (error) {
        state.failed('slow query', error);
      }
    }
  };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/** Wraps `holder.query` once; the obs instances observing it are kept in a set on the holder. */
function patchQuery(holder: Holder, state: DbInstrumentation): boolean {
  const original = holder.query;
  if (typeof original !== 'function') return false;
  // Already wrapped (this holder, or the class of this instance): add this obs to the wrapper's.
  const known = QUERY_HOOKS in original ? original[QUERY_HOOKS] : undefined;
  if (known instanceof Set) {
    known.add(state);
    return true;
  }
  const states = new Set<DbInstrumentation>([state]);
  const query: Marked = function (this: unknown, ...args: unknown[]): unknown {
    let end: ((error?: unknown) => void) | undefined;
    const next = args;
    try {
      const config = args[0] as
        | { text?: unknown; submit?: unknown; callback?: unknown }
        | string
        | null
        | undefined;
      const text = typeof config === 'string' ? config : config?.text;
      if (config !== null && config !== undefined) end = issued(states, text);
      if (end !== undefined && typeof config === 'object' && config !== null) {
        if (typeof config.submit === 'function') {
          // A submittable (pg.Query, pg-cursor, pg-query-stream): the client calls its
          // handleReadyForQuery when the statement is over, on success and on error alike.
          const submittable = config as { handleReadyForQuery?: unknown };
          const ready = submittable.handleReadyForQuery;
          if (typeof ready === 'function') {
            const stop = end;
            submittable.handleReadyForQuery = function (this: unknown, ...readyArgs: unknown[]) {
              stop();
              return (ready as AnyFunction).apply(this, readyArgs);
            };
          }
          end = undefined;
        }
      }
      if (end !== undefined) {
        const stop = end;
        const wrap = (callback: AnyFunction): AnyFunction =>
          function (this: unknown, ...callbackArgs: unknown[]) {
            stop(callbackArgs[0]);
            return callback.apply(this, callbackArgs);
          };
        if (typeof args[2] === 'function') next[2] = wrap(args[2] as AnyFunction);
        else if (typeof args[1] === 'function') next[1] = wrap(args[1] as AnyFunction);
        else if (
          typeof config === 'object' &&
          config !== null &&
          typeof config.submit !== 'function' &&
          typeof config.callback === 'function'
        ) {
          // pg copies the config and lets a callback argument win over its `callback`.
          next[2] = wrap(config.callback as AnyFunction);
        }
        // Without a callback pg returns a promise: the statement is timed on it.
        if (typeof next[2] === 'function' || typeof next[1] === 'function') end = undefined;
      }
    } catch (error) {
      state.failed('query', error);
      end = undefined;
    }
    const result = (original as AnyFunction).apply(this, next);
    if (end !== undefined) {
      try {
        if (isThenable(result)) {
          const stop = end;
          result.then(
            () => stop(),
            (error: unknown) => stop(error),
          );
        } else end();
      } catch (error) {
        state.failed('query', error);
      }
    }
    return result;
  };
  query[QUERY_HOOKS] = states;
  holder.query = query;
  return true;
}

/**
 * Makes a pool's `connect(callback)` call back in the caller's async context. pg-pool calls a
 * waiting `connect` back from whoever releases a client; `pool.query` runs its statement in that
 * callback, which would otherwise count in the releasing request.
 */
function bindConnect(holder: Holder): void {
  const original = holder.connect;
  if (typeof original !== 'function' || (CONNECT_BOUND in original && original[CONNECT_BOUND] === true))
    return;
  const connect: Marked = function (this: unknown, ...args: unknown[]): unknown {
    if (typeof args[0] === 'function') args[0] = AsyncResource.bind(args[0] as AnyFunction);
    return (original as AnyFunction).apply(this, args);
  };
  connect[CONNECT_BOUND] = true;
  holder.connect = connect;
}

function isPgModule(target: unknown): target is PgModuleLike {
  const client = (target as { Client?: { prototype?: unknown } } | null)?.Client;
  return (
    typeof client === 'function' && typeof (client.prototype as PgQueryable | undefined)?.query === 'function'
  );
}

/** A pool (checked first: a pg-pool instance has a `Client` too). */
function isPool(target: unknown): target is PgPoolLike {
  const pool = target as PgPoolLike;
  return typeof pool.connect === 'function' && typeof pool.totalCount === 'number';
}

/**
 * Hands node-postgres to obs (`obs.db`) and returns what it was given.
 *
 * - The pg module (`import pg from 'pg'`): `pg.Client.prototype.query` is wrapped, so every client
 *   and every pool made from this module (a pool runs its statements on `Client`s) is observed, and
 *   `pg.Pool.prototype.connect` calls back in the caller's async context.
 * - A `pg.Pool`: its `connect` calls back in the caller's context, and each client it connects
 *   from then on (and those it already holds) is observed. Other pools are not.
 * - A `pg.Client`: that client's `query` only.
 *
 * Every form of `query` keeps its behaviour and result: text or config object, values, callback or
 * promise, or a submittable (`pg.Query`, pg-cursor). A returned promise gets a handler of obs's
 * own, so a rejection nobody awaits no longer shows as unhandled. Handing the same target to obs
 * twice instruments it once. With `obs.db.enabled` false it is returned untouched.
 */
export function instrumentPg<T extends PgModuleLike | PgPoolLike | PgQueryable>(target: T, obs: ObsCore): T {
  if (!obs.config[FEATURE].enabled) return target;
  const state = stateOf(obs);
  try {
    addSection(state);
    metersOf(state);
    if (isPool(target)) {
      bindConnect(target);
      const clients = '_clients' in target ? target._clients : undefined;
      if (Array.isArray(clients)) for (const client of clients) patchQuery(client as Holder, state);
      target.on?.('connect', (client) => {
        try {
          patchQuery(client, state);
        } catch (error) {
          state.failed('pool client', error);
        }
      });
      state.figures.instrumented.push('pool');
    } else if (isPgModule(target)) {
      patchQuery(target.Client.prototype, state);
      const pool = (target as PgModuleLike).Pool;
      if (pool !== undefined) bindConnect(pool.prototype);
      state.figures.instrumented.push('module');
    } else if (patchQuery(target, state)) {
      state.figures.instrumented.push('client');
    } else {
      throw new TypeError('not a pg module, Pool or Client (no query function)');
    }
    if (state.figures.instrumented.length > 100) state.figures.instrumented.splice(0, 1);
  } catch (error) {
    state.failed('instrumentation', error);
  }
  return target;
}
