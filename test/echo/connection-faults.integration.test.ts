import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { request } from 'undici';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { countDelta, faultCounts, scrapeValue } from '../helpers/metrics.ts';
import { h2Request, openH2, TIMEOUT_MS, waitFor } from '../helpers/protocol-clients.ts';
import { quietFor, until } from '../helpers/runtime.ts';

/**
 * Connection faults (`slow-close`, `blackhole`; #31 item 8, docs/adr/0035), seen over raw sockets
 * the way a client's TCP stack sees them: what bytes came, and when the server closed. Each is
 * asked for by `X-Echo-Error`, by `ECHO_ERROR` and by a scenario response's `error`, and the
 * ledger (counters, history, the fault slot) agrees. Times are checked from below only.
 */

/** `ECHO_REQUEST_TIMEOUT` of the short server: how long a blackhole holds a connection there. */
const HOLD_MS = 300;
/** `ECHO_ERROR_TIMEOUT` of the short server: how long a slow close keeps the connection open. */
const LINGER_MS = 400;
/** What a client on the same event loop may see of a wait less than the server waited. */
const SLACK_MS = 100;

/** Short waits, so a whole hold runs within a test. */
let short: RunningEcho;
/** The defaults (60 s, 65 s): a hold only the client (or the end of the test) ends. */
let long: RunningEcho;
before(async () => {
  short = await startEcho({ ECHO_REQUEST_TIMEOUT: `${HOLD_MS}ms`, ECHO_ERROR_TIMEOUT: `${LINGER_MS}ms` });
  long = await startEcho();
});
after(async () => {
  await short.close();
  await long.close();
});

type Applied = Array<{ kind: string; control: string; source: string; value: string | number }>;

interface Observed {
  /** Every byte the server sent. */
  readonly data: Buffer;
  /** When the request went, and when the last byte and the server's close came (performance.now()). */
  readonly sentAt: number;
  readonly lastByteAt: number | undefined;
  readonly closedAt: number;
  /** The socket error seen (ECONNRESET for a reset), if any. */
  readonly error: string | undefined;
}

/** A raw HTTP/1.1 connection that sends `text` and records what comes back and when it closes. */
class RawClient {
  readonly socket: net.Socket;
  readonly #chunks: Buffer[] = [];
  #sentAt = 0;
  #lastByteAt: number | undefined;
  #error: string | undefined;
  readonly closed: Promise<Observed>;

  constructor(port: number, text: string) {
    this.socket = net.connect(port, '127.0.0.1', () => {
      this.#sentAt = performance.now();
      this.socket.write(text);
    });
    this.socket.on('data', (chunk: Buffer) => {
      this.#lastByteAt = performance.now();
      this.#chunks.push(chunk);
    });
    this.socket.on('error', (error: NodeJS.ErrnoException) => {
      this.#error = error.code;
    });
    this.closed = waitFor(
      new Promise<Observed>((resolve) =>
        this.socket.once('close', () =>
          resolve({
            data: this.data,
            sentAt: this.#sentAt,
            lastByteAt: this.#lastByteAt,
            closedAt: performance.now(),
            error: this.#error,
          }),
        ),
      ),
      'the connection was never closed',
    );
  }

