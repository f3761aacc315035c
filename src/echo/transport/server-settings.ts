import type http2 from 'node:http2';
import { h2Settings } from './http2-limits.ts';

// What the servers are made with, read once from the configuration by the transport's entry
// (index.ts): the HTTP/1.1 timeouts are Node's own (`headersTimeout`, `requestTimeout`,
// `keepAliveTimeout`), the HTTP/2 ones are ours (http2-limits.ts). docs/adr/0016-connection-limits.md.

/** The timeouts and HTTP/2 settings every server of the transport is made with. */
export interface ServerSettings {
  /** `ECHO_HEADERS_TIMEOUT`: a request head, and a TLS handshake, must arrive within it. */
  readonly headersTimeoutMs: number;
  /** `ECHO_REQUEST_TIMEOUT`: a whole request must arrive within it (HTTP/1.1 and HTTP/2 streams). */
  readonly requestTimeoutMs: number;
  /** `ECHO_KEEP_ALIVE_TIMEOUT`: an idle HTTP/1.1 connection or HTTP/2 session is closed after it. */
  readonly keepAliveTimeoutMs: number;
  /** How often node checks HTTP/1.1 requests against their timeouts. */
  readonly connectionsCheckingIntervalMs: number;
  /** The SETTINGS every HTTP/2 session advertises. */
  readonly h2: http2.Settings;
}

/** The settings of the servers, from the configuration's timeouts and `ECHO_H2_MAX_CONCURRENT_STREAMS`. */
export function serverSettings(config: {
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly h2MaxConcurrentStreams: number;
}): ServerSettings {
  return {
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
    keepAliveTimeoutMs: config.keepAliveTimeoutMs,
    connectionsCheckingIntervalMs: connectionsCheckingIntervalMs(config),
    h2: h2Settings(config.h2MaxConcurrentStreams),
  };
}

export const MAX_CONNECTIONS_CHECKING_INTERVAL_MS = 1000;
export const MIN_CONNECTIONS_CHECKING_INTERVAL_MS = 50;
/**
 * How often node looks for HTTP/1.1 requests past their headers or request timeout (its
 * `connectionsCheckingInterval`, 30 s by default: a 3 s timeout then cut a stalled body after 3 to
 * 33 s). A quarter of the smaller timeout, so a slow client is cut within a quarter of its timeout
 * late, and within a second at most; not more often than `MIN_CONNECTIONS_CHECKING_INTERVAL_MS`
 * (each check walks the connections with a request in progress).
 */
export function connectionsCheckingIntervalMs(config: {
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
}): number {
  const smallest = Math.min(config.headersTimeoutMs, config.requestTimeoutMs);
  return Math.min(
    MAX_CONNECTIONS_CHECKING_INTERVAL_MS,
    Math.max(MIN_CONNECTIONS_CHECKING_INTERVAL_MS, Math.floor(smallest / 4)),
  );
}
