import { DURATION_FORM, loadSettings, parseDurationMs, setting } from '@echo-chaos/obs/internal';
import { Type } from '@sinclair/typebox';
import { DELAY_SPEC_FORM, type DelaySpec, drawDelayMs, parseDelaySpec } from '../scenario/duration.ts';
import { FAULT_FIELDS, type FaultField, type FaultSpec, readFault } from '../scenario/faults.ts';
import { parseUpstreamUrl, UPSTREAM_FORM } from '../scenario/upstream.ts';
import { EchoConfigError } from './errors.ts';
import { HEADER_VALUE, MAX_HEADER_VALUE_LENGTH, TOKEN, UNSETTABLE_HEADERS } from './http-grammar.ts';
import type { ReplayCredentials } from './replay.ts';
import { ALLOWED_TARGETS_FORM, parseAllowedTargets, type TargetRule } from './replay-guard.ts';

/** The echo service's settings, resolved from the environment by `loadConfig`. Units in names. */
export interface EchoConfig {
  readonly port: number;
  readonly host: string;
  readonly enableTls: boolean;
  readonly certFile: string;
  readonly keyFile: string;
  /** `ECHO_GRPC_PORT`: the gRPC server's port (its own, never `port`); undefined: no gRPC server. */
  readonly grpcPort: number | undefined;
  readonly enableCors: boolean;
  readonly maxBodyBytes: number;
  /** `ECHO_MAX_SCENARIO_BODY`: the largest body of `POST /scenario` (not `MAX_BODY_SIZE`). */
  readonly maxScenarioBodyBytes: number;
  readonly chaosPercent: number;
  readonly defaultDelay: DelaySpec | undefined;
  /**
   * The environment's fault defaults (`ECHO_DELAY`, `ECHO_STATUS`, `ECHO_ERROR`, ... see
   * {@link FAULT_DEFAULT_VARIABLES}), read by the headers' own parsers; `undefined` when none is set.
   * `ECHO_CHAOS` stays `chaosPercent`: chaos is decided before a scenario is.
   */
  readonly faultDefaults: FaultSpec | undefined;
  readonly maxDelayMs: number;
  readonly errorTimeoutMs: number;
  readonly maxResponseBytes: number;
  readonly rateLimitRps: number;
  readonly rateLimitBurst: number;
  readonly sseTickerMs: number;
  /** Concurrent `/ws` and `/sse` connections; past it new ones are refused. */
  readonly maxStreams: number;
  /** On SIGTERM: how long the listener stays open (with `/ready` at 503) before the drain proper. */
  readonly drainDelayMs: number;
  /** How long SIGTERM waits for in-flight work before closing every connection. */
  readonly drainTimeoutMs: number;
  /** After traffic, how long without a request before the memory it left is given back; 0 never. */
  readonly idleReclaimMs: number;
  /** HTTP/1.1: how long a client may take to send its request head; then 408 and the connection closes. */
  readonly headersTimeoutMs: number;
  /** HTTP/1.1: how long a client may take to send its whole request, body included (not the answer). */
  readonly requestTimeoutMs: number;
  /** How long an idle keep-alive connection (HTTP/1.1) or HTTP/2 session stays open. */
  readonly keepAliveTimeoutMs: number;
  /** Open connections at most; past it a new connection gets a 503 (or a GOAWAY) and is closed. */
  readonly maxConnections: number;
  /** HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS`: streams a client may have open on one session. */
  readonly h2MaxConcurrentStreams: number;
  /** Compressions running at once (chunk by chunk); the others wait their turn. */
  readonly maxConcurrentCompression: number;
  readonly historySize: number;
  readonly historyMaxBodyBytes: number;
  /** What history holds in all (bodies, heads, prepared JSON); past it the oldest entries go. */
  readonly historyMaxBytes: number;
  /** `show`: `GET /history` shows credentials as received; `mask` (default) masks them. */
  readonly historySecrets: 'mask' | 'show';
  /** `ECHO_ADMIN_TOKEN`: when set, the admin routes need `Authorization: Bearer <token>`. */
  readonly adminToken: string | undefined;
  /** `ECHO_ADMIN_TOKEN_FILE`: the same token, read from this file once at startup (`buildApp`). */
  readonly adminTokenFile: string | undefined;
  /** `ECHO_CORS_ADMIN`: the admin routes answer cross-origin requests like the echo paths do. */
  readonly corsAdmin: boolean;
  readonly scenarioFile: string;
  /** True when ECHO_SCENARIO_FILE was set: then a missing file is an error, not "no scenarios". */
  readonly scenarioFileExplicit: boolean;
  readonly serverInfo: boolean;
  readonly replayTimeoutMs: number;
  /** `ECHO_UPSTREAM`: forward what no scenario answers to this origin (and base path); unset: echo. */
  readonly upstream: URL | undefined;
  /** `ECHO_UPSTREAM_TIMEOUT`: how long the upstream may take for its answer's head, and each body piece. */
  readonly upstreamTimeoutMs: number;
  /** `ECHO_UPSTREAM_HOST_HEADER`: `upstream` sends the upstream's Host, `preserve` the client's. */
  readonly upstreamHostHeader: 'upstream' | 'preserve';
  /** `ECHO_STATE_URL`: the Redis whose state the replicas naming it share; unset: each keeps its own. */
  readonly stateUrl: URL | undefined;
  /** `ECHO_STATE_PASSWORD`: the Redis password, when the URL carries none. */
  readonly statePassword: string | undefined;
  /** `ECHO_REPLAY_ALLOWED_TARGETS`: where `POST /replay` may send (see `ReplayGuard`). */
  readonly replayAllowedTargets: readonly TargetRule[];
  /** `ECHO_REPLAY_CREDENTIALS`: `masked` (default) replays the masked view, `original` what was received. */
  readonly replayCredentials: ReplayCredentials;
  /** `ECHO_SEED`: seeds the process; each echoed request draws its own seed from its sequence. */
  readonly seed: number | undefined;
  /** `false` switches every echo fault off (delays, statuses, errors, chaos, scenarios, slow bodies). */
  readonly faultsEnabled: boolean;
  /** Faults in progress at most; past it new faults are skipped (`echo_faults_overflow_total`). */
  readonly maxActiveFaults: number;
  readonly logLevel: string;
  readonly logRequests: boolean;
  /** Log lines are built, masked and written in a worker thread (`LOG_WORKER`). */
  readonly logWorker: boolean;
  readonly logHeaders: boolean;
  readonly logBody: boolean;
  readonly logTransaction: boolean;
  readonly logResponse: boolean;
  readonly logResponseHeaders: boolean;
  readonly logResponseBody: boolean;
  readonly maxLogBodyBytes: number;
  /** From `ECHO_HEADER_<Name>`: response headers set on every response, as [name, value] pairs. */
  readonly extraHeaders: ReadonlyArray<readonly [string, string]>;
}

