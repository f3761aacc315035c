/**
 * The gRPC server's place in the app (`ECHO_GRPC_PORT`, issue #36, docs/adr/0050-grpc.md): its
 * packages are optional peers of echo-chaos, imported only when the port is set, and a run that
 * asks for them without them stops with one line saying what to install. The server binds when the
 * app is ready (so `listen` fails when the port cannot be had), turns `NOT_SERVING` when the drain
 * begins, stops with the drain (`drainGrpc`, main.ts) and, at the latest, when the app closes.
 */
import type { FastifyInstance } from 'fastify';
import { installArguments, missingPackage } from '../../telemetry/optional-packages.ts';
import type { EchoConfig } from '../config.ts';
import { EchoConfigError, EchoError } from '../errors.ts';
import type { HistoryEntry } from '../history.ts';
import { replayableEntry } from '../history-secrets.ts';
import { seededRandom } from '../random.ts';
import type { EchoState } from '../state.ts';
import type { TlsMaterial } from '../transport/tls-material.ts';
import { grpcEnvDefaults } from './faults.ts';
import { GRPC_STATUS_NAMES } from './metadata.ts';
import type * as GrpcServerModule from './server.ts';
import type { GrpcServer } from './server.ts';

/** The gRPC packages server.ts imports, with the versions the package declares (a test keeps them equal). */
export const GRPC_PACKAGES: Readonly<Record<string, string>> = {
  '@grpc/grpc-js': '^1.14.7',
  '@grpc/proto-loader': '^0.8.1',
  '@grpc/reflection': '^1.0.4',
  'grpc-health-check': '^2.1.0',
};

/** How long `app.close()` lets calls still in flight finish (their delays already cut short). */
const CLOSE_GRACE_MS = 1_000;

/** The running server of an app, by the app (the drain) and by its state (the routes, in their own scope). */
const servers = new WeakMap<object, { readonly server: () => GrpcServer | undefined }>();

/**
 * Imports server.ts through `importer` (`() => import('./server.ts')`).
 * @throws {EchoConfigError} one line naming what to install, when one of {@link GRPC_PACKAGES} is missing.
 */
export async function loadGrpcServer(
  port: number,
  importer: () => Promise<typeof GrpcServerModule>,
): Promise<typeof GrpcServerModule> {
  try {
    return await importer();
  } catch (err) {
    const name = missingPackage(err);
    if (name === undefined || !Object.hasOwn(GRPC_PACKAGES, name)) throw err;
    const names = Object.keys(GRPC_PACKAGES);
    throw new EchoConfigError([
      `ECHO_GRPC_PORT=${port} needs the packages ${names.slice(0, -1).join(', ')} and ${names.at(-1)}, which are not installed (${name} is missing); install them beside echo-chaos: npm install ${installArguments(GRPC_PACKAGES)}`,
    ]);
  }
}

/**
 * Adds the gRPC server to `app` when `config.grpcPort` is set (nothing otherwise): the packages
 * load now, the server binds on `onReady`, and stops on close.
 */
export async function registerGrpc(
  app: FastifyInstance,
  state: EchoState,
  config: EchoConfig,
  tls: TlsMaterial | undefined,
): Promise<void> {
  const port = config.grpcPort;
  if (port === undefined) return;
  const { startGrpcServer } = await loadGrpcServer(port, () => import('./server.ts'));
  let server: GrpcServer | undefined;
  const handle = { server: () => server };
  servers.set(app, handle);
  servers.set(state, handle);
  // Health says what /ready says of the toggle: NOT_SERVING while readiness is set off.
  const follow = () => server?.setReady(state.lifecycle.ready);
  state.lifecycleEvents.addEventListener('change', follow);
  app.addHook('onReady', async () => {
    server = await startGrpcServer({
      host: config.host,
      port,
      tls,
      limits: { maxDelayMs: config.maxDelayMs, maxResponseBytes: config.maxResponseBytes },
      maxBodyBytes: config.maxBodyBytes,
      requestTimeoutMs: config.requestTimeoutMs,
      gate: state.faults,
      env: grpcEnvDefaults(config.faultDefaults, config.chaosPercent),
      random: Math.random,
      // Its own sequence of ECHO_SEED: the n-th call of a run gets the n-th seed, whatever HTTP does.
      ...(config.seed === undefined ? {} : { seeds: seededRandom(config.seed) }),
      // Closing answers what waits at once, as it does HTTP's waiting requests (state.ts).
      closing: state.drainDeadline.signal,
      meters: state.metrics,
      history: state.history,
      scenarios: state.scenarios,
    });
    if (state.drain.signal.aborted) server.notServing();
    else state.drain.signal.addEventListener('abort', () => server?.notServing(), { once: true });
    follow();
    app.log.info(
      { grpc: { host: config.host, port: server.port, tls: tls !== undefined } },
      `gRPC server listening on ${config.host}:${server.port}`,
    );
  });
  app.addHook('onClose', async () => {
    state.lifecycleEvents.removeEventListener('change', follow);
    await server?.shutdown(CLOSE_GRACE_MS);
  });
}

