/**
 * Where a JSON pointer (`/0/responses/1/status`, the path of a scenario problem) sits in the YAML
 * text it was read from: the 1-based line of its key (a mapping's value) or of its item (a
 * sequence's). A pointer to something the text lacks (a required field) is placed at the nearest
 * thing that has it (the scenario that misses the field). From js-yaml's event stream, which
 * carries source offsets; one pass over the text.
 */
import { EVENT_ID, type Event, getScalarValue, parseEvents } from 'js-yaml';

type Frame =
  | { readonly kind: 'document' | 'ignored'; readonly path: string }
  | { readonly kind: 'sequence'; readonly path: string; index: number }
  | { readonly kind: 'mapping'; readonly path: string; key: string | undefined; keyAt: number };

const pointerSegment = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');

/** The line of each node's pointer in `text` (which must parse: call it after the text loaded). */
export function pointerLines(text: string): Map<string, number> {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  const lineOf = (offset: number): number => {
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (starts[mid]! <= offset) low = mid;
      else high = mid - 1;
    }
    return low + 1;
  };
  const lines = new Map<string, number>();
  const stack: Frame[] = [];
  const events: Event[] = parseEvents(text, {});
  for (const event of events) {
    if (event.type === EVENT_ID.POP) {
      stack.pop();
      continue;
    }
    if (event.type === EVENT_ID.DOCUMENT) {
      stack.push({ kind: 'document', path: '' });
      continue;
    }
    const at =
      event.type === EVENT_ID.SCALAR
        ? event.valueStart
        : event.type === EVENT_ID.ALIAS
          ? event.anchorStart
          : event.start;
    const top = stack.at(-1);
    let path: string | undefined;
    let line = lineOf(Math.max(0, at));
    if (top === undefined || top.kind === 'document') path = '';
    else if (top.kind === 'sequence') path = `${top.path}/${top.index++}`;
    else if (top.kind === 'mapping') {
      if (top.key === undefined) {
        // A key: its line is where its value's pointer goes.
        top.key = event.type === EVENT_ID.SCALAR ? pointerSegment(getScalarValue(text, event)) : '';
        top.keyAt = at;
      } else {
        path = `${top.path}/${top.key}`;
        line = lineOf(Math.max(0, top.keyAt));
        top.key = undefined;
      }
    }
    if (path !== undefined && !lines.has(path)) lines.set(path, line);
    if (event.type === EVENT_ID.SEQUENCE) stack.push({ kind: 'sequence', path: path ?? '', index: 0 });
    else if (event.type === EVENT_ID.MAPPING) {
      stack.push(
        path === undefined
          ? { kind: 'ignored', path: '' }
          : { kind: 'mapping', path, key: undefined, keyAt: at },
      );
    }
  }
  return lines;
}

/** The line of `pointer`, or of its nearest ancestor the text has; 1 for the whole document. */
export function lineOfPointer(lines: ReadonlyMap<string, number>, pointer: string): number {
  let path = pointer;
  for (;;) {
    const line = lines.get(path);
    if (line !== undefined) return line;
    if (path === '') return 1;
    path = path.slice(0, path.lastIndexOf('/'));
  }
}