type Parsed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false };
type Parser<T> = (raw: string) => Parsed<T>;

/** One environment variable, as the configuration page's table and `--help` list it. */
export interface VariableSpec {
  readonly name: string;
  readonly key: keyof EchoConfig;
  readonly default: string;
  readonly form: string;
  readonly meaning: string;
  /** Never quoted in a startup error (its value is a credential). */
  readonly secret: boolean;
}

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const bad = { ok: false } as const;

function boolean(): Parser<boolean> {
  return (raw) => {
    const v = raw.toLowerCase();
    return v === 'true' ? ok(true) : v === 'false' ? ok(false) : bad;
  };
}

function integer(min: number, max: number): Parser<number> {
  return (raw) => {
    if (!/^\d+$/.test(raw)) return bad;
    const n = Number(raw);
    return n >= min && n <= max ? ok(n) : bad;
  };
}

function decimal(min: number, max: number): Parser<number> {
  return (raw) => {
    if (!/^\d+(\.\d+)?$/.test(raw)) return bad;
    const n = Number(raw);
    return n >= min && n <= max ? ok(n) : bad;
  };
}

function duration(minMs: number, maxMs: number): Parser<number> {
  return (raw) => {
    const ms = parseDurationMs(raw);
    return ms !== undefined && ms >= minMs && ms <= maxMs ? ok(ms) : bad;
  };
}

const text: Parser<string> = (raw) => (raw.length > 0 ? ok(raw) : bad);

/** An upstream, by the one rule of `ECHO_UPSTREAM` and a scenario's `upstream` (scenario/upstream.ts). */
function upstreamUrl(raw: string): Parsed<URL> {
  const url = parseUpstreamUrl(raw);
  return url === undefined ? bad : ok(url);
}

/** The form of `ECHO_STATE_URL`. */
export const STATE_URL_FORM = 'redis://[:password@]host[:port][/db] or rediss:// (TLS), db 0-15';

/** A Redis URL: `redis:` or `rediss:`, a host, a database 0-15 when a path is given, no query. */
function stateUrl(raw: string): Parsed<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return bad;
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') return bad;
  if (url.hostname === '' || url.search !== '' || url.hash !== '') return bad;
  if (url.pathname !== '' && url.pathname !== '/' && !/^\/(?:[0-9]|1[0-5])$/.test(url.pathname)) return bad;
  return ok(url);
}

/** What `Authorization: Bearer` can carry: visible ASCII, no spaces. */
export const ADMIN_TOKEN = /^[\x21-\x7e]+$/;

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/** What ECHO_HISTORY_MAX_BYTES keeps for one request's head beside its body: 64 KiB of HTTP/2 headers, the URL, overhead. */
const HISTORY_HEAD_BYTES = 128 * 1024;
const DAY_MS = 24 * 60 * 60 * 1000;

/** Defaults that other modules name (units in the names). */
export const DEFAULT_MAX_DELAY_MS = 300_000;
export const DEFAULT_MAX_BODY_BYTES = 10 * MiB;
export const DEFAULT_MAX_RESPONSE_BYTES = 100 * MiB;
/**
 * The largest scenario set holds 16 MiB of text (`MAX_SET_SIZE`), and its JSON or YAML adds names,
 * quotes and escapes: twice that leaves room for them.
 */
