import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { FRAME_HEADER_BYTES, FRAME_SETTINGS, headersFramesForStream1 } from './hpack.ts';
import { GONE_EVENTS, giveBack, PREFACE } from './preface.ts';

// `Upgrade: h2c` on the cleartext port (docs/adr/0003-one-port-for-h1-h2c.md): Node's http2 has no
// API for an upgraded connection, so the request that asked for it becomes stream 1.

/** A client's first SETTINGS frame is a few dozen bytes; more than this is not a client to wait for. */
const MAX_FIRST_SETTINGS_BYTES = 4_096;

/** An upgrade to h2c that can be honoured: HTTP/1.1, `HTTP2-Settings` present, no request body. */
export function isH2cUpgrade(request: IncomingMessage): boolean {
  const upgrade = request.headers.upgrade;
  if (upgrade === undefined || request.httpVersion !== '1.1') return false;
  if (!upgrade.split(',').some((token) => token.trim().toLowerCase() === 'h2c')) return false;
  if (request.headers['http2-settings'] === undefined) return false;
  // RFC 9113, section 3.1: a body would have to be sent before the switch; serve such a request over
  // HTTP/1.1 instead, which the upgrade mechanism allows (RFC 9110, section 7.8).
  const length = request.headers['content-length'];
  return (length === undefined || length === '0') && request.headers['transfer-encoding'] === undefined;
}

/**
 * What is wrong with an `HTTP2-Settings` header, or undefined: RFC 9113 (section 3.2.1) makes it
 * exactly one field holding the base64url of a SETTINGS payload (6 bytes a parameter).
 */
export function http2SettingsProblem(value: string | string[] | undefined): string | undefined {
  if (typeof value !== 'string') return 'HTTP2-Settings must be one header field';
  if (!/^[A-Za-z0-9_-]*={0,2}$/.test(value) || Buffer.from(value, 'base64url').length % 6 !== 0)
    return 'HTTP2-Settings must be the base64url of a SETTINGS payload (6 bytes a parameter)';
  return undefined;
}

/**
 * Answers `Upgrade: h2c` with 101 and hands the connection to the http2 server. Node's http2 has no
 * API for an upgraded connection, so the request that asked for the upgrade is injected as stream 1
 * (RFC 9113 section 3.2 makes it exactly that): once the client's preface and first SETTINGS frame
 * are in, a HEADERS frame carrying the request is put after them, and the http2 server answers it
 * as if the client had sent it.
 */
export function upgradeToH2c(
  request: IncomingMessage,
  socket: Socket,
  head: Buffer,
  timeoutMs: number,
  done: (ok: boolean) => void,
): void {
  const headers = headersFramesForStream1(request);
  socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n');
  let seen = head;
  const finish = (ok: boolean) => {
    socket.removeListener('data', onData);
    for (const event of GONE_EVENTS) socket.removeListener(event, onFail);
    socket.setTimeout(0);
    if (!ok) {
      socket.destroy();
      return done(false);
    }
    const settingsEnd = PREFACE.length + FRAME_HEADER_BYTES + seen.readUIntBE(PREFACE.length, 3);
    giveBack(socket, Buffer.concat([seen.subarray(0, settingsEnd), headers, seen.subarray(settingsEnd)]));
    done(true);
  };
  const check = () => {
    const n = Math.min(seen.length, PREFACE.length);
    if (seen.compare(PREFACE, 0, n, 0, n) !== 0) return finish(false);
    if (seen.length < PREFACE.length + FRAME_HEADER_BYTES) return;
    const length = seen.readUIntBE(PREFACE.length, 3);
    const type = seen[PREFACE.length + 3];
    if (type !== FRAME_SETTINGS || length > MAX_FIRST_SETTINGS_BYTES) return finish(false);
    if (seen.length >= PREFACE.length + FRAME_HEADER_BYTES + length) finish(true);
  };
  const onData = (chunk: Buffer) => {
    seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
    check();
  };
  const onFail = () => finish(false);
  socket.on('data', onData);
  for (const event of GONE_EVENTS) socket.once(event, onFail);
  if (timeoutMs > 0) socket.setTimeout(timeoutMs);
  if (seen.length > 0) check();
}
