import type { Socket } from 'node:net';

// Which protocol a cleartext connection speaks, told by its first bytes
// (docs/adr/0003-one-port-for-h1-h2c.md).

/** The client connection preface of HTTP/2 (RFC 9113, section 3.4). */
export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/**
 * Reads a new connection's first bytes until they show whether it starts with the HTTP/2 preface,
 * then gives them back to the socket and calls `decide` (with `undefined` when the socket ended or
 * failed first). A client that sends the preface in pieces is waited for, up to `timeoutMs`; an
 * HTTP/1.1 request is told apart at its first byte that differs from the preface, usually the first.
 */
export function sniffPreface(
  socket: Socket,
  timeoutMs: number,
  decide: (isHttp2: boolean | undefined) => void,
): void {
  let seen: Buffer = Buffer.alloc(0);
  const finish = (isHttp2: boolean | undefined) => {
    socket.removeListener('data', onData);
    for (const event of GONE_EVENTS) socket.removeListener(event, onGone);
    socket.setTimeout(0);
    if (isHttp2 !== undefined) giveBack(socket, seen);
    decide(isHttp2);
  };
  const onData = (chunk: Buffer) => {
    seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, PREFACE.length);
    if (seen.compare(PREFACE, 0, n, 0, n) !== 0) finish(false);
    else if (n === PREFACE.length) finish(true);
  };
  // Ended, failed or silent for too long before saying which protocol it speaks: nothing to serve.
  const onGone = () => {
    finish(undefined);
    socket.destroy();
  };
  socket.on('data', onData);
  for (const event of GONE_EVENTS) socket.once(event, onGone);
  if (timeoutMs > 0) socket.setTimeout(timeoutMs);
}

/** Events after which a connection still being sniffed (or upgraded) has nothing left to serve. */
export const GONE_EVENTS = ['end', 'close', 'error', 'timeout'] as const;

/**
 * Puts bytes read for sniffing back in front of the socket's readable buffer, paused, for the next
 * owner: the HTTP/1.1 server's `data` listener resumes it, an HTTP/2 session reads what is buffered.
 */
export function giveBack(socket: Socket, bytes: Buffer): void {
  socket.pause();
  if (bytes.length > 0) socket.unshift(bytes);
  // Back to "no mode chosen yet", as a fresh connection is: adding a `data` listener then resumes.
  // @types/node has it readonly; node's Readable has a setter for it.
  (socket as { readableFlowing: boolean | null }).readableFlowing = null;
}