export const DEFAULT_MAX_SCENARIO_BODY_BYTES = 32 * MiB;

/**
 * Every variable the service reads, in the configuration page's order, keyed by its field of
 * {@link EchoConfig}. `ECHO_HEADER_<Name>` and the fault defaults are read apart.
 */
export const ECHO_SETTINGS = {
  port: v('PORT', '8080', 'integer 0-65535', 'Port to listen on (0 picks a free one)', integer(0, 65535)),
  host: v('HOST', '0.0.0.0', 'an address or host name', 'Address to listen on', text),
  enableTls: v('ENABLE_TLS', 'false', '`true` or `false`', 'Serve HTTPS', boolean()),
  certFile: v('CERT_FILE', 'server.crt', 'a file path', 'TLS certificate (PEM)', text),
  keyFile: v('KEY_FILE', 'server.key', 'a file path', 'TLS private key (PEM)', text),
  grpcPort: v(
    'ECHO_GRPC_PORT',
    '',
    'empty, or integer 1-65535 other than PORT',
    'Port of the gRPC server (`echochaos.v1.EchoService` of proto/echochaos/v1/echo.proto, health and reflection; docs/service/grpc.md), on `HOST`, with TLS when `ENABLE_TLS` is on; it needs the optional packages @grpc/grpc-js, @grpc/proto-loader, @grpc/reflection and grpc-health-check. Empty: no gRPC server, and none of them is loaded',
    (raw) => (raw === '' ? ok(undefined) : integer(1, 65535)(raw)),
  ),
  enableCors: v(
    'ENABLE_CORS',
    'true',
    '`true` or `false`',
    'Permissive CORS: any origin, method and header',
    boolean(),
  ),
  maxBodyBytes: v(
    'MAX_BODY_SIZE',
    String(DEFAULT_MAX_BODY_BYTES),
    'integer bytes 1-1073741824',
    'Largest request body; above it is a 413',
    // fastify's bodyLimit must be at least 1: 0 would stop startup with fastify's own message.
    integer(1, GiB),
  ),
  maxScenarioBodyBytes: v(
    'ECHO_MAX_SCENARIO_BODY',
    String(DEFAULT_MAX_SCENARIO_BODY_BYTES),
    'integer bytes 1024-67108864',
    'Largest body of `POST /scenario` (JSON or YAML), apart from `MAX_BODY_SIZE`; above it is a 413 naming it. The default takes the largest set the service holds (16 MiB of text) with its syntax',
    integer(1024, 64 * MiB),
  ),
  chaosPercent: v(
    'ECHO_CHAOS',
    '',
    'empty, or integer 0-100',
    'Default chaos percentage (random injected failures)',
    (raw) => (raw === '' ? ok(0) : integer(0, 100)(raw)),
  ),
  defaultDelay: v(
    'ECHO_DELAY',
    '',
    `empty, or ${DELAY_SPEC_FORM}, at most ECHO_MAX_DELAY`,
    'Default delay when a request sends no delay header',
    (raw) => (raw === '' ? ok(undefined) : delaySpec(raw)),
  ),
  maxDelayMs: v(
    'ECHO_MAX_DELAY',
    '300s',
    `${DURATION_FORM}, at most 1440m (24 hours)`,
    'Ceiling of any delay; a larger requested delay is a 400',
    duration(0, DAY_MS),
  ),
  errorTimeoutMs: v(
    'ECHO_ERROR_TIMEOUT',
    '65s',
    `${DURATION_FORM}, at most 1440m (24 hours)`,
    'How long `X-Echo-Error: timeout` holds a request before its 504, and how long `slow-close` keeps the connection open after its answer',
    duration(0, DAY_MS),
  ),
  maxResponseBytes: v(
    'ECHO_MAX_RESPONSE_SIZE',
    String(DEFAULT_MAX_RESPONSE_BYTES),
    'integer bytes 0-10737418240',
    'Ceiling of `X-Echo-Response-Size`; above it is a 400',
    integer(0, 10 * GiB),
  ),
  rateLimitRps: v(
    'ECHO_RATE_LIMIT_RPS',
    '0',
    'number 0-1000000',
    'Global rate limit in requests per second; 0 disables',
    decimal(0, 1_000_000),
  ),
  rateLimitBurst: v(
    'ECHO_RATE_LIMIT_BURST',
    '0',
    'integer 0-1000000',
    'Token-bucket burst; 0 means max(1, ceil(rps))',
    integer(0, 1_000_000),
  ),
  sseTickerMs: v(
    'ECHO_SSE_TICKER',
    '5s',
    `${DURATION_FORM}, 10ms-1h`,
    'Interval between `/sse` events',
    duration(10, 3_600_000),
  ),
  maxStreams: v(
    'ECHO_MAX_STREAMS',
    '10000',
    'integer 0-1000000',
    'Concurrent `/ws` and `/sse` connections; past it `/sse` answers 503 and `/ws` closes with 1013',
    integer(0, 1_000_000),
  ),
  drainDelayMs: v(
    'ECHO_DRAIN_DELAY',
    '5s',
    `${DURATION_FORM}, at most 10m`,
    'On SIGTERM: how long `/ready` answers 503 with the port still open and connections served as usual, before the port closes and the drain begins (SIGINT skips it)',
    duration(0, 600_000),
  ),
  drainTimeoutMs: v(
    'ECHO_DRAIN_TIMEOUT',
    '30s',
    `${DURATION_FORM}, at most 60m`,
    'On SIGTERM/SIGINT, once the port has closed: how long in-flight requests may take before every connection is closed',
    duration(0, 3_600_000),
  ),
  idleReclaimMs: v(
    'ECHO_IDLE_RECLAIM',
    '10s',
    `${DURATION_FORM}, at most 1h; 0 turns it off`,
    'After traffic that grew the memory by 16 MiB or more, how long without a request before one full garbage collection gives the pages back to the operating system (V8 keeps them otherwise; docs/adr/0013-memory-after-bursts.md)',
    duration(0, 3_600_000),
  ),
  headersTimeoutMs: v(
    'ECHO_HEADERS_TIMEOUT',
    '10s',
    `${DURATION_FORM}, 1ms to 10m, at most ECHO_REQUEST_TIMEOUT`,
    'How long a client may take to send its request head (HTTP/1.1 and HTTPS/1.1; for TLS the handshake too); then a 408 and the connection closes. Unset, it is never longer than ECHO_REQUEST_TIMEOUT',
    duration(1, 600_000),
  ),
  requestTimeoutMs: v(
    'ECHO_REQUEST_TIMEOUT',
    '60s',
    `${DURATION_FORM}, 1ms to 60m`,
    'How long a client may take to send its whole request, body included (HTTP/1.1, HTTPS/1.1 and each HTTP/2 stream); an injected delay of the answer is not counted; also how long `X-Echo-Error: blackhole` holds a connection silent before closing it',
    duration(1, 3_600_000),
  ),
  keepAliveTimeoutMs: v(
    'ECHO_KEEP_ALIVE_TIMEOUT',
    '72s',
    `${DURATION_FORM}, 1ms to 60m`,
    'How long an idle keep-alive connection (HTTP/1.1) or HTTP/2 session stays open; above the 60 s idle timeout of common load balancers, so they never reuse a connection the server is closing (the default of fastify)',
    duration(1, 3_600_000),
  ),
  maxConnections: v(
    'ECHO_MAX_CONNECTIONS',
    '10000',
    'integer 1-1000000',
    'Open connections at most (every protocol); past it a new connection is answered 503 (HTTP/1.1) or GOAWAY (HTTP/2) and closed, counted in `echo_connections_refused_total`; keep it well under the file-descriptor limit',
    integer(1, 1_000_000),
  ),
  h2MaxConcurrentStreams: v(
    'ECHO_H2_MAX_CONCURRENT_STREAMS',
    '100',
    'integer 1-10000',
    'HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS` advertised to every client (h2 and h2c); a stream past it is refused (`REFUSED_STREAM`) while the client has not acknowledged the setting, and costs the session (GOAWAY) once it has',
    integer(1, 10_000),
  ),
  maxConcurrentCompression: v(
    'ECHO_MAX_CONCURRENT_COMPRESSION',
    '2',
    'integer 1-1024',
    'Compressions (`X-Echo-Compress`) working at once, a 64 KiB chunk at a time; the other compressed responses wait their turn, other requests are not slowed (docs/adr/0016-connection-limits.md)',
    integer(1, 1024),
  ),
  historySize: v(
    'ECHO_HISTORY_SIZE',
    '100',
    'integer 0-100000',
    'Requests kept in history (oldest dropped first); 0 keeps none',
    integer(0, 100_000),
  ),
  historyMaxBodyBytes: v(
    'ECHO_HISTORY_MAX_BODY',
    '65536',
    'integer bytes 0-10485760',
    'Bytes of each body kept in history; the rest is cut',
    integer(0, 10 * MiB),
  ),
  historyMaxBytes: v(
    'ECHO_HISTORY_MAX_BYTES',
    String(32 * MiB),
    'integer bytes 1048576-1073741824, at least 2 x ECHO_HISTORY_MAX_BODY + 131072',
    'Memory history may hold in all: stored bodies, request lines and headers, and the JSON prepared for `GET /history` (room as large as each body); past it the oldest entries go first (docs/adr/0029-history-reads.md)',
    integer(MiB, GiB),
  ),
  historySecrets: v(
    'ECHO_HISTORY_SECRETS',
    'mask',
    '`mask` or `show`',
    '`mask`: `GET /history` shows `Authorization`, `Cookie`, `Set-Cookie`, `Proxy-Authorization`, secret-named headers, query parameters, form and JSON body fields as `[MASKED]`, and bearer tokens, emails and card numbers in the URL, headers and every body as obs masks its logs (replay: `ECHO_REPLAY_CREDENTIALS`). `show`: as received',
    (raw): Parsed<'mask' | 'show'> => (raw === 'mask' || raw === 'show' ? ok(raw) : bad),
  ),
  adminToken: v(
    'ECHO_ADMIN_TOKEN',
    '',
    'unset (the admin routes are open), or a token of visible ASCII characters',
    'When set, the admin routes (`POST`/`PUT` on `/scenario*` and `/control*`, `POST /replay`, every method on `/history*`, `POST` under `/actuator`) need `Authorization: Bearer <token>`; otherwise a 401. Never logged',
    (raw) => (raw === '' ? ok(undefined) : ADMIN_TOKEN.test(raw) ? ok(raw) : bad),
    { secret: true },
  ),
  adminTokenFile: v(
    'ECHO_ADMIN_TOKEN_FILE',
    '',
    'unset, or a file path',
    'Reads `ECHO_ADMIN_TOKEN` from this file once at startup (a Kubernetes Secret); a missing, unreadable or empty file stops startup',
    (raw) => (raw === '' ? ok(undefined) : raw.includes('\0') ? bad : ok(raw)),
  ),
  corsAdmin: v(
    'ECHO_CORS_ADMIN',
    'false',
    '`true` or `false`',
    'With `ENABLE_CORS`: `true` lets the admin routes (`/scenario*`, `/control*`, `/replay`, `/history*`, `/actuator*`) answer cross-origin requests too; `false` gives them no CORS headers',
    boolean(),
  ),
  scenarioFile: v(
    'ECHO_SCENARIO_FILE',
    'scenarios.yaml',
    'a file path',
    'YAML scenarios file, watched for changes; a missing default file means no scenarios, an invalid one too (with a warning)',
    text,
  ),
  serverInfo: v(
    'ECHO_SERVER_INFO',
    'false',
    '`true` or `false`',
    'Add `X-Echo-Server`, `X-Echo-Version`, `X-Echo-Uptime` to every response',
    boolean(),
  ),
  upstream: v(
    'ECHO_UPSTREAM',
    '',
    `empty, or ${UPSTREAM_FORM}`,
    'Reverse proxy: every echo request no scenario answers is forwarded to this upstream and its answer returned, with the faults asked for',
    (raw) => (raw === '' ? ok(undefined) : upstreamUrl(raw)),
  ),
  upstreamTimeoutMs: v(
    'ECHO_UPSTREAM_TIMEOUT',
    '30s',
    `${DURATION_FORM}, 1ms-1440m (24 hours)`,
    "How long the upstream may take to connect and send its answer's head (past it a 504 `ECHO_ERR_PROXY_TIMEOUT`), and each piece of its body (past it the answer ends)",
    duration(1, DAY_MS),
  ),
  upstreamHostHeader: v(
    'ECHO_UPSTREAM_HOST_HEADER',
    'upstream',
    '`upstream` or `preserve`',
    "The `Host` a forwarded request carries: the upstream's (`upstream`) or the client's, as sent (`preserve`)",
    (raw): Parsed<'upstream' | 'preserve'> => (raw === 'upstream' || raw === 'preserve' ? ok(raw) : bad),
  ),
  stateUrl: v(
    'ECHO_STATE_URL',
    '',
    `empty, or ${STATE_URL_FORM}`,
    'Replicas that agree: every process naming this Redis serves one scenario set (a set posted to one is served by all within a second), takes its steps of each sequence from one shared cursor and shares one `ECHO_RATE_LIMIT_RPS` bucket; empty: each process keeps its own. Its password is never logged',
    (raw) => (raw === '' ? ok(undefined) : stateUrl(raw)),
    { secret: true },
  ),
  statePassword: v(
    'ECHO_STATE_PASSWORD',
    '',
    'empty, or the password of the Redis of `ECHO_STATE_URL`, without control characters',
    'The Redis password, when `ECHO_STATE_URL` carries none (a Secret as an environment variable). Never logged',
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused.
    (raw) => (raw === '' ? ok(undefined) : /[\x00-\x1f\x7f]/.test(raw) ? bad : ok(raw)),
    { secret: true },
  ),
  replayTimeoutMs: v(
    'ECHO_REPLAY_TIMEOUT',
    '30s',
    `${DURATION_FORM}, at most 1440m (24 hours)`,
    'How long `POST /replay` waits for the target before a 504',
    duration(1, DAY_MS),
  ),
  replayAllowedTargets: v(
    'ECHO_REPLAY_ALLOWED_TARGETS',
    '*',
    ALLOWED_TARGETS_FORM,
    'Where `POST /replay` may send a `target`: `*` is any host except link-local and cloud metadata addresses (checked on every address the name resolves to, and the checked address is the one dialled); listed hosts, addresses and blocks are allowed, link-local ones included. Anything else is a 403',
    (raw) => {
      const rules = parseAllowedTargets(raw);
      return rules === undefined ? bad : ok(rules);
    },
  ),
  replayCredentials: v(
    'ECHO_REPLAY_CREDENTIALS',
    'masked',
    '`masked` or `original`',
    '`masked`: `POST /replay` sends the request as `GET /history` shows it with secrets masked, without the credential headers (`Authorization`, `Cookie`, `X-Api-Key`, ...): add one with `modify_headers`. `original`: it sends the request as received, credentials included',
    (raw): Parsed<ReplayCredentials> => (raw === 'masked' || raw === 'original' ? ok(raw) : bad),
  ),
  seed: v(
    'ECHO_SEED',
    '',
    'empty, or integer 0-4294967295',
    'Seeds the process: each echoed request draws its own seed (returned in `X-Echo-Seed`) from one sequence, so a run replays; empty is unseeded',
    (raw) => (raw === '' ? ok(undefined) : integer(0, 0xffffffff)(raw)),
  ),
  faultsEnabled: v(
    'ECHO_FAULTS_ENABLED',
    'true',
    '`true` or `false`',
    'Master switch of every echo fault: `false` serves every request plainly (also `PUT /control/faults`)',
    boolean(),
  ),
  maxActiveFaults: v(
    'ECHO_MAX_ACTIVE_FAULTS',
    '10000',
    'integer 1-1000000',
    'Faults in progress at most (delayed, held or throttled requests); past it requests are served plainly',
    integer(1, 1_000_000),
  ),
  logLevel: v(
    'LOG_LEVEL',
    'info',
    'one of trace, debug, info, warn, error, fatal, silent',
    'Log level',
    (raw) => (/^(trace|debug|info|warn|error|fatal|silent)$/.test(raw) ? ok(raw) : bad),
  ),
  logRequests: v(
    'LOG_REQUESTS',
    'true',
    '`true` or `false`',
    'Log a request line and a completion line',
    boolean(),
  ),
  logWorker: v(
    'LOG_WORKER',
    'true',
    '`true` or `false`',
    "Build, mask and write the log lines in a worker thread, off the requests' thread (`false`: in it)",
    boolean(),
  ),
  logHeaders: v('LOG_HEADERS', 'false', '`true` or `false`', 'Log request headers', boolean()),
  logBody: v('LOG_BODY', 'false', '`true` or `false`', 'Log request body (never for `/sse`)', boolean()),
  logTransaction: v(
    'LOG_TRANSACTION',
    'false',
    '`true` or `false`',
    'Log one consolidated record of request and response',
    boolean(),
  ),
  logResponse: v(
    'LOG_RESPONSE',
    'false',
    '`true` or `false`',
    'Log a response completion summary',
    boolean(),
  ),
  logResponseHeaders: v(
    'LOG_RESPONSE_HEADERS',
    'false',
    '`true` or `false`',
    'Log response headers',
    boolean(),
  ),
  logResponseBody: v(
    'LOG_RESPONSE_BODY',
    'false',
    '`true` or `false`',
    'Log response body (never for `/sse`)',
    boolean(),
  ),
  maxLogBodyBytes: v(
    'MAX_LOG_BODY_SIZE',
    '2048',
    'integer bytes 0-1048576',
    'Bytes of a body logged before truncation',
    integer(0, MiB),
  ),
} as const;

