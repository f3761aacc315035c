import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { generate } from 'selfsigned';
import { type RunningEcho, startEcho } from '../helpers/echo-server.ts';
import {
  curl,
  h2Request,
  needCurl,
  openH2,
  summaryLine,
  TIMEOUT_MS,
  waitFor,
} from '../helpers/protocol-clients.ts';
import { type Exit, exitOf, until } from '../helpers/runtime.ts';

const MAIN = fileURLToPath(new URL('../../src/echo/main.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'echo-tls-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** TLS settings whose files do not exist: the server generates its certificate. */
const GENERATED = {
  ENABLE_TLS: 'true',
  CERT_FILE: join(dir, 'absent.crt'),
  KEY_FILE: join(dir, 'absent.key'),
};

let echo: RunningEcho;
let servedCertPem: string;
before(async () => {
  echo = await startEcho(GENERATED, { captureLogs: true });
  servedCertPem = (await servedCertificate(echo.port)).toString();
});
after(async () => {
  await waitFor(echo.close(), 'the shared server did not close');
});

function httpsUrl(port: number): string {
  return `https://127.0.0.1:${port}`;
}

/** The certificate the server presents (not verified: this is how the test learns it). */
function servedCertificate(port: number): Promise<X509Certificate> {
  return waitFor(
    new Promise((resolve, reject) => {
      const socket = tls.connect({
        port,
        host: '127.0.0.1',
        servername: 'localhost',
        rejectUnauthorized: false,
      });
      socket.once('secureConnect', () => {
        const cert = socket.getPeerX509Certificate();
        socket.destroy();
        if (cert === undefined) reject(new Error('no peer certificate'));
        else resolve(cert);
      });
      socket.once('error', reject);
    }),
    'no TLS handshake',
  );
}

interface HttpsAnswer {
  readonly status: number;
  readonly httpVersion: string;
  readonly alpn: string | false | null;
  readonly body: string;
}

/** One HTTPS/1.1 request with node:https, trusting `ca` only (servername localhost). */
function httpsGet(
  port: number,
  path: string,
  ca: string,
  init: https.RequestOptions = {},
): Promise<HttpsAnswer> {
  return waitFor(
    new Promise((resolve, reject) => {
      // node:https offers no ALPN unless asked: offer http/1.1, as an HTTP/1.1-only client does.
      const options = {
        host: '127.0.0.1',
        port,
        path,
        ca,
        servername: 'localhost',
        ALPNProtocols: ['http/1.1'],
        agent: false,
        ...init,
      } as https.RequestOptions;
      const request = https.request(options, (response) => {
        const alpn = (response.socket as tls.TLSSocket).alpnProtocol;
        const chunks: Buffer[] = [];
        response.on('data', (c: Buffer) => chunks.push(c));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            httpVersion: response.httpVersion,
            alpn,
            body: Buffer.concat(chunks).toString(),
          }),
        );
        response.on('error', reject);
      });
      request.on('error', reject);
      request.end(init.method === 'POST' ? 'tls body' : undefined);
    }),
    `no HTTPS answer for ${path}`,
  );
}

test('TLS – neither file exists: a self-signed certificate for localhost, warned with its SHA-256 fingerprint', async () => {
  const cert = new X509Certificate(servedCertPem);
  assert.match(cert.subject, /CN=localhost/);
  const sans = cert.subjectAltName ?? '';
  for (const name of [
    'DNS:localhost',
    'IP Address:127.0.0.1',
    'IP Address:0:0:0:0:0:0:0:1',
    `DNS:${hostname()}`,
  ]) {
    assert.ok(sans.includes(name), `${name} missing from ${sans}`);
  }
  assert.ok(cert.checkHost('localhost'));
  assert.ok(cert.checkIP('127.0.0.1'));
  assert.ok(cert.checkIP('::1'));
  assert.ok(Date.parse(cert.validFrom) <= Date.now() && Date.now() < Date.parse(cert.validTo));

  const warnings = echo.logs.filter((line) => line['level'] === 40);
  assert.equal(warnings.length, 1, JSON.stringify(echo.logs));
  assert.equal(warnings[0]!['fingerprint_sha256'], cert.fingerprint256);
  assert.ok(String(warnings[0]!['msg']).includes(cert.fingerprint256));
  assert.match(String(warnings[0]!['msg']), /self-signed/);
});