  get data(): Buffer {
    return Buffer.concat(this.#chunks);
  }

  /** Resolves once a whole HTTP/1.1 answer framed by its Content-Length has arrived. */
  async whole(): Promise<Answer> {
    let answer: Answer | undefined;
    const whole = () => {
      answer = parseAnswer(this.data);
      return answer !== undefined;
    };
    await until('a whole answer', whole, TIMEOUT_MS, 10).catch((error: Error) => {
      throw new Error(`${error.message}: ${this.data.toString('latin1')}`);
    });
    return answer as Answer;
  }
}

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** The answer in `data` when its head and its Content-Length's bytes are all there. */
function parseAnswer(data: Buffer): Answer | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [statusLine = '', ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? Number.NaN);
  assert.ok(Number.isInteger(length), `a slow close sends a Content-Length: ${statusLine}`);
  if (data.length < end + 4 + length) return undefined;
  assert.equal(data.length, end + 4 + length, 'nothing after the answer');
  const body = data.subarray(end + 4).toString('latin1');
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

function rawRequest(path: string, headers: Record<string, string> = {}, body = ''): string {
  let text = `${body === '' ? 'GET' : 'POST'} ${path} HTTP/1.1\r\nHost: x\r\n`;
  for (const [name, value] of Object.entries(headers)) text += `${name}: ${value}\r\n`;
  if (body !== '') text += `Content-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`;
  return `${text}\r\n${body}`;
}

interface HistoryEntry {
  request_id: string;
  status: number | null;
  duration_ms: number | null;
  faults?: Applied;
}

async function historyEntry(base: string, requestId: string): Promise<HistoryEntry | undefined> {
  const history = (await (await fetch(`${base}/history`)).json()) as HistoryEntry[];
  return history.find((e) => e.request_id === requestId);
}

/** Polls `echo_active_faults` until it is `value` (a slot is freed when the connection is done). */
async function activeFaults(base: string, value: number): Promise<void> {
  await until(
    `echo_active_faults is ${value}`,
    async () => (await scrapeValue(base, 'echo_active_faults')) === value,
  );
}

/** Checks a blackholed exchange: nothing at all came, then the server closed (FIN, not RST). */
function assertBlackholed(seen: Observed): void {
  assert.equal(seen.data.length, 0, `nothing is ever sent, got: ${seen.data.toString('latin1')}`);
  assert.equal(seen.error, undefined, 'closed, not reset');
  const heldMs = seen.closedAt - seen.sentAt;
  assert.ok(heldMs >= HOLD_MS - SLACK_MS, `held ${heldMs.toFixed(0)} ms, ECHO_REQUEST_TIMEOUT is ${HOLD_MS}`);
}

/** Checks a slow close: the whole answer, then the connection stays open, then the server closes. */
async function assertSlowClosed(client: RawClient): Promise<Answer> {
  const answer = await client.whole();
  const wholeAt = performance.now();
  const seen = await client.closed;
  assert.equal(seen.error, undefined, 'closed, not reset');
  assert.deepEqual(parseAnswer(seen.data), answer, 'nothing came after the answer');
  const openMs = seen.closedAt - (seen.lastByteAt ?? wholeAt);
  assert.ok(
    openMs >= LINGER_MS - SLACK_MS,
    `the connection closed ${openMs.toFixed(0)} ms after the answer, ECHO_ERROR_TIMEOUT is ${LINGER_MS}`,
  );
  assert.equal(answer.headers.connection, 'close', 'a server that means to close says so');
  return answer;
}

// --- blackhole -----------------------------------------------------------------------------------

test('X-Echo-Error: blackhole – nothing is ever sent, and the server closes after ECHO_REQUEST_TIMEOUT', async () => {
  const before = await faultCounts(short.url);
  const client = new RawClient(
    short.port,
    rawRequest('/bh', { 'X-Echo-Error': 'blackhole', 'X-Request-ID': 'bh-1' }),
  );
  // A request body is read too: the fault comes after the whole request.
  const withBody = new RawClient(
    short.port,
    rawRequest('/bh', { 'X-Echo-Error': 'blackhole', 'X-Request-ID': 'bh-2' }, 'read, never answered'),
  );
  assertBlackholed(await client.closed);
  assertBlackholed(await withBody.closed);

  assert.deepEqual(countDelta(before, await faultCounts(short.url)), { blackhole: 2 });
  assert.equal(await scrapeValue(short.url, 'echo_chaos_errors_total{type="blackhole"}'), 2);
  for (const id of ['bh-1', 'bh-2']) {
    const entry = await historyEntry(short.url, id);
    assert.equal(entry?.status, 0, 'no response: status 0, as reset and close');
    assert.deepEqual(entry?.faults, [
      { kind: 'blackhole', control: 'X-Echo-Error', source: 'header', value: 'blackhole' },
    ]);
    assert.ok((entry?.duration_ms ?? 0) >= HOLD_MS - 1, `held ${entry?.duration_ms} ms`);
  }
  await activeFaults(short.url, 0);
  assert.equal((await fetch(`${short.url}/still-serving`)).status, 200);
});

test('X-Echo-Error: blackhole – a client that leaves ends the hold and frees its fault slot', async () => {
  const client = new RawClient(
    long.port,
    rawRequest('/bh-leave', { 'X-Echo-Error': 'blackhole', 'X-Request-ID': 'bh-leave' }),
  );
  await activeFaults(long.url, 1);
  await quietFor(100, 'the server sends nothing while it holds the request');
  assert.equal(client.data.length, 0, 'nothing sent while held');
  client.socket.destroy();
  await activeFaults(long.url, 0);
  const entry = await historyEntry(long.url, 'bh-leave');
  assert.equal(entry?.status, 499, 'the client left: 499, as a client that leaves a timeout');
  assert.equal(entry?.faults?.[0]?.kind, 'blackhole');
});

test('X-Echo-Error: blackhole – in a weighted list, case-insensitive; a request without it is answered', async () => {
  const seen = await new RawClient(short.port, rawRequest('/bh-list', { 'X-Echo-Error': 'BlackHole:100' }))
    .closed;
  assertBlackholed(seen);
  const r = await request(`${short.url}/bh-list`, { headers: { 'X-Echo-Error': 'blackhole:0' } });
  await r.body.text();
  assert.equal(r.statusCode, 200);
});

test('X-Echo-Error: blackhole – over HTTP/2 only its stream gets nothing, then RST_STREAM(NO_ERROR); the session serves on', async () => {
  const session = await openH2(short.url);
  try {
    const stream = session.request({
      ':path': '/bh-h2',
      'x-echo-error': 'blackhole',
      'x-request-id': 'bh-h2',
    });
    let responded = false;
    let bytes = 0;
    stream.on('response', () => {
      responded = true;
    });
    stream.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    stream.on('error', () => {});
    const startedAt = performance.now();
    // Another stream of the same session is answered while this one is held.
    const other = await h2Request(session, { ':path': '/beside' });
    assert.equal(other.status, 200);
    await waitFor(
      new Promise((resolve) => stream.once('close', resolve)),
      'the blackholed stream never closed',
    );
    const heldMs = performance.now() - startedAt;
    assert.equal(responded, false, 'no HEADERS');
    assert.equal(bytes, 0, 'no DATA');
    assert.equal(stream.rstCode, http2.constants.NGHTTP2_NO_ERROR);
    assert.ok(heldMs >= HOLD_MS - SLACK_MS, `held ${heldMs.toFixed(0)} ms`);
    assert.equal((await h2Request(session, { ':path': '/after' })).status, 200, 'the session lives on');
    assert.equal((await historyEntry(short.url, 'bh-h2'))?.status, 0);
    await activeFaults(short.url, 0);
  } finally {
    session.destroy();
  }
});

// --- slow-close ----------------------------------------------------------------------------------

test('X-Echo-Error: slow-close – the whole answer comes first, the close only ECHO_ERROR_TIMEOUT later', async () => {
  const before = await faultCounts(short.url);
  const client = new RawClient(
    short.port,
    rawRequest(
      '/sc',
      { 'X-Echo-Error': 'slow-close', 'X-Echo-Explain': 'true', 'X-Request-ID': 'sc-1' },
      'every byte',
    ),
  );
  const answer = await assertSlowClosed(client);
  assert.equal(answer.status, 200);
  assert.equal(answer.body, 'every byte', 'the usual answer: the echoed body');
  assert.equal(answer.headers['x-echo-fault'], 'slow-close');
  const applied: Applied = [
    { kind: 'slow-close', control: 'X-Echo-Error', source: 'header', value: 'slow-close' },
  ];
  assert.deepEqual(JSON.parse(answer.headers['x-echo-applied'] ?? 'null'), applied);

  assert.deepEqual(countDelta(before, await faultCounts(short.url)), { 'slow-close': 1 });
  assert.equal(await scrapeValue(short.url, 'echo_chaos_errors_total{type="slow-close"}'), 1);
  const entry = await historyEntry(short.url, 'sc-1');
  assert.equal(entry?.status, 200);
  assert.deepEqual(entry?.faults, applied);
  await activeFaults(short.url, 0);
});

test('X-Echo-Error: slow-close – other controls shape the answer as usual: a status, a generated body, HEAD, 204', async () => {
  const sized = await assertSlowClosed(
    new RawClient(
      short.port,
      rawRequest('/sc-size', { 'X-Echo-Error': 'slow-close', 'X-Echo-Response-Size': '100000' }),
    ),
  );
  assert.equal(sized.body.length, 100_000);
  const status = await assertSlowClosed(
    new RawClient(
      short.port,
      rawRequest('/sc-status', { 'X-Echo-Error': 'slow-close', 'X-Echo-Status': '418' }),
    ),
  );
  assert.equal(status.status, 418);
  // No body: the head goes at once all the same, and the close waits.
  const head = new RawClient(
    short.port,
    'HEAD /sc-head HTTP/1.1\r\nHost: x\r\nX-Echo-Error: slow-close\r\n\r\n',
  );
  const noContent = new RawClient(
    short.port,
    rawRequest('/sc-204', { 'X-Echo-Error': 'slow-close', 'X-Echo-Status': '204' }),
  );
  for (const [client, expected] of [
    [head, 200],
    [noContent, 204],
  ] as const) {
    const seen = await client.closed;
    const text = seen.data.toString('latin1');
    assert.match(text, new RegExp(`^HTTP/1\\.1 ${expected} `));
    assert.ok(text.endsWith('\r\n\r\n'), 'a head and nothing else');
    assert.match(text, /\r\nconnection: close\r\n/i);
    const openMs = seen.closedAt - (seen.lastByteAt ?? 0);
    assert.ok(openMs >= LINGER_MS - SLACK_MS, `${expected}: closed ${openMs.toFixed(0)} ms after the head`);
  }
});

test('X-Echo-Error: slow-close – a client that reads by the length is done at once; its leaving frees the slot, recorded as answered', async () => {
  const startedAt = performance.now();
  const r = await request(`${long.url}/sc-undici`, {
    headers: { 'X-Echo-Error': 'slow-close', 'X-Request-ID': 'sc-undici' },
  });
  const text = await r.body.text();
  assert.equal(Buffer.byteLength(text), Number(r.headers['content-length']), 'the whole answer');
  assert.ok(performance.now() - startedAt < 10_000, 'not held for ECHO_ERROR_TIMEOUT (65 s)');
  assert.equal(r.statusCode, 200);
  assert.equal(r.headers.connection, 'close');
  await activeFaults(long.url, 0);
  assert.equal((await historyEntry(long.url, 'sc-undici'))?.status, 200);

  const raw = new RawClient(
    long.port,
    rawRequest('/sc-leave', { 'X-Echo-Error': 'slow-close', 'X-Request-ID': 'sc-leave' }),
  );
  await raw.whole();
  await activeFaults(long.url, 1);
  raw.socket.destroy();
  await activeFaults(long.url, 0);
  assert.equal((await historyEntry(long.url, 'sc-leave'))?.status, 200, 'the answer was whole: not 499');
});

test('X-Echo-Error: slow-close – over HTTP/2 the whole answer comes, its stream ends ECHO_ERROR_TIMEOUT later', async () => {
  const session = await openH2(short.url);
  try {
    const stream = session.request({
      ':path': '/sc-h2',
      'x-echo-error': 'slow-close',
      'x-echo-response-size': '5000',
    });
    let headers: http2.IncomingHttpHeaders = {};
    let bytes = 0;
    let wholeAt: number | undefined;
    stream.on('response', (h) => {
      headers = h;
    });
    stream.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes === 5000) wholeAt = performance.now();
    });
    const endedAt = await waitFor(
      new Promise<number>((resolve) => stream.once('end', () => resolve(performance.now()))),
      'the stream never ended',
    );
    assert.equal(headers[':status'], 200);
    assert.equal(headers['content-length'], '5000');
    assert.equal(headers.connection, undefined, 'no connection header over HTTP/2');
    assert.ok(wholeAt !== undefined, 'every byte came');
    assert.ok(endedAt - wholeAt >= LINGER_MS - SLACK_MS, `ended ${(endedAt - wholeAt).toFixed(0)} ms after`);
    assert.equal((await h2Request(session, { ':path': '/after' })).status, 200, 'the session lives on');
  } finally {
    session.destroy();
  }
});

