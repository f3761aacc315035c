/**
 * Replicas that agree (issue #33), in part: the scenario set and the rate limit shared on Redis
 * (`ECHO_STATE_URL`).
 * Loaded only when the variable is set; without it nothing here runs and ioredis is never imported.
 *
 * - A set replaced here (posted, loaded from the file, pushed by the operator) is written to
 *   one key, `echo-chaos:scenarios` (`{hash, scenarios}`), and its hash published on the channel of
 *   the same name, in one `MULTI`. Every replica subscribed adopts it on the message: it reads the
 *   key and replaces its own store (validated again), so `GET /scenario` answers the same set with
 *   the same ETag everywhere, within the round trip of a message. A message missed (a subscriber
 *   that was reconnecting) is caught up by a check of the set's hash once a second.
 * - Joining (startup, or Redis back after an outage): a replica takes the shared set when there is
 *   one; it seeds the key with its own (its file's) only when the key is empty, and a set replaced
 *   here while Redis was away is written when it returns (the last writer wins).
 * - Failure: commands are bounded (`commandTimeout`), nothing queues while Redis is away
 *   (`enableOfflineQueue: false`), reconnection retries every 0.2-2 s; meanwhile the process
 *   serves from its own memory, `/health` says `degraded` and names the store, the gauge
 *   `echo_state_store_up` is 0 and one line is logged per change of state.
 *
 * - The rate limit (`ECHO_RATE_LIMIT_RPS`): one token bucket for the fleet, refilled and taken in
 *   one Lua step on Redis's clock; while Redis is away each process takes from its own.
 *
 * - Positions, `times` counters and sessions: each step of a scenario is one Lua script on a cursor
 *   hash keyed by the set's hash, generations (moved on by a reset or a new set), the scenario's
 *   index and the session, applying `ScenarioStore.take`'s own rule (ScenarioStore.takeShared).
 *
 * - History: one capped stream the replicas write their entries to, batched, off the requests'
 *   path (shared-history.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Scenario, ScenarioStore, SharedCursorState, SharedCursors } from '../scenario/index.ts';
import { missingPackage } from '../telemetry/optional-packages.ts';
import { EchoConfigError } from './errors.ts';
import type { History } from './history.ts';
import { defineScript } from './redis-script.ts';
import { type FleetHistory, HISTORY_KEYS, startFleetHistory } from './shared-history.ts';

/** The key holding the shared set and the channel announcing a new one. */
export const SCENARIO_KEY = 'echo-chaos:scenarios';

/** The hash of the shared set alone: what the once-a-second check reads. */
const HASH_KEY = 'echo-chaos:scenarios:hash';

/**
 * How often a replica checks the shared set's hash besides the messages: a message published while
 * its subscriber was reconnecting is missed, and the check catches up within this.
 */
const CHECK_EVERY_MS = 1000;

/** How long one Redis command may take before it fails (the echo never waits longer). */
const COMMAND_TIMEOUT_MS = 2000;

/** How long a cursor, a set's generations, outlive their last use in Redis: a day. */
const CURSOR_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * The key of one cursor, inside a script: the set's prefix, its generations (all, and the
 * scenario's: a reset moves them on, so reset cursors are simply never read again and expire), the
 * scenario's index and the session (empty: the requests without one).
 */
const CURSOR_KEY = `
local function cursor_key(index, session)
  local g = redis.call('HMGET', KEYS[1], '*', index)
  return ARGV[1] .. ':' .. (g[1] or '0') .. '.' .. (g[2] or '0') .. ':' .. index .. ':' .. session
end
`;

/** One \`take\`, atomic: the same rule as ScenarioStore.take, on the cursor in Redis. */
const STEP = `${CURSOR_KEY}
local key = cursor_key(ARGV[2], ARGV[3])
local st = redis.call('HMGET', key, 'p', 's', 't')
local p = tonumber(st[1]) or 0
local s = tonumber(st[2]) or 0
local t = tonumber(st[3]) or 0
local count = tonumber(ARGV[4])
local cand = tonumber(ARGV[7])
if cand >= 0 and s == 0 then p = cand end
local reps = {}
for r in string.gmatch(ARGV[6], '[^,]+') do reps[#reps + 1] = tonumber(r) end
local served = p
t = t + 1
s = s + 1
if s >= reps[p + 1] then
  s = 0
  if cand < 0 then
    if p + 1 < count then p = p + 1 elseif ARGV[5] == '1' then p = 0 end
  end
end
redis.call('HSET', key, 'p', p, 's', s, 't', t)
redis.call('HINCRBY', key, 'n' .. served, 1)
redis.call('PEXPIRE', key, ARGV[8])
redis.call('PEXPIRE', KEYS[1], ARGV[8])
return {served, p, s, t}
`;

