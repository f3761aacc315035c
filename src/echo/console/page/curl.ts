/**
 * "Copy as curl": a stored request (as `GET /history` shows it) as one POSIX shell command. The
 * headers `POST /replay` leaves out are left out here too (hop-by-hop, framing, the host and the
 * stored deadline: replay.ts), and so are the masked ones, which would send `[MASKED]`.
 */

import { NOT_REPLAYED_HEADERS } from '../../replay-headers.ts';

/** The part of a history entry the command is made of. */
export interface CurlSource {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  readonly body: string;
  readonly body_encoding: 'utf8' | 'base64';
  readonly body_truncated: boolean;
}

export interface CurlCommand {
  readonly command: string;
  /** Headers left out because history masked their value. */
  readonly masked: readonly string[];
  /** The stored body was cut (`ECHO_HISTORY_MAX_BODY`): the command sends what was kept. */
  readonly truncated: boolean;
}

/** What history shows for a masked value (obs's `MASK`). */
export const MASKED_VALUE = '[MASKED]';

/** Headers replay.ts does not send again; the same here. */
const LEFT_OUT: ReadonlySet<string> = new Set(NOT_REPLAYED_HEADERS);

/** `text` as one single-quoted shell word. */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** The command that sends the stored request again to `origin` (`http://localhost:8080`). */
export function curlCommand(source: CurlSource, origin: string): CurlCommand {
  const parts: string[] = ['curl'];
  if (source.method !== 'GET' || source.body !== '') {
    if (source.method !== 'POST' || source.body === '') parts.push('-X', shellQuote(source.method));
  }
  parts.push(shellQuote(new URL(source.url, origin).href));
  const masked: string[] = [];
  for (const [name, value] of Object.entries(source.headers)) {
    if (value === undefined || name.startsWith(':') || LEFT_OUT.has(name.toLowerCase())) continue;
    for (const item of typeof value === 'string' ? [value] : value) {
      if (item === MASKED_VALUE) {
        if (!masked.includes(name)) masked.push(name);
        continue;
      }
      parts.push('-H', shellQuote(`${name}: ${item}`));
    }
  }
  let command: string;
  if (source.body === '') command = parts.join(' ');
  else if (source.body_encoding === 'utf8')
    command = [...parts, '--data-binary', shellQuote(source.body)].join(' ');
  // Bytes that are not text go through base64, so the shell never sees them.
  else
    command = `printf %s ${shellQuote(source.body)} | base64 -d | ${[...parts, '--data-binary', '@-'].join(' ')}`;
  return { command, masked, truncated: source.body_truncated };
}