/**
 * The drain of the gRPC server, beside obs's drain of the HTTP one (main.ts): health turns
 * `NOT_SERVING` at once (state.ts's drain signal), calls are taken as usual for `delayMs`, then no
 * new call is taken and those in flight have `timeoutMs` to finish before they are ended. Resolves
 * true when they all finished (or there is no gRPC server).
 */
export async function drainGrpc(
  app: FastifyInstance,
  options: { readonly delayMs: number; readonly timeoutMs: number },
): Promise<boolean> {
  const server = servers.get(app)?.server();
  if (server === undefined) return true;
  server.notServing();
  if (options.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
  return server.shutdown(options.timeoutMs);
}

/** `POST /replay`'s fields a gRPC replay reads. */
export interface GrpcReplayRequest {
  readonly id: string;
  readonly modify_headers?: Readonly<Record<string, string>>;
  readonly modify_body?: string;
  readonly target?: string;
}

/** Metadata a replay does not send again: grpc-js sets these itself, or they belong to the first call. */
const NOT_REPLAYED = new Set([
  'content-type',
  'te',
  'user-agent',
  'grpc-timeout',
  'grpc-encoding',
  'grpc-accept-encoding',
  'x-echo-replay-of',
]);

/**
 * Replays the gRPC call of `entry` (`POST /replay` of an id whose entry is a gRPC call): a unary
 * `Echo` call to this service's gRPC port with the stored metadata (as `ECHO_REPLAY_CREDENTIALS`
 * says, masked by default) and `modify_headers` on top, the stored request or `modify_body`, and
 * `x-echo-replay-of`. Answers what the call got: its status, its answer, its metadata and trailers.
 * @throws {EchoError} `ECHO_ERR_REPLAY_GRPC` for what cannot be replayed (nothing is sent then).
 */
export async function replayGrpc(
  state: EchoState,
  entry: HistoryEntry,
  request: GrpcReplayRequest,
  config: Pick<EchoConfig, 'replayTimeoutMs' | 'replayCredentials'>,
): Promise<Record<string, unknown>> {
  const refuse = (why: string) => new EchoError('ECHO_ERR_REPLAY_GRPC', [entry.id, why]);
  const server = servers.get(state)?.server();
  if (server === undefined) throw refuse('this process serves no gRPC (ECHO_GRPC_PORT is not set)');
  if (request.target !== undefined)
    throw refuse("a gRPC call replays to this service's own gRPC port; leave out target");
  if (entry.url !== ECHO_METHOD_PATH)
    throw refuse(`only unary calls of ${ECHO_METHOD_PATH} replay; ${entry.url} streams`);
  const shown = config.replayCredentials === 'original' ? entry : replayableEntry(entry);
  const text = request.modify_body ?? shown.body;
  const body = parseEchoRequest(text);
  if (body === undefined)
    throw refuse(
      'modify_body: expected an EchoRequest as JSON, such as {"message":"hi","payload":"<base64>"}',
    );
  const metadata: Array<readonly [string, string]> = [];
  const modified = new Map(
    Object.entries(request.modify_headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
  );
  for (const [key, value] of Object.entries(shown.headers)) {
    if (value === undefined || NOT_REPLAYED.has(key) || modified.has(key) || key.startsWith(':')) continue;
    for (const v of Array.isArray(value) ? value : [value]) metadata.push([key, v]);
  }
  for (const [key, value] of modified) metadata.push([key, value]);
  metadata.push(['x-echo-replay-of', entry.id]);
  const replayed = await server.replayEcho(body, metadata, config.replayTimeoutMs);
  return {
    replay_of: entry.id,
    grpc: {
      code: replayed.code,
      status: GRPC_STATUS_NAMES[replayed.code] ?? 'UNKNOWN',
      details: replayed.details,
    },
    ...(replayed.response === undefined ? {} : { response: jsonResponse(replayed.response) }),
    metadata: replayed.metadata,
    trailers: replayed.trailers,
  };
}

/** The path of the one unary method, the one a replay calls. */
export const ECHO_METHOD_PATH = '/echochaos.v1.EchoService/Echo';

/** An `EchoRequest` from its JSON text (the payload in base64), or undefined when it is not one. */
function parseEchoRequest(text: string): { message: string; payload: Buffer } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text === '' ? '{}' : text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { message = '', payload = '', ...rest } = value as Record<string, unknown>;
  if (Object.keys(rest).length > 0 || typeof message !== 'string' || typeof payload !== 'string')
    return undefined;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(payload)) return undefined;
  return { message, payload: Buffer.from(payload, 'base64') };
}

/** An `EchoResponse` as JSON shows it: the payload in base64. */
function jsonResponse(response: object): Record<string, unknown> {
  const out: Record<string, unknown> = { ...response };
  const payload = out['payload'];
  if (Buffer.isBuffer(payload)) out['payload'] = payload.toString('base64');
  return out;
}