/** The cursors of the first ARGV[3] scenarios for session ARGV[2]: each as HGETALL gives it. */
const READ = `${CURSOR_KEY}
local out = {}
for i = 0, tonumber(ARGV[3]) - 1 do
  out[#out + 1] = redis.call('HGETALL', cursor_key(tostring(i), ARGV[2]))
end
return out
`;

/**
 * A reset: without a session, the generation of all (no indices) or of each scenario named moves on;
 * with one, that session's cursors of those scenarios (all: ARGV[4] is the count) are deleted.
 */
const RESET = `${CURSOR_KEY}
local session = ARGV[2]
if session == '' then
  if #ARGV == 3 then
    redis.call('HINCRBY', KEYS[1], '*', 1)
  else
    for i = 4, #ARGV do redis.call('HINCRBY', KEYS[1], ARGV[i], 1) end
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
else
  for i = 4, #ARGV do redis.call('DEL', cursor_key(ARGV[i], session)) end
end
return 1
`;

/** One cursor's position set (positionServed 0, its counts kept). */
const SET_POSITION = `${CURSOR_KEY}
local key = cursor_key(ARGV[2], ARGV[3])
redis.call('HSET', key, 'p', ARGV[4], 's', 0)
redis.call('PEXPIRE', key, ARGV[5])
return 1
`;

/**
 * A set written: KEYS the set's key, its hash's key, its generations; ARGV its hash, its JSON,
 * '1' to write only if the shared set is another, the generations' time to live. Publishes the hash
 * on the set's channel. Returns 1 when written, 0 when the shared set was already this one.
 */
const WRITE_SET = `
if ARGV[3] == '1' and redis.call('GET', KEYS[2]) == ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[1])
redis.call('HINCRBY', KEYS[3], '*', 1)
redis.call('PEXPIRE', KEYS[3], ARGV[4])
redis.call('PUBLISH', KEYS[1], ARGV[1])
return 1
`;

/** A cursor from its HGETALL fields (`p`, `s`, `t`, `n<i>`). */
function cursorOf(fields: readonly string[]): SharedCursorState | undefined {
  if (fields.length === 0) return undefined;
  const map = new Map<string, number>();
  for (let i = 0; i + 1 < fields.length; i += 2) map.set(fields[i]!, Number(fields[i + 1]));
  const served: number[] = [];
  for (const [name, value] of map) if (name.startsWith('n')) served[Number(name.slice(1))] = value;
  return { position: map.get('p') ?? 0, positionServed: map.get('s') ?? 0, total: map.get('t') ?? 0, served };
}

/** What the rest of the service sees of the shared store. */
export interface SharedState {
  /** The store, as `/health` names it: its URL without the password. */
  readonly store: string;
  /** Whether the store is reachable now. */
  readonly up: boolean;
  /**
   * Takes a token from the fleet's one bucket (`rps` a second, at most `burst`): 0 when granted,
   * else the milliseconds until the next. `undefined` while the store is away: the caller takes
   * from its own bucket instead.
   */
  takeToken(rps: number, burst: number): Promise<number> | undefined;
  /**
   * Settles once the last set replaced here is in Redis, or could not be written (Redis away: it
   * is written when Redis returns). Never rejects; bounded by the command timeout.
   */
  written(): Promise<void>;
  /** The fleet's history, unless history is off (`ECHO_HISTORY_SIZE=0`). */
  readonly history: FleetHistory | undefined;
  close(): Promise<void>;
}

/**
 * The fleet's token bucket, one atomic step: refilled by Redis's own clock (`TIME`, one clock for
 * every replica), then a token taken or the wait until the next returned. The key expires once
 * idle long enough to be full again.
 */
const TAKE_TOKEN = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rps = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rps / 1000)
  at = now
