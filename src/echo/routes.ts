import { errorCodes, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import {
  checkPatternsAhead,
  isScenarioError,
  loadScenarioDocument,
  MAX_DOCUMENT_DEPTH,
  MAX_SET_NODES,
  type Scenario,
  type ScenarioInvalidError,
  type ScenarioSelector,
  scenarioPatternTexts,
  withPatternVerdicts,
} from '../scenario/index.ts';
import { type EchoConfig, scenarioLimits } from './config.ts';
import { isSessionId, SESSION_FORM } from './controls.ts';
import { EchoError, isEchoError } from './errors.ts';
import { GRPC_PROTOCOL } from './grpc/history.ts';
import { replayGrpc } from './grpc/index.ts';
import { countMatching, filteredPage, isFiltered, localSource } from './history-filter.ts';
import {
  nextPageUrl,
  parseHistoryCountQuery,
  parseHistoryDeleteQuery,
  parseHistoryQuery,
} from './history-query.ts';
import { historyStream } from './history-stream.ts';
import { readJsonBody, readTextBody } from './json-body.ts';
import { protocolOf } from './pipeline.ts';
import { loadUndici, parseReplayRequest, parseTarget, replay } from './replay.ts';
import { createGuardedConnector, ReplayGuard, type ReplayResolver } from './replay-guard.ts';
import { ifMatchHits, ifNoneMatchHits } from './scenario-etag.ts';
import type { FleetHistory } from './shared-history.ts';
import { type EchoState, EVENT_LOOP_RESOLUTION_MS } from './state.ts';
import { formatUptime, HOSTNAME, VERSION } from './version.ts';

/** What the service's routes take besides the state. */
export interface ServiceRouteOptions {
  /** How `POST /replay` resolves a target's name before checking it (replay-guard.ts). */
  readonly replayResolver?: ReplayResolver | undefined;
  /** The connections open now, as `ECHO_MAX_CONNECTIONS` counts them (the transport's). */
  readonly openConnections?: (() => number) | undefined;
}

/** Routes never rate limited: probes and scrapes must not flap. */
export const UNLIMITED_PATHS: ReadonlySet<string> = new Set(['/health', '/ready', '/metrics']);

const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml'];

/**
 * Largest YAML body of `POST /scenario`: 1 MiB. js-yaml reads about 50 MiB a second in one turn of
 * the event loop, so a 32 MiB set held `/health` for over half a second (issue #30); JSON sets are
 * read piece by piece and may be up to `ECHO_MAX_SCENARIO_BODY`.
 */
export const MAX_YAML_SET_BYTES = 1024 * 1024;

/** A JSON body of at least this many characters is parsed in a turn of its own (1 MiB). */
const PARSE_APART_CHARS = 1024 * 1024;

/** Largest body of a control request (`/control/*`, `/scenario/state`, `/scenario/reset`): 16 KiB. */
export const MAX_CONTROL_BODY_BYTES = 16 * 1024;
/** Most values in a JSON body of a service route other than `POST /scenario` (which takes a set's). */
export const MAX_JSON_NODES = 100_000;
/** Route options of the control routes: a small body limit, and a 413 that says so. */
const CONTROL_BODY = { bodyLimit: MAX_CONTROL_BODY_BYTES, config: { controlBody: true } } as const;

/**
 * The service's JSON parser: the body read as it arrives, its nesting and the values it holds
 * bounded from the text (a deep or crowded body would cost seconds to build and could not be
 * printed back) and its keys looked at, piece by piece (json-body.ts), then parsed in one
 * `JSON.parse`. A body with a `__proto__` or `constructor` key is parsed by fastify's own parser,
 * which refuses `__proto__` and `constructor.prototype` with a 400.
 */
function registerJsonParser(app: FastifyInstance): void {
  const careful = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', (request, payload, done) => {
    const maxValues = request.routeOptions.url === '/scenario' ? MAX_SET_NODES : MAX_JSON_NODES;
    readJsonBody(request, payload, { maxDepth: MAX_DOCUMENT_DEPTH, maxValues }, (error, read) => {
      if (error !== null || read === undefined) return done(error, undefined);
      if (read.kind === 'too-deep') {
        const nests = `nests deeper than ${MAX_DOCUMENT_DEPTH} levels of arrays and objects`;
        return done(new EchoError('ECHO_ERR_BODY_TOO_COMPLEX', [nests]), undefined);
      }
      if (read.kind === 'too-many') {
        return done(
          new EchoError('ECHO_ERR_BODY_TOO_COMPLEX', [`holds more than ${maxValues} values`]),
          undefined,
        );
      }
      // Its depth and values were counted from the text (the same count as measureTree's): parsed,
      // it is within both bounds.
      const { text, suspect } = read;
      const parse = () => {
        if (suspect) {
          return careful(request, text, (parseError, value) =>
            done(parseError ? poisoningOrInvalid(text, parseError) : null, parseError ? undefined : value),
          );
        }
        if (text.length === 0) return done(new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY(), undefined);
        let value: unknown;
        try {
          // A byte order mark is dropped, as fastify's parser does.
          value = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
        } catch {
          return done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(), undefined);
        }
        done(null, value);
      };
      // Joining a large body's pieces and parsing it are two turns of the event loop, not one.
      if (text.length >= PARSE_APART_CHARS) setImmediate(parse);
      else parse();
    });
  });
}