test('TLS – node:https trusting the served certificate gets HTTP/1.1 over ALPN http/1.1; /info says tls', async () => {
  const summary = await httpsGet(echo.port, '/secure?x=1', servedCertPem);
  assert.equal(summary.status, 200);
  assert.equal(summary.httpVersion, '1.1');
  assert.equal(summary.alpn, 'http/1.1');
  assert.equal(summaryLine(summary.body), 'GET /secure?x=1 HTTP/1.1');
  const info = JSON.parse((await httpsGet(echo.port, '/info', servedCertPem)).body);
  assert.equal(info.tls, true);
  assert.equal(info.protocol, 'HTTP/1.1');
  const posted = await httpsGet(echo.port, '/post', servedCertPem, {
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
  });
  assert.equal(posted.body, 'tls body');
});

test('TLS – node:http2 trusting the served certificate gets h2: summary and /info say HTTP/2.0 and tls', async () => {
  const session = await openH2(httpsUrl(echo.port), { ca: servedCertPem });
  try {
    assert.equal(session.alpnProtocol, 'h2');
    const summary = await h2Request(session, { ':path': '/h2?y=2' });
    assert.equal(summary.status, 200);
    assert.equal(summaryLine(summary.body.toString()), 'GET /h2?y=2 HTTP/2.0');
    const info = JSON.parse((await h2Request(session, { ':path': '/info' })).body.toString());
    assert.equal(info.tls, true);
    assert.equal(info.protocol, 'HTTP/2.0');
    const posted = await h2Request(
      session,
      { ':method': 'POST', ':path': '/post', 'content-type': 'text/plain' },
      Buffer.from('h2 body'),
    );
    assert.equal(posted.body.toString(), 'h2 body');
    const delayed = await h2Request(session, {
      ':path': '/d',
      'x-echo-delay': '100ms',
      'x-echo-status': '503',
    });
    assert.equal(delayed.status, 503);
  } finally {
    session.close();
  }
});

test('TLS – the h2 GET summary shows :authority as host, as HTTP/1.1 over TLS shows Host', async () => {
  const session = await openH2(httpsUrl(echo.port), { ca: servedCertPem });
  try {
    const summary = (
      await h2Request(session, { ':path': '/h2-host', ':authority': 'echo.example:8443' })
    ).body.toString();
    assert.equal(summaryLine(summary), 'GET /h2-host HTTP/2.0');
    assert.deepEqual(
      summary.split('\n').filter((line) => /^host:/i.test(line)),
      ['host: echo.example:8443'],
      summary,
    );
  } finally {
    session.close();
  }
});

test('TLS – curl -k --http2 negotiates h2 by ALPN; curl -k --http1.1 gets HTTP/1.1; same port', async (t) => {
  if (!needCurl(t)) return;
  const h2 = await curl([
    '-k',
    '-v',
    '--http2',
    '-w',
    '\nVERSION=%{http_version}',
    `${httpsUrl(echo.port)}/alpn`,
  ]);
  assert.equal(h2.code, 0, h2.stderr);
  assert.match(h2.stderr, /ALPN.*h2/i);
  assert.match(h2.stdout, /\nVERSION=2$/);
  assert.equal(summaryLine(h2.stdout), 'GET /alpn HTTP/2.0');

  const h1 = await curl([
    '-k',
    '--http1.1',
    '-w',
    '\nVERSION=%{http_version}',
    `${httpsUrl(echo.port)}/alpn`,
  ]);
  assert.equal(h1.code, 0, h1.stderr);
  assert.match(h1.stdout, /\nVERSION=1\.1$/);
  assert.equal(summaryLine(h1.stdout), 'GET /alpn HTTP/1.1');

  const health = await curl(['-k', '--http2', `${httpsUrl(echo.port)}/health`]);
  assert.equal(JSON.parse(health.stdout).status, 'healthy');
});

