import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import { test } from 'node:test';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { activeTimers, eventually, until } from '../helpers/runtime.ts';

/** A drain that does not end the streams would hang the test: fail it instead. */
const DRAIN_TEST = { timeout: 15_000 };

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UPTIME = /^(\d+d)?(\d+h)?(\d+m)?\d+s$/;
const TICK = { ECHO_SSE_TICKER: '100ms' };

interface SseEvent {
  id?: string;
  event?: string;
  data: string;
  at: number;
}

interface Payload {
  counter: number;
  timestamp: string;
  uptime: string;
}

/**
 * A minimal EventSource over node:http, one connection of its own (no pool, so no client timers):
 * it records events and comments in arrival order.
 */
class SseClient {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  /** Events and comments in arrival order, as `event:<id>` or `comment:<text>`. */
  readonly sequence: string[] = [];
  readonly ended: Promise<'end' | 'aborted'>;
  readonly response: http.IncomingMessage;
  private readonly request: http.ClientRequest;
  private buffer = '';

  constructor(response: http.IncomingMessage, request: http.ClientRequest) {
    this.response = response;
    this.request = request;
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => this.feed(chunk));
    this.ended = new Promise((resolve) => {
      response.once('end', () => resolve('end'));
      response.once('aborted', () => resolve('aborted'));
      response.once('error', () => resolve('aborted'));
    });
  }

  private feed(chunk: string): void {
    this.buffer += chunk;
    let cut = this.buffer.indexOf('\n\n');
    while (cut !== -1) {
      const block = this.buffer.slice(0, cut);
      this.buffer = this.buffer.slice(cut + 2);
      const event: SseEvent = { data: '', at: Date.now() };
      let isEvent = false;
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) {
          this.comments.push(line.slice(1).trim());
          this.sequence.push(`comment:${line.slice(1).trim()}`);
          continue;
        }
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') event.id = value;
        else if (field === 'event') event.event = value;
        else if (field === 'data') event.data = event.data === '' ? value : `${event.data}\n${value}`;
        else continue;
        isEvent = true;
      }
      if (isEvent) {
        this.events.push(event);
        this.sequence.push(`event:${event.id ?? event.event}`);
      }
      cut = this.buffer.indexOf('\n\n');
    }
  }

  /** Messages (events without an `event:` name), as their JSON payloads. */
  messages(): Array<SseEvent & { payload: Payload }> {
    return this.events
      .filter((e) => e.event === undefined)
      .map((e) => ({ ...e, payload: JSON.parse(e.data) as Payload }));
  }

  async waitFor(check: (client: SseClient) => boolean, withinMs = 10_000): Promise<void> {
    await until('the events checked for', () => check(this), withinMs, 5).catch((error: Error) =>
      assert.fail(`${error.message}; got ${JSON.stringify(this.sequence)}`),
    );
  }

  close(): void {
    this.request.destroy();
  }
}

function openSse(echo: RunningEcho, path = '/sse', headers: Record<string, string> = {}): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const request = http.get(`${echo.url}${path}`, { agent: false, headers });
    request.once('error', reject);
    request.once('response', (response) => resolve(new SseClient(response, request)));
  });
}

/** A plain request whose answer is read whole. */
async function getText(
  echo: RunningEcho,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
    http.get(`${echo.url}${path}`, { agent: false, headers }, resolve).once('error', reject);
  });
  let text = '';
  response.setEncoding('utf8');
  for await (const chunk of response) text += chunk;
  return { status: response.statusCode ?? 0, headers: response.headers, text };
}