// --- every source ---------------------------------------------------------------------------------

test('ECHO_ERROR=blackhole and ECHO_ERROR=slow-close – a request without a header gets them, named as from the environment', async (t) => {
  const blackhole = await startEcho({ ECHO_ERROR: 'blackhole', ECHO_REQUEST_TIMEOUT: `${HOLD_MS}ms` });
  t.after(() => blackhole.close());
  assertBlackholed(
    await new RawClient(blackhole.port, rawRequest('/env', { 'X-Request-ID': 'env-bh' })).closed,
  );
  assert.deepEqual((await historyEntry(blackhole.url, 'env-bh'))?.faults, [
    { kind: 'blackhole', control: 'ECHO_ERROR', source: 'env', value: 'blackhole' },
  ]);
  assert.deepEqual(countDelta({}, await faultCounts(blackhole.url)), { blackhole: 1 });
  assert.equal((await fetch(`${blackhole.url}/health`)).status, 200, 'the service routes are not touched');

  const slowClose = await startEcho({ ECHO_ERROR: 'slow-close', ECHO_ERROR_TIMEOUT: `${LINGER_MS}ms` });
  t.after(() => slowClose.close());
  const answer = await assertSlowClosed(
    new RawClient(slowClose.port, rawRequest('/env', { 'X-Request-ID': 'env-sc' }, 'from the environment')),
  );
  assert.equal(answer.body, 'from the environment');
  assert.deepEqual((await historyEntry(slowClose.url, 'env-sc'))?.faults, [
    { kind: 'slow-close', control: 'ECHO_ERROR', source: 'env', value: 'slow-close' },
  ]);
  assert.deepEqual(countDelta({}, await faultCounts(slowClose.url)), { 'slow-close': 1 });
});