/**
 * One of the service's settings (the one settings mechanism, docs/adr/0045-one-settings-mechanism.md):
 * its variable, its default as written (read like a value when unset), the form it accepts, its
 * meaning, and the reader of that form, which types the value. The service trims a value and reads
 * a set but empty variable as the empty text (`ECHO_CHAOS=` is 0; `PORT=` is refused).
 */
function v<T>(
  name: string,
  def: string,
  form: string,
  meaning: string,
  parse: Parser<T>,
  options: { readonly secret?: boolean } = {},
) {
  return setting(name, Type.Unsafe<T>(Type.Any()), meaning, {
    form,
    defaultText: def,
    decode: parse,
    emptyIsValue: true,
    trim: true,
    secret: options.secret === true,
    unset: '(empty)',
  });
}

/** Every variable of {@link ECHO_SETTINGS}, in its order: the configuration page's table and `--help`. */
export const VARIABLES: readonly VariableSpec[] = Object.entries(ECHO_SETTINGS).map(([key, entry]) => ({
  name: entry.env,
  key: key as keyof EchoConfig,
  default: entry.defaultText ?? '',
  form: entry.form,
  meaning: entry.description,
  secret: entry.secret,
}));

function delaySpec(raw: string): Parsed<DelaySpec> {
  const spec = parseDelaySpec(raw);
  return spec === undefined ? bad : ok(spec);
}