/**
 * fastify's parser refuses a `__proto__` key (or `constructor.prototype`) with the error of a body
 * that is not JSON at all: when the text is JSON, say what was refused and why.
 */
function poisoningOrInvalid(text: string, error: Error): Error {
  try {
    JSON.parse(text);
  } catch {
    return error;
  }
  return new EchoError('ECHO_ERR_FORBIDDEN_JSON_KEY', []);
}

/**
 * The service routes read their bodies as they are: a compressed one (`Content-Encoding: gzip`) is
 * refused as such, before it is read, rather than parsed as broken JSON. Echo paths mirror any body.
 */
function refuseEncodedBodies(app: FastifyInstance): void {
  // A callback hook, not an async one: it runs on every request (the echo's too), and almost none
  // has an encoded body; a promise and a microtask each would be their whole cost.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    const encoding = request.headers['content-encoding'];
    if (encoding === undefined || /^\s*(identity\s*)?$/i.test(encoding)) return done(null, payload);
    const length = request.headers['content-length'];
    const hasBody =
      request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
    if (!hasBody) return done(null, payload);
    done(new EchoError('ECHO_ERR_UNSUPPORTED_CONTENT_ENCODING', [JSON.stringify(encoding.slice(0, 64))]));
  });
}

/** The service's own routes: health, readiness, info, metrics, history, replay, scenarios. */
export async function registerServiceRoutes(
  app: FastifyInstance,
  state: EchoState,
  options: ServiceRouteOptions = {},
): Promise<void> {
  const { config, history, scenarios, metrics } = state;
  // The service's own bodies are JSON (and YAML for /scenario, below): fastify's default text/plain
  // parser would hand a plain string on to the routes, which must answer 415 instead.
  app.removeContentTypeParser('text/plain');
  registerJsonParser(app);
  refuseEncodedBodies(app);

  app.get('/health', async (_request, reply) => {
    const uptimeSeconds = uptime(state);
    const mem = process.memoryUsage();
    // A liveness fault set by PUT /control/liveness: the same body, status unhealthy, 503.
    if (!state.lifecycle.healthy) reply.code(503);
    // A shared store that is away degrades the service (each process serves from its own memory)
    // without failing liveness: restarting the pod would not bring Redis back.
    const shared = state.shared;
    const status = !state.lifecycle.healthy
      ? 'unhealthy'
      : shared !== undefined && !shared.up
        ? 'degraded'
        : 'healthy';
    return {
      status,
      lifecycle: { ...state.lifecycle },
      ...(shared === undefined ? {} : { store: { url: shared.store, status: shared.up ? 'up' : 'down' } }),
      timestamp: new Date().toISOString(),
      uptime: formatUptime(uptimeSeconds),
      uptime_seconds: Math.round(uptimeSeconds * 1000) / 1000,
      metrics: {
        requests: state.requestCount,
        in_flight: app.obs.drainState.inFlight,
        open_websockets: state.openStreams.ws,
        open_sse_streams: state.openStreams.sse,
        history_size: history.size,
        history_bytes: history.storedBytes,
        scenario_count: scenarios.size,
        rss_bytes: mem.rss,
        heap_used_bytes: mem.heapUsed,
        event_loop_lag_ms: eventLoopLagMs(state),
      },
    };
  });

  app.get('/ready', async (_request, reply) => {
    if (state.drain.signal.aborted) return reply.code(503).send({ status: 'draining' });
    if (!state.lifecycle.ready) {
      return reply.code(503).send({ status: 'not ready', reason: 'set by PUT /control/readiness' });
    }
    // obs's readiness follows its health (drain, container memory, dependencies): ready while UP or DEGRADED.
    const obs = await app.obs.readiness();
    if (!obs.ready) return reply.code(503).send({ status: 'not ready', checks: obs.checks });
    return { status: 'ready' };
  });

  app.get('/info', async (request) => {
    const raw = request.raw;
    const url = raw.url ?? '/';
    const q = url.indexOf('?');
    const length = request.headers['content-length'];
    return {
      method: request.method,
      path: q === -1 ? url : url.slice(0, q),
      url,
      query: q === -1 ? '' : url.slice(q + 1),
      remote_addr: request.ip,
      request_id: request.id,
      protocol: protocolOf(request),
      tls: request.protocol === 'https',
      user_agent: request.headers['user-agent'] ?? '',
      content_type: request.headers['content-type'] ?? '',
      body_size: length === undefined ? 0 : Number(length),
      headers: request.headers,
      server: {
        hostname: HOSTNAME,
        version: VERSION,
        uptime: formatUptime(uptime(state)),
        start_time: state.startedAt.toISOString(),
        request_count: state.requestCount,
        node_version: process.version,
        admin_token_required: config.adminToken !== undefined || config.adminTokenFile !== undefined,
        lifecycle: { ...state.lifecycle },
        faults: {
          enabled: state.faults.enabled,
          active: state.faults.active,
          max_active: state.faults.maxActive,
        },
        limits: limitsInfo(config, options.openConnections?.() ?? 0),
        // Reverse proxy mode (`ECHO_UPSTREAM`): where what no scenario answers goes; `null`: echoed.
        proxy:
          config.upstream === undefined
            ? null
            : {
                upstream: config.upstream.href.replace(/\/$/, ''),
                timeout_ms: config.upstreamTimeoutMs,
                host_header: config.upstreamHostHeader,
              },
      },
    };
  });

  app.get('/metrics', async (request, reply) => {
    reply.type(metrics.registry.contentType);
    // prom-client spells an unknown value `Nan` (e.g. the event-loop lag before its first sample);
    // the exposition format's is `NaN`, which Prometheus parses either way but promtool and strict
    // parsers do not.
    const own = (await metrics.registry.metrics()).replace(/ Nan$/gm, ' NaN');
    if (state.metricsText === undefined) return own;
    // The OpenTelemetry meters: a failure to collect them never fails the scrape of the others.
    const more = await state.metricsText().catch((error: unknown) => {
      request.log.warn({ err: error }, 'OpenTelemetry metrics collection failed');
      return '';
    });
    return more === '' ? own : `${own.endsWith('\n') || own === '' ? own : `${own}\n`}${more}`;
  });

  /**
   * With a shared store (ECHO_STATE_URL) that is up, a history route reads the fleet's history:
   * `read` runs on it, after the entries this process has queued are written (a client reading
   * right after its own requests sees them). Answers undefined when the fleet cannot be read (no
   * store, the store away, a command that failed): the route reads this process's history then.
   * A refusal of the request itself (an EchoError: a bad query) is thrown, not read around.
   */
  const fromFleet = async <T>(
    request: FastifyRequest,
    reply: FastifyReply,
    read: (fleet: FleetHistory) => Promise<T>,
  ): Promise<T | undefined> => {
    const fleet = state.shared?.history;
    if (fleet?.up === true) {
      try {
        await fleet.flushed();
        const result = await read(fleet);
        reply.header('x-echo-history-scope', 'fleet');
        return result;
      } catch (error) {
        if (isEchoError(error)) throw error;
        request.log.warn({ err: error }, 'the shared history could not be read: answering from this process');
      }
    }
    // Said only where there is a fleet to tell apart: one process's answers are as they were.
    if (state.shared !== undefined) reply.header('x-echo-history-scope', 'process');
    return undefined;
  };

  // A page of history, streamed entry by entry (secrets masked as the History's view says); the
  // next page's cursor goes in headers so that the body stays the plain array it always was.
  app.get('/history', async (request, reply) => {
    const fleet = await fromFleet(request, reply, async (f) => {
      const query = parseHistoryQuery(request.query, await f.nextSeq());
      return { query, ...(await f.page(query.cursor, query.limit, query.filter)) };
    });
    const query = fleet?.query ?? parseHistoryQuery(request.query, history.nextSeq);
    const page =
      fleet !== undefined
        ? fleet.page
        : isFiltered(query.filter)
          ? await filteredPage(localSource(history), query.cursor, query.limit, query.filter)
          : history.page(query.cursor, query.limit);
    if (page?.nextCursor !== undefined) {
      reply.header('link', `<${nextPageUrl(query, page.nextCursor)}>; rel="next"`);
      reply.header('x-echo-history-next-cursor', String(page.nextCursor));
    }
    reply.type('application/json; charset=utf-8');
    const body = historyStream(fleet?.copy ?? history, page);
    // What a copy of the fleet's entries holds counts against ECHO_HISTORY_MAX_BYTES until sent.
    if (fleet !== undefined) body.once('close', fleet.release);
    return reply.send(body);
  });

  // What a test asks of history most ("my service called /pay exactly twice"), without the entries.
  app.get('/history/count', async (request, reply) => {
    const filter = parseHistoryCountQuery(request.query);
    const count =
      (await fromFleet(request, reply, (fleet) => fleet.count(filter))) ??
      (isFiltered(filter) ? await countMatching(localSource(history), filter) : history.size);
    return { count };
  });

  // Between two tests, so that the next one counts its own requests only. Behind the admin token
  // like every history route (admin-auth.ts), answered as the other admin writes are: what changed.
  // With a shared store, the fleet's history goes (and this process's own copy with it).
  app.delete('/history', async (request, reply) => {
    parseHistoryDeleteQuery(request.query);
    const fleet = await fromFleet(request, reply, (f) => f.clear());
    const local = history.clear();
    const deleted = fleet ?? local;
    request.log.warn({ deleted }, `history cleared: ${deleted} entries deleted`);
    return { status: 'history cleared', deleted };
  });

  // One connection pool for every replay, bounded in time at each phase, connect included.
  const agentOptions = {
    headersTimeout: config.replayTimeoutMs,
    bodyTimeout: config.replayTimeoutMs,
    connections: 64,
  };
  // Targets named in the request go through the guard (ECHO_REPLAY_ALLOWED_TARGETS): it resolves,
  // checks every address and dials the checked one.
  const guard = new ReplayGuard(config.replayAllowedTargets, options.replayResolver);
  // Made on the first replay (undici loads then, see loadUndici).
  let agents: Promise<{ replay: Dispatcher; self: Dispatcher }> | undefined;
  const replayAgents = () => {
    agents ??= loadUndici().then((undici) => ({
      replay: new undici.Agent({
        ...agentOptions,
        connect: createGuardedConnector(undici, guard, { timeout: config.replayTimeoutMs }),
      }),
      // A replay to this server itself dials its own address: under TLS its certificate may be the
      // generated self-signed one, or name another host, so only there it is not verified.
      self: new undici.Agent({
        ...agentOptions,
        connect: {
          timeout: config.replayTimeoutMs,
          ...(config.enableTls ? { rejectUnauthorized: false } : {}),
        },
      }),
    }));
    return agents;
  };
  app.addHook('onClose', async () => {
    if (agents === undefined) return;
    const { replay: toTargets, self } = await agents;
    await Promise.all([toTargets.close(), self.close()]);
  });

  app.post('/replay', async (request: FastifyRequest, reply: FastifyReply) => {
    const body = parseReplayRequest(request.body);
    // A target is judged before anything else: a refused one is a 403 whatever the id names, so
    // the answer says nothing of what history holds (and the README's example is what it shows).
    if (body.target !== undefined) {
      const target = new URL(parseTarget(body.target));
      await guard.resolveChecked(
        target.hostname,
        Number(target.port || (target.protocol === 'https:' ? 443 : 80)),
      );
    }
    const dispatchers = await replayAgents();
    // An id any replica handed out, with a shared store (X-Echo-History-Id, GET /history).
    const source = (await fromFleet(request, reply, (fleet) => fleet.find(body.id))) ?? history;
    // A gRPC call replays through a gRPC client (grpc/index.ts), answered as JSON.
    const stored = source.get(body.id);
    if (stored?.protocol === GRPC_PROTOCOL) {
      const answer = await replayGrpc(state, stored, body, config);
      return reply.header('x-echo-replay-of', body.id).send(answer);
    }
    const result = await replay(source, body, {
      selfBaseUrl: selfBaseUrl(app, request.protocol === 'https' ? 'https' : 'http', config.port),
      timeoutMs: config.replayTimeoutMs,
      credentials: config.replayCredentials,
      dispatcher: body.target === undefined ? dispatchers.self : dispatchers.replay,
    });
    reply.code(result.status).header('x-echo-replay-of', body.id);
    if (result.contentType !== undefined) reply.type(result.contentType);
    if (result.location !== undefined) reply.header('location', result.location);
    return reply.send(result.body);
  });

  registerControls(app, state);

  // The ETag is the set's content hash: the operator reads it back after each push (a 304 proves it).
  app.get('/scenario', async (request, reply) => {
    const etag = `"${scenarios.contentHash()}"`;
    reply.header('etag', etag);
    if (ifNoneMatchHits(request.headers['if-none-match'], etag)) return reply.code(304).send();
    return scenarios.list();
  });
  registerScenarioState(app, state);

  // YAML is accepted by /scenario alone, so its parser lives in a scope of its own.
  await app.register(async (scope) => {
    const tooLarge = () => new EchoError('ECHO_ERR_SCENARIO_YAML_TOO_LARGE', [MAX_YAML_SET_BYTES]);
    scope.addContentTypeParser(YAML_TYPES, (request, payload, done) =>
      readTextBody(request, payload, MAX_YAML_SET_BYTES, tooLarge, (error, text) =>
        done(error, error === null ? new YamlBody(text ?? '') : undefined),
      ),
    );
    registerScenarioPost(scope, state);
  });
}