test("a scenario response's error: slow-close answers that response and holds the close; blackhole holds the request", async () => {
  const set = [
    { path: '/sc-scenario', responses: [{ status: 201, body: 'scripted', error: 'slow-close' }] },
    { path: '/bh-scenario', responses: [{ status: 200, error: 'blackhole' }] },
  ];
  const posted = await fetch(`${short.url}/scenario`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(set),
  });
  assert.equal(posted.status, 200, await posted.text());
  try {
    const before = await faultCounts(short.url);
    const answer = await assertSlowClosed(
      new RawClient(short.port, rawRequest('/sc-scenario', { 'X-Request-ID': 'scn-sc' })),
    );
    assert.equal(answer.status, 201);
    assert.equal(answer.body, 'scripted');
    assert.deepEqual((await historyEntry(short.url, 'scn-sc'))?.faults?.[1], {
      kind: 'slow-close',
      control: 'scenario /sc-scenario',
      source: 'scenario',
      value: 'slow-close',
    });

    assertBlackholed(
      await new RawClient(short.port, rawRequest('/bh-scenario', { 'X-Request-ID': 'scn-bh' })).closed,
    );
    assert.deepEqual((await historyEntry(short.url, 'scn-bh'))?.faults?.[1], {
      kind: 'blackhole',
      control: 'scenario /bh-scenario',
      source: 'scenario',
      value: 'blackhole',
    });
    assert.deepEqual(countDelta(before, await faultCounts(short.url)), {
      scenario: 2,
      'slow-close': 1,
      blackhole: 1,
    });
    await activeFaults(short.url, 0);
  } finally {
    await fetch(`${short.url}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '[]',
    });
  }
});

test('slow-close and blackhole – closing the server ends both holds at once: the blackhole still sends nothing, the slow close has answered', async () => {
  const closing = await startEcho();
  const held = new RawClient(closing.port, rawRequest('/drain-bh', { 'X-Echo-Error': 'blackhole' }));
  const lingering = new RawClient(
    closing.port,
    rawRequest('/drain-sc', { 'X-Echo-Error': 'slow-close' }, 'answered'),
  );
  assert.equal((await lingering.whole()).body, 'answered');
  await activeFaults(closing.url, 2);
  // ECHO_REQUEST_TIMEOUT and ECHO_ERROR_TIMEOUT are 60 s and 65 s: only the close can end these now.
  await waitFor(closing.close(), 'close() waited for the held connections');
  const blackholed = await held.closed;
  assert.equal(blackholed.data.length, 0);
  assert.equal(blackholed.error, undefined, 'closed, not reset');
  assert.equal((await lingering.closed).error, undefined);
});

test('slow-close and blackhole – with faults off the request is answered plainly and the connection kept', async (t) => {
  const off = await startEcho({ ECHO_FAULTS_ENABLED: 'false', ECHO_REQUEST_TIMEOUT: `${HOLD_MS}ms` });
  t.after(() => off.close());
  for (const kind of ['slow-close', 'blackhole']) {
    const r = await request(`${off.url}/off`, { headers: { 'X-Echo-Error': kind } });
    await r.body.text();
    assert.equal(r.statusCode, 200, kind);
    assert.equal(r.headers.connection, 'keep-alive', kind);
  }
  assert.deepEqual(countDelta({}, await faultCounts(off.url)), {});
});

test('X-Echo-Error – the 400 for a bad value lists slow-close and blackhole', async () => {
  const r = await request(`${short.url}/bad`, { headers: { 'X-Echo-Error': 'slow_close' } });
  const body = (await r.body.json()) as { error: { details: Array<{ message: string }> } };
  assert.equal(r.statusCode, 400);
  assert.match(body.error.details[0]?.message ?? '', /slow-close, blackhole/);
});
