import http from 'node:http';
import type { Http2SecureServer, Http2Session } from 'node:http2';
import { type ConnectionLimiter, limitConnections } from './connection-limits.ts';
import { limitHeaderList, limitStreams, trackSessions } from './http2-limits.ts';
import { takeTurns } from './pipelining.ts';
import type { ServerSettings } from './server-settings.ts';
import type { TlsMaterial } from './tls-material.ts';

// The TLS port: fastify's HTTP/2 secure server with allowHTTP1, ALPN picks h2 or http/1.1
// (docs/adr/0003-one-port-for-h1-h2c.md), with the limits of docs/adr/0016-connection-limits.md.

/**
 * The fastify options of the TLS server: h2 and HTTP/1.1 on one port, the HTTP/1.1 timeouts of its
 * `allowHTTP1` connections (Node applies them as on an http.Server), the TLS handshake within the
 * headers timeout, and the SETTINGS its HTTP/2 sessions advertise.
 */
export function tlsServerOptions(material: TlsMaterial, settings: ServerSettings): Record<string, unknown> {
  return {
    http2: true,
    http2SessionTimeout: settings.keepAliveTimeoutMs,
    https: {
      allowHTTP1: true,
      key: material.key,
      cert: material.cert,
      ALPNProtocols: ['h2', 'http/1.1'],
      headersTimeout: settings.headersTimeoutMs,
      requestTimeout: settings.requestTimeoutMs,
      keepAliveTimeout: settings.keepAliveTimeoutMs,
      connectionsCheckingInterval: settings.connectionsCheckingIntervalMs,
      handshakeTimeout: settings.headersTimeoutMs,
      settings: settings.h2,
    },
  };
}

/**
 * Puts the limits on the TLS server fastify made: the drain deadline's `closeAllConnections`, the
 * connection cap, the stream timeouts, the keep-alive timeout, and fastify's handler made to take
 * pipelined HTTP/1.1 requests in turns and to refuse an HTTP/2 header list over the limit, as the
 * cleartext server's are. Returns the server's open HTTP/2 sessions.
 */
export function attachTlsServer(
  server: Http2SecureServer,
  settings: ServerSettings,
  limiter: ConnectionLimiter,
): ReadonlySet<Http2Session> {
  const sessions = addCloseAllConnections(server);
  limitConnections(server, limiter, true);
  limitStreams(server, settings.requestTimeoutMs);
  (server as Http2SecureServer & { keepAliveTimeout: number }).keepAliveTimeout = settings.keepAliveTimeoutMs;
  const handlers = server.listeners('request') as http.RequestListener[];
  server.removeAllListeners('request');
  for (const handler of handlers) server.on('request', takeTurns(limitHeaderList(handler)));
  return sessions;
}

/** The TLS server has sessions and HTTP/1.1 connections; the drain deadline ends them all. */
function addCloseAllConnections(server: Http2SecureServer): ReadonlySet<Http2Session> {
  // fastify already closes idle sessions of the TLS server after http2SessionTimeout.
  const sessions = trackSessions(server, 0);
  (server as Http2SecureServer & { closeAllConnections(): void }).closeAllConnections = () => {
    // HTTP/1.1 connections of an allowHTTP1 server are tracked as an http.Server's are.
    http.Server.prototype.closeAllConnections.call(server);
    for (const session of sessions) session.destroy();
  };
  return sessions;
}