test('sse – events arrive every ECHO_SSE_TICKER with increasing ids and JSON data', async (t) => {
  const echo = await startEcho(TICK);
  t.after(() => echo.close());
  const client = await openSse(echo);
  t.after(() => client.close());
  await client.waitFor((c) => c.messages().length >= 5);
  const messages = client.messages().slice(0, 5);
  messages.forEach((m, i) => {
    assert.equal(m.id, String(i + 1));
    assert.equal(m.payload.counter, i + 1);
    assert.match(m.payload.timestamp, ISO_UTC);
    assert.ok(Math.abs(Date.parse(m.payload.timestamp) - m.at) < 1000, m.payload.timestamp);
    assert.match(m.payload.uptime, UPTIME);
    assert.deepEqual(Object.keys(m.payload).sort(), ['counter', 'timestamp', 'uptime']);
  });
  // The first event comes at once, then one per tick: never sooner than a tick (less the clock's
  // rounding), and a loaded machine may make a tick late but not all of them four times over.
  const gaps: number[] = [];
  for (let i = 2; i < messages.length; i++) {
    gaps.push(Date.parse(messages[i]!.payload.timestamp) - Date.parse(messages[i - 1]!.payload.timestamp));
  }
  for (const gap of gaps) assert.ok(gap >= 60, `gap ${gap} ms: faster than the 100 ms tick (${gaps})`);
  const median = [...gaps].sort((a, b) => a - b)[Math.floor(gaps.length / 2)]!;
  assert.ok(median <= 400, `median gap ${median} ms: slower than the 100 ms tick (${gaps})`);
});

test('sse – headers: event-stream, no-cache, no proxy buffering, never compressed', async (t) => {
  const echo = await startEcho(TICK);
  t.after(() => echo.close());
  const client = await openSse(echo, '/sse', {
    'accept-encoding': 'gzip, br, deflate',
    'x-echo-compress': 'gzip',
    'x-echo-delay': '5s',
    'x-echo-error': '500',
    'x-echo-chaos': '100',
  });
  t.after(() => client.close());
  const { headers, statusCode } = client.response;
  assert.equal(statusCode, 200);
  // As docs/service/index.md says and the seed's own tests expect: the media type alone (SSE is UTF-8 by definition).
  assert.equal(headers['content-type'], 'text/event-stream');
  assert.equal(headers['cache-control'], 'no-cache');
  assert.equal(headers['x-accel-buffering'], 'no');
  assert.equal(headers['content-encoding'], undefined);
  assert.equal(headers['content-length'], undefined);
  assert.equal(headers['x-echo-fault'], undefined);
  // No delay either: the first event is there at once, readable as plain text.
  const started = Date.now();
  await client.waitFor((c) => c.messages().length >= 1, 1000);
  assert.ok(Date.now() - started < 1000);
});

test('sse – a comment heartbeat comes between two events', async (t) => {
  const echo = await startEcho(TICK);
  t.after(() => echo.close());
  const client = await openSse(echo);
  t.after(() => client.close());
  await client.waitFor((c) => c.messages().length >= 3);
  assert.ok(client.comments.includes('heartbeat'), JSON.stringify(client.sequence));
  const events = client.sequence.filter((s) => s.startsWith('event:'));
  const second = client.sequence.indexOf(events[1]!);
  const third = client.sequence.indexOf(events[2]!);
  assert.ok(
    client.sequence.slice(second + 1, third).includes('comment:heartbeat'),
    `no heartbeat between events 2 and 3: ${JSON.stringify(client.sequence)}`,
  );
});

test('sse – reconnecting with Last-Event-ID continues the numbering', async (t) => {
  const echo = await startEcho(TICK);
  t.after(() => echo.close());
  const first = await openSse(echo);
  await first.waitFor((c) => c.messages().length >= 3);
  first.close();
  const last = first.messages().at(-1)!.id!;

  const again = await openSse(echo, '/sse', { 'last-event-id': last });
  t.after(() => again.close());
  await again.waitFor((c) => c.messages().length >= 2);
  assert.deepEqual(
    again
      .messages()
      .slice(0, 2)
      .map((m) => m.payload.counter),
    [Number(last) + 1, Number(last) + 2],
  );
  assert.equal(again.messages()[0]!.id, String(Number(last) + 1));
});

