import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { generate } from 'selfsigned';
import { request } from 'undici';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import { type EchoProcess, startEchoProcess } from '../helpers/liveness.ts';

/**
 * The reverse proxy's protocols (#32 item 1): TLS with h2 from the client, and h2 to an `https`
 * upstream that offers it by ALPN (undici's `allowH2`). Real servers: an h2-only TLS upstream
 * (node:http2, HTTP/1.1 refused) whose certificate the proxy process trusts through
 * `NODE_EXTRA_CA_CERTS`, as a user's would; and a node:http upstream behind a TLS echo-chaos.
 */

let dir: string;
let h2Upstream: http2.Http2SecureServer;
let h2UpstreamUrl: string;
let plain: Server;
let plainUrl: string;
const plainSeen: IncomingHttpHeaders[] = [];
let proxyToH2: EchoProcess;
let tlsProxy: RunningEcho;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'proxy-protocols-'));
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
        ],
      },
    ],
  });
  const caFile = join(dir, 'upstream.crt');
  writeFileSync(caFile, pems.cert);
  // h2 only: a proxy that spoke HTTP/1.1 to it would be refused at ALPN.
  h2Upstream = http2.createSecureServer({ key: pems.private, cert: pems.cert, allowHTTP1: false });
  h2Upstream.on('stream', (stream, headers) => {
    stream.respond({ ':status': 200, 'content-type': 'application/json', 'x-upstream': 'h2' });
    stream.end(
      JSON.stringify({ version: '2', path: headers[':path'], forwardedProto: headers['x-forwarded-proto'] }),
    );
  });
  h2Upstream.listen(0, '127.0.0.1');
  await once(h2Upstream, 'listening');
  h2UpstreamUrl = `https://localhost:${(h2Upstream.address() as AddressInfo).port}`;
  proxyToH2 = await startEchoProcess({ ECHO_UPSTREAM: h2UpstreamUrl, NODE_EXTRA_CA_CERTS: caFile });

  plain = createServer((req, res) => {
    plainSeen.push(req.headers);
    res.setHeader('content-type', 'text/plain');
    res.end(`plain ${req.method} ${req.url} HTTP/${req.httpVersion}`);
  });
  plain.listen(0, '127.0.0.1');
  await once(plain, 'listening');
  plainUrl = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
  tlsProxy = await startEcho({ ENABLE_TLS: 'true', ECHO_UPSTREAM: plainUrl });
});

after(async () => {
  await proxyToH2?.stop();
  await tlsProxy?.close();
  h2Upstream?.close();
  plain?.closeAllConnections();
  plain?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('an https upstream that offers h2 is spoken to over h2; its answer comes back over HTTP/1.1', async () => {
  const res = await request(`${proxyToH2.url}/catalog?page=2`);
  const body = (await res.body.json()) as { version: string; path: string; forwardedProto: string };
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['x-upstream'], 'h2');
  assert.deepEqual(body, { version: '2', path: '/catalog?page=2', forwardedProto: 'http' });
});

test('faults apply on the way to an h2 upstream: a status replaces its 200, an error never calls it', async () => {
  const replaced = await request(`${proxyToH2.url}/catalog`, { headers: { 'x-echo-status': '503' } });
  await replaced.body.text();
  assert.equal(replaced.statusCode, 503);
  assert.equal(replaced.headers['x-upstream'], 'h2');
  const failed = await request(`${proxyToH2.url}/catalog`, { headers: { 'x-echo-error': '500' } });
  await failed.body.text();
  assert.equal(failed.statusCode, 500);
  assert.equal(failed.headers['x-upstream'], undefined);
});

test('a TLS client speaking h2 is forwarded; the upstream learns https from X-Forwarded-Proto', async () => {
  const session = http2.connect(`https://127.0.0.1:${tlsProxy.port}`, { rejectUnauthorized: false });
  try {
    const stream = session.request({ ':path': '/over-tls?x=1', 'x-echo-set-header-x-lane': 'tls' });
    const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders];
    let body = '';
    stream.setEncoding('utf8');
    for await (const chunk of stream) body += chunk;
    assert.equal(headers[':status'], 200);
    assert.equal(headers['x-lane'], 'tls');
    assert.equal(body, 'plain GET /over-tls?x=1 HTTP/1.1');
    const seen = plainSeen.at(-1);
    assert.equal(seen?.['x-forwarded-proto'], 'https');
    assert.equal(seen?.['x-echo-set-header-x-lane'], undefined, 'controls are consumed');
    assert.match(String(seen?.via), /^2\.0 echo-chaos-[0-9a-f]{8}$/);
  } finally {
    session.close();
  }
});