/**
 * Run-time switches. Kubernetes lifecycle faults: `PUT /control/readiness {"ready": false}` makes
 * `/ready` answer 503 (the drain still wins), `PUT /control/liveness {"healthy": false}` makes
 * `/health` answer 503, until set back. The master switch of faults: `PUT /control/faults
 * {"enabled": false}` serves every echo request plainly. Each answers the previous and the current
 * value; `GET` reads it.
 */
function registerControls(app: FastifyInstance, state: EchoState): void {
  const control = <F extends string>(route: string, field: F, target: Record<F, boolean>, what: string) => {
    app.get(route, async () => ({ [field]: target[field] }));
    app.put(route, CONTROL_BODY, async (request) => {
      const body = request.body as unknown;
      const expected = `expected a JSON object {"${field}": true} or {"${field}": false}`;
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        throw new EchoError('ECHO_ERR_INVALID_CONTROL', [expected]);
      }
      const keys = Object.keys(body);
      const value = (body as Record<string, unknown>)[field];
      if (keys.length !== 1 || typeof value !== 'boolean') {
        throw new EchoError('ECHO_ERR_INVALID_CONTROL', [
          `${expected}, got ${JSON.stringify(body).slice(0, 100)}`,
        ]);
      }
      const previous = target[field];
      target[field] = value;
      if (previous !== value) {
        request.log.warn({ control: field, previous, current: value }, `${what}: ${field} set to ${value}`);
        if (target === state.lifecycle) state.lifecycleEvents.dispatchEvent(new Event('change'));
      }
      return { previous: { [field]: previous }, current: { [field]: value } };
    });
  };
  control('/control/readiness', 'ready', state.lifecycle, 'lifecycle fault');
  control('/control/liveness', 'healthy', state.lifecycle, 'lifecycle fault');
  control('/control/faults', 'enabled', state.faults, 'fault switch');
}