test('sse – ?lastEventId= resumes too; a bad or huge id starts again at 1', async (t) => {
  const echo = await startEcho(TICK);
  t.after(() => echo.close());
  const firstId = async (path: string, headers: Record<string, string> = {}): Promise<string | undefined> => {
    const client = await openSse(echo, path, headers);
    try {
      await client.waitFor((c) => c.messages().length >= 1);
      return client.messages()[0]!.id;
    } finally {
      client.close();
    }
  };
  assert.equal(await firstId('/sse?lastEventId=41'), '42');
  assert.equal(await firstId('/sse', { 'last-event-id': '9007199254740990' }), '9007199254740991');
  // The header wins over the query, as a reconnecting EventSource sends the header.
  assert.equal(await firstId('/sse?lastEventId=41', { 'last-event-id': '7' }), '8');
  for (const bad of ['abc', '-5', '1e3', '3.5', '99999999999999999999', '9007199254740993', '']) {
    assert.equal(await firstId('/sse', { 'last-event-id': bad }), '1', `Last-Event-ID: ${bad}`);
  }
  assert.equal(await firstId('/sse?lastEventId=%3Cscript%3E'), '1');
});

test('sse – a client that leaves takes its timers and its count with it', async (t) => {
  const echo = await startEcho(TICK);
  t.after(() => echo.close());
  const baseline = activeTimers();
  const clients = await Promise.all(Array.from({ length: 5 }, () => openSse(echo)));
  await Promise.all(clients.map((c) => c.waitFor((x) => x.messages().length >= 2)));
  assert.equal(echo.app.echo.openStreams.sse, 5);
  assert.ok(activeTimers() >= baseline + 5, `${activeTimers() - baseline} timers for 5 streams`);
  for (const client of clients) client.close();
  assert.ok(await eventually(() => echo.app.echo.openStreams.sse === 0, 10_000), 'streams still counted');
  assert.ok(
    await eventually(() => activeTimers() <= baseline, 10_000),
    `timers left behind: ${activeTimers() - baseline}`,
  );
  const health = JSON.parse((await getText(echo, '/health')).text) as {
    metrics: { open_sse_streams: number };
  };
  assert.equal(health.metrics.open_sse_streams, 0);
});

test('sse – past ECHO_MAX_STREAMS it answers 503 with a JSON error', async (t) => {
  const echo = await startEcho({ ...TICK, ECHO_MAX_STREAMS: '1' });
  t.after(() => echo.close());
  const open = await openSse(echo);
  t.after(() => open.close());
  const refused = await getText(echo, '/sse');
  assert.equal(refused.status, 503);
  assert.match(String(refused.headers['content-type']), /^application\/json/);
  assert.equal(refused.headers['retry-after'], '1');
  assert.equal(
    (JSON.parse(refused.text) as { error: { code: string } }).error.code,
    'ECHO_ERR_TOO_MANY_STREAMS',
  );
  assert.equal(echo.app.echo.openStreams.sse, 1);
  open.close();
  assert.ok(await eventually(() => echo.app.echo.openStreams.sse === 0, 10_000));
  const next = await openSse(echo);
  t.after(() => next.close());
  assert.equal(next.response.statusCode, 200);
});

test('sse – ECHO_MAX_STREAMS=0 refuses every stream', async (t) => {
  const echo = await startEcho({ ...TICK, ECHO_MAX_STREAMS: '0' });
  t.after(() => echo.close());
  const refused = await getText(echo, '/sse');
  assert.equal(refused.status, 503);
  assert.equal(echo.app.echo.openStreams.sse, 0);
});

test(
  'sse – draining ends each stream cleanly with a close event, and refuses new ones',
  DRAIN_TEST,
  async () => {
    const echo = await startEcho(TICK);
    let closedAt = 0;
    try {
      const clients = await Promise.all([openSse(echo), openSse(echo)]);
      await Promise.all(clients.map((c) => c.waitFor((x) => x.messages().length >= 1)));
      echo.app.echo.drain.abort();
      for (const client of clients) {
        // A complete response (the chunked body's last chunk), not a dropped connection.
        assert.equal(await client.ended, 'end');
        assert.equal(client.events.at(-1)?.event, 'close');
        assert.match(client.events.at(-1)?.data ?? '', /draining/);
      }
      assert.equal(echo.app.echo.openStreams.sse, 0);
      const late = await getText(echo, '/sse');
      assert.equal(late.status, 503);
      assert.equal((JSON.parse(late.text) as { error: { code: string } }).error.code, 'ECHO_ERR_DRAINING');
    } finally {
      const started = Date.now();
      await echo.close();
      closedAt = Date.now() - started;
    }
    assert.ok(closedAt < 2000, `close took ${closedAt} ms`);
  },
);