end
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.ceil((1 - tokens) * 1000 / rps)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(at))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rps) + 1000)
return wait
`;

export interface SharedStateOptions {
  readonly url: URL;
  readonly password: string | undefined;
  readonly scenarios: ScenarioStore;
  /** This process's history: with a store, its entries go to the fleet's stream too. */
  readonly history?: History;
  /** Replaces the store's set with one read from Redis (validated with the service's limits). */
  readonly adopt: (scenarios: readonly Scenario[]) => void;
  readonly logger: Logger;
  /** Told each change of reachability (the gauge). */
  readonly onStatus?: (up: boolean) => void;
}

/** The ioredis the package declares (an optional peer; a test keeps it equal to package.json's). */
export const IOREDIS_VERSION = '^5.11.1';

/** The URL as it may be shown: without the password. */
export function describeStore(url: URL): string {
  const shown = new URL(url.href);
  shown.password = '';
  shown.username = '';
  return shown.href.replace(/\/$/, '');
}

/** Connects (in the background) and keeps the scenario set in step with Redis. */
export async function startSharedState(options: SharedStateOptions): Promise<SharedState> {
  const { url, scenarios, logger } = options;
  const store = describeStore(url);
  const { Redis } = await import('ioredis').catch((err: unknown) => {
    // An optional peer of the package (#35 item 1): installed by whoever names a Redis.
    if (missingPackage(err) !== 'ioredis') throw err;
    throw new EchoConfigError([
      `ECHO_STATE_URL=${JSON.stringify(store)} needs the package ioredis, which is not installed; install it beside echo-chaos: npm install ioredis@${IOREDIS_VERSION}`,
    ]);
  });
  const db = url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0;
  const common = {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port === '' ? 6379 : Number(url.port),
    db,
    ...(url.username === '' ? {} : { username: decodeURIComponent(url.username) }),
    ...(url.password !== ''
      ? { password: decodeURIComponent(url.password) }
      : options.password === undefined
        ? {}
        : { password: options.password }),
    ...(url.protocol === 'rediss:' ? { tls: { servername: url.hostname } } : {}),
    lazyConnect: true,
    enableOfflineQueue: false,
    commandTimeout: COMMAND_TIMEOUT_MS,
    connectTimeout: COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    // Retried for as long as the process runs: every 0.2 s at first, then every 2 s.
    retryStrategy: (times: number) => Math.min(times * 200, 2000),
  };
  const client = new Redis(common);
  const writeSet = defineScript(client, 3, WRITE_SET);
  const step = defineScript(client, 1, STEP);
  const read = defineScript(client, 1, READ);
  const reset = defineScript(client, 1, RESET);
  const setPosition = defineScript(client, 1, SET_POSITION);
  const takeTokenScript = defineScript(client, 1, TAKE_TOKEN);
  const subscriber = new Redis({ ...common, enableOfflineQueue: true });

  let up = false;
  let closed = false;
  /** A set replaced here that Redis has not taken yet (it was away): written when it returns. */
  let unsent: readonly Scenario[] | undefined;
  /** Set while a set read from Redis is being adopted: that replace is not published back. */
  let adopting = false;

  const setUp = (now: boolean, why?: string) => {
    if (now === up) return;
    up = now;
    options.onStatus?.(now);
    if (now) logger.info({ store }, 'shared state: connected; the scenario set is shared');
    else logger.warn({ store, problem: why }, 'shared state: store unreachable; serving from this process');
  };
  const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

  /**
   * Writes the set (its hash in `HASH_KEY`), moves its generation on (a set replaced starts again,
   * as it does in one process, even when it is the same set) and announces it; with `ifChanged` (a
   * conditional push) nothing happens when the shared set is already this one.
   */
  const write = async (set: readonly Scenario[], ifChanged = false) => {
    const hash = scenarios.contentHash();
    await writeSet(
      SCENARIO_KEY,
      HASH_KEY,
      `echo-chaos:gen:${hash}`,
      hash,
      JSON.stringify({ hash, scenarios: set }),
      ifChanged ? '1' : '0',
      CURSOR_TTL_MS,
    );
  };

  /** Reads the shared set and adopts it when it differs from this process's. */
  const pull = async () => {
    const text = await client.get(SCENARIO_KEY);
    if (text === null) return false;
    const shared = JSON.parse(text) as { hash: string; scenarios: Scenario[] };
    if (shared.hash === scenarios.contentHash()) return true;
    adopting = true;
    try {
      options.adopt(shared.scenarios);
      logger.info({ store, scenarios: scenarios.size }, 'shared state: scenario set adopted');
    } catch (error) {
      logger.warn(
        { store, problem: errorText(error) },
        'shared state: the shared scenario set was refused here',
      );
    } finally {
      adopting = false;
    }
    return true;
  };

  // The first join (or the first failure to connect): startup waits for it, so a replica serves
  // its first request with the fleet's set and writes its first entry to the fleet's history.
  let joinedOnce: () => void = () => {};
  const firstJoin = new Promise<void>((resolve) => {
    joinedOnce = resolve;
  });

  /** On (re)connecting: send what changed here while away, else take the shared set (or seed it). */
  const join = async () => {
    try {
      if (unsent !== undefined) {
        const set = unsent;
        unsent = undefined;
        await write(set);
      } else if (!(await pull()) && scenarios.size > 0) {
        // Seeded only if still empty: a set another replica writes meanwhile (one posted while
        // Redis was away, say) is newer than this file's, and must not be overwritten by it.
        const hash = scenarios.contentHash();
        const seeded = await client.set(
          SCENARIO_KEY,
          JSON.stringify({ hash, scenarios: scenarios.list() }),
          'NX',
        );
        if (seeded === 'OK') await client.multi().set(HASH_KEY, hash).publish(SCENARIO_KEY, hash).exec();
        else await pull();
      }
      setUp(true);
    } catch (error) {
      setUp(false, errorText(error));
    }
    joinedOnce();
  };

  let lastWrite: Promise<void> = Promise.resolve();
  scenarios.onReplace = (set, how) => {
    if (adopting || closed) return;
    if (!up) {
      unsent = set;
      return;
    }
    lastWrite = write(set, how.ifChanged === true).catch((error: unknown) => {
      unsent = set;
      setUp(false, errorText(error));
    });
  };

  client.on('ready', () => void join());
  // Catching up on a missed message: one small GET a second while connected.
  const check = setInterval(() => {
    if (!up || closed || unsent !== undefined) return;
    client
      .get(HASH_KEY)
      .then((hash) => {
        if (hash !== null && hash !== scenarios.contentHash()) return pull();
        return undefined;
      })
      .catch(() => {});
  }, CHECK_EVERY_MS);
  check.unref();
  client.on('error', (error: unknown) => setUp(false, errorText(error)));
  client.on('close', () => setUp(false, 'connection closed'));
  subscriber.on('error', () => {});
  subscriber.on('message', (channel: string, hash: string) => {
    // A `DELETE /history` on any replica: this one's own copy goes too.
    if (channel === HISTORY_KEYS.cleared) {
      if (!closed) options.history?.clear();
      return;
    }
    if (closed || hash === scenarios.contentHash()) return;
    pull().catch((error: unknown) => setUp(false, errorText(error)));
  });
  // ioredis subscribes again after a reconnect by itself.
  subscriber.subscribe(SCENARIO_KEY, HISTORY_KEYS.cleared).catch(() => {});
  client.connect().catch((error: unknown) => setUp(false, errorText(error)));
  client.once('error', () => joinedOnce());
  await Promise.race([firstJoin, sleep(COMMAND_TIMEOUT_MS, undefined, { ref: false })]);
  if (!up)
    logger.warn(
      { store },
      'shared state: store unreachable at startup; serving from this process until it is reached',
    );

  const gens = (set: string) => `echo-chaos:gen:${set}`;
  const prefix = (set: string) => `echo-chaos:cur:${set}`;
  const cursors: SharedCursors = {
    get up() {
      return up;
    },
    async step(set, rule, session) {
      const [response, position, positionServed, total] = (await step(
        gens(set),
        prefix(set),
        rule.index,
        session ?? '',
        rule.repeats.length,
        rule.cycle ? '1' : '0',
        rule.repeats.join(','),
        rule.candidate,
        CURSOR_TTL_MS,
      )) as number[];
      return {
        response: Number(response),
        position: Number(position),
        positionServed: Number(positionServed),
        total: Number(total),
      };
    },
    async read(set, count, session) {
      if (count === 0) return [];
      const rows = (await read(gens(set), prefix(set), session ?? '', count)) as string[][];
      return rows.map(cursorOf);
    },
    async reset(set, indices, session) {
      const all = indices ?? (session === undefined ? [] : [...Array(scenarios.size).keys()]);
      await reset(gens(set), prefix(set), session ?? '', CURSOR_TTL_MS, ...all);
    },
    async setPosition(set, index, session, position) {
      await setPosition(gens(set), prefix(set), index, session ?? '', position, CURSOR_TTL_MS);
    },
  };
  scenarios.shared = cursors;

  const takeToken = (rps: number, burst: number): Promise<number> | undefined => {
    if (!up) return undefined;
    // Replicas with other settings keep their own bucket rather than one they disagree on.
    const key = `echo-chaos:ratelimit:${rps}:${burst}`;
    return takeTokenScript(key, rps, burst).then(Number);
  };

  const fleetHistory =
    options.history === undefined || options.history.capacity === 0
      ? undefined
      : startFleetHistory({
          client,
          history: options.history,
          up: () => up && !closed,
          onError: (error) => setUp(false, errorText(error)),
        });

  return {
    store,
    takeToken,
    history: fleetHistory,
    written: () => lastWrite,
    get up() {
      return up;
    },
    async close() {
      closed = true;
      clearInterval(check);
      fleetHistory?.close();
      if (scenarios.shared === cursors) scenarios.shared = undefined;
      scenarios.onReplace = undefined;
      client.disconnect();
      subscriber.disconnect();
    },
  };
}
