import type { IncomingMessage, RequestListener, Server } from 'node:http';
import type { Http2SecureServer, Http2Session } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyServerFactory } from 'fastify';
import type { Logger } from 'pino';
import type { EchoConfig } from '../config.ts';
import { refuseSocket } from '../error-handler.ts';
import { EchoError } from '../errors.ts';
import { type CleartextServer, createCleartextServer } from './cleartext.ts';
import { ConnectionLimiter } from './connection-limits.ts';
import { http2SettingsProblem, isH2cUpgrade } from './h2c-upgrade.ts';
import { serverSettings } from './server-settings.ts';
import { loadTls, type TlsMaterial } from './tls-material.ts';
import { attachTlsServer, tlsServerOptions } from './tls-server.ts';

export { http2StreamOf } from './http2-limits.ts';

// The transport: the servers fastify listens on, TLS, the connection limits, and the HTTP/1.1 and
// h2c split of the cleartext port (docs/adr/0003-one-port-for-h1-h2c.md,
// docs/adr/0016-connection-limits.md, docs/adr/0042-echo-transport.md). This is its one entry: it
// reads the configuration once and hands each part what it needs.

/** Takes over the socket of an HTTP/1.1 upgrade request for one path. */
export type UpgradeHandler = (request: IncomingMessage, socket: Duplex, head: Buffer) => void;

/** Where the transport counts what it does: the app's meters (metrics.ts). */
export interface TransportMeters {
  connectionRefused(): void;
  watchOpenConnections(read: () => number): void;
}

/** The servers of one app, before and after fastify makes them. */
export interface Transport {
  /**
   * Options for `Fastify()` that choose the server: the server factory of the one-port HTTP/1.1 +
   * h2c server, or h2 and HTTP/1.1 over TLS. fastify's types tie the instance type to these
   * options; the app is typed for http.Server, whose request and response surface the routes use is
   * the same on HTTP/2's compatibility API.
   */
  readonly fastifyOptions: { readonly serverFactory?: FastifyServerFactory };
  /**
   * HTTP/1.1 `Upgrade` handlers by exact path (the WebSocket endpoint registers `/ws`); `*` takes
   * any other WebSocket upgrade (the reverse proxy's). Every other upgrade request is served as a
   * normal request.
   */
  readonly upgradeHandlers: Map<string, UpgradeHandler>;
  /**
   * Connects the server fastify made to the transport: upgrades (`h2c`, the paths of
   * `upgradeHandlers`), CONNECT answered, and on TLS the limits the cleartext server has from its
   * factory. Call right after `Fastify()`, before anything else listens on `app.server`.
   */
  attach(app: FastifyInstance): void;
  /** The HTTP/2 sessions open now (for the drain's GOAWAY); none before `attach`. */
  http2Sessions(): readonly Http2Session[];
  /** The connections open now, as `ECHO_MAX_CONNECTIONS` counts them. */
  readonly openConnections: number;
  /** Counts refused connections and watches the open ones in the app's meters. */
  meter(metrics: TransportMeters): void;
  /** The certificate and key served with `ENABLE_TLS` (the gRPC server serves the same), else undefined. */
  readonly tls: TlsMaterial | undefined;
}

/**
 * The transport the config asks for. With `ENABLE_TLS` it loads (or generates) the certificate
 * and may throw the `EchoConfigError` (`ECHO_ERR_CONFIG`) that stops startup.
 */
export async function createTransport(config: EchoConfig, logger: Logger): Promise<Transport> {
  const settings = serverSettings(config);
  const limiter = new ConnectionLimiter(config.maxConnections, logger);
  const upgradeHandlers = new Map<string, UpgradeHandler>();
  let cleartext: CleartextServer | undefined;
  let sessions: ReadonlySet<Http2Session> = new Set();

  let fastifyOptions: Transport['fastifyOptions'];
  let tls: TlsMaterial | undefined;
  if (config.enableTls) {
    tls = await loadTls(config, logger);
    fastifyOptions = tlsServerOptions(tls, settings);
  } else {
    fastifyOptions = {
      serverFactory: ((handler: RequestListener, options: Record<string, unknown>) => {
        cleartext = createCleartextServer(handler, options, settings, limiter);
        sessions = cleartext.sessions;
        return cleartext.server;
      }) satisfies FastifyServerFactory,
      requestTimeout: settings.requestTimeoutMs,
      keepAliveTimeout: settings.keepAliveTimeoutMs,
      http2SessionTimeout: settings.keepAliveTimeoutMs,
      http: { headersTimeout: settings.headersTimeoutMs, requestTimeout: settings.requestTimeoutMs },
    } as Transport['fastifyOptions'];
  }

  const attach = (app: FastifyInstance): void => {
    // node reads `shouldUpgradeCallback` off the server; @types/node has it as an option only.
    const server = app.server as UpgradingServer;
    const h2c = cleartext !== undefined && cleartext.server === (server as Server) ? cleartext : undefined;
    const handlerFor = (request: IncomingMessage) =>
      upgradeHandlers.get(pathOf(request.url ?? '/')) ??
      // Any other WebSocket upgrade goes to the `*` handler when there is one (the reverse proxy's).
      (String(request.headers.upgrade ?? '').toLowerCase() === 'websocket'
        ? upgradeHandlers.get('*')
        : undefined);

    server.shouldUpgradeCallback = (request) =>
      (h2c !== undefined && isH2cUpgrade(request)) || handlerFor(request) !== undefined;
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (h2c !== undefined && isH2cUpgrade(request)) {
        const problem = http2SettingsProblem(request.headers['http2-settings']);
        if (problem !== undefined)
          return refuseSocket(socket, new EchoError('ECHO_ERR_BAD_REQUEST', [problem]));
        return h2c.upgradeToH2c(request, socket, head);
      }
      const handler = handlerFor(request);
      // The handler left between the callback and now (it cannot, today): nobody speaks for the path.
      if (handler === undefined) return void socket.destroy();
      handler(request, socket, head);
    });
    // CONNECT (a proxy's method) is answered, not dropped: node ends the connection without a word
    // when nobody listens.
    server.on('connect', (request: IncomingMessage, socket: Duplex) => refuseConnect(request, socket));

    // The app is typed for http.Server (fastifyOptions); with TLS, fastify made an Http2SecureServer.
    if (h2c === undefined)
      sessions = attachTlsServer(server as unknown as Http2SecureServer, settings, limiter);
  };

  return {
    fastifyOptions,
    upgradeHandlers,
    attach,
    http2Sessions: () => [...sessions],
    get openConnections() {
      return limiter.open;
    },
    meter(metrics) {
      limiter.onRefused = () => metrics.connectionRefused();
      metrics.watchOpenConnections(() => limiter.open);
    },
    tls,
  };
}

interface UpgradingServer extends Server {
  shouldUpgradeCallback: (request: IncomingMessage) => boolean;
}

/** A 400 in the service's JSON shape for CONNECT, then the connection ends. */
function refuseConnect(request: IncomingMessage, socket: Duplex): void {
  refuseSocket(
    socket,
    new EchoError('ECHO_ERR_BAD_REQUEST', [
      `CONNECT ${request.url ?? ''} is not served: echo-chaos is not a proxy`,
    ]),
  );
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}