test('sse – closing the server ends open streams instead of waiting for them', DRAIN_TEST, async () => {
  const echo = await startEcho(TICK);
  const client = await openSse(echo);
  await client.waitFor((c) => c.messages().length >= 1);
  const started = Date.now();
  await echo.close();
  assert.ok(Date.now() - started < 2000, `close took ${Date.now() - started} ms`);
  assert.equal(await client.ended, 'end');
  assert.equal(client.events.at(-1)?.event, 'close');
});

test(
  'sse – a stream is counted and logged once it ends, whether the client leaves or the server ends it',
  DRAIN_TEST,
  async (t) => {
    const echo = await startEcho(TICK, { captureLogs: true });
    t.after(() => echo.close());
    const series = (n: number) =>
      `echo_requests_total{method="GET",path="/sse",status="200",fault="none"} ${n}`;
    const seen = (n: number): Promise<boolean> =>
      until(series(n), async () => (await getText(echo, '/metrics')).text.includes(series(n))).then(
        () => true,
        () => false,
      );
    const completions = () =>
      echo.logs.filter((l) => /GET \/sse - 200 [\d.]+ms/.test(String(l['msg']))).length;

    const leaving = await openSse(echo);
    await leaving.waitFor((c) => c.messages().length >= 1);
    leaving.close();
    assert.ok(await seen(1), `no ${series(1)} in /metrics after the client left`);
    assert.equal(completions(), 1, 'no completion line for the stream the client left');

    const ended = await openSse(echo);
    await ended.waitFor((c) => c.messages().length >= 1);
    echo.app.echo.drain.abort();
    assert.equal(await ended.ended, 'end');
    assert.ok(await seen(2), `no ${series(2)} in /metrics after the server ended the stream`);
    assert.equal(completions(), 2, 'no completion line for the stream the server ended');
  },
);

test('sse – the stream works over HTTP/2 (h2c with prior knowledge)', async (t) => {
  const echo = await startEcho(TICK);
  const session = http2.connect(echo.url);
  // The session first: closing the server waits for it (after hooks run in the order they were added).
  t.after(async () => {
    session.destroy();
    await echo.close();
  });
  const stream = session.request({ ':path': '/sse', 'accept-encoding': 'gzip', 'x-echo-compress': 'gzip' });
  const headers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
    session.once('error', reject);
    stream.once('error', reject);
    stream.once('response', resolve);
  });
  assert.equal(headers[':status'], 200);
  // As docs/service/index.md says and the seed's own tests expect: the media type alone (SSE is UTF-8 by definition).
  assert.equal(headers['content-type'], 'text/event-stream');
  assert.equal(headers['content-encoding'], undefined);
  let text = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    text += chunk;
  });
  assert.ok(await eventually(() => (text.match(/^id: /gm) ?? []).length >= 2, 10_000), text);
  assert.match(text, /^id: 1\ndata: \{"counter":1,/m);
  assert.match(text, /^id: 2\ndata: \{"counter":2,/m);
  assert.match(text, /^: heartbeat$/m);
  stream.close();
  assert.ok(
    await eventually(() => echo.app.echo.openStreams.sse === 0, 10_000),
    'the h2 stream is still counted',
  );
  // The session stays usable: leaving one stream does not end the connection.
  const health = session.request({ ':path': '/health' });
  const status = await new Promise((resolve) => health.once('response', (h) => resolve(h[':status'])));
  health.resume();
  assert.equal(status, 200);
});
