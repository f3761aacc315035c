import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { listenLocal } from '../helpers/http.ts';
import { scrapeValue } from '../helpers/metrics.ts';

/**
 * The reverse proxy (#32) where it meets trouble and choices: an upstream that stalls its head or
 * its body, a loop back to itself, where a request goes when faults are switched off, and a proxy
 * scenario that only adds faults. Real node:http upstreams started here record what reached them.
 */

interface Hit {
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
}

/** A counting upstream: `/stall-head` never answers, `/stall-body` sends its head only, `/half` half a body. */
function upstreamServer(name: string, hits: Hit[]): Server {
  return createServer((req, res) => {
    hits.push({ url: req.url ?? '', headers: req.headers });
    req.resume();
    if (req.url === '/stall-head') return;
    if (req.url === '/stall-body') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '10' });
      res.flushHeaders();
      return;
    }
    if (req.url === '/half') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '10' });
      res.write('12345');
      return;
    }
    res.setHeader('x-upstream', name);
    res.end(`${name} ${req.url}`);
  });
}

const fallbackHits: Hit[] = [];
const ownHits: Hit[] = [];
let fallback: Server;
let own: Server;
let fallbackUrl: string;
let ownUrl: string;
let echo: RunningEcho;

before(async () => {
  fallback = upstreamServer('fallback', fallbackHits);
  own = upstreamServer('own', ownHits);
  fallbackUrl = await listenLocal(fallback);
  ownUrl = await listenLocal(own);
  echo = await startEcho(
    { ECHO_UPSTREAM: fallbackUrl, ECHO_UPSTREAM_TIMEOUT: '150ms' },
    { captureLogs: true },
  );
});

after(async () => {
  await echo.close();
  for (const server of [fallback, own]) {
    server.closeAllConnections();
    server.close();
  }
});

interface HistoryEntry {
  request_id: string;
  status: number;
  faults: Array<{ kind: string }>;
  upstream?: { url: string; status: number | null; error?: string };
}

async function historyOf(id: string): Promise<HistoryEntry | undefined> {
  const entries = (await (await request(`${echo.url}/history`)).body.json()) as HistoryEntry[];
  return entries.find((e) => e.request_id === id);
}

async function setScenarios(scenarios: unknown[]): Promise<void> {
  const res = await request(`${echo.url}/scenario`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(scenarios),
  });
  assert.equal(res.statusCode, 200, await res.body.text());
}

describe('an upstream that stalls', () => {
  test('no head within ECHO_UPSTREAM_TIMEOUT: a 504 naming the upstream, on time', async () => {
    const started = performance.now();
    const res = await request(`${echo.url}/stall-head`, { headers: { 'x-request-id': 'stall-head-1' } });
    const ms = performance.now() - started;
    const body = (await res.body.json()) as { error: { code: string; message: string } };
    assert.equal(res.statusCode, 504);
    assert.equal(body.error.code, 'ECHO_ERR_PROXY_TIMEOUT');
    assert.match(body.error.message, new RegExp(`upstream ${fallbackUrl} did not answer within 150 ms`));
    // undici checks its own head timeout about once a second; 150 ms must not become a second.
    assert.ok(ms < 950, `answered after ${Math.round(ms)} ms`);
    const entry = await historyOf('stall-head-1');
    assert.equal(entry?.status, 504);
    assert.match(entry?.upstream?.error ?? '', /ECHO_UPSTREAM_TIMEOUT/);
    // The log says why, beside the access line's 504.
    const line = echo.logs.find((l) => l['reqId'] === 'stall-head-1' && l['msg'] === 'upstream failed');
    assert.equal(line?.['level'], 40);
    assert.equal(line?.['code'], 'ECHO_ERR_PROXY_TIMEOUT');
    assert.equal(line?.['upstream'], fallbackUrl);
    assert.match(String(line?.['cause']), /did not answer within 150 ms/);
  });

  test('a head, then no body: the answer starts and its connection ends; never a 500 of our own', async () => {
    const res = await request(`${echo.url}/stall-body`, { headers: { 'x-request-id': 'stall-body-1' } });
    assert.equal(res.statusCode, 200, 'the head went as it came');
    await assert.rejects(res.body.text(), /terminated|other side closed|aborted|socket/i);
    const entry = await historyOf('stall-body-1');
    assert.equal(entry?.status, 200);
    assert.equal(entry?.upstream?.status, 200);
    assert.match(entry?.upstream?.error ?? '', /ECHO_UPSTREAM_TIMEOUT|timeout/i);
    // The service goes on.
    assert.equal((await request(`${echo.url}/health`)).statusCode, 200);
  });

  test('half a body, then nothing: the client gets the half, history the cause', async () => {
    const res = await request(`${echo.url}/half`, { headers: { 'x-request-id': 'half-1' } });
    assert.equal(res.statusCode, 200);
    await assert.rejects(res.body.text(), /terminated|other side closed|aborted|socket/i);
    const entry = await historyOf('half-1');
    assert.equal(entry?.status, 200, 'the answer the client got, not "the client left"');
    assert.match(entry?.upstream?.error ?? '', /timeout/i);
  });
});

