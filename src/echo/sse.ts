import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { recordCompletion } from './completion.ts';
import { EchoError } from './errors.ts';
import type { EchoState } from './state.ts';
import { formatUptime } from './version.ts';

/** The path of the event stream. */
export const SSE_PATH = '/sse';

/** The largest `Last-Event-ID` honoured; anything else starts the count at 1 again. */
export const MAX_LAST_EVENT_ID = Number.MAX_SAFE_INTEGER - 1;

/** Headers of every `/sse` response. */
const SSE_HEADERS = {
  // The media type alone: an event stream is UTF-8 by definition (WHATWG HTML 9.2.5).
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  // nginx (and proxies that follow it) would otherwise hold events back in a buffer.
  'x-accel-buffering': 'no',
} as const;

/**
 * The id the stream resumes after: the `Last-Event-ID` header (what a reconnecting EventSource
 * sends), else the `lastEventId` query parameter (for a client that cannot set headers). A value
 * that is not a plain integer in range counts as none.
 */
export function lastEventIdOf(request: FastifyRequest): number {
  const header = request.headers['last-event-id'];
  const query = (request.query as Record<string, unknown> | undefined)?.['lastEventId'];
  const raw = header ?? (typeof query === 'string' ? query : undefined);
  if (typeof raw !== 'string' || !/^\d{1,16}$/.test(raw.trim())) return 0;
  const n = Number(raw.trim());
  return n <= MAX_LAST_EVENT_ID ? n : 0;
}

/**
 * `/sse`: an event every `ECHO_SSE_TICKER` (`id: n`, `data: {"counter","timestamp","uptime"}`),
 * the first at once, and a comment heartbeat halfway between two events. Sent as a stream through
 * fastify, so onResponse (metrics, logs) runs when it ends, over HTTP/1.1 and HTTP/2 alike.
 */
export function registerSse(app: FastifyInstance, state: EchoState): void {
  const { config } = state;
  const halfTickMs = Math.max(1, Math.floor(config.sseTickerMs / 2));

  app.get(SSE_PATH, async (request, reply) => {
    if (state.drain.signal.aborted) {
      reply.header('retry-after', 1);
      throw new EchoError('ECHO_ERR_DRAINING', []);
    }
    if (state.openStreams.ws + state.openStreams.sse >= config.maxStreams) {
      reply.header('retry-after', 1);
      throw new EchoError('ECHO_ERR_TOO_MANY_STREAMS', [config.maxStreams]);
    }

    let counter = lastEventIdOf(request);
    let half = 0;
    let timer: NodeJS.Timeout | undefined;
    let counted = true;
    state.openStreams.sse++;

    const event = () => {
      counter = counter >= Number.MAX_SAFE_INTEGER ? 1 : counter + 1;
      const data = JSON.stringify({
        counter,
        timestamp: new Date().toISOString(),
        uptime: formatUptime((Date.now() - state.startedAt.getTime()) / 1000),
      });
      return `id: ${counter}\ndata: ${data}\n\n`;
    };
    const stop = () => {
      clearInterval(timer);
      state.drain.signal.removeEventListener('abort', onDrain);
      if (counted) {
        counted = false;
        state.openStreams.sse--;
      }
    };
    // A client that does not read gets no more than the stream's buffer: ticks are skipped (not
    // queued) while it is full, so memory stays bounded and the numbering stays gapless.
    const stream = new Readable({ read() {}, highWaterMark: 16 * 1024 });
    const onDrain = () => {
      stop();
      stream.push('event: close\ndata: {"reason":"server draining"}\n\n');
      stream.push(null);
    };
    stream.once('close', stop);
    stream.once('end', stop);
    state.drain.signal.addEventListener('abort', onDrain, { once: true });

    // EventSource waits `retry` ms before reconnecting after the stream ends.
    stream.push(`retry: ${Math.min(config.sseTickerMs, 3000)}\n\n`);
    stream.push(event());
    timer = setInterval(() => {
      half ^= 1;
      if (stream.readableLength >= stream.readableHighWaterMark) return;
      stream.push(half === 1 ? ': heartbeat\n\n' : event());
    }, halfTickMs);

    // The usual end of a stream is the client leaving, and fastify runs onResponse only for a
    // response that finished: record that one here, as onResponse would have.
    const remote = request.ip ?? '-';
    let finished = false;
    reply.raw.once('finish', () => {
      finished = true;
    });
    reply.raw.once('close', () => {
      if (finished) return;
      recordCompletion(request, reply, state.metrics);
      if (config.logRequests) {
        const ms = Math.round(reply.elapsedTime * 1000) / 1000;
        request.log.info(
          `${remote} ${request.method} ${request.url} - ${reply.statusCode} ${ms}ms (client left)`,
        );
      }
    });

    reply.headers(SSE_HEADERS);
    return reply.send(stream);
  });
}