const HEADER_PREFIX = 'ECHO_HEADER_';

/** Names the environment may hold that are ours but not in `VARIABLES` (used by the README test). */
export const HEADER_VARIABLE = {
  name: 'ECHO_HEADER_<Name>',
  default: 'unset',
  form: 'any header value; `_` in `<Name>` becomes `-`; framing headers (`Content-Length`, `Connection`, …) are refused',
  meaning: 'Sets response header `<Name>` on every response',
} as const;

/** The ceilings a scenario set is checked against: `ECHO_MAX_DELAY` and `ECHO_MAX_RESPONSE_SIZE`. */
export function scenarioLimits(config: EchoConfig): { maxDelayMs: number; maxResponseBytes: number } {
  return { maxDelayMs: config.maxDelayMs, maxResponseBytes: config.maxResponseBytes };
}

/** A fault default: the variable, the header whose text it takes, what it does. */
export interface FaultDefaultVariable {
  readonly name: string;
  readonly field: FaultField;
  readonly header: string;
  readonly form: string;
  readonly meaning: string;
}

const FAULT_DEFAULT_FORMS: Readonly<Partial<Record<FaultField, string>>> = {
  jitter: 'base,jitter, e.g. 200,50',
  randomDelay: 'min,max, e.g. 100,500',
  exponential: 'base,attempt, e.g. 100,3',
  latency: `${DELAY_SPEC_FORM}`,
  status: 'a status 100-599 or a weighted list (503:10,500:5)',
  error: 'an error kind or status, or a weighted list of them (reset:10,503:5)',
  size: 'bytes, or a weighted list of them, at most ECHO_MAX_RESPONSE_SIZE',
  compress: '`gzip`, `br` or `deflate`',
  contentType: 'a media type such as application/json',
  throttle: 'a rate such as 10KB/s',
  chunkDelay: `${DURATION_FORM}, at most ECHO_MAX_DELAY`,
  chunkSize: 'integer bytes 1-1048576',
  bodyDelay: `${DURATION_FORM}, at most ECHO_MAX_DELAY`,
  retryAfter: 'whole seconds 0-86400 or an HTTP date',
};