describe('Via', () => {
  test('a forwarded request names this proxy in Via, after any Via it came with', async () => {
    await request(`${echo.url}/via-check`, { headers: { via: '1.1 edge' } });
    const hit = fallbackHits.findLast((h) => h.url === '/via-check');
    assert.match(String(hit?.headers.via), /^1\.1 edge, 1\.1 echo-chaos-[0-9a-f]{8}$/);
  });

  test('a loop (the upstream forwards back here) is a 508, not a flood', async () => {
    // A relay that sends everything back to the proxy in front of it, Via and all.
    let relayed = 0;
    let front: RunningEcho | undefined;
    const relay = createServer(async (req, res) => {
      relayed++;
      const back = await request(`${front!.url}${req.url}`, {
        headers: { via: String(req.headers.via ?? '') },
      });
      res.writeHead(back.statusCode, { 'content-type': String(back.headers['content-type']) });
      res.end(await back.body.text());
    });
    const relayUrl = await listenLocal(relay);
    front = await startEcho({ ECHO_UPSTREAM: relayUrl });
    try {
      const res = await request(`${front.url}/round`);
      const body = (await res.body.json()) as { error: { code: string; message: string } };
      assert.equal(res.statusCode, 508);
      assert.equal(body.error.code, 'ECHO_ERR_PROXY_LOOP');
      assert.match(body.error.message, /Via names echo-chaos-[0-9a-f]{8}/);
      assert.equal(relayed, 1, 'the request went round once');
    } finally {
      await front.close();
      relay.closeAllConnections();
      relay.close();
    }
  });
});

describe('where a request goes', () => {
  test("with faults switched off, a scenario's upstream still takes what it matches, without its faults", async () => {
    await setScenarios([{ path: '/orders/1', upstream: ownUrl, responses: [{ status: 503 }] }]);
    const off = await request(`${echo.url}/control/faults`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"enabled": false}',
    });
    assert.equal(off.statusCode, 200);
    try {
      const before = ownHits.length;
      const res = await request(`${echo.url}/orders/1`, { headers: { 'x-echo-error': '500' } });
      assert.equal(res.statusCode, 200, 'no injected status');
      assert.equal(await res.body.text(), 'own /orders/1');
      assert.equal(res.headers['x-echo-fault'], undefined);
      assert.equal(ownHits.length, before + 1);
    } finally {
      await request(`${echo.url}/control/faults`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: '{"enabled": true}',
      });
      await setScenarios([]);
    }
  });

  test('a scenario response with only faults forwards to ECHO_UPSTREAM; one with a body answers', async () => {
    await setScenarios([
      { path: '/slowed', responses: [{ delay: '200ms', headers: { 'X-Lane': 'slow' } }] },
      { path: '/mocked', responses: [{ body: 'mocked' }] },
    ]);
    try {
      const before = fallbackHits.length;
      const started = performance.now();
      const slowed = await request(`${echo.url}/slowed`);
      assert.equal(await slowed.body.text(), 'fallback /slowed');
      assert.ok(performance.now() - started >= 190, 'the delay was applied');
      assert.equal(slowed.headers['x-lane'], 'slow');
      assert.equal(slowed.headers['x-echo-fault'], 'scenario,delay');
      const mocked = await request(`${echo.url}/mocked`);
      assert.equal(await mocked.body.text(), 'mocked');
      assert.equal(fallbackHits.length, before + 1, 'only /slowed reached the upstream');
    } finally {
      await setScenarios([]);
    }
  });
});