test('TLS – replay to this server works with its self-signed certificate, over h2 and HTTP/1.1', async () => {
  const session = await openH2(httpsUrl(echo.port), { ca: servedCertPem });
  try {
    await h2Request(
      session,
      {
        ':method': 'POST',
        ':path': '/tls-replay',
        'content-type': 'text/plain',
        'x-request-id': 'tls-replay-1',
      },
      Buffer.from('again'),
    );
    const replayed = await h2Request(
      session,
      { ':method': 'POST', ':path': '/replay', 'content-type': 'application/json' },
      Buffer.from(JSON.stringify({ id: 'tls-replay-1' })),
    );
    assert.equal(replayed.status, 200, replayed.body.toString());
    assert.equal(replayed.body.toString(), 'again');
    assert.equal(replayed.headers['x-echo-replay-of'], 'tls-replay-1');
  } finally {
    session.close();
  }
  const history = JSON.parse((await httpsGet(echo.port, '/history', servedCertPem)).body) as Array<{
    headers: Record<string, string>;
    protocol: string;
  }>;
  const replay = history.find((entry) => entry.headers['x-echo-replay-of'] === 'tls-replay-1');
  assert.ok(replay, 'the replayed request did not reach this server');
});

test('TLS – an Upgrade on HTTP/1.1 over TLS reaches the handler of its path; others are served normally', async () => {
  echo.app.echo.upgradeHandlers.set('/tls-upgrade', (_request, socket) => {
    socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: custom\r\n\r\nover tls');
  });
  try {
    const upgraded = await tlsExchange(
      echo.port,
      'GET /tls-upgrade HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: custom\r\n\r\n',
    );
    assert.match(upgraded, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
    assert.ok(upgraded.endsWith('over tls'), upgraded);
    const normal = await tlsExchange(
      echo.port,
      'GET /elsewhere HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: custom\r\n\r\n',
    );
    assert.match(normal, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(normal, /\r\n\r\nGET \/elsewhere HTTP\/1\.1\n/);
  } finally {
    echo.app.echo.upgradeHandlers.delete('/tls-upgrade');
  }
});

/** Raw HTTP/1.1 over TLS (ALPN http/1.1): sends, ends, collects until the server closes. */
function tlsExchange(port: number, text: string): Promise<string> {
  const socket = tls.connect({
    port,
    host: '127.0.0.1',
    servername: 'localhost',
    ca: servedCertPem,
    ALPNProtocols: ['http/1.1'],
  });
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<string>((resolve, reject) => {
    socket.once('error', reject);
    socket.once('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
  socket.once('secureConnect', () => socket.end(text));
  return waitFor(done, 'the TLS server did not close the connection').finally(() => socket.destroy());
}

test('TLS – X-Echo-Error reset and close over h2 act on the stream and the session', async () => {
  const session = await openH2(httpsUrl(echo.port), { ca: servedCertPem });
  try {
    const reset = await h2Request(session, { ':path': '/r', 'x-echo-error': 'reset' }).then(
      () => undefined,
      (err: { rstCode?: number }) => err.rstCode,
    );
    assert.equal(reset, 2); // INTERNAL_ERROR
    assert.equal((await h2Request(session, { ':path': '/ok' })).status, 200);
    const goaway = new Promise<void>((resolve) => session.once('goaway', () => resolve()));
    await h2Request(session, { ':path': '/c', 'x-echo-error': 'close' }).then(
      () => assert.fail('answered'),
      () => undefined,
    );
    await waitFor(goaway, 'no GOAWAY');
  } finally {
    session.close();
  }
  assert.equal((await httpsGet(echo.port, '/still-up', servedCertPem)).status, 200);
});

test('TLS – provided CERT_FILE and KEY_FILE are served, without a warning', async () => {
  const pems = await generate([{ name: 'commonName', value: 'provided.test' }], {
    keyType: 'rsa',
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }] }],
  });
  const certFile = join(dir, 'provided.crt');
  const keyFile = join(dir, 'provided.key');
  writeFileSync(certFile, pems.cert);
  writeFileSync(keyFile, pems.private);
  const server = await startEcho(
    { ENABLE_TLS: 'true', CERT_FILE: certFile, KEY_FILE: keyFile },
    { captureLogs: true },
  );
  try {
    const served = await servedCertificate(server.port);
    assert.equal(served.fingerprint256, new X509Certificate(pems.cert).fingerprint256);
    assert.match(served.subject, /CN=provided\.test/);
    assert.deepEqual(
      server.logs.filter((line) => (line['level'] as number) >= 40),
      [],
    );
    const answer = await httpsGet(server.port, '/provided', pems.cert);
    assert.equal(answer.status, 200);
    const session = await openH2(httpsUrl(server.port), { ca: pems.cert });
    try {
      assert.equal(
        summaryLine((await h2Request(session, { ':path': '/p' })).body.toString()),
        'GET /p HTTP/2.0',
      );
    } finally {
      session.close();
    }
  } finally {
    await server.close();
  }
});

test('TLS – close() ends idle h2 sessions with GOAWAY and idle HTTP/1.1 keep-alive connections', async () => {
  const server = await startEcho(GENERATED);
  const agent = new https.Agent({ keepAlive: true });
  let closing: Promise<void> | undefined;
  try {
    const ca = (await servedCertificate(server.port)).toString();
    const session = await openH2(httpsUrl(server.port), { ca });
    await h2Request(session, { ':path': '/warm' });
    const goaway = new Promise<void>((resolve) => session.once('goaway', () => resolve()));
    await httpsGet(server.port, '/keep', ca, { agent });
    const keepAliveSockets = Object.values(agent.freeSockets).flat();
    assert.equal(keepAliveSockets.length, 1);
    const keepAliveClosed = new Promise<void>((resolve) =>
      keepAliveSockets[0]!.once('close', () => resolve()),
    );
    const started = Date.now();
    closing = server.close();
    await waitFor(closing, 'close() did not finish');
    assert.ok(Date.now() - started < 2_000, `close took ${Date.now() - started} ms`);
    await waitFor(goaway, 'no GOAWAY');
    await waitFor(keepAliveClosed, 'the keep-alive connection stayed open');
  } finally {
    agent.destroy();
    if (closing === undefined) await server.close();
  }
});

test('TLS – closeAllConnections (the drain deadline) ends h2 sessions and busy HTTP/1.1 connections', async (t) => {
  const server = await startEcho(GENERATED);
  t.after(() => server.close());
  const ca = (await servedCertificate(server.port)).toString();
  const session = await openH2(httpsUrl(server.port), { ca });
  t.after(() => session.destroy());
  const h2InFlight = h2Request(session, { ':path': '/hold', 'x-echo-delay': '60s' }).then(
    () => 'answered',
    (err: Error) => (err.message.startsWith('no ') ? 'hung' : 'cut'), // `no answer …` is the client's timeout
  );
  const h1InFlight = httpsGet(server.port, '/hold', ca, { headers: { 'x-echo-delay': '60s' } }).then(
    () => 'answered',
    (err: Error) => (err.message.startsWith('no ') ? 'hung' : 'cut'), // `no answer …` is the client's timeout
  );
  await until('both requests are in flight', () => server.app.obs.drainState.inFlight === 2);
  (server.app.server as unknown as { closeAllConnections(): void }).closeAllConnections();
  assert.equal(await waitFor(h2InFlight, 'the h2 stream was not cut'), 'cut');
  assert.equal(await waitFor(h1InFlight, 'the HTTP/1.1 request was not cut'), 'cut');
});

// The CLI: startup errors are one line each on stderr, exit 1; a good start serves HTTPS.

function launch(env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [MAIN], {
    cwd: dir,
    env: { PATH: process.env['PATH'] ?? '', HOST: '127.0.0.1', PORT: '0', ECHO_DRAIN_DELAY: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: TIMEOUT_MS * 2,
  });
}

function exited(child: ChildProcess): Promise<Exit> {
  return waitFor(exitOf(child), 'the CLI did not exit', TIMEOUT_MS * 2);
}

function stderrLines(result: Exit): string[] {
  return result.stderr.split('\n').filter((line) => line !== '');
}

test('TLS CLI – only CERT_FILE exists: one line naming KEY_FILE, its value and what is expected; exit 1', async () => {
  const certFile = join(dir, 'only.crt');
  const keyFile = join(dir, 'only-missing.key');
  writeFileSync(certFile, servedCertPem);
  const result = await exited(launch({ ENABLE_TLS: 'true', CERT_FILE: certFile, KEY_FILE: keyFile }));
  assert.equal(result.code, 1);
  assert.deepEqual(stderrLines(result), [
    `echo-chaos: KEY_FILE=${JSON.stringify(keyFile)} is invalid: the file does not exist; expected a PEM private key beside CERT_FILE=${JSON.stringify(certFile)} (or neither file, for a generated self-signed certificate)`,
  ]);
});

test('TLS CLI – only KEY_FILE exists: one line naming CERT_FILE; exit 1', async () => {
  const keyFile = join(dir, 'only.key');
  writeFileSync(keyFile, (await generate(undefined, { keyType: 'ec' })).private);
  const result = await exited(
    launch({ ENABLE_TLS: 'true', CERT_FILE: join(dir, 'only-missing.crt'), KEY_FILE: keyFile }),
  );
  assert.equal(result.code, 1);
  const lines = stderrLines(result);
  assert.equal(lines.length, 1, result.stderr);
  assert.match(
    lines[0]!,
    /^echo-chaos: CERT_FILE=".*only-missing\.crt" is invalid: the file does not exist; expected a PEM certificate beside KEY_FILE=/,
  );
});

test('TLS CLI – garbage in CERT_FILE and a KEY_FILE that cannot be read: one line each; exit 1', async () => {
  const certFile = join(dir, 'garbage.crt');
  const keyFile = join(dir, 'a-directory.key');
  writeFileSync(certFile, 'this is not a certificate\n');
  mkdirSync(keyFile, { recursive: true });
  const result = await exited(launch({ ENABLE_TLS: 'true', CERT_FILE: certFile, KEY_FILE: keyFile }));
  assert.equal(result.code, 1);
  assert.deepEqual(stderrLines(result), [
    `echo-chaos: CERT_FILE=${JSON.stringify(certFile)} is invalid: the file holds no PEM certificate; expected a PEM certificate`,
    `echo-chaos: KEY_FILE=${JSON.stringify(keyFile)} is invalid: the file cannot be read (EISDIR); expected a PEM private key`,
  ]);
});

test('TLS CLI – a damaged PEM key, and a key that does not belong to the certificate, stop startup', async () => {
  const certFile = join(dir, 'good.crt');
  const badKey = join(dir, 'damaged.key');
  writeFileSync(certFile, servedCertPem);
  writeFileSync(badKey, '-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n');
  const damaged = await exited(launch({ ENABLE_TLS: 'true', CERT_FILE: certFile, KEY_FILE: badKey }));
  assert.equal(damaged.code, 1);
  const damagedLines = stderrLines(damaged);
  assert.equal(damagedLines.length, 1, damaged.stderr);
  assert.match(
    damagedLines[0]!,
    /^echo-chaos: KEY_FILE=".*damaged\.key" is invalid: the private key cannot be parsed \(.+\); expected a PEM private key$/,
  );

  const otherKey = join(dir, 'other.key');
  writeFileSync(otherKey, (await generate(undefined, { keyType: 'ec' })).private);
  const mismatch = await exited(launch({ ENABLE_TLS: 'true', CERT_FILE: certFile, KEY_FILE: otherKey }));
  assert.equal(mismatch.code, 1);
  assert.deepEqual(stderrLines(mismatch), [
    `echo-chaos: KEY_FILE=${JSON.stringify(otherKey)} is invalid: the key does not belong to the certificate in CERT_FILE=${JSON.stringify(certFile)}; expected a PEM private key`,
  ]);
});

test('TLS CLI – ENABLE_TLS with neither file: listens on https://, warns the fingerprint, SIGTERM exits 0', async (t) => {
  const child = launch(GENERATED);
  t.after(() => child.kill('SIGKILL'));
  const done = exited(child);
  let stdout = '';
  child.stdout?.on('data', (chunk) => {
    stdout += chunk;
  });
  await until(
    'the listening line',
    () => /Server listening at https:\/\/127\.0\.0\.1:(\d+)/.test(stdout),
    TIMEOUT_MS,
  );
  const port = Number(/Server listening at https:\/\/127\.0\.0\.1:(\d+)/.exec(stdout)![1]);
  const served = await servedCertificate(port);
  assert.ok(stdout.includes(served.fingerprint256), 'the warning does not name the served fingerprint');
  const answer = await httpsGet(port, '/cli', served.toString());
  assert.equal(summaryLine(answer.body), 'GET /cli HTTP/1.1');
  // An idle keep-alive h2 session must not hold the exit.
  const session = await openH2(httpsUrl(port), { ca: served.toString() });
  t.after(() => session.destroy());
  await h2Request(session, { ':path': '/idle' });
  child.kill('SIGTERM');
  const result = await done;
  session.close();
  assert.equal(result.code, 0, result.stderr);
});

test('TLS – a plain-text client on the TLS port gets no HTTP answer and the server keeps serving', async () => {
  const socket = net.connect(echo.port, '127.0.0.1');
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.end('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  await waitFor(closed, 'the server kept a plain-text connection open');
  assert.equal((await httpsGet(echo.port, '/after-plain', servedCertPem)).status, 200);
});
