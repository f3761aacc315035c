/**
 * `GET /history` as a stream: the JSON array of one page of entries, written entry by entry, with
 * a turn of the event loop between entries and only as fast as the client reads. A read never
 * builds one string of the whole history (100 entries of 10 MiB would not fit in one), and one
 * entry is the most work done between two turns of the loop (issue #30, docs/adr/0029).
 */
import { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { History, type HistoryPage, type HistoryReader } from './history.ts';

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

/**
 * The entries of `page` still stored when each one's turn comes (one evicted meanwhile is left
 * out; of a filtered page, one that no longer passes its filter too), oldest first, as a JSON
 * array; an empty array for no page.
 */
export function historyStream(history: HistoryReader, page: HistoryPage | undefined): Readable {
  return Readable.from(entries(history, page), { objectMode: false });
}

async function* entries(history: HistoryReader, page: HistoryPage | undefined): AsyncGenerator<Buffer> {
  yield OPEN;
  if (page?.matched !== undefined) {
    // A filtered page: its entries by number, each checked again (a filter reads what may change).
    let first = true;
    for (const seq of page.matched.seqs) {
      const entry = history.atOrAfter(seq);
      if (entry === undefined) break;
      if (History.seqOf(entry) !== seq || !page.matched.test(entry)) continue;
      if (!first) yield COMMA;
      first = false;
      yield history.json(entry);
      await nextTurn();
    }
  } else if (page !== undefined) {
    let seq = page.firstSeq;
    let first = true;
    while (seq <= page.lastSeq) {
      // Looked up again at each turn, by number: the stream holds no entry the history has let go.
      const entry = history.atOrAfter(seq);
      if (entry === undefined) break;
      const entrySeq = History.seqOf(entry);
      if (entrySeq > page.lastSeq) break;
      if (!first) yield COMMA;
      first = false;
      yield history.json(entry);
      seq = entrySeq + 1;
      // Readable.from asks for the next chunk within the same turn when the client keeps up.
      await nextTurn();
    }
  }
  yield CLOSE;
}