describe('what the proxy says about itself', () => {
  test('a pass-through step of a forwarding scenario is no fault: no X-Echo-Fault, not counted, history has none', async () => {
    await setScenarios([
      { path: '/retry-me', upstream: ownUrl, cycle: false, responses: [{ status: 503 }, {}] },
    ]);
    try {
      const first = await request(`${echo.url}/retry-me`);
      await first.body.text();
      assert.equal(first.statusCode, 503);
      assert.equal(first.headers['x-echo-fault'], 'scenario');
      const scenarioFaults = await scrapeValue(echo.url, 'echo_faults_injected_total{kind="scenario"}');
      const second = await request(`${echo.url}/retry-me`, { headers: { 'x-request-id': 'pass-through-1' } });
      assert.equal(await second.body.text(), 'own /retry-me');
      assert.equal(second.statusCode, 200);
      assert.equal(second.headers['x-echo-fault'], undefined);
      assert.equal(
        await scrapeValue(echo.url, 'echo_faults_injected_total{kind="scenario"}'),
        scenarioFaults,
      );
      const entry = await historyOf('pass-through-1');
      assert.deepEqual(entry?.faults, []);
      assert.equal(entry?.upstream?.status, 200);
    } finally {
      await setScenarios([]);
    }
  });

  test('a forwarding step with only drawn faults is no scenario fault: a request that drew none is plain, one that drew an error names the error', async () => {
    await setScenarios([
      { path: '/never', upstream: ownUrl, responses: [{ error: '503:0', delay: '2s:0' }] },
      { path: '/always', upstream: ownUrl, responses: [{ error: '503:100' }] },
    ]);
    try {
      const scenarioFaults = await scrapeValue(echo.url, 'echo_faults_injected_total{kind="scenario"}');
      const errorFaults = await scrapeValue(echo.url, 'echo_faults_injected_total{kind="error"}');
      const hits = ownHits.length;
      const plain = await request(`${echo.url}/never`, { headers: { 'x-request-id': 'drew-none-1' } });
      assert.equal(await plain.body.text(), 'own /never');
      assert.equal(plain.statusCode, 200);
      assert.equal(plain.headers['x-echo-fault'], undefined);
      assert.equal(plain.headers['x-echo-applied'], undefined);
      assert.deepEqual((await historyOf('drew-none-1'))?.faults, []);
      const failed = await request(`${echo.url}/always`, { headers: { 'x-request-id': 'drew-error-1' } });
      await failed.body.text();
      assert.equal(failed.statusCode, 503);
      assert.equal(failed.headers['x-echo-fault'], 'error');
      assert.deepEqual(
        (await historyOf('drew-error-1'))?.faults.map((f) => f.kind),
        ['error'],
      );
      assert.equal(ownHits.length, hits + 1, 'the upstream was called for /never only');
      assert.equal(
        await scrapeValue(echo.url, 'echo_faults_injected_total{kind="scenario"}'),
        scenarioFaults,
        'neither request counts as a scenario fault',
      );
      assert.equal(await scrapeValue(echo.url, 'echo_faults_injected_total{kind="error"}'), errorFaults + 1);
    } finally {
      await setScenarios([]);
    }
  });

  test('the request id goes to the upstream, the one the client sent or the one made for it', async () => {
    const res = await request(`${echo.url}/with-id`);
    await res.body.text();
    const made = String(res.headers['x-request-id']);
    assert.equal(fallbackHits.findLast((h) => h.url === '/with-id')?.headers['x-request-id'], made);
    await (await request(`${echo.url}/with-id`, { headers: { 'x-request-id': 'mine-1' } })).body.text();
    assert.equal(fallbackHits.findLast((h) => h.url === '/with-id')?.headers['x-request-id'], 'mine-1');
  });

  test('/info shows the proxy mode; a bad scenario upstream is refused naming the form', async () => {
    const info = (await (await request(`${echo.url}/info`)).body.json()) as {
      server: { proxy: { upstream: string; timeout_ms: number; host_header: string } | null };
    };
    assert.deepEqual(info.server.proxy, { upstream: fallbackUrl, timeout_ms: 150, host_header: 'upstream' });
    const bad = await request(`${echo.url}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ path: '/x', upstream: '127.0.0.1:7001', responses: [{}] }]),
    });
    const text = await bad.body.text();
    assert.equal(bad.statusCode, 400);
    assert.match(text, /upstream must be an absolute http:\/\/ or https:\/\/ URL/);
  });
});

test('a streamed upload is in history with its whole size and marked cut', async () => {
  const body = Buffer.alloc(200 * 1024, 'a');
  const res = await request(`${echo.url}/upload`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', 'x-request-id': 'upload-1' },
    body,
  });
  assert.equal(await res.body.text(), 'fallback /upload');
  const entries = (await (await request(`${echo.url}/history`)).body.json()) as Array<{
    request_id: string;
    body_size: number;
    body_truncated: boolean;
  }>;
  const entry = entries.find((e) => e.request_id === 'upload-1');
  assert.equal(entry?.body_size, 200 * 1024);
  assert.equal(entry?.body_truncated, true);
});
