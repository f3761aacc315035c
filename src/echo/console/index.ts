/**
 * `/console` (issue #37, docs/adr/0053): the service's web console. The page and its files hold no
 * data and are public; what they show comes from `/console/api/*`, behind `ECHO_ADMIN_TOKEN` when
 * it is set (admin-auth.ts), which the page sends as `Authorization: Bearer`, never in a URL.
 *
 * - `GET /console/api/live`: the live log and the charts' points, Server-Sent Events (live-stream.ts,
 *   chart-series.ts);
 * - `GET /console/api/entries/<id>`: one history entry as `GET /history` shows it (masked);
 * - `GET /console/api/faults`: what injects faults now, the switch and the safety valve (fault-summary.ts);
 * - `GET /console/api/scenarios`: the set as YAML with its ETag; `POST /console/api/scenarios/check`
 *   checks a YAML set without storing it, each problem on its line (scenario-check.ts);
 * - `GET /console/api/sessions`: the sessions the scenario store keeps, most recently used first;
 * - `POST /console/api/scenarios/match`: which scenario would answer a described request, and why
 *   each other would not, moving nothing (dry-run.ts).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { scenarioLimits } from '../config.ts';
import { EchoError } from '../errors.ts';
import { MAX_YAML_SET_BYTES } from '../routes.ts';
import type { EchoState } from '../state.ts';
import { CONSOLE_FILES, type ConsoleAssets, consoleAssets } from './assets.ts';
import { ChartSeries } from './chart-series.ts';
import { dryRun } from './dry-run.ts';
import { faultSummary } from './fault-summary.ts';
import { LiveFeed } from './live-feed.ts';
import { liveStream } from './live-stream.ts';
import { checkScenarioYaml, scenarioSetView } from './scenario-check.ts';

export const CONSOLE_PATH = '/console';
/** The prefix of the console's API, which needs the admin token when one is set. */
export const CONSOLE_API_PATH = '/console/api';
/** Sessions `GET /console/api/sessions` lists, the most recently used first. */
export const MAX_LISTED_SESSIONS = 100;
/** A comment on the live stream this often keeps proxies from closing a quiet one. */
export const LIVE_HEARTBEAT_MS = 15_000;

/**
 * The page's policy: everything from this origin, nothing inline, nothing else. The script, the
 * style sheet, the icon and the API calls are all same-origin files.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<keyof ConsoleAssets, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  icon: 'image/svg+xml',
};

async function sendAsset(reply: FastifyReply, key: keyof ConsoleAssets): Promise<FastifyReply> {
  const assets = await consoleAssets();
  reply
    .type(TYPES[key])
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-cache');
  if (key === 'html') reply.header('content-security-policy', CONSOLE_CSP);
  return reply.send(assets[key]);
}

export function registerConsole(app: FastifyInstance, state: EchoState): void {
  const { config, history } = state;
  const feed = new LiveFeed(history);
  const charts = new ChartSeries(history);

  app.get(CONSOLE_PATH, (_request, reply) => sendAsset(reply, 'html'));
  // The page's files are named relative to it: `/console/` would look for them one level down.
  app.get(`${CONSOLE_PATH}/`, (_request, reply) => reply.redirect('../console', 308));
  app.get(`${CONSOLE_PATH}/${CONSOLE_FILES.js}`, (_request, reply) => sendAsset(reply, 'js'));
  app.get(`${CONSOLE_PATH}/${CONSOLE_FILES.css}`, (_request, reply) => sendAsset(reply, 'css'));
  app.get(`${CONSOLE_PATH}/${CONSOLE_FILES.icon}`, (_request, reply) => sendAsset(reply, 'icon'));

  // A console is one more open stream: it counts against ECHO_MAX_STREAMS like `/sse`, which
  // bounds the feed's subscribers too.
  app.get(`${CONSOLE_API_PATH}/live`, async (_request, reply) => {
    if (state.drain.signal.aborted) {
      reply.header('retry-after', 1);
      throw new EchoError('ECHO_ERR_DRAINING', []);
    }
    if (state.openStreams.ws + state.openStreams.sse >= config.maxStreams) {
      reply.header('retry-after', 1);
      throw new EchoError('ECHO_ERR_TOO_MANY_STREAMS', [config.maxStreams]);
    }
    state.openStreams.sse++;
    const stream = liveStream(feed, {
      hello: { historySize: config.historySize, masked: config.historySecrets === 'mask' },
      heartbeatMs: LIVE_HEARTBEAT_MS,
      signal: state.drain.signal,
      charts,
    });
    let counted = true;
    stream.once('close', () => {
      if (counted) state.openStreams.sse--;
      counted = false;
    });
    reply
      .header('content-type', 'text/event-stream')
      .header('cache-control', 'no-cache')
      .header('x-accel-buffering', 'no');
    return reply.send(stream);
  });

  app.get<{ Params: { id: string } }>(`${CONSOLE_API_PATH}/entries/:id`, async (request, reply) => {
    const entry = history.get(request.params.id);
    if (entry === undefined) throw new EchoError('ECHO_ERR_HISTORY_ENTRY_NOT_FOUND', [request.params.id]);
    reply.type('application/json; charset=utf-8').header('cache-control', 'no-store');
    return reply.send(history.json(entry));
  });

  app.get(`${CONSOLE_API_PATH}/faults`, async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    return faultSummary(state);
  });

  app.get(`${CONSOLE_API_PATH}/scenarios`, async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    return scenarioSetView(state.scenarios);
  });

  // A YAML set of at most MAX_YAML_SET_BYTES, as POST /scenario takes, escaped in a JSON string.
  const checkLimit = { bodyLimit: 2 * MAX_YAML_SET_BYTES + 1024 } as const;
  app.post(`${CONSOLE_API_PATH}/scenarios/check`, checkLimit, async (request) => {
    const body = request.body as { yaml?: unknown } | null;
    const yaml = typeof body === 'object' && body !== null ? body.yaml : undefined;
    if (typeof yaml !== 'string' || Object.keys(body ?? {}).length !== 1) {
      throw new EchoError('ECHO_ERR_INVALID_CONSOLE_REQUEST', ['expected {"yaml": "<a scenario set>"}']);
    }
    if (Buffer.byteLength(yaml) > MAX_YAML_SET_BYTES) {
      throw new EchoError('ECHO_ERR_SCENARIO_YAML_TOO_LARGE', [MAX_YAML_SET_BYTES]);
    }
    const count = await checkScenarioYaml(yaml, scenarioLimits(config));
    return { status: 'valid', count };
  });

  app.get(`${CONSOLE_API_PATH}/sessions`, async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    const { scenarios } = state;
    return { count: scenarios.counts().sessions, ids: scenarios.sessionIds(MAX_LISTED_SESSIONS) };
  });

  // A dry run: the store's peek moves no position, session or counter.
  app.post(`${CONSOLE_API_PATH}/scenarios/match`, { bodyLimit: 256 * 1024 }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    return dryRun(state.scenarios, request.body, state.faults.enabled);
  });
}
