/**
 * The request headers a replay does not send again (`POST /replay`, replay.ts) and the console's
 * "copy as curl" leaves out (console/page/curl.ts): hop-by-hop, framing, the host (the target's own
 * is used), and the stored deadline, which expired with the stored request (the replay carries the
 * replaying caller's budget). Imports nothing, so the console's page bundles it as it is;
 * test/echo/replay-headers.test.ts holds the deadline names to obs's.
 */
export const NOT_REPLAYED_HEADERS: readonly string[] = [
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'host',
  'expect',
  'http2-settings',
  'obs-timeout-deadline-ms',
  'obs-timeout-ms',
];