/** How a scenario response's own field combines with a default, where it is not simply "wins". */
const SCENARIO_RULE: Readonly<Partial<Record<FaultField, string>>> = {
  jitter: "a scenario response's delay adds to it; `ECHO_DELAY` wins over it",
  randomDelay: "a scenario response's delay adds to it; `ECHO_DELAY` and `ECHO_JITTER` win over it",
  exponential: "a scenario response's delay adds to it; the delay variables above win over it",
  latency: "a scenario response's delay adds to it; the delay variables above win over it",
  status: "a scenario response's status wins",
};

/**
 * The environment defaults of the control headers (spec 1.1: "environment variables set defaults;
 * a header overrides its environment variable"), each read by its header's parser at startup. They
 * apply to echo paths only. `ECHO_DELAY` and `ECHO_CHAOS` are in {@link VARIABLES}.
 */
export const FAULT_DEFAULT_VARIABLES: readonly FaultDefaultVariable[] = FAULT_FIELDS.filter(
  (f) => f.field !== 'delay' && f.field !== 'chaos',
).map((f) => {
  const header = f.header.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
  return {
    name: f.env,
    field: f.field,
    header,
    form: `empty, or what \`${header}\` takes: ${FAULT_DEFAULT_FORMS[f.field] ?? ''}`,
    meaning: `Default of \`${header}\` on echo paths when a request sends none (${SCENARIO_RULE[f.field] ?? "a scenario response's own field wins"})`,
  };
});

