/**
 * What the main thread hands the log worker once per event-loop turn (log-thread.ts), and how the
 * worker, or the main thread after the worker has gone, turns it into the lines it writes.
 *
 * A batch is one flat array: its first element is the number of characters it accounts for (the
 * bound of what waits, see log-thread.ts), then entries in the order they were logged:
 * - a string: a finished line (pino's own, already masked by its `streamWrite` hook);
 * - {@link TAG_FORMAT}, the request id's `,"key":`, the message's `,"key":` and the line's end;
 * - {@link TAG_BINDINGS}, the logger's bindings (`,"pid":1,"hostname":"h"`);
 * - {@link TAG_RECORD}, the time piece (`,"time":"…"`), the request id, the number N of mixin
 *   fields, N pairs of `,"key":` and the value's JSON, then the message: an access line
 *   (access-log.ts), built here byte for byte as the main thread would have built it.
 *
 * A format and the bindings hold for the records after them, in this batch and the next ones.
 */

/** An access line's parts follow. */
export const TAG_RECORD = 0;
/** The request id's label, the message's label and the line's end follow. */
export const TAG_FORMAT = 1;
/** The logger's bindings follow. */
export const TAG_BINDINGS = 2;

/** The labels of an access line: `,"reqId":`, `,"msg":` and the end (`}\n`). */
export interface AccessFormat {
  readonly label: string;
  readonly msgLabel: string;
  readonly end: string;
}

/** What the records of a batch are built with: the last format and bindings seen. */
export interface BatchState {
  format: AccessFormat;
  bindings: string;
}

/** The state before any entry has set it. */
export function initialBatchState(): BatchState {
  return { format: { label: ',"reqId":', msgLabel: ',"msg":', end: '}\n' }, bindings: '' };
}

/** The lines of one batch. */
export interface FormattedBatch {
  /** The lines, joined. */
  readonly text: string;
  /** How many lines. */
  readonly lines: number;
}

/**
 * Turns `batch` into its lines, updating `state` with the formats and bindings it carries; each
 * access line goes through `mask` (obs's `maskLogLine`) when one is given. A malformed batch ends
 * where it stops making sense: what was built before is kept.
 */
export function formatBatch(
  batch: readonly unknown[],
  state: BatchState,
  mask: ((line: string) => string) | undefined,
): FormattedBatch {
  let text = '';
  let lines = 0;
  let i = 1;
  while (i < batch.length) {
    const entry = batch[i++];
    if (typeof entry === 'string') {
      text += entry;
      lines++;
      continue;
    }
    if (entry === TAG_RECORD) {
      const time = batch[i++] as string;
      const id = batch[i++];
      const n = batch[i++] as number;
      const { label, msgLabel, end } = state.format;
      let line = `{"level":30${time}${state.bindings}${label}${JSON.stringify(id)}`;
      for (let k = 0; k < n; k++) line += (batch[i++] as string) + (batch[i++] as string);
      line += `${msgLabel}${JSON.stringify(batch[i++] as string)}${end}`;
      text += mask === undefined ? line : mask(line);
      lines++;
    } else if (entry === TAG_FORMAT) {
      state.format = {
        label: batch[i++] as string,
        msgLabel: batch[i++] as string,
        end: batch[i++] as string,
      };
    } else if (entry === TAG_BINDINGS) {
      state.bindings = batch[i++] as string;
    } else {
      break;
    }
  }
  return { text, lines };
}