/**
 * A YAML body, as its parser hands it on. A class of its own, so that a JSON body shaped like it
 * (`{"yaml": "..."}`) is still validated as JSON, and refused for not being an array.
 */
class YamlBody {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

function registerScenarioPost(app: FastifyInstance, state: EchoState): void {
  const { config, scenarios } = state;
  // Its own limit, apart from MAX_BODY_SIZE: the largest set is larger than the default echo body.
  const limit = { bodyLimit: config.maxScenarioBodyBytes, config: { scenarioBody: true } } as const;
  // Sets are loaded one at a time, in the order their requests arrived: checking a set's patterns
  // yields to the event loop, and a smaller set posted later must not be overwritten by a larger
  // one posted before it that finishes after.
  let previous: Promise<unknown> = Promise.resolve();
  app.post('/scenario', limit, (request) => {
    const condition = request.headers['if-none-match'];
    const expected = request.headers['if-match'];
    const turn = previous.then(() => {
      // With If-Match (the console: the tag of the set it read), a set changed since is not replaced.
      if (expected !== undefined) {
        const etag = `"${scenarios.contentHash()}"`;
        if (!ifMatchHits(expected, etag)) {
          throw new EchoError('ECHO_ERR_SCENARIO_SET_CHANGED', [expected.slice(0, 100), etag]);
        }
      }
      return loadSet(request.body as unknown, condition);
    });
    previous = turn.catch(() => {});
    return turn;
  });

  /**
   * Replaces the set with `input`. With `If-None-Match` (`condition`: what the operator sends with
   * each push, the hash of the set it pushes) a set this process already holds is not replaced (a
   * 412 says so, its positions go on), and with a shared store the set is written to it only if
   * the shared set is another: pushing one set to every replica restarts it once.
   */
  async function loadSet(
    input: unknown,
    condition: string | undefined,
  ): Promise<{ status: string; count: number }> {
    if (condition !== undefined) {
      const etag = `"${scenarios.contentHash()}"`;
      if (ifNoneMatchHits(condition, etag)) throw new EchoError('ECHO_ERR_SCENARIO_SET_HELD', [etag]);
    }
    const document = input instanceof YamlBody ? parseYaml(input.text) : input;
    // RE2's check of a pattern takes tens of microseconds and a set may hold 66,000 patterns:
    // seconds of work, done ahead a few milliseconds at a time (issue #30).
    const ahead = await checkPatternsAhead(scenarioPatternTexts(document));
    const answer = withPatternVerdicts(ahead, () => {
      // Validated once, by the store (anything at all gives a result there, never a throw but this).
      try {
        scenarios.replace(document as readonly Scenario[], scenarioLimits(config), {
          ifChanged: condition !== undefined,
        });
      } catch (error) {
        if (isScenarioError(error) && error.code === 'SCENARIO_ERR_INVALID')
          throw invalidScenarios((error as ScenarioInvalidError).problems);
        throw error;
      }
      return { status: 'scenarios updated', count: scenarios.size };
    });
    // With a shared store (ECHO_STATE_URL) the answer waits until the set is in it: every replica
    // is then told of it (or, with the store away, it is written when the store returns).
    if (state.shared !== undefined) await state.shared.written();
    return answer;
  }
}

function invalidScenarios(problems: ReadonlyArray<{ path: string; message: string }>): EchoError {
  const details = problems.map((p) => ({ field: p.path, message: p.message }));
  // A problem of the whole set (its path is the empty pointer) is said without a location.
  const summary = details.map((d) => (d.field === '' ? d.message : `${d.field}: ${d.message}`)).join('; ');
  return new EchoError('ECHO_ERR_INVALID_SCENARIOS', [summary], { details });
}

/** A YAML body as the document it holds; one that does not parse is a 400 naming where. */
function parseYaml(text: string): unknown {
  try {
    return loadScenarioDocument(text, 'request body');
  } catch (err) {
    throw invalidScenarios([{ path: '', message: (err as Error).message }]);
  }
}

/**
 * Scenario state: `GET /scenario/state` lists where each scenario stands (`?session=<id>`: for that
 * `X-Echo-Session`); `POST /scenario/reset` starts every scenario again (or one, by `{"name"}`, or
 * those of one `{"path"}`: a path or pathPattern as written; with `"session"`, for that session
 * only); `PUT /scenario/state {"name"|"path", "position", "session"?}` moves one scenario.
 * A selector that names nothing is a 404 `ECHO_ERR_SCENARIO_NOT_FOUND`; a malformed body or query,
 * a path naming several scenarios (for PUT), a scenario of `order: random` (for PUT) or a position
 * out of range a 400 `ECHO_ERR_INVALID_SCENARIO_STATE`; either way nothing changes.
 */
function registerScenarioState(app: FastifyInstance, state: EchoState): void {
  const { scenarios } = state;
  app.get('/scenario/state', async (request) => {
    const session = parseSessionQuery(request.query);
    // With a shared home (ECHO_STATE_URL, up), where the fleet stands; else this process.
    const states = (s?: string) => (scenarios.sharing ? scenarios.statesShared(s) : scenarios.states(s));
    if (session !== undefined) return { session, scenarios: await states(session) };
    return { scenarios: await states(), sessions: scenarios.counts().sessions };
  });

  app.post('/scenario/reset', CONTROL_BODY, async (request) => {
    const body = request.body as unknown;
    if (body === undefined || body === null || (isPlainObject(body) && Object.keys(body).length === 0)) {
      return {
        status: 'scenarios reset',
        scenarios: scenarios.sharing ? await scenarios.resetShared() : scenarios.reset(),
      };
    }
    const expected =
      'expected no body, {} or {"name": "..."} or {"path": "..."}, or {"session": "..."} alone or beside either';
    const session = parseSessionField(body, expected);
    const selector = parseSelector(body, ['session'], expected, session !== undefined);
    const reset = scenarios.sharing
      ? await scenarios.resetShared(selector, session)
      : scenarios.reset(selector, session);
    if (reset.length === 0 && selector !== undefined) {
      throw new EchoError('ECHO_ERR_SCENARIO_NOT_FOUND', [describeSelector(selector)]);
    }
    return { status: 'scenarios reset', ...(session === undefined ? {} : { session }), scenarios: reset };
  });

  app.put('/scenario/state', CONTROL_BODY, async (request) => {
    const body = request.body as unknown;
    const expected =
      'expected {"name": "...", "position": N} or {"path": "...", "position": N}, with an optional "session"';
    const session = parseSessionField(body, expected);
    const selector = parseSelector(body, ['position', 'session'], expected)!;
    const position = (body as Record<string, unknown>)['position'];
    if (typeof position !== 'number' || !Number.isInteger(position)) {
      throw new EchoError('ECHO_ERR_INVALID_SCENARIO_STATE', [
        `position must be an integer, got ${JSON.stringify(position) ?? 'nothing'}`,
      ]);
    }
    const result = scenarios.sharing
      ? await scenarios.setPositionShared(selector, position, session)
      : scenarios.setPosition(selector, position, session);
    if (!result.ok) {
      if (result.reason === 'not-found') {
        throw new EchoError('ECHO_ERR_SCENARIO_NOT_FOUND', [describeSelector(selector)]);
      }
      throw new EchoError('ECHO_ERR_INVALID_SCENARIO_STATE', [result.message]);
    }
    return {
      status: 'scenario position set',
      ...(session === undefined ? {} : { session }),
      scenario: result.state,
    };
  });
}

/** `?session=<id>` of `GET /scenario/state`, the only parameter it takes; `undefined` without. */
function parseSessionQuery(query: unknown): string | undefined {
  const params = isPlainObject(query) ? query : {};
  const unknown = Object.keys(params).filter((key) => key !== 'session');
  if (unknown.length > 0) {
    throw new EchoError('ECHO_ERR_INVALID_SCENARIO_STATE', [
      `GET /scenario/state takes only ?session=<id>, got ${unknown.map((key) => JSON.stringify(key).slice(0, 100)).join(', ')}`,
    ]);
  }
  const session = params['session'];
  if (session === undefined) return undefined;
  if (!isSessionId(session)) {
    throw new EchoError('ECHO_ERR_INVALID_SCENARIO_STATE', [
      `session must be ${SESSION_FORM}, got ${(JSON.stringify(session) ?? 'nothing').slice(0, 200)}`,
    ]);
  }
  return session;
}

/** A body's `"session"`, when it has one. */
function parseSessionField(body: unknown, expected: string): string | undefined {
  if (!isPlainObject(body) || !Object.hasOwn(body, 'session')) return undefined;
  const session = body['session'];
  if (!isSessionId(session)) {
    throw new EchoError('ECHO_ERR_INVALID_SCENARIO_STATE', [
      `session must be ${SESSION_FORM}, got ${(JSON.stringify(session) ?? 'nothing').slice(0, 200)} (${expected})`,
    ]);
  }
  return session;
}

/**
 * `{"name": "..."}` or `{"path": "..."}`, plus the `extra` keys a route reads itself; with
 * `optional`, neither is fine too (`undefined`).
 */
function parseSelector(
  body: unknown,
  extra: readonly string[],
  expected: string,
  optional = false,
): ScenarioSelector | undefined {
  const fail = (): never => {
    throw new EchoError('ECHO_ERR_INVALID_SCENARIO_STATE', [
      `${expected}, got ${(JSON.stringify(body) ?? 'nothing').slice(0, 200)}`,
    ]);
  };
  if (!isPlainObject(body)) return fail();
  const keys = Object.keys(body).filter((key) => !extra.includes(key));
  if (keys.length === 0 && optional) return undefined;
  if (keys.length !== 1) return fail();
  const [key] = keys;
  const value = body[key!];
  if ((key !== 'name' && key !== 'path') || typeof value !== 'string' || value === '') return fail();
  return key === 'name' ? { name: value as string } : { path: value as string };
}

function describeSelector(selector: ScenarioSelector): string {
  return 'name' in selector
    ? `name ${JSON.stringify(selector.name)}`
    : `path ${JSON.stringify(selector.path)}`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Mean event-loop lag: the histogram records timer delays, which include the sampling interval. */
function eventLoopLagMs(state: EchoState): number {
  const mean = state.eventLoopDelay.mean;
  if (!Number.isFinite(mean)) return 0;
  return Math.max(0, Math.round((mean / 1e6 - EVENT_LOOP_RESOLUTION_MS) * 100) / 100);
}

/** This server's own address as a client reaches it: a wildcard listen becomes loopback. */
function selfBaseUrl(app: FastifyInstance, scheme: string, fallbackPort: number): string {
  const address = app.server.address();
  if (typeof address !== 'object' || address === null) return `${scheme}://127.0.0.1:${fallbackPort}`;
  let host = address.address;
  if (host === '0.0.0.0') host = '127.0.0.1';
  else if (host === '::') host = '::1';
  return `${scheme}://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
}

function uptime(state: EchoState): number {
  return (Date.now() - state.startedAt.getTime()) / 1000;
}

/** What `/info` shows of the limits in effect. */
function limitsInfo(config: EchoConfig, openConnections: number) {
  return {
    headers_timeout_ms: config.headersTimeoutMs,
    request_timeout_ms: config.requestTimeoutMs,
    keep_alive_timeout_ms: config.keepAliveTimeoutMs,
    max_connections: config.maxConnections,
    open_connections: openConnections,
    h2_max_concurrent_streams: config.h2MaxConcurrentStreams,
    max_concurrent_compression: config.maxConcurrentCompression,
    history_max_entries: config.historySize,
    history_max_body_bytes: config.historyMaxBodyBytes,
    history_max_bytes: config.historyMaxBytes,
  };
}