/**
 * Reads the fault defaults of `env` (with `ECHO_DELAY`'s delay, already parsed) into one spec, each
 * with its header's parser; a bad one is a problem line naming the variable, the value and the form.
 */
function faultDefaults(
  env: Readonly<Record<string, string | undefined>>,
  defaultDelay: DelaySpec | undefined,
  limits: { maxDelayMs: number; maxResponseBytes: number },
  problems: string[],
): FaultSpec | undefined {
  const spec: FaultSpec = {};
  let given = false;
  if (defaultDelay !== undefined) {
    const capMs = limits.maxDelayMs;
    spec.delay = {
      field: 'delay',
      draw: (random) => drawDelayMs(defaultDelay, random, capMs),
      worstMs: defaultDelay.maxMs,
    };
    given = true;
  }
  for (const variable of FAULT_DEFAULT_VARIABLES) {
    const raw = env[variable.name];
    if (raw === undefined || raw.trim() === '') continue;
    const message = readFault(variable.field, raw.trim(), spec, limits);
    if (message === undefined) given = true;
    else
      problems.push(
        `${variable.name}=${JSON.stringify(raw)} is invalid: ${message.startsWith('expected') ? message : `expected what ${variable.header} takes (${message})`}`,
      );
  }
  // ECHO_DELAY beats the other delay variables, as X-Echo-Delay beats the other delay headers.
  return given ? spec : undefined;
}

