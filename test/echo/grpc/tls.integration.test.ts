import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { connect } from 'node:tls';
import { credentials, status } from '@grpc/grpc-js';
import { generate } from 'selfsigned';
import { type RunningEcho, startEcho } from '../../helpers/echo-server.ts';
import { clientOf, type EchoResponse, EchoServiceClient, freePort, methodOf, unary } from './grpc-client.ts';

const Echo = methodOf(EchoServiceClient, 'Echo');
let dir: string;
let cert: string;
let echo: RunningEcho;
let port: number;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'grpc-tls-'));
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    extensions: [
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
        ],
      },
    ],
  });
  cert = pems.cert;
  writeFileSync(join(dir, 'tls.crt'), pems.cert);
  writeFileSync(join(dir, 'tls.key'), pems.private);
  port = await freePort();
  echo = await startEcho({
    ENABLE_TLS: 'true',
    CERT_FILE: join(dir, 'tls.crt'),
    KEY_FILE: join(dir, 'tls.key'),
    ECHO_GRPC_PORT: String(port),
  });
});

after(async () => {
  await echo.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The SHA-256 fingerprint of the certificate served on `port` (ALPN h2, as a gRPC client asks). */
function servedFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(
      { host: '127.0.0.1', port, rejectUnauthorized: false, ALPNProtocols: ['h2'] },
      () => {
        resolve(socket.getPeerCertificate().fingerprint256);
        socket.destroy();
      },
    );
    socket.on('error', reject);
  });
}

test('grpc TLS – ENABLE_TLS serves gRPC with CERT_FILE and KEY_FILE: a client trusting that certificate calls Echo', async () => {
  const client = clientOf(EchoServiceClient, port, credentials.createSsl(Buffer.from(cert)));
  try {
    const result = await unary<EchoResponse>(client, Echo, { message: 'over tls' });
    assert.equal(result.error, undefined);
    assert.equal(result.value?.message, 'over tls');
  } finally {
    client.close();
  }
  assert.equal(await servedFingerprint(port), await servedFingerprint(echo.port));
});

test('grpc TLS – a cleartext client is refused, and a client that trusts another certificate too', async () => {
  const cleartext = clientOf(EchoServiceClient, port);
  const other = await generate([{ name: 'commonName', value: 'localhost' }], { keyType: 'ec' });
  const stranger = clientOf(EchoServiceClient, port, credentials.createSsl(Buffer.from(other.cert)));
  try {
    for (const client of [cleartext, stranger]) {
      const result = await unary(client, Echo, { message: 'x' }, undefined, { deadlineMs: 5000 });
      assert.equal(result.error?.code, status.UNAVAILABLE);
    }
  } finally {
    cleartext.close();
    stranger.close();
  }
});

test('grpc TLS – without the files, gRPC serves the same generated certificate as HTTPS', async () => {
  const grpcPort = await freePort();
  const generated = await startEcho({
    ENABLE_TLS: 'true',
    CERT_FILE: join(dir, 'none.crt'),
    KEY_FILE: join(dir, 'none.key'),
    ECHO_GRPC_PORT: String(grpcPort),
  });
  try {
    assert.equal(await servedFingerprint(grpcPort), await servedFingerprint(generated.port));
  } finally {
    await generated.close();
  }
});
