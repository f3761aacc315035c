/**
 * One console's live log as a Server-Sent Events body: `event: row` per finished request (its
 * `id:` is the entry's sequence number), `event: dropped` with the count of rows this console lost
 * so far whenever it grows, and a comment heartbeat. Rows are written only as fast as the client
 * reads (the stream's buffer, then the subscription's bounded queue, then dropped and counted),
 * and the rows of one turn of the event loop go out in one write. With `charts`, the charts' points
 * too: `event: points` (the window so far) on connecting, then `event: point` once a second (a
 * point the stream has no room for is skipped: the page shows a gap).
 */
import { Readable } from 'node:stream';
import type { ChartSeries } from './chart-series.ts';
import type { LiveFeed, LiveSubscription } from './live-feed.ts';
import type { LiveRow } from './live-row.ts';

/** What the stream may hold unread before rows wait in the subscription's queue. */
const STREAM_BUFFER_BYTES = 64 * 1024;
/** Rows encoded per write. */
const ROWS_PER_WRITE = 200;

/** The first event: what the page needs to know of the service to explain an empty log. */
export interface LiveHello {
  /** `ECHO_HISTORY_SIZE`: 0 means nothing is recorded, so nothing can be shown. */
  readonly historySize: number;
  /** Whether history masks secrets (`ECHO_HISTORY_SECRETS=mask`). */
  readonly masked: boolean;
}

export function rowEvent(row: LiveRow): string {
  return `id: ${row.seq}\nevent: row\ndata: ${JSON.stringify(row)}\n\n`;
}

export interface LiveStreamOptions {
  readonly hello: LiveHello;
  readonly heartbeatMs: number;
  /** Ends the stream with `event: close` (the server drains). */
  readonly signal: AbortSignal;
  /** The charts' points, made only while a console is subscribed. */
  readonly charts?: ChartSeries;
}

/** The live log of `feed` for one console; subscribed until the stream closes. */
export function liveStream(feed: LiveFeed, options: LiveStreamOptions): Readable {
  let subscription: LiveSubscription | undefined;
  let scheduled = false;
  let reportedDropped = 0;
  const flush = (): void => {
    scheduled = false;
    if (subscription === undefined) return;
    while (stream.readableLength < STREAM_BUFFER_BYTES) {
      const rows = subscription.take(ROWS_PER_WRITE);
      let text = '';
      for (const row of rows) text += rowEvent(row);
      if (subscription.dropped > reportedDropped) {
        reportedDropped = subscription.dropped;
        text += `event: dropped\ndata: ${JSON.stringify({ dropped: reportedDropped })}\n\n`;
      }
      if (text === '') return;
      stream.push(text);
    }
  };
  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  };
  const stream = new Readable({ highWaterMark: STREAM_BUFFER_BYTES, read: schedule });
  const heartbeat = setInterval(() => {
    if (stream.readableLength < STREAM_BUFFER_BYTES) stream.push(': heartbeat\n\n');
  }, options.heartbeatMs);
  heartbeat.unref();
  let leaveCharts: (() => void) | undefined;
  const stop = (): void => {
    clearInterval(heartbeat);
    leaveCharts?.();
    leaveCharts = undefined;
    options.signal.removeEventListener('abort', onDrain);
    subscription?.close();
    subscription = undefined;
  };
  const onDrain = (): void => {
    stop();
    stream.push('event: close\ndata: {"reason":"server draining"}\n\n');
    stream.push(null);
  };
  stream.once('close', stop);
  stream.once('end', stop);
  options.signal.addEventListener('abort', onDrain, { once: true });

  let text = `retry: 2000\nevent: hello\ndata: ${JSON.stringify(options.hello)}\n\n`;
  for (const row of feed.recent()) text += rowEvent(row);
  const charts = options.charts;
  if (charts !== undefined) {
    leaveCharts = charts.subscribe((point) => {
      if (stream.readableLength < STREAM_BUFFER_BYTES) {
        stream.push(`event: point\ndata: ${JSON.stringify(point)}\n\n`);
      }
    });
    text += `event: points\ndata: ${JSON.stringify(charts.points())}\n\n`;
  }
  stream.push(text);
  subscription = feed.subscribe(schedule);
  return stream;
}