/**
 * Resolves the service's settings from an environment. A pure function of `env`: no file or
 * network access. Every bad value is reported, one line each, in a single `EchoConfigError`
 * (`ECHO_ERR_CONFIG`).
 */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): EchoConfig {
  const loaded = loadSettings(ECHO_SETTINGS, env);
  const problems: string[] = loaded.ok ? [] : [...loaded.problems];
  // The checks between settings report with the rest: they read what was valid.
  const out: Record<string, unknown> = { ...(loaded.ok ? loaded.value : loaded.partial) };
  // An admin token set to nothing would leave the routes open while looking locked: say so.
  for (const name of ['ECHO_ADMIN_TOKEN', 'ECHO_ADMIN_TOKEN_FILE']) {
    if (env[name] !== undefined && env[name].trim() === '')
      problems.push(`${name} is set but empty: expected a value (unset it to leave the admin routes open)`);
  }
  if (out['adminToken'] !== undefined && out['adminTokenFile'] !== undefined) {
    problems.push(
      'ECHO_ADMIN_TOKEN and ECHO_ADMIN_TOKEN_FILE are both set: expected one of them (the token, or the file holding it)',
    );
  }
  out['scenarioFileExplicit'] = env['ECHO_SCENARIO_FILE'] !== undefined;
  // grpc-js owns its HTTP/2 server: it cannot share the HTTP one's port.
  if (out['grpcPort'] !== undefined && out['grpcPort'] === out['port']) {
    problems.push(
      `ECHO_GRPC_PORT=${JSON.stringify(env['ECHO_GRPC_PORT'])} is invalid: expected a port other than PORT (${out['port']}): the gRPC server has its own`,
    );
  }

  // Node requires the head's timeout within the whole request's.
  const headersTimeoutMs = out['headersTimeoutMs'] as number | undefined;
  const requestTimeoutMs = out['requestTimeoutMs'] as number | undefined;
  if (
    headersTimeoutMs !== undefined &&
    requestTimeoutMs !== undefined &&
    headersTimeoutMs > requestTimeoutMs
  ) {
    // The default head timeout follows a shorter request timeout; one that was set is a mistake.
    if (env['ECHO_HEADERS_TIMEOUT'] === undefined) out['headersTimeoutMs'] = requestTimeoutMs;
    else
      problems.push(
        `ECHO_HEADERS_TIMEOUT=${JSON.stringify(env['ECHO_HEADERS_TIMEOUT'] ?? '10s')} is invalid: expected at most ECHO_REQUEST_TIMEOUT (${requestTimeoutMs} ms)`,
      );
  }

  // A default delay above the ceiling would be cut silently on every request: say so at startup.
  const defaultDelay = out['defaultDelay'] as DelaySpec | undefined;
  const maxDelayMs = out['maxDelayMs'] as number | undefined;
  if (defaultDelay !== undefined && maxDelayMs !== undefined && defaultDelay.maxMs > maxDelayMs) {
    problems.push(
      `ECHO_DELAY=${JSON.stringify(env['ECHO_DELAY'])} is invalid: expected a delay of at most ECHO_MAX_DELAY (${maxDelayMs} ms)`,
    );
  }

  // One full entry must fit in the budget (a body of ECHO_HISTORY_MAX_BODY, as much room for its
  // JSON, and the largest head: 64 KiB of HTTP/2 headers and the URL), or history would keep one
  // entry at a time past it.
  const historyMaxBodyBytes = out['historyMaxBodyBytes'] as number | undefined;
  const historyMaxBytes = out['historyMaxBytes'] as number | undefined;
  if (
    historyMaxBodyBytes !== undefined &&
    historyMaxBytes !== undefined &&
    historyMaxBytes < 2 * historyMaxBodyBytes + HISTORY_HEAD_BYTES
  ) {
    problems.push(
      `ECHO_HISTORY_MAX_BYTES=${JSON.stringify(env['ECHO_HISTORY_MAX_BYTES'] ?? String(historyMaxBytes))} is invalid: expected at least 2 x ECHO_HISTORY_MAX_BODY (${historyMaxBodyBytes}: a body and room for its JSON) + ${HISTORY_HEAD_BYTES} bytes for one request's head, ${2 * historyMaxBodyBytes + HISTORY_HEAD_BYTES}`,
    );
  }

  out['faultDefaults'] =
    maxDelayMs === undefined || out['maxResponseBytes'] === undefined
      ? undefined
      : faultDefaults(
          env,
          defaultDelay,
          { maxDelayMs, maxResponseBytes: out['maxResponseBytes'] as number },
          problems,
        );

  const extraHeaders: Array<readonly [string, string]> = [];
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith(HEADER_PREFIX) || value === undefined) continue;
    const header = name.slice(HEADER_PREFIX.length).replaceAll('_', '-');
    if (!TOKEN.test(header))
      problems.push(
        `${name}: ${JSON.stringify(header)} is not a valid header name: expected letters, digits and -`,
      );
    else if (UNSETTABLE_HEADERS.has(header.toLowerCase()))
      problems.push(
        `${name}: ${JSON.stringify(header)} frames the message or is connection-specific (HTTP/2 forbids it) and cannot be set: expected any other header name`,
      );
    else if (!HEADER_VALUE.test(value) || value.length > MAX_HEADER_VALUE_LENGTH)
      problems.push(
        `${name}=${JSON.stringify(value)} is invalid: expected at most ${MAX_HEADER_VALUE_LENGTH} characters of visible ASCII, Latin-1, spaces and tabs (what HTTP/1.1 and HTTP/2 carry in a header)`,
      );
    else extraHeaders.push([header, value]);
  }
  out['extraHeaders'] = extraHeaders;

  if (problems.length > 0 || !loaded.ok) throw new EchoConfigError(problems);
  return {
    ...loaded.value,
    headersTimeoutMs: out['headersTimeoutMs'] as number,
    scenarioFileExplicit: out['scenarioFileExplicit'] as boolean,
    faultDefaults: out['faultDefaults'] as FaultSpec | undefined,
    extraHeaders,
  };
}
