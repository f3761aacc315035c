/**
 * A Server-Sent Events parser for a stream read with `fetch` (WHATWG HTML 9.2.6): EventSource
 * cannot send the `Authorization` header, and the admin token must never go in a URL. Fed text as
 * it arrives, in pieces cut anywhere; gives each complete event once.
 */

export interface SseEvent {
  /** `message` when the event named none. */
  readonly event: string;
  readonly data: string;
  readonly id?: string;
}

/** The longest line kept (an event row is a few hundred bytes); a longer one is cut, not stored whole. */
const MAX_LINE_CHARS = 1024 * 1024;

export class SseParser {
  #pending = '';
  #event = '';
  #data: string[] = [];
  #id: string | undefined;

  /** The events completed by `text`, in order. */
  push(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    const buffer = this.#pending + text;
    const lineEnd = /\r\n|\r|\n/g;
    let start = 0;
    for (let match = lineEnd.exec(buffer); match !== null; match = lineEnd.exec(buffer)) {
      // A lone \r at the very end may be the first half of \r\n: wait for the next piece.
      if (match[0] === '\r' && match.index === buffer.length - 1) break;
      this.#line(buffer.slice(start, match.index), events);
      start = match.index + match[0].length;
    }
    const rest = buffer.slice(start);
    this.#pending = rest.length > MAX_LINE_CHARS ? rest.slice(0, MAX_LINE_CHARS) : rest;
    return events;
  }

  #line(line: string, events: SseEvent[]): void {
    if (line === '') {
      if (this.#data.length > 0) {
        events.push({
          event: this.#event === '' ? 'message' : this.#event,
          data: this.#data.join('\n'),
          ...(this.#id === undefined ? {} : { id: this.#id }),
        });
      }
      this.#event = '';
      this.#data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.#event = value;
    else if (field === 'data') this.#data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.#id = value;
  }
}
