import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, test } from 'node:test';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';

// A request with no X-Echo-* header to a service with nothing to inject is answered by the plain
// route (pipeline.ts, issue #39 item 4). It must give what the whole pipeline gives: the same
// answer, history entry and metrics. The same requests go to a plain service and to one whose
// scenario (for another path) sends every request through the pipeline, and their results are
// compared once what differs by nature (time, port, generated ids) is taken out.

let plain: RunningEcho;
let full: RunningEcho;
before(async () => {
  plain = await startEcho();
  full = await startEcho({}, { scenarios: [{ path: '/elsewhere', responses: [{ status: 418 }] }] });
});
after(async () => {
  await plain.close();
  await full.close();
});

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

function send(
  echo: RunningEcho,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer,
) {
  return new Promise<Answer>((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: echo.port, method, path, headers: { ...headers, host: 'echo.test' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('latin1'),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** An answer with what differs from one server or moment to the next taken out. */
function comparable(answer: Answer) {
  const { date: _date, 'x-echo-request-count': _count, ...headers } = answer.headers;
  return {
    status: answer.status,
    headers,
    body: answer.body.replace(/^Timestamp: .*$/m, 'Timestamp: -'),
  };
}

async function historyEntry(echo: RunningEcho, id: string) {
  const res = await fetch(`${echo.url}/history?limit=100`);
  assert.equal(res.status, 200);
  const entries = (await res.json()) as Array<Record<string, unknown>>;
  const entry = entries.find((e) => e['id'] === id);
  assert.ok(entry !== undefined, `history entry ${id}`);
  // What differs by nature: when it came and how long it took.
  const { timestamp: _t, duration_ms: _d, ...rest } = entry;
  return rest;
}

const CASES: ReadonlyArray<{
  readonly name: string;
  readonly method: string;
  readonly headers?: Record<string, string>;
  readonly body?: Buffer;
}> = [
  { name: 'GET', method: 'GET' },
  { name: 'HEAD', method: 'HEAD' },
  {
    name: 'POST JSON',
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: Buffer.from('{"a":1}'),
  },
  {
    name: 'POST bytes',
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream' },
    body: Buffer.from([0, 0xff, 0x80, 0x41]),
  },
  {
    name: 'POST UTF-8 text',
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
    body: Buffer.from('héllo ✓'),
  },
  { name: 'PUT without a type', method: 'PUT', body: Buffer.from('untyped') },
  { name: 'DELETE', method: 'DELETE' },
  { name: 'GET, gzip accepted', method: 'GET', headers: { 'accept-encoding': 'gzip' } },
  { name: 'OPTIONS', method: 'OPTIONS' },
];

test('plain route – the same answer and history entry as the whole pipeline, request by request', async () => {
  for (const [i, c] of CASES.entries()) {
    const id = `plain-${i}`;
    const headers = { 'x-request-id': id, ...c.headers };
    const a = await send(plain, c.method, `/route/${i}?q=${i}`, headers, c.body);
    const b = await send(full, c.method, `/route/${i}?q=${i}`, headers, c.body);
    assert.ok(a.status < 300, `${c.name}: ${a.status}`);
    assert.deepEqual(comparable(a), comparable(b), c.name);
    assert.equal(a.headers['x-request-id'], id, c.name);
    assert.deepEqual(await historyEntry(plain, id), await historyEntry(full, id), `${c.name}: history`);
  }
});

test('plain route – a repeated X-Request-ID is stored suffixed and the client told, as by the pipeline', async () => {
  for (const echo of [plain, full]) {
    await send(echo, 'GET', '/again', { 'x-request-id': 'again' });
    const second = await send(echo, 'GET', '/again', { 'x-request-id': 'again' });
    const stored = second.headers['x-echo-history-id'];
    assert.equal(typeof stored, 'string');
    assert.notEqual(stored, 'again');
    assert.equal((await historyEntry(echo, String(stored)))['id'], stored);
  }
});

test('plain route – a request with an X-Echo-* header, or a scenario added later, goes through the pipeline', async () => {
  const delayed = await send(plain, 'GET', '/teapot', { 'x-echo-status': '418' });
  assert.equal(delayed.status, 418);
  const load = (set: unknown[]) =>
    fetch(`${plain.url}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(set),
    });
  const put = await load([{ name: 'later', path: '/later', responses: [{ status: 202, body: 'scripted' }] }]);
  assert.ok(put.status < 300, `scenario added: ${put.status} ${await put.text()}`);
  const scripted = await send(plain, 'GET', '/later', {});
  assert.equal(scripted.status, 202);
  assert.equal(scripted.body, 'scripted');
  const del = await load([]);
  assert.ok(del.status < 300, `scenario removed: ${del.status}`);
  assert.equal((await send(plain, 'GET', '/later', {})).status, 200);
});

test('plain route – the request meters count plain requests as the pipeline does', async () => {
  const count = async (echo: RunningEcho) => {
    const text = await (await fetch(`${echo.url}/metrics`)).text();
    const line = text
      .split('\n')
      .find(
        (l) =>
          l.startsWith('echo_requests_total{') && l.includes('method="PATCH"') && l.includes('status="200"'),
      );
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  for (const echo of [plain, full]) {
    const before = await count(echo);
    for (let i = 0; i < 3; i++) await send(echo, 'PATCH', '/metered', {}, Buffer.from('x'));
    assert.equal((await count(echo)) - before, 3);
  }
});
